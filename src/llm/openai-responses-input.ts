import type { ResponseInputContent, ResponseInputImageContent, ResponseInputItem } from 'openai/resources/responses/responses';
import type { Message } from '../conversation/message';
import { planHistory, wrapAsSystem, type HistoryEntry, type ReasoningEntry, type SentImage } from './history';
import type { OpenAICompat } from './openai-compat';

/** A conversation shaped for the Responses API: the system prompt and the input items. */
export interface ResponsesInput {
  /** The system prompt(s) at the start, joined (absent when there are none). */
  instructions?: string;
  input: ResponseInputItem[];
}

type AssistantEntry = Extract<HistoryEntry, { kind: 'assistant' }>;

/**
 * Shapes fence messages as the `instructions` and `input` of a stateless Responses API
 * request: the whole conversation, every turn.
 *
 * - The system prompt(s) at the start become `instructions`: the API's own place for them,
 *   which it puts first whatever the input holds.
 * - Images (loaded `meta.images`) become `input_image` parts with a `data:` URL: after the text
 *   of a user message, and in a `function_call_output`'s output list (text, then images); a
 *   `system` message's images follow it in a user message.
 * - Users' messages become `user` messages; later system messages follow
 *   `compat.laterSystemAs` (a `system` message, or a user message wrapped in `<system>` tags).
 * - An assistant reply becomes an `assistant` message (when it has text), its replayed native
 *   calls (with `nativeCalls`, see `planHistory`) `function_call` items, each answered by its
 *   `function_call_output` item (same `call_id`) after the calls.
 * - The reply's reasoning items (parts with `api: 'openai-responses'`; others are left out) go
 *   back exactly as received and in their place, those with their `encrypted_content` only
 *   (without it, an item of a reply that was not stored names nothing the API can find, and the
 *   request is refused): before the text when they preceded it,
 *   otherwise right before the call they led to. A part whose call is not replayed goes with
 *   the next part whose call is, or else right after the text, so their order never changes.
 *
 * Pure: the messages are not changed (the reasoning items are the stored objects themselves,
 * never edited). Never throws.
 */
export function toResponsesInput(messages: readonly Message[], compat: OpenAICompat, nativeCalls: boolean): ResponsesInput {
  const history = planHistory(messages, { nativeCalls });
  const input: ResponseInputItem[] = [];
  for (const entry of history.entries) {
    switch (entry.kind) {
      case 'user':
        pushUser(input, entry.text, compat, entry.images);
        break;
      case 'system':
        if (compat.laterSystemAs === 'system') {
          input.push({ role: 'system', content: entry.text });
          if (entry.images?.length) pushUser(input, 'The images of the system message above:', compat, entry.images);
        } else pushUser(input, wrapAsSystem(entry.text), compat, entry.images);
        break;
      case 'assistant':
        input.push(...assistantItems(entry));
        break;
      case 'tool_result':
        input.push({
          type: 'function_call_output',
          call_id: entry.callId,
          output: entry.images?.length ? [...(entry.text === '' ? [] : [{ type: 'input_text' as const, text: entry.text }]), ...entry.images.map(imageContent)] : entry.text,
        });
        break;
    }
  }
  return history.systemPrompt === '' ? { input } : { instructions: history.systemPrompt, input };
}

/** The items of one assistant reply: reasoning, text and calls, in the order the reply had them. */
function assistantItems(entry: AssistantEntry): ResponseInputItem[] {
  const replayed = new Set(entry.calls.map((call) => call.id));
  const first: ReasoningEntry[] = [];
  const beforeCall = new Map<string, ReasoningEntry[]>();
  let waiting: ReasoningEntry[] = [];
  for (const part of entry.reasoning) {
    if (part.api !== 'openai-responses' || typeof part.raw.encrypted_content !== 'string') continue;
    if (part.beforeCallId === undefined) first.push(part);
    else if (replayed.has(part.beforeCallId)) {
      beforeCall.set(part.beforeCallId, [...(beforeCall.get(part.beforeCallId) ?? []), ...waiting, part]);
      waiting = [];
    } else waiting.push(part);
  }

  const items: ResponseInputItem[] = first.map(reasoningItem);
  if (entry.text !== '') items.push({ role: 'assistant', content: entry.text });
  items.push(...waiting.map(reasoningItem));
  for (const call of entry.calls) {
    items.push(...(beforeCall.get(call.id) ?? []).map(reasoningItem));
    items.push({ type: 'function_call', call_id: call.id, name: call.name, arguments: call.arguments });
  }
  return items;
}

/** A reasoning item as the API gave it: the stored object, unchanged. */
function reasoningItem(part: ReasoningEntry): ResponseInputItem {
  return part.raw as unknown as ResponseInputItem;
}

function pushUser(input: ResponseInputItem[], text: string, compat: OpenAICompat, images: readonly SentImage[] = []): void {
  if (images.length > 0) {
    const content: ResponseInputContent[] = [...(text === '' ? [] : [{ type: 'input_text' as const, text }]), ...images.map(imageContent)];
    input.push({ role: 'user', content });
    return;
  }
  const last = input.at(-1);
  if (compat.mergeUserMessages && last && 'role' in last && last.role === 'user' && !('type' in last) && typeof last.content === 'string') {
    last.content = `${last.content}\n\n${text}`;
    return;
  }
  input.push({ role: 'user', content: text });
}

/** An image as a Responses API input part: a `data:` URL, detail left to the API. */
function imageContent(image: SentImage): ResponseInputImageContent & { detail: 'auto' } {
  return { type: 'input_image', image_url: `data:${image.mediaType};base64,${image.data}`, detail: 'auto' };
}
