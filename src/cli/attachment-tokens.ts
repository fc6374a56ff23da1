import { fileURLToPath } from 'node:url';

/**
 * Where a prompt names files to attach, found in its text alone (no file is looked at): the
 * `@path` mentions a person types, and the paths a terminal pastes when a file is dragged onto
 * it. `prompt-attachments.ts` decides, by looking at the files, which of them attach.
 */

/** One way to read a token: the path it names and where the token ends if read so. */
export interface TokenReading {
  /** The path as named: unquoted, escapes undone, a `file://` URL made a path; may be relative or start with `~/`. */
  path: string;
  /** Index just after the token read this way (exclusive). */
  end: number;
}

/** A place in a prompt that may name a file. */
export interface AttachmentToken {
  /**
   * `mention`: `@path`, `@"a b.png"`, `@a\ b.png`; the person asked for a file.
   * `pasted`: a path as a terminal pastes a dragged file (`'/home/me/Shot 1.png'`,
   * `/home/me/Shot\ 1.png`, `file:///…`); counts only if it names an image, so prose is never taken.
   */
  kind: 'mention' | 'pasted';
  /** Index of the token's first character (the `@` of a mention). */
  start: number;
  /**
   * The readings to try in order: the whole token first, then (for a token not quoted) the
   * token without the punctuation prose puts after a word (`.` `,` `;` `:` `!` `?` `)` `]` `}`
   * and quotes), which is left in the text.
   */
  readings: readonly TokenReading[];
  /** Quoted or with escaped characters: written as a path on purpose. */
  deliberate: boolean;
}

