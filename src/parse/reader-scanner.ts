import type { ToolStreamScanner, ToolUse } from './tool-use';

/**
 * A format's state machine as the scanners drive it: fed text in pieces of any size, it
 * returns the tool uses completed by each piece, and at the end those that complete only
 * there (`finish`, absent when nothing can).
 */
export interface ToolUseReader {
  push(chunk: string): ToolUse[];
  finish?(): ToolUse[];
}

/**
 * The `ToolStreamScanner` contract over a reader: the first tool use the reader completes is
 * returned once, as soon as it is complete; later text is only stored, not scanned. The text
 * is kept as its chunks and joined on demand, so feeding stays linear in the reply's length.
 */
export class ReaderScanner implements ToolStreamScanner {
  readonly #reader: ToolUseReader;
  /** Text fed so far, joined lazily by `text`. */
  #chunks: string[] = [];
  /** Set once a tool use was returned or the stream ended: nothing more is reported. */
  #done = false;

  constructor(reader: ToolUseReader) {
    this.#reader = reader;
  }

  push(chunk: string): ToolUse | undefined {
    if (chunk !== '') this.#chunks.push(chunk);
    if (this.#done) return undefined;
    const first = this.#reader.push(chunk)[0];
    if (first) this.#done = true;
    return first;
  }

  finish(): ToolUse | undefined {
    if (this.#done) return undefined;
    this.#done = true;
    return this.#reader.finish?.()[0];
  }

  /** All text fed so far (joined on demand; repeated reads without new chunks are cheap). */
  get text(): string {
    if (this.#chunks.length > 1) this.#chunks = [this.#chunks.join('')];
    return this.#chunks[0] ?? '';
  }
}
