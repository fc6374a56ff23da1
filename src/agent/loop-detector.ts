import { createHash, type Hash } from 'node:crypto';

/** One finished tool call, as the step loop saw it. */
export interface ObservedCall {
  /** The tool's name. */
  tool: string;
  /** The call's input: its input object, or for a block its args and content. Compared by value, key order ignored. */
  input: unknown;
  /** What the model read back. */
  output: string;
  isError: boolean;
}

/** What the step loop should do after a call: go on, tell the model it is looping, or end the run. */
export type LoopVerdict = { action: 'continue' } | { action: 'nudge'; message: string } | { action: 'stop'; reason: string };

/**
 * Thresholds of a {@link LoopDetector}: whole numbers from 1, or `Infinity` for never. A nudge
 * threshold must be below its stop threshold (a nudge at or after the stop could never be given).
 */
export interface LoopDetectorOptions {
  /** Identical calls in a row that earn a nudge (default 3). */
  repeatNudge?: number;
  /** Identical calls in a row that stop the run (default 5). */
  repeatStop?: number;
  /** Same errors from one tool in a row that earn a nudge (default 3). */
  errorNudge?: number;
  /** Same errors from one tool in a row that stop the run (default 5). */
  errorStop?: number;
}

/** The default thresholds. */
export const DEFAULT_LOOP_LIMITS: Readonly<Required<LoopDetectorOptions>> = { repeatNudge: 3, repeatStop: 5, errorNudge: 3, errorStop: 5 };

/** A run of consecutive calls that share a key (a sha256 digest). */
interface Streak {
  key: string;
  count: number;
}

/**
 * Watches the tool calls of a run, one at a time, for a model that is going round in circles.
 * Pure: no I/O, no timers, no clock; the verdict depends only on the calls observed so far.
 *
 * Two streaks are kept, each as a digest and a count, so memory stays the same however long the
 * session (no history is stored, and no input or output is held past `observe`):
 *
 * - **Repeat streak**: the same call again and again. Two calls are the same when they have
 *   the same tool, the same input (canonical JSON: object keys sorted at every depth, so key
 *   order does not matter; array order does) and the same result (error or not, and the same
 *   output after {@link normaliseOutput}). A call with the same input but a changed result is
 *   not a repeat: it brought something new (polling a log while a build runs is not a loop).
 *   Any other call ends the streak, so `shell npm test` → `save` → `shell npm test` is two
 *   streaks of one.
 * - **Error streak**: the same error from the same tool again and again, whatever the inputs
 *   (the model keeps trying variations that all fail the same way). Two errors are the same
 *   when they come from the same tool with the same output after {@link normaliseOutput}. A
 *   success (from any tool) ends the streak; an error from another tool, or another error,
 *   starts a new one.
 *
 * With the defaults, 3 in a row of either earns one nudge (a message for the model saying
 * what it repeated and what to do instead), and 5 in a row stops the run (a one-line reason
 * for the user). A nudge is given once, on the call that reaches its threshold; the streak
 * then keeps counting towards the stop, which is returned for every call from the stop
 * threshold on while the streak lasts. When several verdicts are due on one call, a stop
 * wins over a nudge, and the repeat streak over the error streak (its message is the more
 * precise one).
 */
export class LoopDetector {
  private readonly limits: Required<LoopDetectorOptions>;
  private repeat: Streak | undefined;
  private error: Streak | undefined;

  /** Throws a RangeError for a threshold that is not a whole number from 1 (or Infinity), or a nudge not below its stop. */
  constructor(options: LoopDetectorOptions = {}) {
    const limits = { ...DEFAULT_LOOP_LIMITS };
    for (const name of Object.keys(limits) as (keyof LoopDetectorOptions)[]) {
      const value = options[name];
      if (value === undefined) continue;
      if (!(value === Infinity || (Number.isInteger(value) && value >= 1))) {
        throw new RangeError(`${name} must be a whole number from 1, or Infinity; got ${String(value)}`);
      }
      limits[name] = value;
    }
    for (const kind of ['repeat', 'error'] as const) {
      const nudge = limits[`${kind}Nudge`];
      const stop = limits[`${kind}Stop`];
      if (nudge !== Infinity && nudge >= stop) throw new RangeError(`${kind}Nudge (${nudge}) must be below ${kind}Stop (${stop})`);
    }
    this.limits = limits;
  }

