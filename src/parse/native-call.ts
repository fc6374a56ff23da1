import { jsonrepair, JSONRepairError } from 'jsonrepair';

/**
 * What a native tool call's arguments text turned out to be.
 *
 * - `ok: true`: `value` is a plain object (as `JSON.parse` builds it), `json` is
 *   `JSON.stringify(value)` (compact, one line), and `repaired` tells whether anything other
 *   than surrounding whitespace had to be dropped or fixed to get there.
 * - `ok: false`: `error` is one line (under 200 characters) that says what is wrong and, for
 *   broken JSON, where; it quotes at most a short, escaped excerpt of the input.
 */
export type ParsedArguments =
  | { ok: true; value: Record<string, unknown>; json: string; repaired: boolean }
  | { ok: false; error: string };

/**
 * A line `@name(id): {json}` found in an assistant's text: the call's tool name, its id, its
 * arguments as {@link parseToolArguments} reads them, and where it is: `text.slice(start, end)`
 * runs from the `@` to the end of the line on which the arguments end, without its line break
 * (to the end of the text for arguments that never close).
 */
export interface NativeCallLine {
  name: string;
  id: string;
  arguments: ParsedArguments;
  start: number;
  end: number;
}

/**
 * Deepest nesting of `{`/`[` accepted in arguments. Tool arguments are a few levels deep;
 * `JSON.stringify` and jsonrepair recurse once per level and overflow the stack a few thousand
 * levels down, so deeper input is refused before either sees it.
 */
const MAX_DEPTH = 512;

/**
 * Longest arguments text (the first value's text, see {@link parseToolArguments}) that is
 * handed to jsonrepair. jsonrepair backtracks over unmatched quotes and takes time far worse
 * than linear on some inputs (seconds for a few kilobytes of crafted quotes, minutes for a few
 * tens of kilobytes), so only short texts get it.
 */
const REPAIR_LIMIT = 2048;

/** Characters {@link parseNativeCallLines} hands to jsonrepair in total for one text. */
const LINES_REPAIR_BUDGET = 8 * REPAIR_LIMIT;

/** How many characters jsonrepair may still be given; shared by the calls of one text. */
interface RepairBudget {
  left: number;
}

const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;
const STAR = 0x2a;
const COMMA = 0x2c;
const SLASH = 0x2f;
const COLON = 0x3a;
const OPEN_BRACKET = 0x5b;
const BACKSLASH = 0x5c;
const CLOSE_BRACKET = 0x5d;
const BACKTICK = 0x60;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const TILDE = 0x7e;

/** Where the first value of a text ends, and how deeply its brackets nest. */
interface BracketScan {
  /** Offset just past the bracket that closes the first value; undefined when the text ends first. */
  end: number | undefined;
  /** The deepest bracket nesting seen. */
  depth: number;
}

function isJsonSpace(code: number): boolean {
  return code === SPACE || code === LF || code === CR || code === TAB;
}

/**
 * Offset of the quote that closes the string opened by the quote at `open` (`"` or `'`), with
 * backslash escapes skipped; -1 when the text ends first. Strings may span lines.
 */
function closingQuote(text: string, open: number): number {
  const quote = text.charCodeAt(open);
  for (let at = open + 1; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === BACKSLASH) at++;
    else if (code === quote) return at;
  }
  return -1;
}

/**
 * Counts `{`/`[` up and `}`/`]` down from `from`, outside strings and comments, in one pass.
 * With `untilClosed` it stops where the count returns to zero (the value opened at `from` is
 * complete); without it, it only measures the depth of the whole text.
 *
 * It reads what models actually write, not only strict JSON:
 * - `"` always opens a string; `'` opens one only where a value or key may start (first in
 *   the text or after `{`, `[`, `,` or `:`), so the apostrophe in `{a: it's}` is a letter.
 * - `//` and `/*` start comments only after whitespace, a bracket, `,` or `"`, so the `//` in
 *   `{url: http://x}` is text.
 * On strict JSON all of this agrees exactly with `JSON.parse`.
 */
