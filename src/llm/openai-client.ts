import OpenAI from 'openai';
import type { ResolvedModel } from './models';
import { createNodeFetch, type NodeFetch } from './node-fetch';
import { OPENAI_COMPAT, type OpenAICompat } from './openai-compat';
import type { Provider, StreamRequest } from './provider';
import type { ProviderOptions } from './provider-options';
import { streamWithRetries, type AttemptEvent } from './retry';
import { SdkWarnings, warnOnStderr } from './sdk-warnings';

/** Where an OpenAI-compatible provider lives: `openai`, `openrouter` or `local`. */
export type OpenAITarget = Pick<ResolvedModel, 'apiKey' | 'baseURL'> & { provider: 'openai' | 'openrouter' | 'local' };

const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** An SDK client set up as fence uses it, and what a provider needs to open its connection early. */
export interface OpenAIClient {
  client: OpenAI;
  baseURL: string;
  /** fence's own keep-alive fetch; absent when `options.fetch` was given. */
  ownFetch?: NodeFetch;
}

/**
 * Creates the official SDK's client for an OpenAI-compatible provider, with its own retries
 * off (fence retries, see `retry.ts`), its warnings passed to `warnings`, the provider's extra
 * headers, and the account headers of the environment only for OpenAI itself. Never throws.
 */
export function createOpenAIClient(target: OpenAITarget, compat: OpenAICompat, options: ProviderOptions, warnings: SdkWarnings): OpenAIClient {
  const baseURL = target.baseURL ?? OPENAI_BASE_URL;
  const ownFetch = options.fetch ? undefined : createNodeFetch();
  const client = new OpenAI({
    apiKey: target.apiKey,
    baseURL,
    ...(compat.accountHeaders ? {} : { organization: null, project: null }),
    maxRetries: 0,
    fetch: options.fetch ?? ownFetch,
    defaultHeaders: compat.headers,
    logger: warnings.logger,
    logLevel: 'warn',
    ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
  });
  return ownFetch ? { client, baseURL, ownFetch } : { client, baseURL };
}

/** What one attempt at a request of an OpenAI-compatible provider works with. */
export interface OpenAIAttemptParts {
  client: OpenAI;
  warnings: SdkWarnings;
  compat: OpenAICompat;
  /** The provider, for messages and its quirks. */
  name: OpenAITarget['provider'];
}

/**
 * A provider for one of OpenAI's APIs: the SDK client made once (see `createOpenAIClient`),
 * its warnings passed to `options.warn`, every request streamed by `attempt` through fence's
 * retries, and the connection opened early when fence's own fetch is used.
 */
export function createOpenAIApiProvider(
  target: OpenAITarget,
  options: ProviderOptions,
  attempt: (parts: OpenAIAttemptParts, request: StreamRequest, signal: AbortSignal) => AsyncIterable<AttemptEvent>,
): Provider {
  const compat = OPENAI_COMPAT[target.provider];
  const warnings = new SdkWarnings('OpenAI SDK', options.warn ?? warnOnStderr);
  const { client, baseURL, ownFetch } = createOpenAIClient(target, compat, options, warnings);
  const parts: OpenAIAttemptParts = { client, warnings, compat, name: target.provider };
  return {
    name: target.provider,
    stream: (request) => streamWithRetries(target.provider, request, (signal) => attempt(parts, request, signal), options.retry),
    ...(ownFetch ? { preconnect: () => ownFetch.preconnect(baseURL) } : {}),
  };
}
