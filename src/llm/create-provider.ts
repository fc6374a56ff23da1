import type { ResolvedModel } from './models';
import type { Provider } from './provider';
import type { OpenAIApi, ProviderOptions } from './provider-options';
import { namingRefusedKey } from './refused-key';

/**
 * Creates the provider of a resolved model. The adapter, and with it its SDK, is loaded here
 * with a dynamic `import()`: the SDKs are heavy, and commands that never talk to a model must
 * not pay for loading them. A refused key's error names the variable to check (see
 * `namingRefusedKey`). OpenAI-compatible providers speak the API `options.api` names (see
 * `defaultApi`).
 */
export async function createProvider(resolved: ResolvedModel, options: ProviderOptions = {}): Promise<Provider> {
  return namingRefusedKey(await createAdapter(resolved, options), resolved.keySource);
}

/**
 * Whether a model's API offers a hosted web search fence can switch on (`--web-search`):
 * Anthropic's Messages API, and OpenAI's own Responses API. Chat Completions, OpenRouter and
 * local servers have none.
 */
export function offersWebSearch(provider: ResolvedModel['provider'], api: OpenAIApi | undefined): boolean {
  if (provider === 'anthropic') return true;
  return provider === 'openai' && (api ?? defaultApi(provider)) === 'responses';
}

/**
 * The API an OpenAI-compatible provider speaks when the configuration does not say: the
 * Responses API for OpenAI itself, Chat Completions for OpenRouter and local servers (most of
 * which have no Responses API).
 */
export function defaultApi(provider: 'openai' | 'openrouter' | 'local'): OpenAIApi {
  return provider === 'openai' ? 'responses' : 'chat';
}

async function createAdapter(resolved: ResolvedModel, options: ProviderOptions): Promise<Provider> {
  const target = { apiKey: resolved.apiKey, baseURL: resolved.baseURL };
  if (resolved.provider === 'anthropic') {
    const { createAnthropicProvider } = await import('./anthropic');
    return createAnthropicProvider(target, options);
  }
  const openaiTarget = { ...target, provider: resolved.provider };
  if ((options.api ?? defaultApi(resolved.provider)) === 'responses') {
    const { createOpenAIResponsesProvider } = await import('./openai-responses');
    return createOpenAIResponsesProvider(openaiTarget, options);
  }
  const { createOpenAIProvider } = await import('./openai');
  return createOpenAIProvider(openaiTarget, options);
}