function scanBrackets(text: string, from: number, untilClosed: boolean): BracketScan {
  let depth = 0;
  let deepest = 0;
  /** The last character outside strings and comments that is not whitespace; 0 at the start. */
  let previous = 0;
  let at = from;
  while (at < text.length) {
    const code = text.charCodeAt(at);
    const opensString =
      code === QUOTE ||
      (code === APOSTROPHE &&
        (previous === 0 || previous === OPEN_BRACE || previous === OPEN_BRACKET || previous === COMMA || previous === COLON));
    if (opensString) {
      const close = closingQuote(text, at);
      if (close === -1) return { end: undefined, depth: deepest };
      previous = code;
      at = close + 1;
      continue;
    }
    if (code === SLASH && opensComment(text, at, from)) {
      const blockComment = text.charCodeAt(at + 1) === STAR;
      const close = blockComment ? text.indexOf('*/', at + 2) : text.indexOf('\n', at + 2);
      if (close === -1) return { end: undefined, depth: deepest };
      at = blockComment ? close + 2 : close;
      continue;
    }
    if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if ((code === CLOSE_BRACE || code === CLOSE_BRACKET) && depth > 0) {
      depth--;
      if (depth === 0 && untilClosed) return { end: at + 1, depth: deepest };
    }
    if (!isJsonSpace(code)) previous = code;
    at++;
  }
  return { end: undefined, depth: deepest };
}

/** Whether the `/` at `at` starts a `//` or `/*` comment (see {@link scanBrackets}). */
function opensComment(text: string, at: number, from: number): boolean {
  const next = text.charCodeAt(at + 1);
  if (next !== SLASH && next !== STAR) return false;
  if (at === from) return true;
  const before = text.charCodeAt(at - 1);
  return (
    isJsonSpace(before) ||
    before === OPEN_BRACE ||
    before === OPEN_BRACKET ||
    before === CLOSE_BRACE ||
    before === CLOSE_BRACKET ||
    before === COMMA ||
    before === QUOTE
  );
}

