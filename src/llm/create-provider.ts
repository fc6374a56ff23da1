import type { ResolvedModel } from './models';
import type { Provider } from './provider';
import type { ProviderOptions } from './provider-options';

/**
 * Creates the provider of a resolved model. The adapter, and with it its SDK, is loaded here
 * with a dynamic `import()`: the SDKs are heavy, and commands that never talk to a model must
 * not pay for loading them.
 */
export async function createProvider(resolved: ResolvedModel, options: ProviderOptions = {}): Promise<Provider> {
  const target = { apiKey: resolved.apiKey, baseURL: resolved.baseURL };
  if (resolved.provider === 'anthropic') {
    const { createAnthropicProvider } = await import('./anthropic');
    return createAnthropicProvider(target, options);
  }
  const { createOpenAIProvider } = await import('./openai');
  return createOpenAIProvider({ ...target, provider: resolved.provider }, options);
}
