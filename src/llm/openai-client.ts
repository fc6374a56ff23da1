import OpenAI from 'openai';
import type { ResolvedModel } from './models';
import { createNodeFetch, type NodeFetch } from './node-fetch';
import type { OpenAICompat } from './openai-compat';
import type { ProviderOptions } from './provider-options';
import type { SdkWarnings } from './sdk-warnings';

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
