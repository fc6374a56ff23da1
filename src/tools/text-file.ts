
/** How far into a file to look for a NUL byte, the sign of a binary file (as git decides). */
const BINARY_SNIFF_BYTES = 8192;

/**
 * Whether `bytes` are those of a binary file: a NUL byte within the first 8 KB, the test git
 * uses. The file tools (read, grep, save, append, patch) work on text files only and refuse
 * these, so that none of them mangles an image or an archive.
 */
export function isBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

/** A line break as stored in a file. */
export type LineEnding = '\n' | '\r\n';

/** One line of a text, without its line break, and the break that ended it (`''` for none). */
export interface TextLine {
  text: string;
  eol: LineEnding | '';
}

/**
 * Splits a text into lines, keeping each line's own break, so that joining `text + eol` of
 * every line gives the input back exactly. An empty text has no lines; a text ending with a
 * line break has no empty last line.
 */
export function splitLines(text: string): TextLine[] {
  const lines: TextLine[] = [];
  const breaks = /\r?\n/g;
  let start = 0;
  for (const found of text.matchAll(breaks)) {
    lines.push({ text: text.slice(start, found.index), eol: found[0] as LineEnding });
    start = found.index + found[0].length;
  }
  if (start < text.length) lines.push({ text: text.slice(start), eol: '' });
  return lines;
}

/**
 * The line break most used in `text`: CRLF when it ends more lines than a bare LF does, LF
 * otherwise (also for a text without any break). Works on any text whose line breaks are
 * ASCII, so a file's bytes decoded as latin1 will do.
 */
export function dominantLineEnding(text: string): LineEnding {
  let crlf = 0;
  let lf = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) {
    if (at > 0 && text[at - 1] === '\r') crlf += 1;
    else lf += 1;
  }
  return crlf > lf ? '\r\n' : '\n';
}

/** Whether `text` has at least one line break. */
export function hasLineBreak(text: string): boolean {
  return text.includes('\n');
}

/** Rewrites every line break in `text` (CRLF or LF) as `eol`. */
export function convertLineEndings(text: string, eol: LineEnding): string {
  return text.replace(/\r?\n/g, eol);
}

/** `text` ending with a line break: unchanged if it already does or is empty, else with `eol` added. */
export function withFinalNewline(text: string, eol: LineEnding): string {
  if (text === '' || text.endsWith('\n')) return text;
  return text + eol;
}

/** Number of lines in `text`: its line breaks, plus one for a last line without a break. */
export function countLines(text: string): number {
  let count = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) count += 1;
  if (text !== '' && !text.endsWith('\n')) count += 1;
  return count;
}

/** `"12 lines, 340 bytes"`, with the singular where it applies. */
export function describeSize(lines: number, bytes: number): string {
  return `${plural(lines, 'line')}, ${plural(bytes, 'byte')}`;
}

/** `"1 hunk"`, `"2 hunks"`; `many` names irregular plurals (`plural(3, 'entry', 'entries')`). */
export function plural(count: number, noun: string, many = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : many}`;
}
