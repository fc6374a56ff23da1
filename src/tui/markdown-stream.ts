import { getDefaults, Lexer, type MarkedOptions, type MarkedToken, type Token, type Tokens } from 'marked';
import { highlighterFor, isKnownLanguage, type Highlighter } from './code-highlight';
import { inline, inlineToken, renderTable, sanitize, shown, shownDecoded } from './markdown-inline';
import { XmlToolUseLines, type XmlLinePart } from './xml-tool-lines';
import type { Style } from './terminal-style';
import { readFenceLine, type FenceLine } from '../parse/fence-line';
import { FencedBlock } from '../parse/fenced-block';

/** How a `MarkdownStream` renders. */
export interface MarkdownStreamOptions {
  /** Colours; with `style.color` off the output is plain text without any escape sequence. */
  style: Style;
  /**
   * The terminal's width in columns. Rules and tables are fitted to it (rules to at most 80
   * columns); prose and code are left to the terminal to wrap. 20 or more is assumed, but any
   * number (even 0 or NaN) is accepted.
   */
  width: number;
  /**
   * The reply writes its tool calls as XML (`--tool-format xml`): a `<tool-use>` that starts a
   * line outside code is shown as a code block, as markdown tool blocks are (see
   * `XmlToolUseLines`). Default: off, such lines are text.
   */
  xmlToolUse?: boolean;
}

/** The code block being shown. */
interface OpenBlock {
  /** Its fences, and where it ends: the tool parser's rule. */
  fences: FencedBlock;
  /** Lines the block holds until a later line tells whether they are code of the block (see `FencedBlock`). */
  held: string[];
  /** The opening fence's indentation, removed from the code lines (as CommonMark does). */
  indent: number;
  highlighter: Highlighter;
}

/** Columns a tab stop is apart, for code and indentation. */
const TAB_STOP = 4;
/** The widest a rule is drawn. */
const MAX_RULE = 80;
/**
 * Lexer options of our own, so that nothing set on marked's global defaults changes the
 * rendering. Not silent: marked's rare internal errors are thrown (and caught here) rather
 * than written to the console.
 */
const LEX_OPTIONS: MarkedOptions = { ...getDefaults(), gfm: true, breaks: false, pedantic: false, silent: false };

/** The block tokens marked reads in `source`. */
function lex(source: string): Token[] {
  return Lexer.lex(source, LEX_OPTIONS);
}

/** A line that belongs to a table group: `|` after at most three spaces. */
function isTableLine(line: string): boolean {
  let at = 0;
  while (at < 3 && line.charCodeAt(at) === 0x20) at++;
  return line[at] === '|';
}

/** The text with tabs expanded to the next multiple of `TAB_STOP` columns. */
function expandTabs(text: string): string {
  if (!text.includes('\t')) return text;
  let out = '';
  let column = 0;
  for (const char of text) {
    if (char === '\t') {
      const spaces = TAB_STOP - (column % TAB_STOP);
      out += ' '.repeat(spaces);
      column += spaces;
    } else {
      out += char;
      column++;
    }
  }
  return out;
}

const isBlank = (char: string | undefined): boolean => char !== undefined && /\s/.test(char);

/**
 * The line without trailing blanks, also those just before the closing escape codes at its
 * end (a painted stretch that ends in a space). Linear: it only walks back from the end.
 */
function trimLineEnd(line: string): string {
  let end = line.length;
  let codes = '';
  for (;;) {
    while (end > 0 && isBlank(line[end - 1])) end--;
    if (line[end - 1] !== 'm') break;
    let at = end - 2;
    while (at >= 0 && ((line.charCodeAt(at) >= 0x30 && line.charCodeAt(at) <= 0x39) || line[at] === ';')) at--;
    if (at < 1 || line[at] !== '[' || line[at - 1] !== '\x1b') break;
    codes = line.slice(at - 1, end) + codes;
    end = at - 1;
  }
  return codes === '' && end === line.length ? line : line.slice(0, end) + codes;
}

/** Leading blanks of a line, tabs counted to their tab stop: how many columns, and where the text starts. */
function measureIndent(line: string): { columns: number; end: number } {
  let columns = 0;
  let end = 0;
  for (; end < line.length; end++) {
    const char = line[end];
    if (char === ' ') columns++;
    else if (char === '\t') columns += TAB_STOP - (columns % TAB_STOP);
    else break;
  }
  return { columns, end };
}

/**
 * The language a code block is highlighted as: the info string's first word, or, when that is
 * not a language but a tool tag with a path (`save src/app.ts`), the extension of its last word.
 */
