import type { MarkedToken, Token, Tokens } from 'marked';
import { visibleControls } from '../processes/visible-text';
import { stripAnsi, truncateToWidth, visibleWidth, type Style } from './terminal-style';

/**
 * The rendering of markdown that `MarkdownStream` shows: the inline tokens of one line (emphasis,
 * code spans, links, character references) and tables, as terminal text. Pure functions of the
 * tokens or cells, the style and the width; control characters of the text come out as symbols.
 */

/**
 * The text with control characters (tab aside), escape sequences, a bare CR and bidirectional
 * controls shown as visible symbols such as `␛` (see `visibleControls`).
 */
export function sanitize(text: string): string {
  return visibleControls(text);
}

const ENTITY = /&(?:amp|lt|gt|quot|apos|nbsp|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});/g;
const NAMED_ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&apos;': "'", '&nbsp;': '\u00a0' };

function decodeEntity(entity: string): string {
  const named = NAMED_ENTITIES[entity];
  if (named !== undefined) return named;
  const hex = entity[2] === 'x' || entity[2] === 'X';
  const code = Number.parseInt(entity.slice(hex ? 3 : 2, -1), hex ? 16 : 10);
  if (!(code > 0 && code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff)) return entity;
  return String.fromCodePoint(code);
}

/** Text with the HTML character references marked leaves in it (`&amp;`, `&#39;`, …) decoded. */
function decodeEntities(text: string): string {
  return text.includes('&') ? text.replace(ENTITY, decodeEntity) : text;
}

/**
 * Text of a token as it is shown on its one line: line breaks become spaces and control
 * characters symbols — marked decodes numeric references itself, so `&#27;` arrives as a raw
 * escape character even from a line that had none.
 */
export function shown(text: string): string {
  return sanitize(text.includes('\n') ? text.replace(/\n/g, ' ') : text);
}

/** Like `shown`, with character references decoded first. */
export function shownDecoded(text: string): string {
  return shown(decodeEntities(text));
}

/** Inline tokens rendered in a row. */
export function inline(tokens: Token[] | undefined, style: Style): string {
  let out = '';
  for (const token of tokens ?? []) out += inlineToken(token, style);
  return out;
}

/** One inline token rendered: emphasis, code spans, links, escapes and plain text. */
export function inlineToken(token: Token, style: Style): string {
  const t = token as MarkedToken;
  switch (t.type) {
    case 'text':
      return t.tokens ? inline(t.tokens, style) : shownDecoded(t.text);
    case 'escape':
      return shownDecoded(t.text);
    case 'strong':
      return style.bold(inline(t.tokens, style));
    case 'em':
      return style.italic(inline(t.tokens, style));
    case 'del':
      return style.dim(inline(t.tokens, style));
    case 'codespan':
      return style.cyan(shown(t.text));
    case 'br':
      return ' ';
    case 'link':
    case 'image': {
      const text = t.type === 'image' && t.tokens.length === 0 ? shownDecoded(t.text) : inline(t.tokens, style);
      const plain = stripAnsi(text);
      const href = shown(t.href ?? '');
      if (href === '') return text;
      if (plain === '') return href;
      if ((t.type === 'link' && t.autolink) || plain === href || `mailto:${plain}` === href) return text;
      return `${text} ${style.dim(`(${href})`)}`;
    }
    case 'html':
      return shown(t.text);
    case 'checkbox':
      return t.checked ? '[x] ' : '[ ] ';
    default: {
      const generic = token as Tokens.Generic;
      if (Array.isArray(generic.tokens)) return inline(generic.tokens, style);
      return shownDecoded(typeof generic.text === 'string' ? generic.text : String(generic.raw ?? ''));
    }
  }
}

/** A table as lines: bordered, header bold, columns aligned and cut to fit the width (`columns`). */
export function renderTable(table: Tokens.Table, style: Style, columns: number): string[] {
  const count = Math.max(1, table.header.length);
  interface Cell {
    text: string;
    plain: string;
    width: number;
  }
  const cell = (source: Tokens.TableCell | undefined): Cell => {
    const text = source ? inline(source.tokens, style).trim() : '';
    const plain = stripAnsi(text);
    return { text, plain, width: visibleWidth(plain) };
  };
  const header = Array.from({ length: count }, (_, c) => cell(table.header[c]));
  const rows = table.rows.map((row) => Array.from({ length: count }, (_, c) => cell(row[c])));
  const natural = Array.from({ length: count }, (_, c) => Math.max(1, header[c]?.width ?? 0, ...rows.map((row) => row[c]?.width ?? 0)));
  const widths = fitColumns(natural, columns - (3 * count + 1));
  const fill = (c: Cell, column: number, bold: boolean): string => {
    const width = widths[column] ?? 1;
    let text = c.text;
    let shown = c.width;
    if (shown > width) {
      text = truncateToWidth(c.plain, width);
      shown = visibleWidth(text);
    }
    if (bold) text = style.bold(text);
    const space = Math.max(0, width - shown);
    const align = table.align[column] ?? null;
    const left = align === 'right' ? space : align === 'center' ? Math.floor(space / 2) : 0;
    return ' '.repeat(left) + text + ' '.repeat(space - left);
  };
  const border = (left: string, middle: string, right: string): string =>
    style.dim(left + widths.map((width) => '─'.repeat(width + 2)).join(middle) + right);
  const bar = style.dim('│');
  const row = (cells: Cell[], bold: boolean): string => `${bar} ${cells.map((c, column) => fill(c, column, bold)).join(` ${bar} `)} ${bar}`;
  return [border('┌', '┬', '┐'), row(header, true), border('├', '┼', '┤'), ...rows.map((cells) => row(cells, false)), border('└', '┴', '┘')];
}

/**
 * Column widths that fit `available` columns: every column keeps its natural width when they
 * all fit; otherwise the widest are narrowed to one common cap, the largest that fits (at
 * least one column each, even when that overflows).
 */
function fitColumns(natural: number[], available: number): number[] {
  const total = natural.reduce((sum, width) => sum + width, 0);
  if (total <= available) return natural;
  const sorted = [...natural].sort((a, b) => a - b);
  let remaining = available;
  let cap = 1;
  for (let index = 0; index < sorted.length; index++) {
    const width = sorted[index] as number;
    const left = sorted.length - index;
    if (width * left <= remaining) {
      remaining -= width;
      cap = width;
    } else {
      cap = Math.max(1, Math.floor(remaining / left));
      break;
    }
  }
  return natural.map((width) => Math.max(1, Math.min(width, cap)));
}
