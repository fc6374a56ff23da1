import type { ToolUse } from './tool-use';
import { CDATA_OPEN, isSpace, readArgs, readContent } from './xml-values';

/** The tag that opens a tool use, up to its optional whitespace and `>`. */
const OPEN_TAG = '<tool-use';
/** The element name of the wrapper, as it appears in `</tool-use>`. */
const WRAPPER = 'tool-use';
/** The closing wrapper tag, up to its optional whitespace and `>`. */
const CLOSE_TAG = '</tool-use';

/** Characters a tool element's name is made of: ASCII letters, digits, `_`, `-`, `.`. */
function isNameChar(ch: string): boolean {
  const code = ch.charCodeAt(0);
  return (
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x30 && code <= 0x39) || // 0-9
    ch === '_' ||
    ch === '-' ||
    ch === '.'
  );
}

/**
 * Advances a search for `</tool-use>` (whitespace allowed before its `>`) by one character.
 * `progress` is how much of `</tool-use` has been matched (its full length once the name is
 * matched and only whitespace followed); returns the new progress, or -1 when the `>` arrives.
 * `<` occurs only first in the pattern, so a mismatch restarts at 1 on `<` and at 0 otherwise.
 */
function watchCloseTag(progress: number, ch: string): number {
  if (progress === CLOSE_TAG.length) {
    if (ch === '>') return -1;
    if (isSpace(ch)) return progress;
  } else if (ch === CLOSE_TAG[progress]) {
    return progress + 1;
  }
  return ch === '<' ? 1 : 0;
}

/**
 * Where the reader is:
 * - `text`: top-level text (prose, inline code), outside fenced code blocks;
 * - `open`: reading what may be a `<tool-use>` tag;
 * - `fenceInfo`, `fence`: the rest of an opening fence line, then a fenced code block's lines;
 * - `between`: inside `<tool-use>`, before the tool element;
 * - `name`, `attrs`: the tool element's opening tag, its name then the rest of it;
 * - `body`: the tool element's body;
 * - `after`: after a self-closing tool element, before `</tool-use>`;
 * - `markup`: a `<` inside a call, read until it is known what it starts;
 * - `cdata`: inside a CDATA section in a call.
 */
type Mode =
  | 'text'
  | 'open'
  | 'fenceInfo'
  | 'fence'
  | 'between'
  | 'name'
  | 'attrs'
  | 'body'
  | 'after'
  | 'markup'
  | 'cdata';

/** The parts of a call where a `<` may start a closing tag or a CDATA section. */
type CallPart = 'between' | 'body' | 'after';

/** The call being read, from its `<tool-use>` on. */
interface CallState {
  /** Offset of the `<` of `<tool-use`. */
  start: number;
  /** The tool element's name ('' until it is read). */
  tool: string;
  /** Raw text of the tool element's opening tag after its name. */
  tag: string;
  args: string[];
  /** Raw body so far: every character after the opening tag, CDATA markers included. */
  body: string;
  /** Length of `body` where the latest `</tool>` began: the body's end if no later one comes. */
  bodyEnd: number | undefined;
}

/** A fresh call state for a `<tool-use` at `start`. */
function newCall(start: number): CallState {
  return { start, tool: '', tag: '', args: [], body: '', bodyEnd: undefined };
}

/** A `<` being read inside a call, with everything read since it (to give back if it is nothing). */
interface Markup {
  from: CallPart;
  kind: 'lt' | 'close' | 'closeSpace' | 'cdata';
  raw: string;
  /** How much of the closing tag's name, or of the CDATA opener, has been read. */
  matched: number;
  /** In a closing tag: whether the name so far may still be `tool-use`, or the tool's name. */
  wrapper: boolean;
  tool: boolean;
}

