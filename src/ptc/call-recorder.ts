import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { HostCallControls } from '../program-vm/run-in-vm';
import type { ProgramTool, ProgramToolOutcome } from './run-program';
import { traceValue, type TraceCall } from './trace';

/** A tool as code calls it: one JSON argument and the caller's signal; rejects on failure. */
export type RecordedFunction = (args: unknown, signal: AbortSignal, host?: HostCallControls) => Promise<unknown>;

/** Tools wrapped so that every call is recorded for a trace. */
export interface CallRecorder {
  functions: Record<string, RecordedFunction>;
  /** Ends recording: the calls in order, those still running marked as such. Later settlements change nothing. */
  finish(): TraceCall[];
}

/**
 * Wraps tools so that each call is recorded (tool, arguments, resource, decision, start and
 * duration from the recorder's creation, ok or error, and the value), `onEnded` told of it,
 * and a denied or failed call rejects with an Error carrying the tool's message. Shared by programs and the Python
 * kernel, so both leave the same kind of trace.
 */
export function recordCalls(tools: Record<string, ProgramTool>, caller: { principal: string; intent?: string }, onEnded?: (call: TraceCall) => void): CallRecorder {
  const calls: TraceCall[] = [];
  // Calls still running; code can end before they settle, and then they are recorded as such.
  const running = new Map<number, TraceCall>();
  let ended = false;
  const started = performance.now();
  const functions: Record<string, RecordedFunction> = {};
  for (const [name, tool] of Object.entries(tools)) {
    functions[name] = async (args, signal, host) => {
      // Every call in flight listens on the caller's signal, many at once.
      setMaxListeners(0, signal);
      const seq = calls.length + running.size + 1;
      const call: TraceCall = { seq, tool: name, args, start: Math.round(performance.now() - started), durationMs: 0, ok: false };
      running.set(seq, call);
      const t0 = performance.now();
      const outcome = await tool(args, { ...caller, signal, ...(host ? { holdClock: host.holdClock, vmBudget: host.budget } : {}) }).catch(
        (error: unknown): ProgramToolOutcome => ({
          decision: { action: 'allow' },
          ok: false,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
      if (ended) throw new Error('the code that made this call has ended');
      running.delete(seq);
      const entry: TraceCall = { ...call, decision: outcome.decision, durationMs: Math.round((performance.now() - t0) * 10) / 10 };
      if (outcome.resource !== undefined) entry.resource = outcome.resource;
      calls.push(entry);
      if (!outcome.ok) {
        entry.error = outcome.error;
        onEnded?.(entry);
        throw new Error(outcome.error);
      }
      entry.ok = true;
      Object.assign(entry, traceValue(outcome.value));
      onEnded?.(entry);
      return outcome.value;
    };
  }
  return {
    functions,
    finish() {
      ended = true;
      const unfinished = [...running.values()].map((call) => ({ ...call, error: 'still running when the code ended' }));
      return [...calls, ...unfinished].sort((a, b) => a.seq - b.seq);
    },
  };
}
