import { ReaderScanner } from './reader-scanner';
import { XmlReader } from './xml-reader';

/**
 * Incremental scanner over a streamed reply, finding the first XML tool use as early as
 * possible so the stream can be stopped there.
 *
 * Chunks may split the text anywhere (inside `<tool-use>`, inside `<![CDATA[`, between `\r`
 * and `\n`, ...): the result never depends on the chunking, and it is always the first element
 * of `parseXmlToolUses(text)`, because both run the same character-level state machine. Each
 * character is looked at a bounded number of times and no unread tail is scanned again, so
 * scanning costs time linear in the reply's length; once the first tool use is found, later
 * text is only stored, not scanned.
 *
 * `push` returns the first tool use as soon as the `>` of its `</tool-use>` has arrived (a
 * half-arrived `</tool-` is not complete). `finish` always returns undefined: nothing can
 * complete at the end of the input alone, and unterminated calls are never returned.
 */
export class XmlStreamScanner extends ReaderScanner {
  constructor() {
    super(new XmlReader());
  }
}
