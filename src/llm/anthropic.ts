import { Anthropic } from '@anthropic-ai/sdk';
import type {
  MessageCreateParamsStreaming,
  MessageDeltaUsage,
  StopReason as AnthropicStopReason,
  Usage as AnthropicUsage,
} from '@anthropic-ai/sdk/resources/messages';
import type { Usage } from '../conversation/message';
import { toAnthropicMessages } from './anthropic-messages';
import { ThinkingBlocks, thinkingRequest } from './anthropic-thinking';
import type { ResolvedModel } from './models';
import { createNodeFetch } from './node-fetch';
import type { Provider, StreamRequest } from './provider';
import type { ProviderOptions } from './provider-options';
import { streamWithRetries, type AttemptEvent } from './retry';
import { SdkWarnings, warnOnStderr } from './sdk-warnings';

/** Where the Anthropic API lives and the key to use. */
export type AnthropicTarget = Pick<ResolvedModel, 'apiKey' | 'baseURL'>;

const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';


type FinishEvent = Extract<AttemptEvent, { type: 'finish' }>;

/**
 * A provider for Anthropic's Messages API, streaming through the official SDK with its own
 * retries off (fence retries, see `retry.ts`) and its warnings passed to `options.warn` (see
 * `SdkWarnings`). Usage comes in two parts: input (and cache) tokens when the message starts,
 * output tokens (and those spent thinking, when reported) when it ends. With a reasoning level,
 * Claude thinks (see `thinkingRequest`): its thinking streams as `thinking` events and each
 * thinking block, once complete, as a `reasoning` event (see `ThinkingBlocks`).
 */
export function createAnthropicProvider(target: AnthropicTarget, options: ProviderOptions = {}): Provider {
  const warnings = new SdkWarnings('Anthropic SDK', options.warn ?? warnOnStderr);
  const baseURL = target.baseURL ?? ANTHROPIC_BASE_URL;
  const ownFetch = options.fetch ? undefined : createNodeFetch();
  const client = new Anthropic({
    apiKey: target.apiKey,
    baseURL,
    maxRetries: 0,
    fetch: options.fetch ?? ownFetch,
    logger: warnings.logger,
    logLevel: 'warn',
    ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
  });
  return {
    name: 'anthropic',
    stream: (request) => streamWithRetries('anthropic', request, (signal) => attempt(client, warnings, request, signal), options.retry),
    ...(ownFetch ? { preconnect: () => ownFetch.preconnect(baseURL) } : {}),
  };
}

/**
 * The reply length asked for when the caller sets none: what each model family can give,
 * kept moderate for the newer ones.
 */
export function defaultMaxTokens(model: string): number {
  if (/^claude-3-(opus|sonnet|haiku)/.test(model)) return 4096;
  if (/^claude-3-5-/.test(model)) return 8192;
  return 16_000;
}

async function* attempt(
  client: Anthropic,
  warnings: SdkWarnings,
  request: StreamRequest,
  signal: AbortSignal,
): AsyncGenerator<AttemptEvent, void, undefined> {
  const { params, betas } = requestParams(request);
  const headers = betas.length > 0 ? { 'anthropic-beta': betas.join(',') } : undefined;
  const stream = await warnings.during(() => client.messages.create(params, { signal, ...(headers ? { headers } : {}) }));
  // Tool calls are numbered among themselves; the API numbers all content blocks.
  const toolIndexOfBlock = new Map<number, number>();
  const thinking = new ThinkingBlocks();
  // The hosted web search's calls, by block: run by the API, never by fence (see `webSearchTool`).
  const searches = new Map<number, string>();
  let usage: Usage | undefined;
  let finish: FinishEvent | undefined;
  for await (const event of stream) {
    switch (event.type) {
      case 'message_start':
        usage = mergeUsage(undefined, event.message.usage);
        yield { type: 'usage', usage, complete: false };
        break;
      case 'content_block_start': {
        const block = event.content_block;
        yield* thinking.start(event.index, block as unknown as { type: string } & Record<string, unknown>);
        if (block.type === 'text' && block.text) yield { type: 'text', text: block.text };
        if (block.type === 'tool_use') {
          const index = toolIndexOfBlock.size;
          toolIndexOfBlock.set(event.index, index);
          yield { type: 'tool_call', index, id: block.id, name: block.name, argumentsDelta: initialInput(block.input) };
        }
        if (block.type === 'server_tool_use' && block.name === 'web_search') searches.set(event.index, initialInput(block.input));
        break;
      }
      case 'content_block_delta': {
        const delta = event.delta;
        if (delta.type === 'text_delta' && delta.text) yield { type: 'text', text: delta.text };
        if (delta.type === 'thinking_delta') yield* thinking.thinking(event.index, delta.thinking);
        if (delta.type === 'signature_delta') thinking.signature(event.index, delta.signature);
        const index = toolIndexOfBlock.get(event.index);
        if (delta.type === 'input_json_delta' && index !== undefined && delta.partial_json) {
          yield { type: 'tool_call', index, argumentsDelta: delta.partial_json };
        }
        const search = searches.get(event.index);
        if (delta.type === 'input_json_delta' && search !== undefined) searches.set(event.index, search + delta.partial_json);
        break;
      }
      case 'content_block_stop': {
        yield* thinking.stop(event.index);
        const search = searches.get(event.index);
        if (search !== undefined) yield { type: 'web_search', query: searchQuery(search) };
        break;
      }
      case 'message_delta':
        usage = mergeUsage(usage, event.usage);
        yield { type: 'usage', usage, complete: true };
        if (event.delta.stop_reason) finish = toFinish(event.delta.stop_reason);
        break;
      default:
        break;
    }
  }
  if (finish) yield finish;
}

