import type { ResolvedModel } from './models';
import type { Provider } from './provider';
import type { ProviderOptions } from './provider-options';
import { namingRefusedKey } from './refused-key';

/**
 * Creates the provider of a resolved model. The adapter, and with it its SDK, is loaded here
 * with a dynamic `import()`: the SDKs are heavy, and commands that never talk to a model must
 * not pay for loading them. A refused key's error names the variable to check (see
 * `namingRefusedKey`).
 */
export async function createProvider(resolved: ResolvedModel, options: ProviderOptions = {}): Promise<Provider> {
  return namingRefusedKey(await createAdapter(resolved, options), resolved.keySource);
}

async function createAdapter(resolved: ResolvedModel, options: ProviderOptions): Promise<Provider> {
  const target = { apiKey: resolved.apiKey, baseURL: resolved.baseURL };
  if (resolved.provider === 'anthropic') {
    const { createAnthropicProvider } = await import('./anthropic');
    return createAnthropicProvider(target, options);
  }
  const { createOpenAIProvider } = await import('./openai');
  return createOpenAIProvider({ ...target, provider: resolved.provider }, options);
}
