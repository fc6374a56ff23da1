import type OpenAI from 'openai';
import type {
  Response,
  ResponseCreateParamsStreaming,
  ResponseOutputItem,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses';
import type { ReasoningPart, Usage } from '../conversation/message';
import { createOpenAIApiProvider, type OpenAITarget } from './openai-client';
import { OPENAI_COMPAT } from './openai-compat';
import { reasoningEffort } from './openai-reasoning';
import { toResponsesInput } from './openai-responses-input';
import type { Provider, StreamRequest } from './provider';
import type { ProviderOptions } from './provider-options';
import type { AttemptEvent } from './retry';
import type { SdkWarnings } from './sdk-warnings';

type FinishEvent = Extract<AttemptEvent, { type: 'finish' }>;

/** The `include` value that has reasoning items carry their encrypted content. */
const ENCRYPTED_REASONING = 'reasoning.encrypted_content';

/**
 * A provider for OpenAI's Responses API (`POST /responses`), used statelessly as Codex CLI
 * does: `store: false`, the whole conversation sent as input items on every request, and the
 * reasoning items of earlier replies sent back as received, with the encrypted content that
 * `include: ['reasoning.encrypted_content']` asks for, so a reasoning model keeps its
 * reasoning across tool calls. That is asked only of a model with a reasoning level (the
 * request's `reasoning`: the flag, the configuration, or the model table's default): OpenAI
 * refuses the whole request with a 400 ("Encrypted content is not supported with this
 * model") for models that do not reason, gpt-4o and gpt-4.1 among them. Streams through the official SDK, its retries off (fence
 * retries, see `retry.ts`), its warnings passed to `options.warn`.
 *
 * Events: text (and refusal) deltas are `text`, the texts of successive message items (and
 * text parts) joined by a blank line, as the API sends no line break between them; function calls are `tool_call` (the call's `call_id` as id);
 * reasoning summary (or reasoning text) deltas are `thinking`; each finished reasoning item is
 * a `reasoning` event whose `raw` is the item exactly as received. Usage counts as with Chat
 * Completions: `inputTokens` without the cached tokens, `cacheReadTokens` the cached ones.
 * A `response.failed` or `error` event is a failure retried or reported as any other.
 */
export function createOpenAIResponsesProvider(target: OpenAITarget, options: ProviderOptions = {}): Provider {
  return createOpenAIApiProvider(target, options, ({ client, warnings, name }, request, signal) => attempt(client, warnings, name, request, signal));
}

/** The body of a Responses request for `request`, with `provider`'s quirks (see `OpenAICompat`). */
function responsesParams(provider: OpenAITarget['provider'], request: StreamRequest): ResponseCreateParamsStreaming {
  const tools = request.tools ?? [];
  const { instructions, input } = toResponsesInput(request.messages, OPENAI_COMPAT[provider], tools.length > 0);
  const params: ResponseCreateParamsStreaming = {
    model: request.model,
    input,
    stream: true,
    store: false,
  };
  if (request.reasoning !== undefined) params.include = [ENCRYPTED_REASONING];
  if (instructions !== undefined) params.instructions = instructions;
  if (tools.length > 0 || request.webSearch) {
    params.tools = [
      ...tools.map((tool) => ({ type: 'function' as const, name: tool.name, description: tool.description, parameters: tool.parameters, strict: false })),
      // The hosted web search: its `web_search_call` items are the API's, never calls for fence to run.
      ...(request.webSearch ? [{ type: 'web_search' as const }] : []),
    ];
  }
  if (request.reasoning !== undefined) params.reasoning = request.reasoning === 'off' ? { effort: reasoningEffort('off', request.model) } : { effort: reasoningEffort(request.reasoning, request.model), summary: 'auto' };
  if (request.maxTokens !== undefined) params.max_output_tokens = request.maxTokens;
  return params;
}


/** What one streamed reply has shown so far: its function calls by output index, and whether any came. */
interface ReplyState {
  /** The `tool_call` index of each function call item, by its output index; with whether its arguments streamed. */
  calls: Map<number, { index: number; streamed: boolean }>;
  /** Reasoning summary parts already begun, by item id (a later part starts on a new paragraph). */
  summaryParts: Set<string>;
  /** The last two characters of the reply's text so far ('' before any text). */
  textTail: string;
  /** Hosted web searches the reply ran (`web_search_call` items). */
  searches: number;
}

async function* attempt(
  client: OpenAI,
  warnings: SdkWarnings,
  name: OpenAITarget['provider'],
  request: StreamRequest,
  signal: AbortSignal,
): AsyncGenerator<AttemptEvent, void, undefined> {
  const stream = await warnings.during(() => client.responses.create(responsesParams(name, request), { signal }));
  const state: ReplyState = { calls: new Map(), summaryParts: new Set(), textTail: '', searches: 0 };
  for await (const event of stream) {
    const finish = yield* translate(event, state, name);
    if (finish) {
      yield finish;
      return;
    }
  }
}

/** Yields the events `event` stands for; returns the finish when the reply is over. Throws on a failed reply. */
function* translate(event: ResponseStreamEvent, state: ReplyState, name: string): Generator<AttemptEvent, FinishEvent | undefined, undefined> {
  switch (event.type) {
    case 'response.output_text.delta':
    case 'response.refusal.delta':
      if (event.delta) yield textEvent(event.delta, state);
      return undefined;
    case 'response.content_part.added': {
      // Each text part (and each message item) is a text of its own: a paragraph break keeps
      // the next one off the last line of the one before, so a block that ended a message is
      // complete as soon as the model goes on writing.
      const separator = event.part.type === 'reasoning_text' ? '' : paragraphBreak(state.textTail);
      if (separator) yield textEvent(separator, state);
      return undefined;
    }
    case 'response.output_item.added':
      if (event.item.type === 'function_call') yield* callStarted(event.item, event.output_index, state);
      return undefined;
    case 'response.function_call_arguments.delta': {
      const call = state.calls.get(event.output_index);
      if (call && event.delta) {
        call.streamed = true;
        yield { type: 'tool_call', index: call.index, argumentsDelta: event.delta };
      }
      return undefined;
    }
    case 'response.reasoning_summary_part.added':
      if (state.summaryParts.has(event.item_id)) yield { type: 'thinking', text: '\n\n' };
      state.summaryParts.add(event.item_id);
      return undefined;
    case 'response.reasoning_summary_text.delta':
    case 'response.reasoning_text.delta':
      if (event.delta) yield { type: 'thinking', text: event.delta };
      return undefined;
    case 'response.output_item.done':
      yield* itemDone(event.item, event.output_index, state);
      return undefined;
    case 'response.completed':
      yield* usageOf(event.response, state);
      return { type: 'finish', stopReason: state.calls.size > 0 ? 'tool_use' : 'end' };
    case 'response.incomplete': {
      yield* usageOf(event.response, state);
      const reason = event.response.incomplete_details?.reason;
      if (reason === 'content_filter') return { type: 'finish', stopReason: 'error', error: `${name} stopped the reply (content filter)` };
      return { type: 'finish', stopReason: 'max_tokens' };
    }
    case 'response.failed':
      throw new ResponsesStreamError(event.response.error?.code ?? 'server_error', event.response.error?.message ?? 'the reply failed');
    case 'error':
      throw new ResponsesStreamError(event.code ?? 'api_error', event.message);
    default:
      return undefined;
  }
}

/** A `text` event for `text`, noted as the reply's latest text. */
function textEvent(text: string, state: ReplyState): AttemptEvent {
  state.textTail = (state.textTail + text).slice(-2);
  return { type: 'text', text };
}

/** What ends text ending in `tail` with a blank line: nothing for no text or one already ending so. */
function paragraphBreak(tail: string): string {
  if (tail === '' || tail.endsWith('\n\n')) return '';
  return tail.endsWith('\n') ? '\n' : '\n\n';
}

/** A function call item has begun: its `tool_call` index, id and name. */
function* callStarted(item: ResponseOutputItem, outputIndex: number, state: ReplyState): Generator<AttemptEvent, void, undefined> {
  if (item.type !== 'function_call' || state.calls.has(outputIndex)) return;
  const index = state.calls.size;
  state.calls.set(outputIndex, { index, streamed: false });
  yield { type: 'tool_call', index, id: item.call_id, name: item.name, argumentsDelta: '' };
  if (item.arguments) {
    state.calls.get(outputIndex)!.streamed = true;
    yield { type: 'tool_call', index, argumentsDelta: item.arguments };
  }
}

/** A finished item: a reasoning item becomes a `reasoning` event; a call whose arguments never streamed gets them now. */
function* itemDone(item: ResponseOutputItem, outputIndex: number, state: ReplyState): Generator<AttemptEvent, void, undefined> {
  if (item.type === 'function_call') {
    if (!state.calls.has(outputIndex)) {
      yield* callStarted(item, outputIndex, state);
      return;
    }
    const call = state.calls.get(outputIndex)!;
    if (!call.streamed && item.arguments) {
      call.streamed = true;
      yield { type: 'tool_call', index: call.index, argumentsDelta: item.arguments };
    }
    return;
  }
  if (item.type === 'web_search_call') {
    state.searches += 1;
    yield { type: 'web_search', query: item.action?.type === 'search' ? (item.action.query ?? item.action.queries?.[0] ?? '') : '' };
    return;
  }
  if (item.type !== 'reasoning') return;
  const text = item.summary.map((part) => part.text).filter((part) => part !== '').join('\n\n');
  const part: ReasoningPart = { api: 'openai-responses', raw: item as unknown as Record<string, unknown> };
  if (text !== '') part.text = text;
  yield { type: 'reasoning', part };
}

function* usageOf(response: Response, state: ReplyState): Generator<AttemptEvent, void, undefined> {
  if (!response.usage) return;
  const usage = toUsage(response.usage);
  if (state.searches > 0) usage.webSearches = state.searches;
  yield { type: 'usage', usage, complete: true };
}

/**
 * The API's usage in fence's terms: the input counts cached tokens, fence's `inputTokens`
 * does not (`cacheReadTokens` has them); reasoning tokens are part of the output.
 */
function toUsage(usage: ResponseUsage): Usage {
  const cached = usage.input_tokens_details?.cached_tokens ?? 0;
  const reasoning = usage.output_tokens_details?.reasoning_tokens ?? 0;
  const result: Usage = { inputTokens: Math.max(0, usage.input_tokens - cached), outputTokens: usage.output_tokens };
  if (cached > 0) result.cacheReadTokens = cached;
  if (reasoning > 0) result.reasoningTokens = reasoning;
  return result;
}

/**
 * A reply the API said failed, inside the stream: shaped as the SDK's in-stream errors are
 * (`error.type`, `error.message`), so `describeFailure` words it and decides on a retry.
 */
class ResponsesStreamError extends Error {
  readonly error: { type: string; message: string };

  constructor(code: string, message: string) {
    super(message);
    this.name = 'ResponsesStreamError';
    // The API's name for a rate limit, as the other APIs name it.
    this.error = { type: code === 'rate_limit_exceeded' ? 'rate_limit_error' : code, message };
  }
}
