import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { DEFAULT_SANDBOX_LIMITS, runInSandbox, type HostFunction, type SandboxLimits } from '../runtime/sandbox';
import { parseIntent } from './intent';
import type { ProgramStore } from './program-store';
import { newTraceId, traceValue, writeTrace, type ProgramTrace, type TraceCall, type TraceDecision } from './trace';

/** Who is calling, for admission, and the run's signal. */
export interface ProgramCall {
  principal: string;
  intent?: string;
  signal: AbortSignal;
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
  limits?: Partial<SandboxLimits>;
  store?: ProgramStore;
  signal?: AbortSignal;
  /** The session the trace belongs to: its id and folder. */
  session: { id: string; dir: string };
  /** Overrides the principal (default `program:<first 12 hex of the code's sha256>`). */
  principal?: string;
  /** JSON values defined as globals of the program (`fence run --json-args` gives `args`). */
  globals?: Record<string, unknown>;
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
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
  const calls: TraceCall[] = [];
  // Calls still running; a run can end before they settle, and then they are recorded as such.
  const running = new Map<number, TraceCall>();
  let ended = false;
  const started = performance.now();

  const functions: Record<string, HostFunction> = {};
  for (const [name, tool] of Object.entries(options.tools)) {
    functions[name] = async (args, signal) => {
      // Every call in flight listens on the run's signal; up to maxConcurrentCalls at once.
      setMaxListeners(0, signal);
      const seq = calls.length + running.size + 1;
      const call: TraceCall = { seq, tool: name, args, start: Math.round(performance.now() - started), durationMs: 0, ok: false };
      running.set(seq, call);
      const t0 = performance.now();
      const outcome = await tool(args, { principal, ...(intent ? { intent } : {}), signal }).catch(
        (error: unknown): ProgramToolOutcome => ({
          decision: { action: 'allow' },
          ok: false,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
      if (ended) throw new Error('the program has ended');
      running.delete(seq);
      const entry: TraceCall = { ...call, decision: outcome.decision, durationMs: Math.round((performance.now() - t0) * 10) / 10 };
      if (outcome.resource !== undefined) entry.resource = outcome.resource;
      calls.push(entry);
      if (!outcome.ok) {
        entry.error = outcome.error;
        throw new Error(outcome.error);
      }
      entry.ok = true;
      Object.assign(entry, traceValue(outcome.value));
      return outcome.value;
    };
  }

  const result = await runInSandbox({
    code: options.code,
    functions,
    limits,
    ...(options.store ? { store: options.store } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.globals ? { globals: options.globals } : {}),
  });
  ended = true;
  const unfinished = [...running.values()].map((call) => ({ ...call, error: 'still running when the program ended' }));
  const trace: ProgramTrace = {
    id: newTraceId(),
    sessionId: options.session.id,
    createdAt: new Date().toISOString(),
    code: options.code,
    sha256,
    principal,
    ...(intent ? { intent } : {}),
    limits,
    calls: [...calls, ...unfinished].sort((a, b) => a.seq - b.seq),
    stdout: result.stdout,
    droppedOutputBytes: result.droppedOutputBytes,
    ok: result.ok,
    ...(result.result !== undefined ? { result: result.result } : {}),
    ...(result.error ? { error: result.error } : {}),
    stats: result.stats,
  };
  return { trace, tracePath: writeTrace(options.session.dir, trace) };
}
