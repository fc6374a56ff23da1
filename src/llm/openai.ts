import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type { Usage } from '../conversation/message';
import { createOpenAIApiProvider, type OpenAITarget } from './openai-client';
import type { OpenAICompat } from './openai-compat';
import { toOpenAIMessages } from './openai-messages';
import { reasoningEffort } from './openai-reasoning';
import type { Provider, StreamRequest } from './provider';
import type { ProviderOptions } from './provider-options';
import type { AttemptEvent } from './retry';
import type { SdkWarnings } from './sdk-warnings';

export type { OpenAITarget } from './openai-client';

type FinishEvent = Extract<AttemptEvent, { type: 'finish' }>;

/**
 * A provider for the Chat Completions API (OpenAI, OpenRouter, local OpenAI-compatible servers),
 * streaming through the official SDK with its own retries off (fence retries, see `retry.ts`)
 * and its warnings passed to `options.warn` (see `SdkWarnings`).
 *
 * Usage is requested in the stream (`stream_options.include_usage`). `inputTokens` counts only
 * the prompt tokens not read from the cache, `cacheReadTokens` the cached ones, so that their
 * sum is the whole prompt, as with Anthropic.
 */
export function createOpenAIProvider(target: OpenAITarget, options: ProviderOptions = {}): Provider {
  return createOpenAIApiProvider(target, options, ({ client, warnings, compat, name }, request, signal) => attempt(client, warnings, compat, name, request, signal));
}

async function* attempt(
  client: OpenAI,
  warnings: SdkWarnings,
  compat: OpenAICompat,
  name: string,
  request: StreamRequest,
  signal: AbortSignal,
): AsyncGenerator<AttemptEvent, void, undefined> {
  const stream = await warnings.during(() => client.chat.completions.create(requestParams(compat, request), { signal }));
  let finish: FinishEvent | undefined;
  for await (const chunk of stream) {
    if (chunk.usage) yield { type: 'usage', usage: toUsage(chunk.usage), complete: true };
    const choice = chunk.choices.find((candidate) => candidate.index === 0);
    if (!choice) continue;
    const { content, tool_calls: toolCalls } = choice.delta;
    // Compatible servers that reason (vLLM, llama.cpp, DeepSeek, OpenRouter) stream the thinking beside the text.
    const thinking = thinkingOf(choice.delta);
    if (thinking) yield { type: 'thinking', text: thinking };
    if (content) yield { type: 'text', text: content };
    for (const [position, call] of (toolCalls ?? []).entries()) yield toolCallEvent(call, position);
    if (choice.finish_reason) finish = toFinish(choice.finish_reason, name);
  }
  // The finish reason comes before the usage chunk, so the reply is complete only now.
  if (finish) yield finish;
}

function requestParams(compat: OpenAICompat, request: StreamRequest): ChatCompletionCreateParamsStreaming {
  const tools = request.tools ?? [];
  const params: ChatCompletionCreateParamsStreaming = {
    model: request.model,
    messages: toOpenAIMessages(request.messages, compat, tools.length > 0),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (tools.length > 0) {
    params.tools = tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  if (request.maxTokens !== undefined) params[compat.maxTokensField] = request.maxTokens;
  // Servers that reason take the level as `reasoning_effort` (OpenAI's, and compatible ones that accept it).
  if (request.reasoning !== undefined) params.reasoning_effort = reasoningEffort(request.reasoning, request.model);
  return params;
}

type ToolCallDelta = NonNullable<ChatCompletionChunk.Choice.Delta['tool_calls']>[number];

function toolCallEvent(call: ToolCallDelta, position: number): AttemptEvent {
  const event: Extract<AttemptEvent, { type: 'tool_call' }> = {
    type: 'tool_call',
    // Some compatible servers leave out the index when they send one call per chunk.
    index: typeof call.index === 'number' ? call.index : position,
    argumentsDelta: call.function?.arguments ?? '',
  };
  if (call.id) event.id = call.id;
  if (call.function?.name) event.name = call.function.name;
  return event;
}

function toFinish(reason: ChatCompletionChunk.Choice['finish_reason'], name: string): FinishEvent {
  switch (reason) {
    case 'length':
      return { type: 'finish', stopReason: 'max_tokens' };
    case 'tool_calls':
    case 'function_call':
      return { type: 'finish', stopReason: 'tool_use' };
    case 'content_filter':
      return { type: 'finish', stopReason: 'error', error: `${name} stopped the reply (content filter)` };
    default:
      return { type: 'finish', stopReason: 'end' };
  }
}

function toUsage(usage: CompletionUsage): Usage {
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const result: Usage = { inputTokens: Math.max(0, usage.prompt_tokens - cached), outputTokens: usage.completion_tokens };
  if (cached > 0) result.cacheReadTokens = cached;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens ?? 0;
  if (reasoning > 0) result.reasoningTokens = reasoning;
  return result;
}

/** The readable thinking a compatible server put in a chunk (`reasoning_content`, or OpenRouter's `reasoning`), if any. */
function thinkingOf(delta: ChatCompletionChunk.Choice.Delta): string | undefined {
  const extra = delta as { reasoning_content?: unknown; reasoning?: unknown };
  const text = extra.reasoning_content ?? extra.reasoning;
  return typeof text === 'string' && text !== '' ? text : undefined;
}
