import type { ImageMediaType, Message, NativeToolCall, ReasoningPart } from '../conversation/message';
import { formatNativeCall } from './native-calls';

/**
 * One message of a conversation, sorted into what the chat APIs tell apart. Both adapters
 * build their request from these, so the rules below hold for every provider.
 */
export type HistoryEntry =
  | { kind: 'user'; text: string; images?: SentImage[] }
  /**
   * `text` is the message without the lines of its replayed calls; `calls` are the ones
   * replayed natively; `reasoning` is the reasoning state the reply carried, in its order, each
   * part naming the call it came before (`beforeCallId`; absent: before the text). An adapter
   * sends back the parts of its own API only, each before its call (or, when that call is not
   * replayed, before the next one that is, else after the text).
   */
  | { kind: 'assistant'; text: string; calls: NativeToolCall[]; reasoning: ReasoningEntry[] }
  /** A system message after the start of the conversation (a tool result written as text, a notice). */
  | { kind: 'system'; text: string; images?: SentImage[] }
  /** The result of a native call of the assistant entry just before it. */
  | { kind: 'tool_result'; callId: string; name: string; text: string; isError: boolean; images?: SentImage[] };

/**
 * An image a user, system or tool-result entry carries, with its bytes (base64): those of the
 * message's `meta.images` that the caller loaded (`ImageRef.data`). Absent on an entry: none.
 */
export interface SentImage {
  mediaType: ImageMediaType;
  data: string;
}

/** A reasoning part of an assistant entry, with the id of the call it came before. */
export type ReasoningEntry = ReasoningPart & { beforeCallId?: string };

/** A conversation ready to be shaped into a request. */
export interface History {
  /** The system messages at the start, joined by blank lines (empty when there are none). */
  systemPrompt: string;
  entries: HistoryEntry[];
}

/**
 * Sorts messages for a request. Every message is kept (`hide` is a display flag only).
 *
 * With `nativeCalls`, each structured call of an assistant message (`meta.toolCalls`) is
 * replayed natively when the tool results that directly follow that message hold one with the
 * same `callId`; those results become `tool_result` entries, placed first in that run. So every
 * native call has exactly one result, right after it, and no result lacks its call, which both
 * APIs require. A call without its result stays in the text as its `@name(id): {json}` line.
 * The text itself is never parsed for calls: prose that looks like one is only prose.
 */
export function planHistory(messages: readonly Message[], options: { nativeCalls: boolean }): History {
  let index = 0;
  const prompts: string[] = [];
  for (; index < messages.length; index++) {
    const message = messages[index];
    if (message === undefined || message.role !== 'system' || message.meta?.toolResult) break;
    prompts.push(message.content);
  }

  const entries: HistoryEntry[] = [];
  while (index < messages.length) {
    const message = messages[index];
    index++;
    if (message === undefined) continue;
    if (message.role !== 'assistant') {
      entries.push({ kind: message.role, text: message.content, ...imagesOf(message) });
      continue;
    }
    let runEnd = index;
    while (runEnd < messages.length && isToolResult(messages[runEnd])) runEnd++;
    const run = messages.slice(index, runEnd);
    index = runEnd;
    entries.push(...pairCalls(message, run, options.nativeCalls));
  }
  return { systemPrompt: prompts.join('\n\n'), entries };
}

/** `{ images }` of a message's loaded images (those with their bytes), or `{}` when it has none. */
function imagesOf(message: Message): { images?: SentImage[] } {
  const images = (message.meta?.images ?? []).flatMap((image) => (image.data ? [{ mediaType: image.mediaType, data: image.data }] : []));
  return images.length > 0 ? { images } : {};
}

function isToolResult(message: Message | undefined): boolean {
  return message?.role === 'system' && message.meta?.toolResult === true;
}

/** The assistant entry and the tool-result run after it, with the calls that pair up made native. */
function pairCalls(message: Message, results: readonly Message[], native: boolean): HistoryEntry[] {
  const found = native ? (message.meta?.toolCalls ?? []) : [];
  const claimed = new Set<Message>();
  const calls: NativeToolCall[] = [];
  const paired: HistoryEntry[] = [];
  for (const call of found) {
    if (calls.some((other) => other.id === call.id)) continue;
    const result = results.find((candidate) => candidate.callId === call.id && !claimed.has(candidate));
    if (result === undefined) continue;
    claimed.add(result);
    calls.push(call);
    paired.push({ kind: 'tool_result', callId: call.id, name: call.name, text: result.content, isError: result.meta?.isError === true, ...imagesOf(result) });
  }
  const rest: HistoryEntry[] = results
    .filter((result) => !claimed.has(result))
    .map((result) => ({ kind: 'system', text: result.content, ...imagesOf(result) }));
  const toolCalls = message.meta?.toolCalls ?? [];
  const reasoning: ReasoningEntry[] = (message.meta?.reasoning ?? []).map((part) => {
    const before = part.beforeCall === undefined ? undefined : toolCalls[part.beforeCall]?.id;
    return before === undefined ? part : { ...part, beforeCallId: before };
  });
  return [{ kind: 'assistant', text: withoutCallLines(message.content, calls), calls, reasoning }, ...paired, ...rest];
}

/** The text without the lines that stand for the replayed calls (exact lines, written by formatNativeCall). */
function withoutCallLines(text: string, calls: readonly NativeToolCall[]): string {
  if (calls.length === 0) return text;
  const lines = new Set(calls.map(formatNativeCall));
  return text
    .split('\n')
    .filter((line) => !lines.has(line.trim()))
    .join('\n')
    .trim();
}

/** How a system message after the start is shown to a model that only takes one at the start. */
export function wrapAsSystem(text: string): string {
  return `<system>\n${text}\n</system>`;
}
