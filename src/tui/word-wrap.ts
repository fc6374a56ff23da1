import { visibleWidth } from './terminal-style';
import { graphemes } from './text-boundaries';

/**
 * `text` (plain: no escape sequences, no line breaks) cut into pieces at spaces: the first at
 * most `first` columns wide, each other at most `next` (default `first`). Words are never cut
 * unless one alone is wider than its line, which is then cut between grapheme clusters. Runs
 * of spaces where a line breaks are dropped; spaces inside a line stay as they are. The caller
 * indents and styles the pieces. Gives at least one piece (`''` for an empty text).
 */
export function wrapWords(text: string, first: number, next: number = first): string[] {
  const pieces: string[] = [];
  const room = () => Math.max(1, pieces.length === 0 ? first : next);
  let line = '';
  let lineWidth = 0;
  for (const word of text.trim().split(/( +)/)) {
    if (word === '') continue;
    const wordWidth = visibleWidth(word);
    if (word.startsWith(' ')) {
      // Spaces: kept inside a line, dropped where it breaks.
      if (lineWidth > 0 && lineWidth + wordWidth < room()) {
        line += word;
        lineWidth += wordWidth;
      } else if (lineWidth > 0) {
        pieces.push(line.trimEnd());
        line = '';
        lineWidth = 0;
      }
      continue;
    }
    if (lineWidth + wordWidth > room() && lineWidth > 0) {
      pieces.push(line.trimEnd());
      line = '';
      lineWidth = 0;
    }
    if (wordWidth <= room()) {
      line += word;
      lineWidth += wordWidth;
      continue;
    }
    // A word wider than a whole line: cut it where the line ends.
    for (const { segment } of graphemes.segment(word)) {
      const width = visibleWidth(segment);
      if (lineWidth + width > room() && lineWidth > 0) {
        pieces.push(line);
        line = '';
        lineWidth = 0;
      }
      line += segment;
      lineWidth += width;
    }
  }
  pieces.push(line.trimEnd());
  return pieces;
}

/**
 * `text` wrapped to `columns` after `head` (a prefix already styled, e.g. a bullet or a
 * label, of `headWidth` columns), each continuation line indented by `headWidth` spaces so it
 * starts under the text. `style` is applied to each piece of the text.
 */
export function wrapUnder(head: string, headWidth: number, text: string, columns: number, style: (piece: string) => string = (piece) => piece): string[] {
  const width = Math.max(1, columns - headWidth);
  const indent = ' '.repeat(headWidth);
  return wrapWords(text, width).map((piece, index) => `${index === 0 ? head : indent}${style(piece)}`);
}

/**
 * `text` wrapped to `columns` from the start of the line, continuation lines indented by
 * `indent` columns so they stand apart from the next line of their own; `style` is applied to
 * each piece.
 */
export function wrapHanging(text: string, columns: number, indent: number, style: (piece: string) => string = (piece) => piece): string[] {
  return wrapWords(text, columns, Math.max(1, columns - indent)).map((piece, index) => `${index === 0 ? '' : ' '.repeat(indent)}${style(piece)}`);
}