/**
 * The character-level state machine behind both the XML parser and the stream scanner: it is
 * fed text in pieces of any size and looks at each character a bounded number of times, so the
 * total work is linear in the text's length whatever the chunking. It holds no unread text
 * back: every partial construct (half a tag, a backtick run, a fence line) is carried in its
 * state, so a use is reported by the very `push` whose chunk holds the `>` of `</tool-use>`.
 *
 * Rules it applies, outside calls:
 * - `<tool-use>` (whitespace allowed before `>`) opens a call, except in code: inside a fenced
 *   code block, in the info string of an opening fence line, or inside an inline code span.
 * - Fenced code blocks follow CommonMark: a line of up to three spaces, then at least three
 *   backticks or tildes (a backtick fence's info string holds no backtick) opens one; a line of
 *   up to three spaces, a run of the same character at least as long, and only spaces or tabs
 *   closes it. An unclosed block runs to the end of the text.
 * - Inline code spans lie on one line: a backtick run opens one, and the next run of the same
 *   length on that line closes it. Unlike CommonMark, a run that is never closed does not
 *   turn back into literal backticks: what follows it on its line counts as code. This keeps
 *   every decision on the text already read, so no call has to wait for the end of its line.
 *
 * Inside a call (from `<tool-use>` on, where fences and backticks no longer matter):
 * - Text before the tool element is skipped. The first `<name` (letters, digits, `_`, `-`,
 *   `.`; not `tool-use` itself) starts the tool element; its opening tag ends at the first `>`
 *   outside a quoted attribute value, `/>` making it self-closing (content '').
 * - The body ends at the last `</name>` before the call's end (whitespace allowed before
 *   `>`); with none, at `</tool-use>`. Anything else that starts with `<` is body text.
 * - The call ends at its first `</tool-use>` outside CDATA — even inside an unfinished
 *   opening tag, in which case, as when there was no element, it yields nothing.
 * - `<![CDATA[ … ]]>` sections are content or skipped text, never structure.
 * - An unterminated call yields nothing.
 *
 * It never throws on any input.
 */
export class XmlReader {
  #mode: Mode = 'text';
  /** Offset, in everything fed so far, of the first character of the chunk being read. */
  #offset = 0;

  // Top-level text.
  /** Where the current line is: in its indentation, in a run of `~` after it, or past both. */
  #lead: 'indent' | 'tildes' | 'none' = 'indent';
  #indent = 0;
  #tildes = 0;
  /** Length of the backtick run being read, and whether it is the first thing on its line. */
  #ticks = 0;
  #ticksBeginLine = false;
  /** Length of the backtick run that opened the inline code span the text is in; 0 outside. */
  #span = 0;
  /** Length of the backtick run that began this line while the line may be an opening fence. */
  #fenceCandidate = 0;
  /** How much of `<tool-use` is matched, and the whitespace that followed it. */
  #openMatched = 0;
  #openSpace = '';

  // Fenced code block.
  #fenceChar = '`';
  #fenceLength = 0;
  /** Where the current line of the block is, in the reading of a possible closing fence. */
  #fenceLine: 'indent' | 'run' | 'trail' | 'skip' = 'indent';
  #fenceIndent = 0;
  #fenceRun = 0;

  // Inside a call.
  #call: CallState = newCall(0);
  /** In the opening tag: the quote of the value being read (or ''), and what came just before. */
  #quote = '';
  #afterEquals = false;
  #afterSlash = false;
  /** In the opening tag: progress of the search for `</tool-use>` (see `watchCloseTag`). */
  #closeProgress = 0;
  #markup: Markup = { from: 'body', kind: 'lt', raw: '', matched: 0, wrapper: false, tool: false };
  /** In a CDATA section: the part of the call it is in, and how many `]` just preceded. */
  #cdataIn: CallPart = 'body';
  #brackets = 0;

  /**
   * Feeds the next piece of text and returns the tool uses whose `</tool-use>` was completed
   * inside it (its `>` arrived), in text order; usually none.
   */
  push(chunk: string): ToolUse[] {
    const found: ToolUse[] = [];
    let at = 0;
    while (at < chunk.length) at = this.#read(chunk, at, found);
    this.#offset += chunk.length;
    return found;
  }

