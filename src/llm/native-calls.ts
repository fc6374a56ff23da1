import type { NativeToolCall } from '../conversation/message';

/**
 * Writes a native tool call as the line that stands for it in the assistant's text, so that
 * every tool format is shown and logged the same way: `@name(id): {json}`. Only for display:
 * the structured call is kept in `meta.toolCalls`, and history replay reads that
 * (`parseNativeCallLines` reads such lines back, for showing a log).
 */
export function formatNativeCall(call: NativeToolCall): string {
  return `@${call.name}(${call.id}): ${call.arguments}`;
}
