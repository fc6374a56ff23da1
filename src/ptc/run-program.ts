import { createHash } from 'node:crypto';
import { DEFAULT_VM_LIMITS, runInVm, type VmLimits } from '../program-vm/run-in-vm';
import type { VmBudget } from '../program-vm/vm-budget';
import { recordCalls } from './call-recorder';
import { parseIntent } from './intent';
import type { ProgramStore } from './program-store';
import { newTraceId, writeTrace, type ProgramTrace, type TraceCall, type TraceDecision } from './trace';

/** Who is calling, for admission, and the run's signal. */
export interface ProgramCall {
  principal: string;
  intent?: string;
  signal: AbortSignal;
  /** Stops the run's wall clock until the returned function is called (time a person takes to answer). */
  holdClock?: () => () => void;
  /**
   * Set when the caller runs in a sandbox: the budget it holds a place in. A program the call
   * runs is nested in it (see `RunProgramOptions.nested`).
   */
  vmBudget?: VmBudget;
}

/** What one tool call from a program came to: the admission decision, then the value or the error. */
export type ProgramToolOutcome =
  | { decision: TraceDecision; resource?: string; ok: true; value: unknown }
  | { decision: TraceDecision; resource?: string; ok: false; error: string };

/**
 * A tool as a program sees it: one JSON argument in, an outcome out. The caller (the tools
 * layer) validates, admits and runs the real tool; this layer only records and relays.
 */
export type ProgramTool = (args: unknown, call: ProgramCall) => Promise<ProgramToolOutcome>;

/** Everything a program run needs. */
export interface RunProgramOptions {
  code: string;
  tools: Record<string, ProgramTool>;
  limits?: Partial<VmLimits>;
  store?: ProgramStore;
  signal?: AbortSignal;
  /** The session the trace belongs to: its id and folder. */
  session: { id: string; dir: string };
  /** Overrides the principal (default `program:<first 12 hex of the code's sha256>`). */
  principal?: string;
  /** Told of each tool call as it ends, with what the trace will keep of it. */
  onCall?: (call: TraceCall) => void;
  /** The saved program that runs, as `name@version`, kept in the trace. */
  program?: string;
  /** How admission answered the call that runs it, kept in the trace. */
  admission?: TraceDecision;
  /** The program's arguments: defined as its global `args` and kept in the trace. */
  args?: unknown;
  /** The session's budget of sandboxes the run takes its place from (see `VmBudget`). */
  budget?: VmBudget;
  /**
   * Run from a tool call of another program, which holds a place in the budget while it
   * waits: the run never waits for a place, it fails at once when there is none.
   */
  nested?: boolean;
}

/** A finished run: its trace and where the trace was written. */
export interface ProgramRun {
  trace: ProgramTrace;
  tracePath: string;
}

/**
 * Runs a program in a fresh sandbox over the given tools and writes its trace. Every call is
 * recorded (tool, arguments, decision, timing, outcome, value); a denied or failed call
 * becomes an Error the program can catch. Never throws for anything the program does.
 */
export async function runProgram(options: RunProgramOptions): Promise<ProgramRun> {
  const sha256 = createHash('sha256').update(options.code).digest('hex');
  const principal = options.principal ?? `program:${sha256.slice(0, 12)}`;
  const intent = parseIntent(options.code);
  const limits: VmLimits = { ...DEFAULT_VM_LIMITS, ...options.limits };
  const recorder = recordCalls(options.tools, { principal, ...(intent ? { intent } : {}) }, options.onCall);

  const result = await runInVm({
    code: options.code,
    functions: recorder.functions,
    limits,
    ...(options.store ? { store: options.store } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.args !== undefined ? { globals: { args: options.args } } : {}),
    ...(options.budget ? { budget: options.budget } : {}),
    ...(options.nested ? { nested: true } : {}),
  });
  const calls = recorder.finish();
  const trace: ProgramTrace = {
    id: newTraceId(),
    sessionId: options.session.id,
    createdAt: new Date().toISOString(),
    code: options.code,
    sha256,
    principal,
    ...(intent ? { intent } : {}),
    ...(options.program ? { program: options.program } : {}),
    ...(options.admission ? { admission: options.admission } : {}),
    ...(options.args !== undefined ? { args: options.args } : {}),
    limits,
    calls,
    stdout: result.stdout,
    droppedOutputBytes: result.droppedOutputBytes,
    ok: result.ok,
    ...(result.result !== undefined ? { result: result.result } : {}),
    ...(result.error ? { error: result.error } : {}),
    stats: result.stats,
  };
  return { trace, tracePath: writeTrace(options.session.dir, trace) };
}
