import { familyOf, SHELL, type Grammar } from './code-grammars';
import type { Paint, Style } from './terminal-style';

/**
 * A small line-by-line syntax highlighter for the code blocks of the chat. It knows a few
 * families of languages well enough to colour keywords, strings, comments, numbers and
 * definition names, and carries what a line leaves open (a block comment, a multi-line string,
 * an unfinished tag) to the next line of the same block. Every line is scanned once, left to
 * right, so the work is linear in its length; nothing is ever re-read. It is a highlighter, not
 * a parser: odd code may be coloured oddly, but it never throws.
 *
 * Palette, kept calm: keywords magenta, strings green, comments gray, numbers and constants
 * yellow, defined names and keys blue, decorators and variables cyan.
 */

/**
 * What one line of a code block leaves open for the next line of the same block. Opaque: only
 * the highlighter reads it; one highlighter object holds one state per block.
 */
export interface HighlightState {
  /** What is open at the end of the line: nothing, a block comment, a multi-line string or (markup) a tag. */
  readonly open: 'none' | 'comment' | 'string' | 'tag';
  /** The delimiter that ends what is open (the end of a block comment, `"""`, a backtick, `-->`); empty when nothing is. */
  readonly close: string;
  /** Whether a backslash escapes the next character inside the open string. */
  readonly escapes: boolean;
  /** CSS only: how many `{` are open, so property names can be told from selectors. */
  readonly depth: number;
}

/** A highlighter for one code block: feed it the block's lines in order. */
export interface Highlighter {
  /**
   * The line (without its line break) with colour codes added; with colour off, or for a
   * language it does not know, the text exactly as given.
   */
  line(text: string): string;
}

const NOTHING_OPEN: HighlightState = { open: 'none', close: '', escapes: false, depth: 0 };

/**
 * Whether `highlighterFor` colours this language (a fence info word such as `ts` or
 * `python`, or a file extension with or without its dot, case-insensitive).
 */
export function isKnownLanguage(language: string): boolean {
  return familyOf(language) !== undefined;
}

/**
 * A highlighter for one code block of `language` (the first word of a fence's info string,
 * or a file extension; case-insensitive). It is stateful: a block comment or a multi-line
 * string opened on one line is still one on the next, so feed it the block's lines in order
 * and make a new one per block. With `style.color` off, or for a language it does not know,
 * `line` returns its text unchanged. Never throws.
 */
export function highlighterFor(language: string, style: Style): Highlighter {
  const family = style.color ? familyOf(String(language)) : undefined;
  if (family === undefined) return { line: (text) => text };
  if (family === 'diff') return { line: (text) => diffLine(text, style) };
  if (family === 'console') return { line: (text) => consoleLine(text, style) };
  let state = NOTHING_OPEN;
  const scan = family === 'markup' ? markupLine : family === 'css' ? cssLine : (text: string, from: HighlightState, paint: Painter) => grammarLine(text, from, family, paint);
  return {
    line(text) {
      try {
        const painter = new Painter(text, style);
        state = scan(text, state, painter);
        return painter.done();
      } catch {
        state = NOTHING_OPEN;
        return text;
      }
    },
  };
}

/** Collects one line's output: stretches of text either left plain or painted. */
class Painter {
  readonly text: string;
  readonly style: Style;
  #out = '';
  /** Start of the plain stretch not yet copied to the output. */
  #plainFrom = 0;

  constructor(text: string, style: Style) {
    this.text = text;
    this.style = style;
  }

