import { FenceReader } from './fence-reader';
import { ReaderScanner } from './reader-scanner';
import type { IsTool } from './tool-use';

/**
 * Incremental scanner over a streamed reply, finding the first markdown tool use as early as
 * possible so the stream can be stopped there.
 *
 * Chunks may split the text anywhere (inside a fence run, between `\r` and `\n`, ...): the
 * result never depends on the chunking, and it is always the first element of
 * `parseMarkdownToolUses(text, isTool)`, because both run the same line-level state machine.
 * Each complete line is processed once, so scanning costs time linear in the reply's length;
 * once the first tool use is found, later text is only stored, not scanned.
 *
 * `push` returns the first tool use as soon as its closing fence line has ended (its line
 * break arrived); `finish` returns it when it completes only at the end of the input (a
 * closing fence line without a line break). Unterminated blocks are never returned.
 */
export class MarkdownStreamScanner extends ReaderScanner {
  constructor(isTool: IsTool) {
    super(new FenceReader(isTool));
  }
}