/** The request body, and the betas it needs in the `anthropic-beta` header. */
function requestParams(request: StreamRequest): { params: MessageCreateParamsStreaming; betas: string[] } {
  const tools = request.tools ?? [];
  const { system, messages } = toAnthropicMessages(request.messages, tools.length > 0);
  const room = request.maxTokens ?? defaultMaxTokens(request.model);
  const { thinking, output_config, max_tokens, betas } = thinkingRequest(request.model, request.reasoning, room, tools.length > 0);
  const params: MessageCreateParamsStreaming = { model: request.model, max_tokens, messages, stream: true };
  // fence sends no temperature, top_k or tool_choice, which thinking would forbid changing.
  if (thinking) params.thinking = thinking;
  if (output_config) params.output_config = output_config;
  if (system.length > 0) params.system = system;
  if (tools.length > 0 || request.webSearch) {
    params.tools = [
      ...tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        input_schema: { ...tool.parameters, type: 'object' as const },
      })),
      ...(request.webSearch ? [webSearchTool] : []),
    ];
  }
  return { params, betas };
}

/**
 * Anthropic's hosted web search, a server tool: the API runs the searches and streams them as
 * `server_tool_use` and `web_search_tool_result` blocks, which are not calls for fence to run;
 * the reply's text is the answer.
 */
const webSearchTool = { type: 'web_search_20250305', name: 'web_search' } as const;

/** The query of a web search call's input (JSON), or '' when it has none. */
function searchQuery(input: string): string {
  try {
    const parsed: unknown = JSON.parse(input || '{}');
    const query = typeof parsed === 'object' && parsed !== null ? (parsed as { query?: unknown }).query : undefined;
    return typeof query === 'string' ? query : '';
  } catch {
    return '';
  }
}

/** Arguments a server put in the block's start instead of streaming them (usually none). */
function initialInput(input: unknown): string {
  if (typeof input !== 'object' || input === null || Object.keys(input).length === 0) return '';
  return JSON.stringify(input);
}

function mergeUsage(previous: Usage | undefined, next: AnthropicUsage | MessageDeltaUsage): Usage {
  const usage: Usage = {
    inputTokens: next.input_tokens ?? previous?.inputTokens ?? 0,
    outputTokens: next.output_tokens,
  };
  const cacheRead = next.cache_read_input_tokens ?? previous?.cacheReadTokens;
  const cacheWrite = next.cache_creation_input_tokens ?? previous?.cacheWriteTokens;
  if (cacheRead) usage.cacheReadTokens = cacheRead;
  if (cacheWrite) usage.cacheWriteTokens = cacheWrite;
  const thinking = next.output_tokens_details?.thinking_tokens ?? previous?.reasoningTokens;
  if (thinking) usage.reasoningTokens = thinking;
  const searches = next.server_tool_use?.web_search_requests ?? previous?.webSearches;
  if (searches) usage.webSearches = searches;
  return usage;
}

function toFinish(reason: AnthropicStopReason): FinishEvent {
  switch (reason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return { type: 'finish', stopReason: 'max_tokens' };
    case 'tool_use':
      return { type: 'finish', stopReason: 'tool_use' };
    case 'refusal':
      return { type: 'finish', stopReason: 'error', error: 'anthropic: the model declined to answer (refusal)' };
    default:
      return { type: 'finish', stopReason: 'end' };
  }
}