function blockLanguage(info: string): string {
  const parts = info.split(/\s+/).filter(Boolean);
  const first = parts[0] ?? '';
  if (isKnownLanguage(first) || parts.length < 2) return first;
  const last = parts[parts.length - 1] ?? '';
  const dot = last.lastIndexOf('.');
  const extension = dot === -1 ? '' : last.slice(dot + 1);
  return extension && isKnownLanguage(extension) ? extension : first;
}

/**
 * Renders an assistant's markdown reply for the terminal while it streams in. Text arrives in
 * chunks of any size; the stream commits complete lines only, so nothing it printed ever has
 * to be redrawn: a line is rendered once its line break (`\n` or `\r\n`) arrives, and
 * `finish()` renders the unfinished last line.
 *
 * What it renders:
 * - Text outside code blocks, line by line, each line lexed with marked: headings bold (level
 *   1 also underlined) without their `#`, list items with `•` or their number and indented by
 *   nesting, block quotes behind a dim `│`, rules as a dim line across the width (at most 80),
 *   **strong** bold, *em* italic, `code` cyan without backticks, ~~del~~ dim, links as
 *   `text (url)` with the url dim (only the url when the text is the url), escapes resolved,
 *   character references decoded.
 * - Tables: consecutive lines starting with `|` wait until a line that does not (or the end);
 *   when marked reads them as a table it is drawn with box-drawing borders, columns sized by
 *   their visible width and cells cut with `…` to fit the width; other lines are rendered as
 *   text.
 * - Code blocks (fences of ``` or ~~~): the opening fence becomes a dim `┌` header with the
 *   info string (`┌ python`), each code line is shown as it completes, indented two columns,
 *   tabs expanded, highlighted by language (`diff` blocks: `+` green, `-` red, `@@` cyan), and
 *   the closing fence becomes a dim `└`. Code is never cut; long lines wrap in the terminal.
 *   Where a block ends follows the tool parser's rule (see `FencedBlock`), so nested blocks,
 *   bare ones too, are code of the outer block: a bare fence that could close the block waits
 *   for the line after it, and when text follows, so do the lines after it until the nested
 *   block it opened closes (they are code) or turns out not to be one (the fence closed the
 *   block, and they are text after it).
 *
 * Output lines never end in blanks, and control characters of the text are shown as symbols
 * (`␛`), so a reply cannot move the cursor. With `style.color` off the output holds no escape
 * sequence at all. Work is linear in the reply's length whatever the chunking: only the current
 * partial line (and an unfinished table, and the lines a code block holds) is buffered, and
 * every line is rendered once. Never throws: a line that somehow fails to render is shown as its
 * plain text.
 */
/** Characters of the unfinished line that `tail` keeps. */
const TAIL_CHARS = 200;

export class MarkdownStream {
  readonly #style: Style;
  readonly #width: number;
  /** The pieces of the line whose line break has not arrived yet. */
  #pending: string[] = [];
  /** The last `TAIL_CHARS` characters of that line, kept as it grows (see `tail`). */
  #tail = '';
  #block: OpenBlock | undefined;
  /** Lines of the table group waiting for a line that is not part of it. */
  #table: string[] = [];
  /** Indentation (columns) of the open list items, outermost first; empty outside lists. */
  #lists: number[] = [];
  /** The XML tool uses of the reply, when it writes them (`xmlToolUse`). */
  readonly #xml: XmlToolUseLines | undefined;
  /** The highlighter of the XML tool use being shown. */
  #xmlHighlighter: Highlighter | undefined;

  constructor(options: MarkdownStreamOptions) {
    this.#style = options.style;
    this.#xml = options.xmlToolUse ? new XmlToolUseLines() : undefined;
    const width = Math.floor(Number(options.width));
    this.#width = Number.isFinite(width) ? Math.max(1, width) : MAX_RULE;
  }

