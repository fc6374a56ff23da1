import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VmLimits, VmResult } from '../program-vm/run-in-vm';

/** The most of one call's result a trace keeps whole (1 MiB of JSON); larger ones are kept as their size. */
export const TRACE_RESULT_MAX_BYTES = 1024 * 1024;

/** How admission answered one call. */
export interface TraceDecision {
  action: 'allow' | 'deny' | 'ask';
  reason?: string;
  rule?: number;
}

/** One tool call a program made. Times are milliseconds from the start of the run. */
export interface TraceCall {
  seq: number;
  tool: string;
  args: unknown;
  resource?: string;
  /** Absent when the call was still running when the program ended. */
  decision?: TraceDecision;
  start: number;
  durationMs: number;
  ok: boolean;
  error?: string;
  /** The value the program received, when it is at most TRACE_RESULT_MAX_BYTES of JSON. */
  result?: unknown;
  /** Set instead of `result` when the value was too large to keep: its size in bytes. */
  resultBytes?: number;
  /** Set instead of `args` in a written trace whose values passed `TRACE_VALUES_MAX_BYTES`. */
  argsBytes?: number;
}

/**
 * Everything about one program run, written to `traces/<id>.json` in its session folder:
 * enough to read what happened and to replay the run later without the real tools.
 */
export interface ProgramTrace {
  id: string;
  sessionId: string;
  createdAt: string;
  code: string;
  sha256: string;
  principal: string;
  intent?: string;
  /** The saved program that ran, as `name@version`; absent for code written in the conversation. */
  program?: string;
  /** How admission answered the call that ran a saved program (as a tool, by the model or an MCP client). */
  admission?: TraceDecision;
  /** The arguments the program read as `args`, when it was given some. */
  args?: unknown;
  /** What ran the code: a program in the sandbox (the default when absent) or a Python cell. */
  runtime?: 'sandbox' | 'python';
  /** The sandbox's limits (programs only). */
  limits?: VmLimits;
  calls: TraceCall[];
  stdout: string;
  droppedOutputBytes: number;
  ok: boolean;
  result?: unknown;
  error?: VmResult['error'];
  /** The sandbox's figures (programs only). */
  stats?: VmResult['stats'];
  /** In a written trace: what was cut to keep it writable (see `traceText`). */
  cut?: string[];
}

/** A sortable trace id: `20261129-211500-3fa9c1`. */
export function newTraceId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/** Writes a trace into `<sessionDir>/traces/` and returns its path (see `traceText`: what a program returns cannot keep it from being written). */
export function writeTrace(sessionDir: string, trace: ProgramTrace): string {
  const dir = join(sessionDir, 'traces');
  // Readable by the user alone, as the session's log is.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${trace.id}.json`);
  writeFileSync(path, traceText(trace), { mode: 0o600 });
  return path;
}

/** How deep a recorded value may nest; deeper parts are cut (a program can return an array a thousand deep). */
export const TRACE_MAX_DEPTH = 64;
/** The most a trace keeps of its recorded values (arguments, results, the program's result), in bytes of JSON. */
export const TRACE_VALUES_MAX_BYTES = 16 * 1024 * 1024;
/** What stands where a value was cut. */
const CUT_DEEP = `[cut: nested deeper than ${TRACE_MAX_DEPTH} levels]`;

/**
 * A trace as the JSON written to disk; never throws. Values nested deeper than
 * `TRACE_MAX_DEPTH` are cut there, and once the recorded values pass `TRACE_VALUES_MAX_BYTES`
 * the rest are kept as their size only (`argsBytes`, `resultBytes`). Each cut is named in
 * `cut`, and a cut trace is no recorded test (see `unreplayable`).
 */
