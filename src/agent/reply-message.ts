import { createMessage, type Message, type NativeToolCall } from '../conversation/message';
import { formatNativeCall } from '../llm/native-calls';
import type { ParsedArguments } from '../parse/native-call';
import type { Reply } from './stream-reply';

/** A native call as streamed, with its arguments checked and the form that is stored. */
export interface PreparedCall {
  parsed: ParsedArguments;
  /** What the message keeps: the arguments as compact JSON (`{}` when they were not usable). */
  stored: NativeToolCall;
}

/**
 * Checks each call's arguments. The parser (and jsonrepair) load on the first native call:
 * markdown and XML runs never need them. Never throws.
 */
export async function prepareCalls(calls: readonly NativeToolCall[]): Promise<PreparedCall[]> {
  const { parseToolArguments } = await import('../parse/native-call');
  return calls.map((call) => {
    const parsed = parseToolArguments(call.arguments);
    return { parsed, stored: { id: call.id, name: call.name, arguments: parsed.ok ? parsed.json : '{}' } };
  });
}

/**
 * The assistant message that keeps one reply: its text (with a `@name(id): {json}` line per
 * native call), and in its meta the model, usage, stop reason, the calls and the reasoning
 * state the reply carried (`meta.reasoning`, in stream order), the queries of the provider's
 * hosted web searches (`meta.webSearches`). Never throws.
 */
export function replyMessage(reply: Reply, calls: readonly PreparedCall[], modelId: string): Message {
  const interrupted = reply.stopReason === 'error' || reply.stopReason === 'aborted';
  const text = [reply.text.trimEnd(), ...calls.map((call) => formatNativeCall(call.stored))].filter(Boolean).join('\n');
  return createMessage('assistant', calls.length > 0 ? text : reply.text, {
    meta: {
      model: modelId,
      usage: reply.usage,
      stopReason: reply.stopReason,
      ...(interrupted ? { interrupted: true } : {}),
      ...(calls.length > 0 ? { toolCalls: calls.map((call) => call.stored) } : {}),
      ...(reply.reasoning?.length ? { reasoning: reply.reasoning } : {}),
      ...(reply.webSearches?.length ? { webSearches: reply.webSearches } : {}),
    },
  });
}
