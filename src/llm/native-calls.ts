import type { NativeToolCall } from '../conversation/message';
import { formatNativeCallLine } from '../parse/native-call';

/**
 * Writes a native tool call as the line that stands for it in the assistant's text, so that
 * every tool format is shown and logged the same way. Only for display: the structured call
 * is kept in `meta.toolCalls`, and history replay reads that.
 */
export function formatNativeCall(call: NativeToolCall): string {
  return formatNativeCallLine(call.name, call.id, call.arguments);
}