export function traceText(trace: ProgramTrace): string {
  const cut: string[] = [];
  let budget = TRACE_VALUES_MAX_BYTES;
  /** `value` capped in depth, or undefined with its size when the budget is spent. */
  const keep = (value: unknown, where: string): { value: unknown } | { bytes: number } => {
    const capped = capDepth(value, 0, () => cut.push(`${where}: ${CUT_DEEP}`));
    const bytes = Buffer.byteLength(JSON.stringify(capped) ?? '');
    if (bytes > budget) {
      cut.push(`${where}: ${bytes} bytes, past the trace's ${TRACE_VALUES_MAX_BYTES} bytes of values`);
      return { bytes };
    }
    budget -= bytes;
    return { value: capped };
  };
  try {
    const calls = trace.calls.map((call) => {
      const { args, result, ...rest } = call;
      const keptArgs = keep(args, `call #${call.seq} arguments`);
      const keptResult = 'result' in call ? keep(result, `call #${call.seq} result`) : undefined;
      return {
        ...rest,
        ...('value' in keptArgs ? { args: keptArgs.value } : { argsBytes: keptArgs.bytes }),
        ...(keptResult === undefined ? {} : 'value' in keptResult ? { result: keptResult.value } : { resultBytes: keptResult.bytes }),
      };
    });
    const args = trace.args === undefined ? undefined : keep(trace.args, 'the program\'s arguments');
    const result = trace.result === undefined ? undefined : keep(trace.result, 'the program\'s result');
    const written = {
      ...trace,
      calls,
      ...(args === undefined ? {} : 'value' in args ? { args: args.value } : { args: `[cut: ${args.bytes} bytes]` }),
      ...(result === undefined ? {} : 'value' in result ? { result: result.value } : { result: `[cut: ${result.bytes} bytes]` }),
      ...(cut.length > 0 ? { cut } : {}),
    };
    return `${JSON.stringify(written, null, 2)}\n`;
  } catch (error) {
    // Nothing recorded could be kept: what ran, and why the rest is missing.
    const { id, sessionId, createdAt, code, sha256, principal, ok, stdout } = trace;
    const reason = `the recorded values could not be written: ${error instanceof Error ? error.message : String(error)}`;
    return `${JSON.stringify({ id, sessionId, createdAt, code, sha256, principal, ok, stdout, calls: [], cut: [reason] }, null, 2)}\n`;
  }
}

/** `value` with what nests deeper than `TRACE_MAX_DEPTH` replaced by a note; `onCut` told once per cut. */
function capDepth(value: unknown, depth: number, onCut: () => void): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= TRACE_MAX_DEPTH) {
    onCut();
    return CUT_DEEP;
  }
  if (Array.isArray(value)) return value.map((item) => capDepth(item, depth + 1, onCut));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = capDepth(item, depth + 1, onCut);
  return copy;
}

/** A trace found on disk, with the folder of its session. */
export interface StoredTrace {
  path: string;
  trace: ProgramTrace;
}

/** Every readable trace of every session under `home`, newest first. */
export function listTraces(home: string): StoredTrace[] {
  const found: StoredTrace[] = [];
  const sessions = join(home, 'sessions');
  for (const session of safeReaddir(sessions)) {
    const dir = join(sessions, session, 'traces');
    for (const name of safeReaddir(dir)) {
      if (!name.endsWith('.json')) continue;
      const stored = readTraceFile(join(dir, name));
      if (stored) found.push(stored);
    }
  }
  return found.sort((a, b) => b.trace.createdAt.localeCompare(a.trace.createdAt));
}

/** The trace with that id (or the only one whose id starts with it), if any. */
export function findTrace(home: string, id: string): StoredTrace | { error: string } {
  const matches = listTraces(home).filter((t) => t.trace.id === id || t.trace.id.startsWith(id));
  const exact = matches.find((t) => t.trace.id === id);
  if (exact) return exact;
  if (matches.length === 1 && matches[0]) return matches[0];
  if (matches.length > 1) return { error: `"${id}" matches ${matches.length} traces; give more of the id` };
  return { error: `no trace "${id}"` };
}

function readTraceFile(path: string): StoredTrace | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
  if (!looksLikeTrace(value)) return undefined;
  return { path, trace: value };
}

/** Enough of a trace's shape to list and show it; other JSON files in `traces/` are skipped. */
function looksLikeTrace(value: unknown): value is ProgramTrace {
  if (typeof value !== 'object' || value === null) return false;
  const trace = value as Partial<ProgramTrace>;
  return typeof trace.id === 'string' && typeof trace.createdAt === 'string' && typeof trace.code === 'string' && Array.isArray(trace.calls);
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * A call's value as the trace keeps it: whole when its JSON is small enough, else only its
 * size (so traces of runs over large data stay small).
 */
export function traceValue(value: unknown): Pick<TraceCall, 'result' | 'resultBytes'> {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    return { resultBytes: -1 };
  }
  if (json === undefined) return {};
  const bytes = Buffer.byteLength(json);
  return bytes <= TRACE_RESULT_MAX_BYTES ? { result: value } : { resultBytes: bytes };
}
