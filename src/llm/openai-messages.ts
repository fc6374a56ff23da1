import type { ChatCompletionContentPart, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { Message } from '../conversation/message';
import { planHistory, wrapAsSystem, type SentImage } from './history';
import type { OpenAICompat } from './openai-compat';

/**
 * Shapes fence messages as Chat Completions messages. The system prompt(s) at the start become
 * one `system` message; later system messages follow `compat.laterSystemAs`; with `nativeCalls`
 * (tools offered), paired native calls become `tool_calls` answered by `tool` messages right
 * after them (see `planHistory`). Images (loaded `meta.images`) become `image_url` parts with
 * a `data:` URL after the text of a user message; a `tool` or `system` message cannot carry
 * them, so the images of a run of tool results follow, after every result of that run, in one
 * user message naming the calls, and those of a later system message in a user message right
 * after it. Pure: the input is not changed.
 */
export function toOpenAIMessages(messages: readonly Message[], compat: OpenAICompat, nativeCalls: boolean): ChatCompletionMessageParam[] {
  const history = planHistory(messages, { nativeCalls });
  const out: ChatCompletionMessageParam[] = [];
  if (history.systemPrompt) out.push({ role: 'system', content: history.systemPrompt });
  /** Images of the tool results just sent, waiting for the end of their run. */
  let waiting: { text: string; images: SentImage[] }[] = [];
  const sendWaiting = () => {
    if (waiting.length === 0) return;
    const text = waiting.map((part) => part.text).join('\n');
    pushUser(out, text, compat, waiting.flatMap((part) => part.images));
    waiting = [];
  };
  for (const entry of history.entries) {
    if (entry.kind !== 'tool_result') sendWaiting();
    switch (entry.kind) {
      case 'user':
        pushUser(out, entry.text, compat, entry.images);
        break;
      case 'system':
        if (compat.laterSystemAs === 'system') {
          out.push({ role: 'system', content: entry.text });
          if (entry.images?.length) pushUser(out, `${imagesCount(entry.images)} of the system message above:`, compat, entry.images);
        } else pushUser(out, wrapAsSystem(entry.text), compat, entry.images);
        break;
      case 'assistant':
        if (entry.calls.length === 0) {
          out.push({ role: 'assistant', content: entry.text });
          break;
        }
        out.push({
          role: 'assistant',
          content: entry.text === '' ? null : entry.text,
          tool_calls: entry.calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
        });
        break;
      case 'tool_result':
        out.push({ role: 'tool', tool_call_id: entry.callId, content: entry.text });
        if (entry.images?.length) waiting.push({ text: `${imagesCount(entry.images)} of the ${entry.name} result (call ${entry.callId}):`, images: entry.images });
        break;
    }
  }
  sendWaiting();
  return out;
}

/** A user message of `text` and `images` (as `image_url` parts after the text), merged into the last one when `compat` says so. */
function pushUser(out: ChatCompletionMessageParam[], text: string, compat: OpenAICompat, images: readonly SentImage[] = []): void {
  const last = out.at(-1);
  if (images.length === 0) {
    if (compat.mergeUserMessages && last?.role === 'user' && typeof last.content === 'string') {
      last.content = `${last.content}\n\n${text}`;
      return;
    }
    if (compat.mergeUserMessages && last?.role === 'user' && Array.isArray(last.content)) {
      last.content = [...last.content, { type: 'text', text }];
      return;
    }
    out.push({ role: 'user', content: text });
    return;
  }
  const parts: ChatCompletionContentPart[] = [...(text === '' ? [] : [{ type: 'text' as const, text }]), ...images.map(imagePart)];
  if (compat.mergeUserMessages && last?.role === 'user') {
    const before: ChatCompletionContentPart[] = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : [...last.content];
    last.content = [...before, ...parts];
    return;
  }
  out.push({ role: 'user', content: parts });
}

function imagePart(image: SentImage): ChatCompletionContentPart {
  return { type: 'image_url', image_url: { url: `data:${image.mediaType};base64,${image.data}` } };
}

function imagesCount(images: readonly SentImage[]): string {
  return images.length === 1 ? 'The image' : `The ${images.length} images`;
}
