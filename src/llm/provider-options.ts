import type { Fetch } from './node-fetch';
import type { RetryOptions } from './retry';
import type { WarningSink } from './sdk-warnings';

/**
 * Which of OpenAI's APIs an OpenAI-compatible provider is spoken to through: the Responses API
 * (`/responses`, reasoning kept across tool calls) or Chat Completions (`/chat/completions`).
 */
export type OpenAIApi = 'responses' | 'chat';

/** The APIs `OpenAIApi` names, for checking a configuration. */
export const OPENAI_APIS: readonly OpenAIApi[] = ['responses', 'chat'];

/** How an adapter is set up besides its model and key. Every field has a default. */
export interface ProviderOptions {
  /** Retry policy (attempts, delays); tests make the delays tiny. */
  retry?: RetryOptions;
  /** The fetch the SDK uses (default: a keep-alive fetch on `node:http`, see `createNodeFetch`). */
  fetch?: Fetch;
  /** How long to wait for the response headers of one attempt (default 10 minutes). */
  timeoutMs?: number;
  /**
   * Where the SDK's own warnings go, one line each and each text once (default: `fence: …`
   * on stderr, see `SdkWarnings`).
   */
  warn?: WarningSink;
  /**
   * The API of an OpenAI-compatible provider (default: `responses` for `openai`, `chat` for
   * `openrouter` and `local`); ignored for `anthropic`.
   */
  api?: OpenAIApi;
}