  /**
   * Feeds the next chunk of the reply (any size, even a part of a line or of a `\r\n`) and
   * returns the rendered text of the lines it completed, each ending with `\n`; `''` when it
   * completed none.
   */
  push(chunk: string): string {
    if (typeof chunk !== 'string' || chunk === '') return '';
    const out: string[] = [];
    let from = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', from);
      if (newline === -1) {
        if (from < chunk.length) {
          const piece = from === 0 ? chunk : chunk.slice(from);
          this.#pending.push(piece);
          this.#tail = (this.#tail + piece.slice(-TAIL_CHARS)).slice(-TAIL_CHARS);
        }
        break;
      }
      let line = chunk.slice(from, newline);
      this.#tail = '';
      if (this.#pending.length > 0) {
        this.#pending.push(line);
        line = this.#pending.join('');
        this.#pending = [];
      }
      from = newline + 1;
      this.#line(line.endsWith('\r') ? line.slice(0, -1) : line, out);
    }
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }

  /**
   * The end of the line still being written (at most `TAIL_CHARS` characters), as one line of
   * plain text — control characters, bidirectional controls and runs of blank space as single
   * spaces — for a status line to show while a long line has not been rendered yet. `''`
   * between lines.
   */
  get tail(): string {
    return this.#tail.replace(/[\x00-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g, ' ').trimStart();
  }

  /**
   * Ends the reply: renders what is left — the last line if it had no line break, a table
   * still waiting, the end mark of a code block never closed — and resets the stream, so the
   * next `push` starts a new reply. Returns `''` when nothing was left.
   */
  finish(): string {
    const out: string[] = [];
    this.#tail = '';
    try {
      const rest = this.#pending.join('');
      this.#pending = [];
      const line = rest.endsWith('\r') ? rest.slice(0, -1) : rest;
      if (line !== '') this.#line(line, out);
      const block = this.#block;
      if (block) {
        if (block.fences.end()) this.#endBlock(block, out);
        else out.push(this.#endMark());
      }
      this.#flushTable(out);
      for (const part of this.#xml?.finish() ?? []) this.#xmlPart(part, out);
    } catch {
      // Nothing to add: the stream is reset below whatever happened.
    }
    this.#pending = [];
    this.#block = undefined;
    this.#table = [];
    this.#lists = [];
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }

  /** Renders one complete line (without its line break) into `out`, one entry per output line. */
  #line(line: string, out: string[]): void {
    try {
      if (this.#block) {
        this.#codeLine(line, this.#block, out);
        return;
      }
      if (this.#xml?.claims(line)) {
        for (const part of this.#xml.read(line)) this.#xmlPart(part, out);
        return;
      }
      const fence = readFenceLine(line);
      if (fence) {
        this.#flushTable(out);
        this.#openBlock(fence, out);
      } else if (isTableLine(line)) {
        this.#table.push(line);
      } else {
        this.#flushTable(out);
        this.#textLine(line, out);
      }
    } catch {
      out.push(trimLineEnd(sanitize(expandTabs(line))));
    }
  }

  #openBlock(fence: FenceLine, out: string[]): void {
    const info = sanitize(fence.info);
    this.#block = {
      fences: new FencedBlock(fence),
      held: [],
      indent: fence.indent,
      highlighter: highlighterFor(blockLanguage(info), this.#style),
    };
    out.push(this.#style.dim(info ? `┌ ${info}` : '┌'));
  }

  #endMark(): string {
    return this.#style.dim('└');
  }

  /** One part of an XML tool use, drawn as a code block is. */
  #xmlPart(part: XmlLinePart, out: string[]): void {
    switch (part.kind) {
      case 'open': {
        this.#flushTable(out);
        const info = sanitize(part.info);
        this.#xmlHighlighter = highlighterFor(blockLanguage(info), this.#style);
        out.push(this.#style.dim(`┌ ${info}`));
        break;
      }
      case 'body': {
        const code = sanitize(expandTabs(part.text)).trimEnd();
        const highlighted = this.#xmlHighlighter ? this.#xmlHighlighter.line(code) : code;
        out.push(code === '' ? '' : trimLineEnd(`  ${highlighted}`));
        break;
      }
      case 'close':
        this.#xmlHighlighter = undefined;
        out.push(this.#endMark());
        break;
      case 'text':
        this.#textLine(part.text, out);
        break;
    }
  }

  /** A line inside a code block: code, held until a later line tells, or the line after the block's end. */
  #codeLine(line: string, block: OpenBlock, out: string[]): void {
    switch (block.fences.read(line)) {
      case 'held':
        block.held.push(line);
        return;
      case 'inside':
        for (const held of block.held) this.#code(held, block, out);
        block.held = [];
        this.#code(line, block, out);
        return;
      case 'ended':
        this.#endBlock(block, out);
        this.#line(line, out);
        return;
    }
  }

  /** Ends the block at its first held line (its closing fence): the other held lines are text after it. */
  #endBlock(block: OpenBlock, out: string[]): void {
    this.#block = undefined;
    out.push(this.#endMark());
    for (const held of block.held.slice(1)) this.#line(held, out);
  }

  /** One code line of the block. */
  #code(line: string, block: OpenBlock, out: string[]): void {
    let drop = 0;
    while (drop < block.indent && line.charCodeAt(drop) === 0x20) drop++;
    const code = sanitize(expandTabs(drop === 0 ? line : line.slice(drop))).trimEnd();
    out.push(code === '' ? '' : trimLineEnd(`  ${block.highlighter.line(code)}`));
  }

  /** Renders the waiting table group: as a table when marked reads one, else line by line. */
  #flushTable(out: string[]): void {
    if (this.#table.length === 0) return;
    const lines = this.#table;
    this.#table = [];
    const source = lines.map((line) => sanitize(expandTabs(line))).join('\n');
    let tokens: Token[];
    try {
      tokens = lex(source);
    } catch {
      tokens = [];
    }
    if (!tokens.some((token) => token.type === 'table') || tokens.map((token) => token.raw).join('') !== source) {
      for (const line of lines) this.#textLine(line, out);
      return;
    }
    const rendered: string[] = [];
    try {
      for (const token of tokens) {
        if (token.type === 'table') {
          this.#lists = [];
          for (const row of renderTable(token as Tokens.Table, this.#style, this.#width)) rendered.push(trimLineEnd(row));
          continue;
        }
        const raw = token.raw.endsWith('\n') ? token.raw.slice(0, -1) : token.raw;
        if (raw === '' && token.type === 'space') continue;
        for (const line of raw.split('\n')) this.#textLine(line, rendered);
      }
    } catch {
      rendered.length = 0;
      for (const line of lines) rendered.push(trimLineEnd(sanitize(expandTabs(line))));
    }
    for (const line of rendered) out.push(line);
  }

  /** One line of text outside code blocks and tables. */
  #textLine(rawLine: string, out: string[]): void {
    const line = sanitize(rawLine);
    const { columns, end } = measureIndent(line);
    const content = line.slice(end).trimEnd();
    if (content === '') {
      out.push('');
      return;
    }
    const tokens = lex(content).filter((token) => token.type !== 'space');
    const first = tokens[0] as MarkedToken | undefined;
    const width = this.#width;
    if (first?.type === 'list' && tokens.length === 1) {
      const level = this.#listLevel(columns);
      const indent = '  '.repeat(level);
      const items = first.items.map((item, index) => this.#listItem(item, first, index, width - indent.length));
      out.push(trimLineEnd(indent + items.join(' ')));
      return;
    }
    let indent: string;
    if (columns === 0) {
      this.#lists = [];
      indent = '';
    } else if (this.#lists.length > 0) {
      indent = '  '.repeat(this.#lists.filter((column) => column < columns).length);
    } else {
      indent = ' '.repeat(columns);
    }
    const rendered = tokens.map((token) => this.#blockLine(token, width - indent.length)).filter((text) => text !== '');
    out.push(trimLineEnd(indent + rendered.join(' ')));
  }

  /** The nesting level of a list item indented by `columns`, updating the open list items. */
  #listLevel(columns: number): number {
    const lists = this.#lists;
    while (lists.length > 0 && (lists[lists.length - 1] as number) > columns) lists.pop();
    const top = lists[lists.length - 1];
    if (top === undefined || columns >= top + 2) lists.push(columns);
    return lists.length - 1;
  }

  #listItem(item: Tokens.ListItem, list: Tokens.List, index: number, width: number): string {
    const marker = list.ordered ? `${(typeof list.start === 'number' ? list.start : 1) + index}.` : '•';
    const parts = [marker];
    for (const token of item.tokens) {
      const text = this.#blockLine(token, width - 2);
      if (text !== '') parts.push(text);
    }
    return parts.join(' ');
  }

  /** One block token of a single line, rendered as one line. */
  #blockLine(token: Token, width: number): string {
    const style = this.#style;
    const t = token as MarkedToken;
    switch (t.type) {
      case 'space':
        return '';
      case 'heading': {
        const text = inline(t.tokens, style);
        return t.depth === 1 ? style.bold(style.underline(text)) : style.bold(text);
      }
      case 'paragraph':
        return inline(t.tokens, style);
      case 'text':
        return t.tokens ? inline(t.tokens, style) : shownDecoded(t.text);
      case 'list':
        return t.items.map((item, index) => this.#listItem(item, t, index, width)).join(' ');
      case 'blockquote': {
        const inner = t.tokens.map((child) => this.#blockLine(child, width - 2)).filter((text) => text !== '');
        return inner.length === 0 ? style.dim('│') : `${style.dim('│')} ${inner.join(' ')}`;
      }
      case 'hr':
        return style.dim('─'.repeat(Math.max(1, Math.min(MAX_RULE, width))));
      case 'checkbox':
        return t.checked ? '[x]' : '[ ]';
      case 'code':
        return style.cyan(shown(t.text));
      case 'html':
        return shown(t.text.trim());
      case 'def':
      case 'table':
        return shown(t.raw.trim());
      default:
        return inlineToken(token, style);
    }
  }
}
