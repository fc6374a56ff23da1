/** One open fence: the character it is made of and how many of them opened it. */
export interface FenceLevel {
  char: '`' | '~';
  length: number;
}

/** A fence line as read from one line of text: its run of fence characters, its indentation and its info string. */
export interface FenceLine extends FenceLevel {
  /** Spaces before the run (0 to 3). */
  indent: number;
  /** The info string with surrounding whitespace removed; empty for a bare fence. */
  info: string;
}

/**
 * Reads a markdown fence line: up to three spaces of indentation, then a run of at least three
 * backticks or tildes, then an optional info string. Following CommonMark, a backtick fence's
 * info string may not contain a backtick (such a line is inline code, not a fence).
 */
export function readFenceLine(line: string): FenceLine | undefined {
  let at = 0;
  while (at < 3 && line.charCodeAt(at) === 0x20) at++;
  const char = line[at];
  if (char !== '`' && char !== '~') return undefined;
  let runEnd = at;
  while (line[runEnd] === char) runEnd++;
  const length = runEnd - at;
  if (length < 3) return undefined;
  const info = line.slice(runEnd).trim();
  if (char === '`' && info.includes('`')) return undefined;
  return { char, length, indent: at, info };
}

/** Whether a bare fence of `fence`'s run could close `level`: the same character, at least as many. */
export function fenceCloses(fence: FenceLevel, level: FenceLevel): boolean {
  return fence.char === level.char && fence.length >= level.length;
}

/**
 * Whether a fence line with an info string may open a nested block inside an open one: its
 * info string starts as a language tag or a tool's name does (a letter, digit, `_`, `.`, `+`,
 * `-` or `{`). A run of backticks followed by quotes or other punctuation (```` ```''' ````, the
 * end of a string in code that holds a fence) is an ordinary line of the block: it neither
 * closes it nor opens a nested one.
 */
export function opensNestedBlock(fence: FenceLine): boolean {
  return /^[\p{L}\p{N}_.+{-]/u.test(fence.info);
}

/**
 * A blank line in CommonMark's sense: nothing but spaces and tabs before its line break
 * (`\n` or `\r\n`, or none at the end of the text).
 */
export function isBlankLine(line: string): boolean {
  return /^[ \t]*(\r?\n)?$/.test(line);
}