  /** Takes the next finished call and says what to do. Never throws for JSON-like input (a throwing `toJSON` or getter would). */
  observe(call: ObservedCall): LoopVerdict {
    const output = createHash('sha256').update(normaliseOutput(call.output)).digest('hex');
    const tool = JSON.stringify(call.tool);
    const callHash = createHash('sha256').update(`call ${tool} ${call.isError ? 'error' : 'ok'} ${output} `);
    writeCanonicalJson(callHash, call.input, new Set());
    this.repeat = extend(this.repeat, callHash.digest('hex'));
    this.error = call.isError ? extend(this.error, createHash('sha256').update(`error ${tool} ${output}`).digest('hex')) : undefined;

    const { repeatNudge, repeatStop, errorNudge, errorStop } = this.limits;
    const repeats = this.repeat.count;
    const errors = this.error?.count ?? 0;
    const name = toolLabel(call.tool);
    if (repeats >= repeatStop) return { action: 'stop', reason: `the same ${name} call ${repeats} times in a row` };
    if (errors >= errorStop) return { action: 'stop', reason: `the same ${name} error ${errors} times in a row` };
    if (repeats === repeatNudge) {
      const what = call.isError ? 'error' : 'result';
      return {
        action: 'nudge',
        message:
          `You have made the same ${name} call ${repeats} times in a row, with the same ${what} each time. ` +
          `Stop repeating it: read the ${what}, change the input or take another approach, or explain what blocks you.` +
          stopNote('the same call', repeatStop),
      };
    }
    if (errors === errorNudge) {
      return {
        action: 'nudge',
        message:
          `Your last ${errors} ${name} calls failed with the same error. ` +
          'Stop retrying the same way: read the error and fix its cause (change the code, the command or the input), or explain what blocks you.' +
          stopNote('the same error', errorStop),
      };
    }
    return { action: 'continue' };
  }
}

/** Adds one call with `key` to a streak: the same key extends it, another starts a new one. */
function extend(streak: Streak | undefined, key: string): Streak {
  return streak?.key === key ? { key, count: streak.count + 1 } : { key, count: 1 };
}

function stopNote(what: string, stop: number): string {
  return stop === Infinity ? '' : ` The run stops if ${what} comes ${stop} times in a row.`;
}

/** The tool's name for a message: on one line, at most 60 characters (a model may call a tool that does not exist, by any name). */
function toolLabel(tool: string): string {
  const name = tool.replace(/\s+/g, ' ').trim();
  if (name === '') return '(unnamed)';
  return name.length > 60 ? `${name.slice(0, 59)}…` : name;
}

/**
 * Feeds `value` to the hash as canonical JSON: object keys sorted (by UTF-16 code units) at
 * every depth, no spaces. Follows JSON.stringify otherwise (`toJSON` is used, undefined,
 * functions and symbols are left out of objects and become null in arrays, non-finite numbers
 * become null), and never throws where it would: a bigint is written as its digits and `n`, a
 * cycle as the string `[circular]`, and an input that is undefined as `undefined`. Writes
 * piece by piece, so a large input is never copied into one string.
 */
function writeCanonicalJson(hash: Hash, value: unknown, ancestors: Set<object>): void {
  if (typeof value === 'bigint') {
    hash.update(`${value}n`);
    return;
  }
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') {
    hash.update(ancestors.size === 0 ? 'undefined' : 'null');
    return;
  }
  if (value === null || typeof value !== 'object') {
    hash.update(JSON.stringify(value));
    return;
  }
  if (ancestors.has(value)) {
    hash.update('"[circular]"');
    return;
  }
  const toJson = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJson === 'function') {
    const replaced: unknown = toJson.call(value);
    ancestors.add(value);
    writeCanonicalJson(hash, replaced === undefined ? null : replaced, ancestors);
    ancestors.delete(value);
    return;
  }
  ancestors.add(value);
  if (Array.isArray(value)) {
    hash.update('[');
    value.forEach((item: unknown, i) => {
      if (i > 0) hash.update(',');
      writeCanonicalJson(hash, item, ancestors);
    });
    hash.update(']');
  } else {
    const record = value as Record<string, unknown>;
    hash.update('{');
    let first = true;
    for (const key of Object.keys(record).sort()) {
      const item = record[key];
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
      hash.update(`${first ? '' : ','}${JSON.stringify(key)}:`);
      first = false;
      writeCanonicalJson(hash, item, ancestors);
    }
    hash.update('}');
  }
  ancestors.delete(value);
}

