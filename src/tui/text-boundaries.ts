/**
 * Boundaries in the text of the line editor: lines, grapheme clusters, code points and words,
 * as string indexes the cursor moves to and edits reach.
 */

export const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const WORD_CHAR = /[\p{L}\p{N}\p{M}_]/u;

/** The index where the line holding `i` starts. */
export function lineStart(text: string, i: number): number {
  return i <= 0 ? 0 : text.lastIndexOf('\n', i - 1) + 1;
}

/** The index where the line holding `i` ends (its `\n`, or the end of the text). */
export function lineEnd(text: string, i: number): number {
  const end = text.indexOf('\n', i);
  return end < 0 ? text.length : end;
}

/** The grapheme boundary before `i` (a line break is one character). */
export function previousBoundary(text: string, i: number): number {
  if (i <= 0) return 0;
  if (text[i - 1] === '\n') return i - 1;
  const start = lineStart(text, i);
  let last = start;
  for (const { index } of graphemes.segment(text.slice(start, i))) last = start + index;
  return last;
}

/** The grapheme boundary after `i`. */
export function nextBoundary(text: string, i: number): number {
  if (i >= text.length) return text.length;
  if (text[i] === '\n') return i + 1;
  const first = graphemes.segment(text.slice(i, lineEnd(text, i)))[Symbol.iterator]().next();
  return first.done ? i + 1 : i + first.value.segment.length;
}

/** The code point ending at `i`. */
function charBefore(text: string, i: number): string {
  const low = text.charCodeAt(i - 1);
  return low >= 0xdc00 && low <= 0xdfff && i >= 2 ? text.slice(i - 2, i) : text.slice(i - 1, i);
}

/** The code point starting at `i`. */
function charAt(text: string, i: number): string {
  const code = text.codePointAt(i) ?? 0;
  return text.slice(i, i + (code > 0xffff ? 2 : 1));
}

/** Back to the start of the word before `i` (letters, digits, marks, `_`), over what separates them. */
export function wordStart(text: string, i: number): number {
  let j = i;
  while (j > 0 && !WORD_CHAR.test(charBefore(text, j))) j -= charBefore(text, j).length;
  while (j > 0 && WORD_CHAR.test(charBefore(text, j))) j -= charBefore(text, j).length;
  return j;
}

/** On to the end of the word after `i`. */
export function wordEnd(text: string, i: number): number {
  let j = i;
  while (j < text.length && !WORD_CHAR.test(charAt(text, j))) j += charAt(text, j).length;
  while (j < text.length && WORD_CHAR.test(charAt(text, j))) j += charAt(text, j).length;
  return j;
}

/** Back over white space, then over everything up to the white space before it (Ctrl-W in shells). */
export function spaceWordStart(text: string, i: number): number {
  let j = i;
  while (j > 0 && /\s/.test(text[j - 1] ?? '')) j--;
  while (j > 0 && !/\s/.test(text[j - 1] ?? '')) j--;
  return j;
}
