import { createRequire } from 'node:module';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Worker } from 'node:worker_threads';
import { runsInLinearTime } from './linear-regexp';
import { ToolInputError } from './tool-error';

/** Loads `node:worker_threads` when a worker is first needed: it costs milliseconds, and most greps never need one. */
const requireBuiltin = createRequire(import.meta.url);

/**
 * Where `grep` runs the model's regular expression, so that no pattern can keep fence busy:
 * on the main thread when V8's linear-time engine can take over from it (see
 * `runsInLinearTime`) and the file's lines are short, yielding to the event loop between
 * lines every few milliseconds; otherwise in a worker thread, which is terminated when one
 * file takes longer than its budget or the call is stopped. Either way the main thread stays
 * free, so Ctrl-C, `--timeout` and a program's wall clock stop a search at once.
 */

/** Longest line the main thread matches: a linear-time match still costs the pattern's size times the line's length. */
export const MAIN_THREAD_LINE_CHARS = 4096;

/** How long the worker may take over one file before the search is stopped. */
export const GREP_FILE_BUDGET_MS = 3000;

/** How long the main thread matches lines before it lets the event loop run. */
const SLICE_MS = 10;

/** Lines matched between two looks at the clock. */
const LINES_PER_LOOK = 256;

/** The error a search ends with when its pattern took longer than the budget on one file. */
export class PatternTooSlowError extends ToolInputError {}

/** Matches the lines of one file after another; `close` ends its worker, if it started one. */
export interface LineMatcher {
  /** Indices (from 0) of the lines of `text` (split at `\n`, a trailing `\r` dropped) that the pattern matches. */
  matchLines(text: string, shown: string): Promise<number[]>;
  close(): Promise<void>;
}

/**
 * A `LineMatcher` for `regex` (no flags), stopped by `signal` (its promise rejects with the
 * signal's reason). A file whose match takes longer than `budgetMs` in the worker rejects with
 * `PatternTooSlowError`, saying what to do instead.
 */
export function lineMatcher(regex: RegExp, signal: AbortSignal, budgetMs = GREP_FILE_BUDGET_MS): LineMatcher {
  const linear = runsInLinearTime(regex.source, regex.flags);
  let worker: WorkerSearch | undefined;
  return {
    async matchLines(text, shown) {
      const lines = text.split('\n');
      if (linear && lines.every((line) => line.length <= MAIN_THREAD_LINE_CHARS)) return matchHere(regex, lines, signal);
      worker ??= new WorkerSearch(regex);
      return worker.match(text, shown, signal, budgetMs);
    },
    async close() {
      await worker?.close();
    },
  };
}

async function matchHere(regex: RegExp, lines: readonly string[], signal: AbortSignal): Promise<number[]> {
  const found: number[] = [];
  let sliceEnd = performance.now() + SLICE_MS;
  for (let index = 0; index < lines.length; index++) {
    if (index % LINES_PER_LOOK === LINES_PER_LOOK - 1 && performance.now() > sliceEnd) {
      await nextTurn();
      signal.throwIfAborted();
      sliceEnd = performance.now() + SLICE_MS;
    }
    const raw = lines[index] ?? '';
    if (regex.test(raw.endsWith('\r') ? raw.slice(0, -1) : raw)) found.push(index);
  }
  return found;
}

/** The worker's program: it compiles the pattern once and answers each text with its matching lines. */
const WORKER_PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const regex = new RegExp(workerData.source, workerData.flags);
parentPort.on('message', (text) => {
  const found = [];
  const lines = text.split('\\n');
  for (let index = 0; index < lines.length; index++) {
    const raw = lines[index];
    if (regex.test(raw.endsWith('\\r') ? raw.slice(0, -1) : raw)) found.push(index);
  }
  parentPort.postMessage(found);
});
`;

/**
 * One worker thread matching texts one at a time; replaced by a fresh one after it was
 * terminated. A text's budget runs from when the worker is up: starting one is not the
 * pattern's doing.
 */
class WorkerSearch {
  private worker: Worker | undefined;
  private online = false;

  constructor(private readonly regex: RegExp) {}

  match(text: string, shown: string, signal: AbortSignal, budgetMs: number): Promise<number[]> {
    signal.throwIfAborted();
    if (this.worker === undefined) {
      const { Worker: WorkerThread } = requireBuiltin('node:worker_threads') as typeof import('node:worker_threads');
      this.worker = new WorkerThread(WORKER_PROGRAM, { eval: true, workerData: { source: this.regex.source, flags: this.regex.flags } });
      this.online = false;
      this.worker.once('online', () => (this.online = true));
    }
    const worker = this.worker;
    return new Promise<number[]>((resolve, reject) => {
      const settle = (end: () => void) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('online', startBudget);
        end();
      };
      const stop = (reason: unknown) => {
        this.worker = undefined;
        void worker.terminate();
        settle(() => reject(reason));
      };
      const onMessage = (found: number[]) => settle(() => resolve(found));
      const onError = (error: Error) => stop(error);
      const onAbort = () => stop(signal.reason);
      let timer: NodeJS.Timeout | undefined;
      const startBudget = () => (timer = setTimeout(() => stop(new PatternTooSlowError(tooSlow(this.regex, shown, budgetMs))), budgetMs));
      if (this.online) startBudget();
      else worker.once('online', startBudget);
      worker.on('message', onMessage);
      worker.on('error', onError);
      signal.addEventListener('abort', onAbort, { once: true });
      worker.postMessage(text);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }
}

function tooSlow(regex: RegExp, shown: string, budgetMs: number): string {
  const seconds = budgetMs / 1000;
  return [
    `grep stopped: the pattern ${regex.source} ran over ${seconds} s on ${shown} (lookaround, backreferences, counts over 16 such as {40}, and very long lines can make a pattern backtrack without end).`,
    'Simplify the pattern or narrow the path, or search with the shell (grep -E or grep -P), which runs under the command timeout.',
  ].join(' ');
}