/** ISO 8601 date and time, with `:` or (in file names) `-` between the parts. */
const TIMESTAMP = /\b\d{4}-\d{2}-\d{2}[T ]\d{2}([:-])\d{2}(?:\1\d{2}(?:[.,-]\d+)?)?(?:Z|[+-]\d{2}:?\d{2}\b)?/g;
/** A time of day with seconds: `12:30:45`, `09:05:01.123`. Not two numbers (`file.ts:12:5`). */
const CLOCK = /(?<![\d:])\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?![\d:])/g;
/** A duration: a number with a time unit, or several in a row (`1.52s`, `340 ms`, `1m 30s`, `2 seconds`). */
const DURATION =
  /(?<![\w.])\d+(?:\.\d+)?\s?(?:ns|\u00b5s|\u03bcs|us|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)(?:\s?\d+(?:\.\d+)?\s?(?:ns|\u00b5s|\u03bcs|us|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h))*(?!\w)/g;
/** A process id after the word pid: `pid 4242`, `PID: 4242`, `pid=4242`. */
const PID = /(?<![a-z])pid(?![a-z])[\s:=#]*\d+/gi;
/** A UUID. */
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
/** A memory address: `0x` and at least 6 hex digits (a short one, `0x1F`, is a value and is kept). */
const ADDRESS = /\b0x[0-9a-f]{6,}\b/gi;
/** A run of 10 or more digits: epoch seconds or milliseconds, generated ids. */
const LONG_NUMBER = /(?<!\d)\d{10,}(?!\d)/g;
/** The line fence adds to a cut output, naming the file that holds all of it (save time and random suffix in its name). */
const SAVED_OUTPUT = /^The full output is in .*$/gm;
/** The marker fence puts where it cut the middle out of a long output. */
const CUT_MARKER = /^\[\u2026 \d+ lines \(\d+ characters\) left out \u2026\]$/gm;

/**
 * The form of a tool's output that two calls are compared by, with the parts that change from
 * run to run of the same thing replaced by placeholders, so a repeated failure is recognised
 * even though each run of it took a different time:
 *
 * - line endings: CR LF and a bare CR become LF; whitespace at the end of each line, and blank
 *   lines at the start and end, are removed (invisible to the model);
 * - fence's own notes on a cut output: the line naming the file that holds the whole output
 *   (`The full output is in …`, whose name carries the time and a random suffix) and the
 *   counts in the cut marker (they shift when a timing in the middle changes length);
 * - date-times (`2024-05-01T12:30:45.123Z`, also with `-` in the time, as in file names) and
 *   times of day with seconds (`12:30:45`) → `<time>`;
 * - durations, a number with a time unit (`1.52s`, `340 ms`, `1m 30s`, `0.5 seconds`) →
 *   `<duration>`;
 * - a process id after the word pid (`pid 4242`) → `pid <n>`;
 * - UUIDs → `<uuid>`, memory addresses (`0x7f3a2c1b9e40`, 6+ hex digits) → `0x<hex>`, and runs
 *   of 10 or more digits (epoch times, generated ids) → `<number>`.
 *
 * Everything else is kept as it is, on purpose: line and column numbers (an error at another
 * place is another error, and a model whose failures move is getting somewhere), exit codes,
 * counts (`3 failed` → `2 failed` is progress), short numbers and hex values, paths, and text
 * case. Escape sequences are already removed from shell output, and colours do not vary.
 */
export function normaliseOutput(output: string): string {
  return output
    .replace(/\r\n?/g, '\n')
    .replace(/[^\S\n]+$/gm, '')
    .replace(/^\n+|\n+$/g, '')
    .replace(SAVED_OUTPUT, 'The full output is in <file>.')
    .replace(CUT_MARKER, '[… <n> lines (<n> characters) left out …]')
    .replace(TIMESTAMP, '<time>')
    .replace(CLOCK, '<time>')
    .replace(UUID, '<uuid>')
    .replace(ADDRESS, '0x<hex>')
    .replace(PID, 'pid <n>')
    .replace(LONG_NUMBER, '<number>')
    .replace(DURATION, '<duration>');
}
