import { FenceReader } from './fence-reader';
import type { IsTool, ToolUse } from './tool-use';

/**
 * Incremental scanner over a streamed reply, finding the first markdown tool use as early as
 * possible so the stream can be stopped there.
 *
 * Chunks may split the text anywhere (inside a fence run, between `\r` and `\n`, ...): the
 * result never depends on the chunking, and it is always the first element of
 * `parseMarkdownToolUses(text, isTool)`, because both run the same line-level state machine.
 * Each complete line is processed once, so scanning costs time linear in the reply's length;
 * once the first tool use is found, later text is only stored, not scanned.
 */
export class MarkdownStreamScanner {
  readonly #reader: FenceReader;
  /** Text fed so far, joined lazily by `text`. */
  #chunks: string[] = [];
  /** Set once a tool use was returned or the stream ended: nothing more is reported. */
  #done = false;

  constructor(isTool: IsTool) {
    this.#reader = new FenceReader(isTool);
  }

  /**
   * Feeds the next chunk. Returns the first complete tool use as soon as its closing fence
   * line has ended (its line break arrived), else undefined. After a tool use has been
   * returned, or after `finish()`, it always returns undefined (the chunk is still recorded
   * in `text`).
   */
  push(chunk: string): ToolUse | undefined {
    if (chunk !== '') this.#chunks.push(chunk);
    if (this.#done) return undefined;
    const first = this.#reader.push(chunk)[0];
    if (first) this.#done = true;
    return first;
  }

  /**
   * The stream ended. Returns the first tool use if it completes only at the end of the input
   * (a closing fence line without a trailing line break), else undefined — also when a tool
   * use was already returned by `push` or `finish` was already called. Unterminated blocks
   * are never returned.
   */
  finish(): ToolUse | undefined {
    if (this.#done) return undefined;
    this.#done = true;
    return this.#reader.finish()[0];
  }

  /** All text fed so far (joined on demand; repeated reads without new chunks are cheap). */
  get text(): string {
    if (this.#chunks.length > 1) this.#chunks = [this.#chunks.join('')];
    return this.#chunks[0] ?? '';
  }
}