  /** Paints `text[from, to)`; whatever lay between the previous painted stretch and `from` stays plain. */
  paint(paint: Paint, from: number, to: number): void {
    if (to <= from) return;
    if (from > this.#plainFrom) this.#out += this.text.slice(this.#plainFrom, from);
    this.#out += paint(this.text.slice(from, to));
    this.#plainFrom = to;
  }

  /** The whole line: what was painted, with the plain stretches between and after. */
  done(): string {
    return this.#out + this.text.slice(this.#plainFrom);
  }
}

const isDigit = (code: number): boolean => code >= 0x30 && code <= 0x39;
const isIdentStart = (code: number): boolean => (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;
const isWordCode = (code: number): boolean => isIdentStart(code) || isDigit(code);
const isWordAt = (text: string, at: number): boolean => at >= 0 && at < text.length && isWordCode(text.charCodeAt(at));
const isSpaceAt = (text: string, at: number): boolean => {
  const code = text.charCodeAt(at);
  return code === 0x20 || code === 0x09;
};

/** The end of the word starting at `from`. */
function wordEnd(text: string, from: number): number {
  let at = from;
  while (at < text.length && isWordCode(text.charCodeAt(at))) at++;
  return at;
}

/**
 * Where the string whose body starts at `from` ends: the index just past `close`, or -1 when
 * the line ends first (or, with `limit`, when `limit` characters pass first).
 */
function findClose(text: string, from: number, close: string, escapes: boolean, limit = Infinity): number {
  const end = Math.min(text.length, from + limit);
  const first = close.charCodeAt(0);
  for (let at = from; at < end; at++) {
    const code = text.charCodeAt(at);
    if (escapes && code === 0x5c) {
      at++;
      continue;
    }
    if (code === first && text.startsWith(close, at)) return at + close.length;
  }
  return -1;
}

/** The first non-blank character at or after `from`, or '' at the end of the line. */
function nextNonBlank(text: string, from: number): string {
  let at = from;
  while (at < text.length && isSpaceAt(text, at)) at++;
  return text[at] ?? '';
}

/** Finishes what the previous line left open; returns where the line's own scanning starts, and the state. */
function continueOpen(text: string, state: HighlightState, paint: Painter): { at: number; state: HighlightState } {
  if (state.open === 'comment') {
    const end = text.indexOf(state.close);
    if (end === -1) {
      paint.paint(paint.style.gray, 0, text.length);
      return { at: text.length, state };
    }
    paint.paint(paint.style.gray, 0, end + state.close.length);
    return { at: end + state.close.length, state: { ...state, open: 'none', close: '' } };
  }
  if (state.open === 'string') {
    const end = findClose(text, 0, state.close, state.escapes);
    if (end === -1) {
      paint.paint(paint.style.green, 0, text.length);
      return { at: text.length, state };
    }
    paint.paint(paint.style.green, 0, end);
    return { at: end, state: { ...state, open: 'none', close: '' } };
  }
  return { at: 0, state };
}

/** One line of a grammar-described language. */
function grammarLine(text: string, from: HighlightState, g: Grammar, paint: Painter): HighlightState {
  const s = paint.style;
  const opened = continueOpen(text, from, paint);
  let at = opened.at;
  if (opened.state.open !== 'none') return opened.state;
  if (at === 0 && g.lineStart) {
    const key = g.lineStart(text);
    if (key) {
      paint.paint(key.table ? s.cyan : s.blue, key.start, key.end);
      at = key.end;
    }
  }
  if (at === 0 && g.preprocessor) {
    let lead = 0;
    while (isSpaceAt(text, lead)) lead++;
    if (text[lead] === '#' && isIdentStart(text.charCodeAt(lead + 1))) {
      const end = wordEnd(text, lead + 1);
      paint.paint(s.magenta, lead, end);
      at = end;
    }
  }
  let defining = false;
  const n = text.length;
  scan: while (at < n) {
    const char = text[at] as string;
    const code = text.charCodeAt(at);
    if (isSpaceAt(text, at)) {
      at++;
      continue;
    }
    for (const marker of g.lineComments) {
      if (char === marker[0] && text.startsWith(marker, at) && (!g.hashAtWordStart || marker !== '#' || at === 0 || isSpaceAt(text, at - 1))) {
        paint.paint(s.gray, at, n);
        break scan;
      }
    }
    if (g.blockComment && char === g.blockComment[0][0] && text.startsWith(g.blockComment[0], at)) {
      const [open, close] = g.blockComment;
      const end = text.indexOf(close, at + open.length);
      if (end === -1) {
        paint.paint(s.gray, at, n);
        return { open: 'comment', close, escapes: false, depth: 0 };
      }
      paint.paint(s.gray, at, end + close.length);
      at = end + close.length;
      continue;
    }
    for (const quote of g.multiline) {
      if (char === quote.open[0] && text.startsWith(quote.open, at)) {
        const end = findClose(text, at + quote.open.length, quote.close, quote.escapes);
        if (end === -1) {
          paint.paint(s.green, at, n);
          return { open: 'string', close: quote.close, escapes: quote.escapes, depth: 0 };
        }
        paint.paint(s.green, at, end);
        at = end;
        defining = false;
        continue scan;
      }
    }
    for (const quote of g.quotes) {
      if (char !== quote.open) continue;
      if (g.charLiterals && char === "'") {
        const end = findClose(text, at + 1, "'", true, 12);
        if (end === -1) break; // a lifetime or a lone apostrophe: plain
        paint.paint(s.green, at, end);
        at = end;
        continue scan;
      }
      const close = findClose(text, at + 1, quote.close, quote.escapes);
      const end = close === -1 ? n : close;
      paint.paint(g.keyStrings && nextNonBlank(text, end) === ':' ? s.blue : s.green, at, end);
      at = end;
      defining = false;
      continue scan;
    }
    if (g.variables && char === '$') {
      const next = text[at + 1] ?? '';
      let end = at + 1;
      if (next === '{') {
        const close = text.indexOf('}', at + 2);
        end = close === -1 ? n : close + 1;
      } else if (isIdentStart(text.charCodeAt(at + 1))) {
        end = wordEnd(text, at + 1);
      } else if (next !== '' && '0123456789?#@*$!-'.includes(next)) {
        end = at + 2;
      }
      if (end > at + 1) {
        paint.paint(s.cyan, at, end);
        at = end;
        continue;
      }
    }
    if (g.decorators && char === '@' && isIdentStart(text.charCodeAt(at + 1))) {
      let end = wordEnd(text, at + 1);
      while (text[end] === '.' && isIdentStart(text.charCodeAt(end + 1))) end = wordEnd(text, end + 1);
      paint.paint(s.cyan, at, end);
      at = end;
      continue;
    }
    if (isDigit(code) && !isWordAt(text, at - 1)) {
      let end = at + 1;
      while (end < n && (isWordCode(text.charCodeAt(end)) || (text[end] === '.' && isDigit(text.charCodeAt(end + 1))))) end++;
      paint.paint(s.yellow, at, end);
      at = end;
      defining = false;
      continue;
    }
    if (isIdentStart(code)) {
      const end = wordEnd(text, at);
      const word = text.slice(at, end);
      const key = g.caseInsensitive ? word.toLowerCase() : word;
      const member = text[at - 1] === '.';
      if (!member && g.keywords.has(key)) {
        paint.paint(s.magenta, at, end);
        defining = g.definers.has(key);
      } else if (!member && g.constants.has(key)) {
        paint.paint(s.yellow, at, end);
        defining = false;
      } else {
        if (defining) paint.paint(s.blue, at, end);
        defining = false;
      }
      at = end;
      continue;
    }
    defining = false;
    at++;
  }
  return NOTHING_OPEN;
}

/** One line of HTML or XML: tags, attributes and their values, comments; text stays plain. */
function markupLine(text: string, from: HighlightState, paint: Painter): HighlightState {
  const s = paint.style;
  const n = text.length;
  let at = 0;
  let state = from;
  if (state.open === 'comment') {
    const end = text.indexOf('-->');
    if (end === -1) {
      paint.paint(s.gray, 0, n);
      return state;
    }
    paint.paint(s.gray, 0, end + 3);
    at = end + 3;
    state = NOTHING_OPEN;
  }
  while (at < n) {
    if (state.open === 'tag') {
      const char = text[at] as string;
      if (char === '>' || (char === '/' && text[at + 1] === '>') || (char === '?' && text[at + 1] === '>')) {
        const end = char === '>' ? at + 1 : at + 2;
        paint.paint(s.blue, at, end);
        at = end;
        state = NOTHING_OPEN;
      } else if (char === '"' || char === "'") {
        const close = text.indexOf(char, at + 1);
        const end = close === -1 ? n : close + 1;
        paint.paint(s.green, at, end);
        at = end;
      } else if (char === ' ' || char === '\t' || char === '=') {
        at++;
      } else {
        let end = at;
        while (end < n && !' \t=>"\'/'.includes(text[end] as string)) end++;
        if (end === at) end = at + 1;
        paint.paint(s.cyan, at, end);
        at = end;
      }
      continue;
    }
    const open = text.indexOf('<', at);
    if (open === -1) break;
    if (text.startsWith('<!--', open)) {
      const end = text.indexOf('-->', open + 4);
      if (end === -1) {
        paint.paint(s.gray, open, n);
        return { open: 'comment', close: '-->', escapes: false, depth: 0 };
      }
      paint.paint(s.gray, open, end + 3);
      at = end + 3;
      continue;
    }
    const next = text[open + 1] ?? '';
    if (next === '!') {
      const end = text.indexOf('>', open);
      paint.paint(s.gray, open, end === -1 ? n : end + 1);
      at = end === -1 ? n : end + 1;
      continue;
    }
    const nameStart = next === '/' || next === '?' ? open + 2 : open + 1;
    if (!isIdentStart(text.charCodeAt(nameStart))) {
      at = open + 1;
      continue;
    }
    let end = nameStart;
    while (end < n && (isWordCode(text.charCodeAt(end)) || text[end] === '-' || text[end] === ':' || text[end] === '.')) end++;
    paint.paint(s.blue, open, end);
    at = end;
    state = { open: 'tag', close: '>', escapes: false, depth: 0 };
  }
  return state;
}

/** One line of CSS: comments, strings, numbers, at-rules, property names inside braces. */
function cssLine(text: string, from: HighlightState, paint: Painter): HighlightState {
  const s = paint.style;
  const n = text.length;
  let at = 0;
  let depth = from.depth;
  if (from.open === 'comment') {
    const end = text.indexOf('*/');
    if (end === -1) {
      paint.paint(s.gray, 0, n);
      return from;
    }
    paint.paint(s.gray, 0, end + 2);
    at = end + 2;
  }
  const isCssWord = (i: number): boolean => isWordAt(text, i) || text[i] === '-';
  while (at < n) {
    const char = text[at] as string;
    if (char === '/' && text[at + 1] === '*') {
      const end = text.indexOf('*/', at + 2);
      if (end === -1) {
        paint.paint(s.gray, at, n);
        return { open: 'comment', close: '*/', escapes: false, depth };
      }
      paint.paint(s.gray, at, end + 2);
      at = end + 2;
    } else if (char === '"' || char === "'") {
      const close = findClose(text, at + 1, char, true);
      const end = close === -1 ? n : close;
      paint.paint(s.green, at, end);
      at = end;
    } else if (char === '{') {
      depth++;
      at++;
    } else if (char === '}') {
      depth = Math.max(0, depth - 1);
      at++;
    } else if (char === '@' || char === '!') {
      let end = at + 1;
      while (end < n && isCssWord(end)) end++;
      if (end > at + 1) paint.paint(s.magenta, at, end);
      at = end;
    } else if (depth > 0 && char === '#' && isWordAt(text, at + 1)) {
      const end = wordEnd(text, at + 1);
      paint.paint(s.yellow, at, end);
      at = end;
    } else if (isDigit(text.charCodeAt(at)) && !isCssWord(at - 1)) {
      let end = at + 1;
      while (end < n && (isWordAt(text, end) || text[end] === '.' || text[end] === '%')) end++;
      paint.paint(s.yellow, at, end);
      at = end;
    } else if (isCssWord(at)) {
      let end = at + 1;
      while (end < n && isCssWord(end)) end++;
      if (depth > 0 && nextNonBlank(text, end) === ':' && !isCssWord(at - 1)) paint.paint(s.blue, at, end);
      at = end;
    } else {
      at++;
    }
  }
  return { ...NOTHING_OPEN, depth };
}

/** One line of a unified diff: added green, removed red, hunk headers cyan, file headers bold. */
function diffLine(text: string, style: Style): string {
  if (text.startsWith('+++') || text.startsWith('---')) {
    const rest = text[3];
    if (rest === undefined || rest === ' ' || rest === '\t') return style.bold(text);
  }
  if (text.startsWith('@@')) return style.cyan(text);
  if (text.startsWith('+')) return style.green(text);
  if (text.startsWith('-')) return style.red(text);
  if (text.startsWith('diff ') || text.startsWith('index ')) return style.bold(text);
  return text;
}

/**
 * One line of a terminal transcript: a line starting with a `$ ` prompt is a command (prompt
 * dim, command coloured as shell); any other line is output and stays plain.
 */
function consoleLine(text: string, style: Style): string {
  let lead = 0;
  while (isSpaceAt(text, lead)) lead++;
  if (text[lead] !== '$' || (text[lead + 1] !== ' ' && lead + 1 !== text.length)) return text;
  const painter = new Painter(text.slice(lead + 1), style);
  grammarLine(painter.text, NOTHING_OPEN, SHELL, painter);
  return text.slice(0, lead) + style.dim('$') + painter.done();
}