const CONTROL_ESCAPES: Readonly<Record<number, string>> = { 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r' };

function unicodeEscape(code: number): string {
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Escapes the raw control characters (U+0000–U+001F) inside `"` strings — the unescaped line
 * breaks and tabs that models often leave in long string values. Linear; returns `text`
 * itself when there is nothing to escape.
 */
function escapeControlCharacters(text: string): string {
  const parts: string[] = [];
  let copied = 0;
  let inString = false;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (!inString) {
      if (code === QUOTE) inString = true;
    } else if (code === BACKSLASH) {
      at++;
    } else if (code === QUOTE) {
      inString = false;
    } else if (code < SPACE) {
      parts.push(text.slice(copied, at), CONTROL_ESCAPES[code] ?? unicodeEscape(code));
      copied = at + 1;
    }
  }
  if (parts.length === 0) return text;
  parts.push(text.slice(copied));
  return parts.join('');
}

/** One character (a code point, or a lone surrogate) as it may appear in a one-line message. */
function escapeForMessage(char: string, quoted: boolean): string {
  if (quoted && (char === '"' || char === '\\')) return `\\${char}`;
  const code = char.charCodeAt(0);
  if (code < SPACE) return CONTROL_ESCAPES[code] ?? unicodeEscape(code);
  const lone = char.length === 1 && code >= 0xd800 && code <= 0xdfff;
  if ((code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029 || lone) return unicodeEscape(code);
  return char;
}

/**
 * `text` with control characters, line separators and lone surrogates escaped, cut (with `…`)
 * to at most `max` characters.
 */
function oneLine(text: string, max: number): string {
  let out = '';
  for (const char of text) {
    const piece = escapeForMessage(char, false);
    if (out.length + piece.length > max) return `${out}…`;
    out += piece;
  }
  return out;
}

/**
 * A short quoted excerpt of `text` around offset `at`: up to 16 characters (once escaped)
 * before it and 28 from it, with `…` where the text goes on.
 */
function excerptAround(text: string, at: number): string {
  const before = Array.from(text.slice(Math.max(0, at - 16), at));
  let head = '';
  let headFrom = at;
  for (let index = before.length - 1; index >= 0; index--) {
    const char = before[index] ?? '';
    const piece = escapeForMessage(char, true);
    if (head.length + piece.length > 16) break;
    head = piece + head;
    headFrom -= char.length;
  }
  let tail = '';
  let tailTo = at;
  for (const char of text.slice(at, at + 28)) {
    const piece = escapeForMessage(char, true);
    if (tail.length + piece.length > 28) break;
    tail += piece;
    tailTo += char.length;
  }
  return `"${headFrom > 0 ? '…' : ''}${head}${tail}${tailTo < text.length ? '…' : ''}"`;
}

/** `at position N, near "…"` for offset `at` of `text`. */
function placeIn(text: string, at: number): string {
  return `at position ${at}, near ${excerptAround(text, at)}`;
}

function failure(error: string): ParsedArguments {
  return { ok: false, error };
}

type JsonResult = { ok: true; value: unknown } | { ok: false; position: number | undefined };

/** `JSON.parse` without throwing; on failure, the offset V8 names in its message, if any. */
function parseJson(text: string): JsonResult {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    const match = error instanceof SyntaxError ? / at position (\d+)/.exec(error.message) : null;
    return { ok: false, position: match?.[1] === undefined ? undefined : Number(match[1]) };
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

/** The parsed value as arguments: a plain object, or the error naming what it is instead. */
function asArguments(value: unknown, repaired: boolean): ParsedArguments {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return failure(`the arguments must be a JSON object, not ${kindOf(value)}`);
  }
  const object = value as Record<string, unknown>;
  return { ok: true, value: object, json: JSON.stringify(object), repaired };
}

/** {@link parseToolArguments} with jsonrepair limited to what is left of `budget`. */
function readArguments(raw: string, budget: RepairBudget): ParsedArguments {
  try {
    return readArgumentsUnguarded(raw, budget);
  } catch (error) {
    // Not expected: the depth limit keeps recursion shallow. This is the last guard, should a
    // library still run out of stack (RangeError) or fail in some other way.
    return failure(`the arguments could not be read (${error instanceof Error ? oneLine(error.name, 40) : 'unknown error'})`);
  }
}

function readArgumentsUnguarded(raw: string, budget: RepairBudget): ParsedArguments {
  const start = raw.length - raw.trimStart().length;
  const stop = raw.trimEnd().length;
  if (start >= stop) return { ok: true, value: {}, json: '{}', repaired: false };
  const first = raw.charCodeAt(start);
  const scan = scanBrackets(raw, start, first === OPEN_BRACE || first === OPEN_BRACKET);
  if (scan.depth > MAX_DEPTH) return failure(`the arguments nest deeper than ${MAX_DEPTH} levels`);
  const cutEnd = scan.end ?? stop;
  const cut = raw.slice(start, cutEnd);
  const dropped = cutEnd < stop;

  const parsed = parseJson(cut);
  if (parsed.ok) return asArguments(parsed.value, dropped);
  const escaped = escapeControlCharacters(cut);
  if (escaped !== cut) {
    const reparsed = parseJson(escaped);
    if (reparsed.ok) return asArguments(reparsed.value, true);
  }

  if (cut.length > REPAIR_LIMIT || cut.length > budget.left) {
    const where = parsed.position === undefined ? '' : ` (${placeIn(raw, start + parsed.position)})`;
    return failure(
      cut.length > REPAIR_LIMIT
        ? `the arguments are not valid JSON${where} and too long to repair (${cut.length} characters, over ${REPAIR_LIMIT})`
        : `the arguments are not valid JSON${where} and were not repaired: the repair budget for this text is spent`,
    );
  }
  budget.left -= cut.length;
  let repaired: string;
  try {
    repaired = jsonrepair(cut);
  } catch (error) {
    if (!(error instanceof JSONRepairError)) throw error;
    const offset = Number.isInteger(error.position) ? Math.min(Math.max(0, error.position), cut.length) : cut.length;
    const reason = error.message.replace(/ at position \d+$/, '');
    const lowered = reason.charAt(0).toLowerCase() + reason.slice(1);
    return failure(`the arguments are not valid JSON: ${oneLine(lowered, 40)} ${placeIn(raw, start + offset)}`);
  }
  const reparsed = parseJson(repaired);
  if (!reparsed.ok) return failure(`the arguments are not valid JSON and could not be repaired, near ${excerptAround(raw, start)}`);
  return asArguments(reparsed.value, true);
}

/**
 * Reads the JSON arguments text of a native tool call as a provider delivered it, whatever it
 * is. It never throws.
 *
 * - Empty or whitespace-only text means no arguments: `{}`, not repaired.
 * - Surrounding whitespace (as `String.prototype.trim` sees it) is ignored. When the text
 *   starts with `{` or `[`, the first value ends where its brackets balance (counted outside
 *   strings and comments); anything after it is dropped — trailing text, or the second copy
 *   that some servers send (`{"a":1}{"a":1}`) — and that counts as a repair.
 * - That first value's text (the whole trimmed text when it does not start with a bracket) is
 *   parsed with `JSON.parse`. If that fails, raw control characters inside strings are escaped
 *   and it is parsed again; if that fails too, jsonrepair gets the same text (never what was
 *   dropped, so a duplicated value cannot turn into an array), but only when it is at most
 *   2048 characters long — jsonrepair is far slower than linear on some inputs. Any of these
 *   fixes makes `repaired` true.
 * - The value must be a plain object; an array, string, number, boolean or null is an error
 *   naming its kind.
 * - Input nesting deeper than 512 levels is refused before parsing, so no recursion in
 *   `JSON.stringify` or jsonrepair can overflow the stack; any error thrown anyway is caught
 *   and returned as a failure.
 *
 * Error positions count UTF-16 code units from the start of `raw`, from 0. A `__proto__` key
 * comes back as an own property of `value` (that is how `JSON.parse` builds it), never as its
 * prototype; copy such values with spread or `structuredClone`, not `Object.assign`. Numbers are
 * read as `JSON.parse` reads them (a number out of range becomes `Infinity`, written `null` in
 * `json`).
 */
export function parseToolArguments(raw: string): ParsedArguments {
  return readArguments(raw, { left: Number.POSITIVE_INFINITY });
}

/** An open fenced code block: its character and how many of them opened it. */
interface OpenFence {
  char: number;
  length: number;
}

/** A fence line: up to three spaces, then at least three backticks or tildes, then an info string. */
interface FenceLine extends OpenFence {
  bare: boolean;
}

/** Reads `text.slice(from, lineEnd)` as a fence line (CommonMark: no backtick in a backtick fence's info string). */
function readFenceLine(text: string, from: number, lineEnd: number): FenceLine | undefined {
  let at = from;
  while (at < from + 3 && at < lineEnd && text.charCodeAt(at) === SPACE) at++;
  const char = text.charCodeAt(at);
  if (at >= lineEnd || (char !== BACKTICK && char !== TILDE)) return undefined;
  let runEnd = at;
  while (runEnd < lineEnd && text.charCodeAt(runEnd) === char) runEnd++;
  if (runEnd - at < 3) return undefined;
  const info = text.slice(runEnd, lineEnd);
  if (char === BACKTICK && info.includes('`')) return undefined;
  return { char, length: runEnd - at, bare: info.trim() === '' };
}

/** `@name(id):` at the start of a line, after optional spaces or tabs. */
const CALL_HEAD = /([ \t]*)@([A-Za-z0-9_.:-]+)\(([^)\r\n]*)\):/y;

/**
 * Reads the call line that starts at `from` (its content, without the line break, ends at
 * `lineEnd`), if it is one: the head, then optional spaces and tabs, then `{` or the end of the
 * line (no arguments).
 */
function readCallLine(text: string, from: number, lineEnd: number, budget: RepairBudget): NativeCallLine | undefined {
  CALL_HEAD.lastIndex = from;
  const head = CALL_HEAD.exec(text);
  if (!head) return undefined;
  const [whole, indent = '', name = '', id = ''] = head;
  const argumentsFrom = from + whole.length;
  let at = argumentsFrom;
  while (at < lineEnd && (text.charCodeAt(at) === SPACE || text.charCodeAt(at) === TAB)) at++;
  let end = lineEnd;
  if (at < lineEnd) {
    if (text.charCodeAt(at) !== OPEN_BRACE) return undefined;
    const closed = scanBrackets(text, at, true).end;
    const newline = closed === undefined ? -1 : text.indexOf('\n', closed);
    if (newline === -1) end = text.length;
    else end = text.charCodeAt(newline - 1) === CR ? newline - 1 : newline;
  }
  const parsed = readArguments(text.slice(argumentsFrom, end), budget);
  return { name, id, arguments: parsed, start: from + indent.length, end };
}

/**
 * Every native call line in `text`, in text order — for reading logs and showing them. fence
 * never dispatches a call from this: history replay uses the structured calls stored on the
 * message (`meta.toolCalls`), and this text may have been written or edited by anyone.
 *
 * A call line starts (after optional spaces or tabs) with `@name(id):` — `name` of ASCII
 * letters, digits, `_`, `-`, `.` and `:` (so `server__tool` and `server.tool` both read),
 * `id` of any characters but `)` and line breaks, possibly empty — followed by optional spaces
 * or tabs and then a `{` or the end of the line. `@name(id):` elsewhere in a line is prose.
 *
 * The arguments run from after the `:` to the end of the line on which the object's brackets
 * balance (counted outside strings, as {@link parseToolArguments} counts them), so an object
 * may span several lines; an object that never closes runs to the end of the text. They are
 * read with the rules of {@link parseToolArguments} (nothing after the `:` means `{}`; error
 * positions count from just after the `:`), except that jsonrepair gets at most 16384
 * characters in total per text: later arguments that need it come back as errors, so a text
 * full of broken calls stays cheap.
 *
 * Lines inside fenced code blocks are skipped: a fence opens with up to three spaces and at
 * least three backticks or tildes (a backtick fence's info string has no backtick) and closes
 * with a fence line of the same character, at least as long, with nothing after it. A block
 * that never closes runs to the end of the text. Lines break at `\n` and `\r\n`.
 *
 * Each line is looked at once and each argument's text a bounded number of times, so the time
 * is linear in the length of `text`. Never throws.
 */
export function parseNativeCallLines(text: string): NativeCallLine[] {
  const calls: NativeCallLine[] = [];
  const budget: RepairBudget = { left: LINES_REPAIR_BUDGET };
  let fence: OpenFence | undefined;
  let at = 0;
  while (at < text.length) {
    const newline = text.indexOf('\n', at);
    const next = newline === -1 ? text.length : newline + 1;
    const lineEnd = newline === -1 ? text.length : newline > at && text.charCodeAt(newline - 1) === CR ? newline - 1 : newline;
    const fenceLine = readFenceLine(text, at, lineEnd);
    if (fence) {
      if (fenceLine && fenceLine.bare && fenceLine.char === fence.char && fenceLine.length >= fence.length) fence = undefined;
    } else if (fenceLine) {
      fence = { char: fenceLine.char, length: fenceLine.length };
    } else {
      const call = readCallLine(text, at, lineEnd, budget);
      if (call) {
        calls.push(call);
        const after = text.indexOf('\n', call.end);
        at = after === -1 ? text.length : after + 1;
        continue;
      }
    }
    at = next;
  }
  return calls;
}
