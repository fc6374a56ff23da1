import { FenceReader } from './fence-reader';
import type { IsTool, ToolUse } from './tool-use';

/**
 * All complete tool uses written as markdown fenced blocks in `text`, in text order.
 *
 * A block whose tag (first word of the info string) satisfies `isTool` is a tool use: ```` ```save
 * notes/a.md ```` gives tool `save`, args `['notes/a.md']`, the body as `content` (without its
 * final line break; inner CRLF line breaks are kept as written) and `format: 'markdown'`.
 * `start` is the offset of the opening fence line's first character; `end` is just past the
 * closing fence line, including its line break when it has one.
 *
 * Blocks without a tag or with a tag that is not a tool yield nothing, and their bodies are
 * skipped whole. Unterminated blocks yield nothing. Fences nested in a block without a longer
 * outer fence are understood, bare ones too: a bare fence that could close the block closes it
 * when a blank line, another fence line or the end of the text follows (see `FencedBlock` for
 * the exact rule). The end of the text is taken as the end of the reply: a block whose closing
 * fence is the last line, or is followed only by prose, ends there.
 *
 * This is the stream scanner's state machine fed the whole text, so it always agrees with
 * `MarkdownStreamScanner` on the first tool use. Never throws (unless `isTool` does).
 */
export function parseMarkdownToolUses(text: string, isTool: IsTool): ToolUse[] {
  const reader = new FenceReader(isTool);
  const uses = reader.push(text);
  uses.push(...reader.finish());
  return uses;
}
