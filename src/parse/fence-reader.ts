import { readFenceLine, type FenceLine } from './fence-line';
import { FencedBlock } from './fenced-block';
import type { IsTool, ToolUse } from './tool-use';

/** The outermost open block when its tag names a tool: what the tool use will be made of. */
interface OpenToolBlock {
  tool: string;
  args: string[];
  start: number;
  /** Body lines so far, each with its own line break as written. */
  body: string[];
}

/** A line the open block holds until a later line tells whether it is part of the block. */
interface HeldLine {
  text: string;
  start: number;
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
 * once (a line that shows a block has ended is then read once more, at top level), so the
 * total work is linear in the text's length whatever the chunking.
 *
 * Rules it applies:
 * - A fence line opens a block at top level. The first whitespace-separated word of its info
 *   string is the tag; when `isTool(tag)` holds, the block is a tool use whose args are the
 *   remaining words. A block without a tag, or whose tag is not a tool, is plain text — but
 *   its body is still skipped as a block, so fence lines inside it never start tool uses.
 * - Where a block ends is {@link FencedBlock}'s rule: nested fences are understood without a
 *   longer outer fence, and a bare fence that could close the block closes it when a blank
 *   line, another fence line or the end of the text follows it. Followed by other text, it
 *   opens a nested level — unless another fence line turns up inside that level or the text
 *   ends there, which shows it was the closing fence after all, with prose written against it.
 *   So the end of a block is known one line after its closing fence (or at the end of the
 *   text), and at most all lines since that fence wait for it.
 * - Line breaks are `\n` and `\r\n`; a lone `\r` is an ordinary character. Content keeps its
 *   line breaks as written (CRLF stays CRLF); only the one line break before the closing fence
 *   is removed. `end` counts the closing fence line's line break, whichever it is.
 * - An unterminated block yields nothing.
 *
 * It never throws on any input (only `isTool` could).
 */
export class FenceReader {
  readonly #isTool: IsTool;
  /** The open top-level block; undefined while reading top-level text. */
  #block: FencedBlock | undefined;
  #toolBlock: OpenToolBlock | undefined;
  /** Lines the open block holds, its possible closing fence first. */
  #held: HeldLine[] = [];
  /** The start of the line not yet ended by a line break. */
  #pending = '';
  /** Offset, in everything fed so far, of the first character of `#pending`. */
  #pendingStart = 0;
  #finished = false;

  constructor(isTool: IsTool) {
    this.#isTool = isTool;
  }

  /**
   * Feeds the next piece of text and returns the tool uses whose end it settled, in text order;
   * usually none. A block's end is settled by the line after its closing fence (its line break
   * arrived), or later (see the class rules). Ignored after `finish()`.
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
   * Ends the input: the last line, if it has no line break, is read now, and a block whose
   * closing fence was still waiting for the line after it ends there (a closing fence at the
   * very end of the text, or one followed only by prose). Returns what that completed. Later
   * calls to `push` or `finish` do nothing.
   */
  finish(): ToolUse[] {
    if (this.#finished) return [];
    this.#finished = true;
    const uses: ToolUse[] = [];
    const line = this.#pending;
    this.#pending = '';
    const last = line === '' ? undefined : this.#readLine(line, this.#pendingStart);
    if (last) uses.push(last);
    if (this.#block?.end()) {
      const use = this.#close();
      if (use) uses.push(use);
    }
    return uses;
  }

  /** Processes one line (with its line break, if it has one) that starts at `start`. */
  #readLine(line: string, start: number): ToolUse | undefined {
    const block = this.#block;
    if (!block) {
      const fence = readFenceLine(line);
      if (fence) this.#open(fence, start);
      return undefined;
    }
    switch (block.read(line)) {
      case 'inside': {
        const body = this.#toolBlock?.body;
        if (body) for (const held of this.#held) body.push(held.text);
        body?.push(line);
        this.#held = [];
        return undefined;
      }
      case 'held':
        this.#held.push({ text: line, start });
        return undefined;
      case 'ended': {
        const use = this.#close();
        // The held lines after the closing fence are never fence lines, so at top level they
        // are prose and open nothing; only this line can open the next block.
        this.#readLine(line, start);
        return use;
      }
    }
  }

  /** Opens a top-level block; it becomes a tool block when its tag names a tool. */
  #open(fence: FenceLine, start: number): void {
    this.#block = new FencedBlock(fence);
    const [tag, ...args] = fence.info === '' ? [] : fence.info.split(/\s+/);
    if (tag !== undefined && this.#isTool(tag)) {
      this.#toolBlock = { tool: tag, args, start, body: [] };
    }
  }

  /** The top-level block ended at its first held line: returns its tool use, if it was a tool block. */
  #close(): ToolUse | undefined {
    const block = this.#toolBlock;
    const closing = this.#held[0];
    this.#block = undefined;
    this.#toolBlock = undefined;
    this.#held = [];
    if (!block || !closing) return undefined;
    return {
      tool: block.tool,
      args: block.args,
      content: stripFinalLineBreak(block.body.join('')),
      format: 'markdown',
      start: block.start,
      end: closing.start + closing.text.length,
    };
  }
}
