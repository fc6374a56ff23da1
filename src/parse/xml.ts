import type { ToolUse } from './tool-use';
import { XmlReader } from './xml-reader';

/**
 * All complete tool uses written in the XML format in `text`, in text order.
 *
 * `<tool-use><save args="notes/a.md">…</save></tool-use>` gives tool `save` (the element's name
 * as written, whatever it is), args `['notes/a.md']` (the `args` attribute split on
 * whitespace, entities decoded), the element's body as `content` and `format: 'xml'`. In the
 * body, one line break right after the opening tag and one right before the closing tag are
 * removed, entities are decoded, and CDATA sections are kept verbatim; a self-closing element
 * has content ''. `start` is the offset of `<tool-use`, `end` just past its `</tool-use>`.
 *
 * Prose around calls is ignored; `<tool-use>` inside a fenced code block or an inline code
 * span is text. A `<tool-use>` without an element, or never closed, yields nothing. See
 * {@link XmlReader} for the exact rules.
 *
 * This is the stream scanner's state machine fed the whole text, so it always agrees with
 * `XmlStreamScanner` on the first tool use. Never throws.
 */
export function parseXmlToolUses(text: string): ToolUse[] {
  return new XmlReader().push(text);
}