/** Characters prose puts right after a word, which a path rarely ends with. */
const TRAILING_PROSE = /[.,;:!?)\]}'"]+$/;
/** Characters after which an `@` starts a mention: an `@` inside a word (an e-mail address) does not. */
const BEFORE_MENTION = /[\s([{]/;

/**
 * The tokens of `prompt` that may name files, in text order, none overlapping. Text inside a
 * code span or block (between backtick runs of the same length) has none: `` `a@b` `` and a
 * pasted shell command stay as they are. Pure: the files are not looked at.
 */
export function findAttachmentTokens(prompt: string): AttachmentToken[] {
  const code = codeSpans(prompt);
  const tokens: AttachmentToken[] = [];
  let i = 0;
  let next = 0;
  while (i < prompt.length) {
    while ((code[next]?.end ?? Infinity) <= i) next += 1;
    const span = code[next];
    if (span && span.start <= i) {
      i = span.end;
      continue;
    }
    const before = i === 0 ? ' ' : (prompt[i - 1] ?? ' ');
    const token = prompt[i] === '@' && BEFORE_MENTION.test(before) ? mentionAt(prompt, i) : /\s/.test(before) ? pastedAt(prompt, i) : undefined;
    if (token) {
      tokens.push(token);
      i = token.readings[0]?.end ?? i + 1;
      continue;
    }
    i += 1;
  }
  return tokens;
}

/** The mention starting with the `@` at `at`, if a path follows it. */
function mentionAt(prompt: string, at: number): AttachmentToken | undefined {
  const quote = prompt[at + 1];
  if (quote === '"' || quote === "'") {
    const quoted = quotedAt(prompt, at + 1);
    return quoted && quoted.path ? { kind: 'mention', start: at, readings: [quoted], deliberate: true } : undefined;
  }
  const word = wordAt(prompt, at + 1);
  if (!word.text) return undefined;
  return { kind: 'mention', start: at, readings: readingsOf(word, at + 1), deliberate: word.escaped };
}

/** A path pasted at `at` (after whitespace or at the start), if one starts there. */
function pastedAt(prompt: string, at: number): AttachmentToken | undefined {
  const first = prompt[at];
  if (first === '"' || first === "'") {
    const quoted = quotedAt(prompt, at);
    if (!quoted || !endsWord(prompt, quoted.end)) return undefined;
    const path = pastedPath(quoted.path);
    return path === undefined ? undefined : { kind: 'pasted', start: at, readings: [{ path, end: quoted.end }], deliberate: true };
  }
  if (first !== '/' && first !== '~' && first !== 'f') return undefined;
  const word = wordAt(prompt, at);
  if (pastedPath(word.text) === undefined) return undefined;
  const readings = readingsOf(word, at).flatMap((reading) => {
    const path = pastedPath(reading.path);
    return path === undefined ? [] : [{ path, end: reading.end }];
  });
  return readings.length > 0 ? { kind: 'pasted', start: at, readings, deliberate: word.escaped } : undefined;
}

/** `text` as a path if it has the form of a dragged file's: absolute, `~/…`, or a `file://` URL. */
function pastedPath(text: string): string | undefined {
  if (text.startsWith('file://')) {
    try {
      return fileURLToPath(text);
    } catch {
      return undefined;
    }
  }
  return text.length > 1 && (text.startsWith('/') || text.startsWith('~/')) ? text : undefined;
}

/** A word read from `from`: up to whitespace or a backtick that no backslash escapes. */
interface Word {
  /** The word with its escapes undone. */
  text: string;
  /** Index just after it. */
  end: number;
  /** Whether a backslash escaped a character in it. */
  escaped: boolean;
  /** For each character of `text`, the index just after it in the prompt. */
  ends: number[];
}

function wordAt(prompt: string, from: number): Word {
  let text = '';
  let escaped = false;
  const ends: number[] = [];
  let i = from;
  while (i < prompt.length) {
    const char = prompt[i] ?? '';
    if (char === '\\' && i + 1 < prompt.length && prompt[i + 1] !== '\n') {
      text += prompt[i + 1];
      escaped = true;
      i += 2;
      ends.push(i);
      continue;
    }
    if (/\s/.test(char) || char === '`') break;
    text += char;
    i += 1;
    ends.push(i);
  }
  return { text, end: i, escaped, ends };
}

/** The whole word, then the word without trailing prose punctuation when that differs. */
function readingsOf(word: Word, from: number): TokenReading[] {
  const whole = { path: word.text, end: word.end };
  const trimmed = word.text.replace(TRAILING_PROSE, '');
  if (trimmed === word.text || !trimmed) return [whole];
  return [whole, { path: trimmed, end: word.ends[trimmed.length - 1] ?? from }];
}

/** The quoted text starting at the quote at `at`, closed on the same line, or undefined. */
function quotedAt(prompt: string, at: number): TokenReading | undefined {
  const quote = prompt[at] ?? '';
  const close = prompt.indexOf(quote, at + 1);
  if (close === -1) return undefined;
  const path = prompt.slice(at + 1, close);
  if (path.includes('\n')) return undefined;
  return { path, end: close + 1 };
}

/** Whether a token ending at `end` ends a word there: at the end of the prompt, before whitespace or prose punctuation. */
function endsWord(prompt: string, end: number): boolean {
  return end >= prompt.length || /[\s.,;:!?)\]}]/.test(prompt[end] ?? '');
}

/**
 * The code spans and blocks of `text` as index ranges: a run of backticks up to the next run
 * of the same length (markdown's rule, which covers fenced blocks too). A run never closed is
 * plain text.
 */
function codeSpans(text: string): { start: number; end: number }[] {
  const spans: { start: number; end: number }[] = [];
  const runs = [...text.matchAll(/`+/g)];
  let i = 0;
  while (i < runs.length) {
    const open = runs[i];
    if (!open) break;
    const closeIndex = runs.findIndex((run, j) => j > i && run[0].length === open[0].length);
    if (closeIndex === -1) {
      i += 1;
      continue;
    }
    const close = runs[closeIndex];
    spans.push({ start: open.index, end: (close?.index ?? open.index) + open[0].length });
    i = closeIndex + 1;
  }
  return spans;
}

/**
 * The whole prompt as one pasted path, when it has that form and holds a space: a terminal that
 * pastes a dragged file's path without quotes or escapes (`/home/me/Shot 1.png`) leaves the
 * words apart, and only the whole line names the file. Undefined otherwise (quoted and escaped
 * forms are `findAttachmentTokens`' to find).
 */
export function wholePromptPath(prompt: string): AttachmentToken | undefined {
  const text = prompt.trim();
  if (!/\s/.test(text) || /[\n'"\\`]/.test(text)) return undefined;
  const path = pastedPath(text);
  if (path === undefined) return undefined;
  const start = prompt.indexOf(text);
  return { kind: 'pasted', start, readings: [{ path, end: start + text.length }], deliberate: false };
}