  /**
   * Reads from `chunk[at]` on in the current mode; returns where to go on. A step that only
   * changes the mode may leave `at` unread, for the new mode to read; every mode reads at least
   * one character, so the loop always advances.
   */
  #read(chunk: string, at: number, found: ToolUse[]): number {
    switch (this.#mode) {
      case 'text':
        return this.#readText(chunk, at);
      case 'open':
        return this.#readOpenTag(chunk, at);
      case 'fenceInfo':
        return this.#readFenceInfo(chunk, at);
      case 'fence':
        return this.#readFence(chunk, at);
      case 'between':
      case 'after':
        return this.#skipToMarkup(chunk, at, this.#mode);
      case 'name':
        return this.#readName(chunk, at);
      case 'attrs':
        return this.#readAttrs(chunk, at);
      case 'body':
        return this.#readBody(chunk, at);
      case 'markup':
        return this.#readMarkup(chunk, at, found);
      case 'cdata':
        return this.#readCdata(chunk, at);
    }
  }

  // ---- top-level text ----

  #readText(chunk: string, at: number): number {
    if (this.#lead === 'none' && this.#ticks === 0) {
      // Past the line's start and not in a backtick run, only `<`, a backtick or a line break
      // can change anything.
      let next = at;
      while (next < chunk.length) {
        const ch = chunk[next];
        if (ch === '<' || ch === '`' || ch === '\n') break;
        next++;
      }
      if (next === chunk.length) return next;
      at = next;
    }
    this.#textChar(chunk[at] ?? '', this.#offset + at);
    return at + 1;
  }

  /** Reads one character of top-level text that starts at `offset`. */
  #textChar(ch: string, offset: number): void {
    if (this.#lead === 'indent') {
      if (ch === ' ' && this.#indent < 3) {
        this.#indent++;
        return;
      }
      if (ch === '~') {
        this.#lead = 'tildes';
        this.#tildes = 1;
        return;
      }
      this.#lead = 'none';
      if (ch === '`') this.#ticksBeginLine = true;
    } else if (this.#lead === 'tildes') {
      if (ch === '~') {
        this.#tildes++;
        return;
      }
      this.#lead = 'none';
      if (this.#tildes >= 3) {
        // An opening tilde fence: the rest of the line is its info string.
        this.#fenceChar = '~';
        this.#fenceLength = this.#tildes;
        this.#mode = 'fenceInfo';
        if (ch === '\n') this.#startFenceLine();
        return;
      }
    }
    if (ch === '`') {
      this.#ticks++;
      // A backtick after the run that began the line: not an opening fence line after all.
      this.#fenceCandidate = 0;
      return;
    }
    if (this.#ticks > 0) this.#endTicks();
    if (ch === '\n') {
      const fence = this.#fenceCandidate;
      this.#startTextLine();
      if (fence > 0) {
        this.#fenceChar = '`';
        this.#fenceLength = fence;
        this.#startFenceLine();
      }
    } else if (ch === '<' && this.#span === 0) {
      this.#mode = 'open';
      this.#openMatched = 1;
      this.#openSpace = '';
      this.#call = newCall(offset);
    }
  }

  /** A backtick run ended: it opens an inline code span, closes the open one, or is inside it. */
  #endTicks(): void {
    const run = this.#ticks;
    this.#ticks = 0;
    if (this.#span === 0) {
      this.#span = run;
      if (this.#ticksBeginLine && run >= 3) this.#fenceCandidate = run;
    } else if (this.#span === run) {
      this.#span = 0;
    }
    this.#ticksBeginLine = false;
  }

  /** Starts a top-level line: no span crosses a line break. */
  #startTextLine(): void {
    this.#mode = 'text';
    this.#lead = 'indent';
    this.#indent = 0;
    this.#ticks = 0;
    this.#ticksBeginLine = false;
    this.#span = 0;
    this.#fenceCandidate = 0;
  }

  /** Goes back to top-level text in the middle of a line (after a call or a failed tag). */
  #resumeText(): void {
    this.#startTextLine();
    this.#lead = 'none';
  }

  /** Reads `<tool-use`, optional whitespace and `>`; anything else was top-level text. */
  #readOpenTag(chunk: string, at: number): number {
    const ch = chunk[at] ?? '';
    if (this.#openMatched < OPEN_TAG.length) {
      if (ch === OPEN_TAG[this.#openMatched]) {
        this.#openMatched++;
        return at + 1;
      }
    } else if (isSpace(ch)) {
      this.#openSpace += ch;
      return at + 1;
    } else if (ch === '>') {
      this.#mode = 'between';
      return at + 1;
    }
    // Not the tag. Of what was read, only the whitespace can matter (a line break starts a
    // line), so it is read again as text; it holds no `<`, so its offsets are never used.
    // The character that did not match is read again as text too.
    const space = this.#openSpace;
    this.#resumeText();
    for (const c of space) this.#textChar(c, -1);
    return at;
  }

  // ---- fenced code blocks ----

  #readFenceInfo(chunk: string, at: number): number {
    const lineBreak = chunk.indexOf('\n', at);
    if (lineBreak === -1) return chunk.length;
    this.#startFenceLine();
    return lineBreak + 1;
  }

  #startFenceLine(): void {
    this.#mode = 'fence';
    this.#fenceLine = 'indent';
    this.#fenceIndent = 0;
    this.#fenceRun = 0;
  }

  /** Reads a line of a fenced block, looking only for the fence line that closes it. */
  #readFence(chunk: string, at: number): number {
    if (this.#fenceLine === 'skip') {
      const lineBreak = chunk.indexOf('\n', at);
      if (lineBreak === -1) return chunk.length;
      this.#startFenceLine();
      return lineBreak + 1;
    }
    const ch = chunk[at] ?? '';
    const blank = ch === ' ' || ch === '\t' || ch === '\r';
    if (ch === '\n') {
      if (this.#fenceLine !== 'indent' && this.#fenceRun >= this.#fenceLength) this.#startTextLine();
      else this.#startFenceLine();
    } else if (this.#fenceLine === 'indent') {
      if (ch === ' ' && this.#fenceIndent < 3) {
        this.#fenceIndent++;
      } else if (ch === this.#fenceChar) {
        this.#fenceLine = 'run';
        this.#fenceRun = 1;
      } else {
        this.#fenceLine = 'skip';
      }
    } else if (this.#fenceLine === 'run') {
      if (ch === this.#fenceChar) this.#fenceRun++;
      else this.#fenceLine = blank && this.#fenceRun >= this.#fenceLength ? 'trail' : 'skip';
    } else if (!blank) {
      this.#fenceLine = 'skip';
    }
    return at + 1;
  }

  // ---- inside a call ----

  /** Between `<tool-use>` and the tool element, or after a self-closing one: only `<` matters. */
  #skipToMarkup(chunk: string, at: number, part: CallPart): number {
    const lt = chunk.indexOf('<', at);
    if (lt === -1) return chunk.length;
    this.#startMarkup(part);
    return lt + 1;
  }

  #readBody(chunk: string, at: number): number {
    const lt = chunk.indexOf('<', at);
    this.#call.body += chunk.slice(at, lt === -1 ? chunk.length : lt);
    if (lt === -1) return chunk.length;
    this.#startMarkup('body');
    return lt + 1;
  }

  #startMarkup(from: CallPart): void {
    this.#mode = 'markup';
    this.#markup = { from, kind: 'lt', raw: '<', matched: 1, wrapper: false, tool: false };
  }

  /**
   * Reads one character after a `<` inside a call. It starts a closing tag `</name>`, a CDATA
   * section or (before the element) the tool element; or it is nothing, and what was read is
   * given back: as body text in the body, dropped elsewhere.
   */
  #readMarkup(chunk: string, at: number, found: ToolUse[]): number {
    const markup = this.#markup;
    const ch = chunk[at] ?? '';
    switch (markup.kind) {
      case 'lt':
        if (ch === '/') {
          // Only the body ends at the tool's closing tag; every part ends at the wrapper's.
          markup.kind = 'close';
          markup.matched = 0;
          markup.wrapper = true;
          markup.tool = markup.from === 'body';
        } else if (ch === '!') {
          markup.kind = 'cdata';
          markup.matched = 2;
        } else if (markup.from === 'between' && isNameChar(ch)) {
          this.#call.tool = ch;
          this.#mode = 'name';
          return at + 1;
        } else {
          break;
        }
        markup.raw += ch;
        return at + 1;
      case 'close': {
        const tool = this.#call.tool;
        if (isNameChar(ch)) {
          // Read on only while the name can still become one this part ends at.
          markup.wrapper &&= WRAPPER[markup.matched] === ch;
          markup.tool &&= tool[markup.matched] === ch;
          if (!markup.wrapper && !markup.tool) break;
          markup.matched++;
          markup.raw += ch;
          return at + 1;
        }
        // The name ended: it must be a whole one (the tool's name is never `tool-use`).
        markup.wrapper &&= markup.matched === WRAPPER.length;
        markup.tool &&= markup.matched === tool.length;
        if (!markup.wrapper && !markup.tool) break;
        if (ch === '>') return this.#closeTag(at, found);
        if (!isSpace(ch)) break;
        markup.kind = 'closeSpace';
        markup.raw += ch;
        return at + 1;
      }
      case 'closeSpace':
        if (ch === '>') return this.#closeTag(at, found);
        if (!isSpace(ch)) break;
        markup.raw += ch;
        return at + 1;
      case 'cdata':
        if (ch !== CDATA_OPEN[markup.matched]) break;
        markup.matched++;
        markup.raw += ch;
        if (markup.matched === CDATA_OPEN.length) {
          if (markup.from === 'body') this.#call.body += markup.raw;
          this.#cdataIn = markup.from;
          this.#brackets = 0;
          this.#mode = 'cdata';
        }
        return at + 1;
    }
    // Nothing: give back what was read and read `ch` again where the `<` was.
    if (markup.from === 'body') this.#call.body += markup.raw;
    this.#mode = markup.from;
    return at;
  }

  /** A closing tag's `>` is `chunk[at]`: `</tool>` marks the body's end, `</tool-use>` ends the call. */
  #closeTag(at: number, found: ToolUse[]): number {
    const end = this.#offset + at + 1;
    const markup = this.#markup;
    const call = this.#call;
    if (!markup.wrapper) {
      // `</tool>`: the body ends here unless another one comes before `</tool-use>`; until
      // then the tag is body text like any other.
      call.bodyEnd = call.body.length;
      call.body += markup.raw + '>';
      this.#mode = 'body';
      return at + 1;
    }
    if (markup.from !== 'between') {
      const content = markup.from === 'after' ? '' : readContent(call.body.slice(0, call.bodyEnd));
      found.push({ tool: call.tool, args: call.args, content, format: 'xml', start: call.start, end });
    }
    this.#resumeText();
    return at + 1;
  }

  /** Reads the tool element's name; a character no name has ends it (or shows it was none). */
  #readName(chunk: string, at: number): number {
    const call = this.#call;
    const ch = chunk[at] ?? '';
    if (isNameChar(ch)) {
      call.tool += ch;
      return at + 1;
    }
    if (call.tool === WRAPPER || !(isSpace(ch) || ch === '/' || ch === '>')) {
      // A repeated `<tool-use>`, or not a tag (`<a+b`): stray text before the element.
      call.tool = '';
      this.#mode = 'between';
      return at;
    }
    this.#mode = 'attrs';
    this.#quote = '';
    this.#afterEquals = false;
    this.#afterSlash = false;
    this.#closeProgress = 0;
    return at;
  }

  /** Reads the rest of the tool element's opening tag, up to its `>` outside quotes. */
  #readAttrs(chunk: string, at: number): number {
    const call = this.#call;
    const ch = chunk[at] ?? '';
    this.#closeProgress = watchCloseTag(this.#closeProgress, ch);
    if (this.#closeProgress === -1) {
      // `</tool-use>` before the opening tag was finished: there is no element, so no call.
      this.#resumeText();
      return at + 1;
    }
    if (this.#quote !== '') {
      if (ch === this.#quote) this.#quote = '';
    } else if (ch === '>') {
      call.args = readArgs(call.tag);
      this.#mode = this.#afterSlash ? 'after' : 'body';
      return at + 1;
    } else if ((ch === '"' || ch === "'") && this.#afterEquals) {
      this.#quote = ch;
    }
    // A quote opens a value only after `=`, as in the attributes `readArgs` reads.
    const outside = this.#quote === '' && ch !== '"' && ch !== "'";
    this.#afterEquals = outside && (ch === '=' || (this.#afterEquals && isSpace(ch)));
    this.#afterSlash = outside && ch === '/';
    call.tag += ch;
    return at + 1;
  }

  /** Reads a CDATA section up to its `]]>`, keeping it raw in the body (skipping it elsewhere). */
  #readCdata(chunk: string, at: number): number {
    const call = this.#cdataIn === 'body' ? this.#call : undefined;
    if (this.#brackets === 0) {
      const bracket = chunk.indexOf(']', at);
      const next = bracket === -1 ? chunk.length : bracket + 1;
      if (call) call.body += chunk.slice(at, next);
      if (bracket !== -1) this.#brackets = 1;
      return next;
    }
    const ch = chunk[at] ?? '';
    if (call) call.body += ch;
    if (ch === ']') {
      this.#brackets++;
    } else if (ch === '>' && this.#brackets >= 2) {
      this.#brackets = 0;
      this.#mode = this.#cdataIn;
    } else {
      this.#brackets = 0;
    }
    return at + 1;
  }
}
