import { codePointWidth, stripAnsi, truncateToWidth, visibleWidth, type Style } from './terminal-style';
import { graphemes } from './text-boundaries';

/**
 * Layout of the line editor's buffer on the terminal: prompts fitted to the width, the text
 * laid out in rows with the cursor's place, and the widths and columns the cursor moves by.
 */

/** What the Tab key inserts; a pasted tab is kept as a tab and drawn this wide. */
export const TAB = '  ';

/** A prompt and its width in columns. */
export interface Prefix {
  text: string;
  width: number;
}

/** The buffer laid out on the terminal: rows to write and where the cursor goes. */
interface Frame {
  rows: string[];
  widths: number[];
  cursorRow: number;
  cursorCol: number;
}

/** `… ` right-aligned to `width` columns, so continued lines start under the first. */
export function defaultContinuation(width: number, style: Style): string {
  if (width <= 0) return '';
  if (width === 1) return style.dim('…');
  return `${' '.repeat(width - 2)}${style.dim('…')} `;
}

/** A prompt cut (and uncoloured) when it would leave the text less than two columns. */
export function fitPrefix(prefix: Prefix, columns: number): Prefix {
  if (prefix.width <= columns - 2) return prefix;
  if (columns <= 3) return { text: '', width: 0 };
  const text = truncateToWidth(stripAnsi(prefix.text), columns - 2);
  return { text, width: visibleWidth(text) };
}

/** `\x1b[<n>A`, or nothing for no rows. */
export function up(rows: number): string {
  return rows > 0 ? `\x1b[${rows}A` : '';
}

/**
 * Lays `text` out in rows of at most `columns` columns: `first` before the first line, `rest`
 * before every other, a character moved to the next row when it would not fit (a wide one may
 * leave the last column empty, as terminals do). `cursor` (a string index, or -1 for none) gets
 * its row and column; a cursor right after a row that fills the width is at the start of a row
 * of its own, where the next character would go.
 */
export function layout(text: string, cursor: number, columns: number, first: Prefix, rest: Prefix): Frame {
  const rows: string[] = [];
  const widths: number[] = [];
  let row = first.text;
  let col = first.width;
  let cursorRow = 0;
  let cursorCol = col;
  const breakRow = (): void => {
    rows.push(row);
    widths.push(col);
    row = '';
    col = 0;
  };
  const placeCursorAtEnd = (): void => {
    if (col >= columns) breakRow();
    cursorRow = rows.length;
    cursorCol = col;
  };
  let i = 0;
  while (i < text.length) {
    const code = text.codePointAt(i) ?? 0;
    const size = code > 0xffff ? 2 : 1;
    if (code === 0x0a) {
      if (i === cursor) placeCursorAtEnd();
      breakRow();
      row = rest.text;
      col = rest.width;
      i += 1;
      continue;
    }
    const shown = code === 0x09 ? TAB : isPrintable(code) ? text.slice(i, i + size) : '';
    const width = code === 0x09 ? TAB.length : shown ? codePointWidth(code) : 0;
    if (width > 0 && col > 0 && col + width > columns) breakRow();
    if (i === cursor) {
      cursorRow = rows.length;
      cursorCol = col;
    }
    row += shown;
    col += width;
    i += size;
  }
  if (cursor >= text.length) placeCursorAtEnd();
  rows.push(row);
  widths.push(col);
  return { rows, widths, cursorRow, cursorCol };
}

/** Whether a UTF-16 unit is text to show (not a C0/C1 control or DEL). */
export function isPrintable(code: number): boolean {
  return code >= 0x20 && code !== 0x7f && !(code >= 0x80 && code <= 0x9f);
}

/** The columns `text` (no escape codes) takes as the editor draws it: a tab as `TAB`. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text) width += char === '\t' ? TAB.length : codePointWidth(char.codePointAt(0) ?? 0);
  return width;
}

/** Where in `line` the cursor lands aiming at `column`: the last grapheme boundary not past it. */
export function indexAtColumn(line: string, column: number): number {
  let width = 0;
  let index = 0;
  for (const { segment, index: at } of graphemes.segment(line)) {
    const w = displayWidth(segment);
    if (width + w > column) break;
    width += w;
    index = at + segment.length;
  }
  return index;
}
