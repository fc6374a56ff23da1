import { createHash } from 'node:crypto';
import { recordCalls, type CallRecorder } from './call-recorder';
import type { ProgramTool } from './run-program';
import { newTraceId, writeTrace, type ProgramTrace } from './trace';

/** Principal of every tool call made from Python code. */
export const PYTHON_PRINCIPAL = 'python';

/** What a finished cell reports to its trace. */
export interface CellSummary {
  output: string;
  ok: boolean;
  error?: string;
}

/**
 * Connects the Python kernel's tool calls to the session's program-eligible tools: each call
 * is admitted with principal `python` and recorded, and a cell that called tools leaves a
 * trace like a program's (`runtime: 'python'`). The kernel lives for the whole session, cells
 * come one at a time: `runCell` sets the cell whose calls are being recorded.
 */
export class PythonToolBridge {
  private current: { recorder: CallRecorder; signal: AbortSignal } | undefined;

  constructor(
    private readonly tools: Record<string, ProgramTool>,
    private readonly session: { id: string; dir: string },
  ) {}

  /** The names Python sees as functions. */
  get toolNames(): string[] {
    return Object.keys(this.tools);
  }

  /** The kernel's `onToolCall`: runs a call of the current cell; rejects when no cell runs. */
  readonly call = (name: string, args: Record<string, unknown>): Promise<unknown> => {
    const current = this.current;
    if (!current) return Promise.reject(new Error('tools can be called only while a cell runs'));
    const fn = current.recorder.functions[name];
    if (!fn) return Promise.reject(new Error(`there is no tool named "${name}"`));
    return fn(args, current.signal);
  };

  /**
   * Runs one cell with its tool calls recorded; writes a trace when it made any. Returns what
   * `run` returned and the trace's path, if one was written.
   */
  async runCell<T>(code: string, signal: AbortSignal, run: () => Promise<T>, summarize: (result: T) => CellSummary): Promise<{ result: T; tracePath?: string }> {
    const recorder = recordCalls(this.tools, { principal: PYTHON_PRINCIPAL });
    this.current = { recorder, signal };
    let result: T;
    try {
      result = await run();
    } finally {
      this.current = undefined;
    }
    const calls = recorder.finish();
    if (calls.length === 0) return { result };
    const summary = summarize(result);
    const trace: ProgramTrace = {
      id: newTraceId(),
      sessionId: this.session.id,
      createdAt: new Date().toISOString(),
      code,
      sha256: createHash('sha256').update(code).digest('hex'),
      principal: PYTHON_PRINCIPAL,
      runtime: 'python',
      calls,
      stdout: summary.output,
      droppedOutputBytes: 0,
      ok: summary.ok,
      ...(summary.error ? { error: { kind: 'thrown', message: summary.error } } : {}),
    };
    return { result, tracePath: writeTrace(this.session.dir, trace) };
  }
}
