import type { IsTool, ToolUse } from './tool-use';

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

/** The outermost open block when its tag names a tool: what the tool use will be made of. */
interface OpenToolBlock {
  tool: string;
  args: string[];
  start: number;
  /** Body lines so far, each with its own line break as written. */
  body: string[];
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

/** Removes the one line break (`\n` or `\r\n`) that ends `body`, if any. */
function stripFinalLineBreak(body: string): string {
  if (body.endsWith('\r\n')) return body.slice(0, -2);
  if (body.endsWith('\n')) return body.slice(0, -1);
  return body;
}

/**
 * The line-level state machine behind both the markdown parser and the stream scanner: it is
 * fed text in pieces of any size, splits it into lines, and processes every complete line
 * exactly once, so the total work is linear in the text's length whatever the chunking.
 *
 * Rules it applies:
 * - A fence line opens a block at top level. The first whitespace-separated word of its info
 *   string is the tag; when `isTool(tag)` holds, the block is a tool use whose args are the
 *   remaining words. A block without a tag, or whose tag is not a tool, is plain text — but
 *   its body is still skipped as a block, so fence lines inside it never start tool uses.
 * - A fence is closed by a bare fence line (no info string) of the same character and at
 *   least the opening length.
 * - Nesting heuristic: models nest code blocks without lengthening the outer fence. Inside a
 *   block, a fence line WITH an info string opens a nested level when a bare fence of the same
 *   run would close the innermost open level (same character, at least its length), and a bare
 *   fence line closes the innermost open level. The outer block closes only when its own level
 *   closes, so a ```` ```bash ```` block written inside a ```` ```save README.md ```` block stays
 *   in the saved content. Fence lines that could not close the innermost level (a shorter run
 *   or the other character) are plain body lines, exactly as in CommonMark. The price of the
 *   heuristic: a nested tagged fence that is never closed keeps its outer block open.
 * - Line breaks are `\n` and `\r\n`; a lone `\r` is an ordinary character. Content keeps its
 *   line breaks as written (CRLF stays CRLF); only the one line break before the closing fence
 *   is removed. `end` counts the closing fence line's line break, whichever it is.
 * - An unterminated block yields nothing.
 *
 * It never throws on any input (only `isTool` could).
 */
export class FenceReader {
  readonly #isTool: IsTool;
  /** Open fences, outermost first; empty while reading top-level text. */
  readonly #levels: FenceLevel[] = [];
  #toolBlock: OpenToolBlock | undefined;
  /** The start of the line not yet ended by a line break. */
  #pending = '';
  /** Offset, in everything fed so far, of the first character of `#pending`. */
  #pendingStart = 0;
  #finished = false;

  constructor(isTool: IsTool) {
    this.#isTool = isTool;
  }

  /**
   * Feeds the next piece of text and returns the tool uses whose closing fence line ended
   * inside it (its line break arrived), in text order; usually none. Ignored after `finish()`.
   */
  push(chunk: string): ToolUse[] {
    const found: ToolUse[] = [];
    if (this.#finished) return found;
    let from = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', from);
      if (newline === -1) {
        this.#pending += chunk.slice(from);
        return found;
      }
      const line = this.#pending + chunk.slice(from, newline + 1);
      const start = this.#pendingStart;
      this.#pending = '';
      this.#pendingStart = start + line.length;
      from = newline + 1;
      const use = this.#readLine(line, start);
      if (use) found.push(use);
    }
  }

  /**
   * Ends the input: the last line, if it has no line break, is read now, so a closing fence at
   * the very end of the text still completes its block. Returns what that line completed.
   * Later calls to `push` or `finish` do nothing.
   */
  finish(): ToolUse[] {
    if (this.#finished) return [];
    this.#finished = true;
    const line = this.#pending;
    this.#pending = '';
    if (line === '') return [];
    const use = this.#readLine(line, this.#pendingStart);
    return use ? [use] : [];
  }

  /** Processes one line (with its line break, if it has one) that starts at `start`. */
  #readLine(line: string, start: number): ToolUse | undefined {
    const fence = readFenceLine(line);
    const innermost = this.#levels[this.#levels.length - 1];
    if (!innermost) {
      if (fence) this.#open(fence, start);
      return undefined;
    }
    const matches = fence !== undefined && fence.char === innermost.char && fence.length >= innermost.length;
    if (matches && fence.info === '') {
      this.#levels.pop();
      if (this.#levels.length === 0) return this.#close(start + line.length);
    } else if (matches) {
      this.#levels.push({ char: fence.char, length: fence.length });
    }
    this.#toolBlock?.body.push(line);
    return undefined;
  }

  /** Opens a top-level block; it becomes a tool block when its tag names a tool. */
  #open(fence: FenceLine, start: number): void {
    this.#levels.push({ char: fence.char, length: fence.length });
    const [tag, ...args] = fence.info === '' ? [] : fence.info.split(/\s+/);
    if (tag !== undefined && this.#isTool(tag)) {
      this.#toolBlock = { tool: tag, args, start, body: [] };
    }
  }

  /** The top-level block closed at `end`: returns its tool use, if it was a tool block. */
  #close(end: number): ToolUse | undefined {
    const block = this.#toolBlock;
    this.#toolBlock = undefined;
    if (!block) return undefined;
    return {
      tool: block.tool,
      args: block.args,
      content: stripFinalLineBreak(block.body.join('')),
      format: 'markdown',
      start: block.start,
      end,
    };
  }
}
