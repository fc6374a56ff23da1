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
 * `push` returns the first tool use as soon as the line after its closing fence shows that the
 * fence closes it (a blank line or a fence line whose line break arrived; see `FencedBlock`);
 * `finish` returns it when it completes only at the end of the reply (a closing fence with no
 * line after it, or followed only by prose). Call `finish` only when the model ended the reply
 * itself: a reply cut short may have stopped inside a nested block. Unterminated blocks are
 * never returned.
 */
export class MarkdownStreamScanner extends ReaderScanner {
  constructor(isTool: IsTool) {
    super(new FenceReader(isTool));
  }
}
