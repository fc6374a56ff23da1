import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { Message } from '../conversation/message';
import { planHistory, wrapAsSystem } from './history';
import type { OpenAICompat } from './openai-compat';

/**
 * Shapes fence messages as Chat Completions messages. The system prompt(s) at the start become
 * one `system` message; later system messages follow `compat.laterSystemAs`; with `nativeCalls`
 * (tools offered), paired native calls become `tool_calls` answered by `tool` messages right
 * after them (see `planHistory`). Pure: the input is not changed.
 */
export function toOpenAIMessages(messages: readonly Message[], compat: OpenAICompat, nativeCalls: boolean): ChatCompletionMessageParam[] {
  const history = planHistory(messages, { nativeCalls });
  const out: ChatCompletionMessageParam[] = [];
  if (history.systemPrompt) out.push({ role: 'system', content: history.systemPrompt });
  for (const entry of history.entries) {
    switch (entry.kind) {
      case 'user':
        pushUser(out, entry.text, compat);
        break;
      case 'system':
        if (compat.laterSystemAs === 'system') out.push({ role: 'system', content: entry.text });
        else pushUser(out, wrapAsSystem(entry.text), compat);
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
        break;
    }
  }
  return out;
}

function pushUser(out: ChatCompletionMessageParam[], text: string, compat: OpenAICompat): void {
  const last = out.at(-1);
  if (compat.mergeUserMessages && last?.role === 'user' && typeof last.content === 'string') {
    last.content = `${last.content}\n\n${text}`;
    return;
  }
  out.push({ role: 'user', content: text });
}
