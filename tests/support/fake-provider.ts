import { createProvider } from '../../src/llm/create-provider';
import { resolveModel, type ResolvedModel } from '../../src/llm/models';
import type { Provider } from '../../src/llm/provider';
import type { RetryOptions } from '../../src/llm/retry';
import type { FakeLlm } from './fake-llm';

/** Which wire API a provider made by {@link fakeProvider} speaks to the fake server. */
export type FakeApi = 'openai' | 'anthropic';

/** A real provider adapter pointed at a fake model server, with the model it was resolved for. */
export interface FakeProvider {
  provider: Provider;
  /** `local/test` or `anthropic/test`: the model id, as stored on assistant messages. */
  modelId: string;
  /** `test`: the provider's own model name, as sent in requests. */
  model: string;
}

/**
 * Resolves `local/test` (Chat Completions) or `anthropic/test` (Messages) against `server`
 * and creates its real adapter, with tiny retry delays unless `retry` says otherwise.
 */
export async function fakeProvider(server: FakeLlm, api: FakeApi = 'openai', retry: RetryOptions = {}): Promise<FakeProvider> {
  const resolved =
    api === 'openai'
      ? resolveModel('local/test', { OPENAI_BASE_URL: server.openaiBaseURL })
      : resolveModel('anthropic/test', { ANTHROPIC_BASE_URL: server.anthropicBaseURL, ANTHROPIC_API_KEY: 'test-key' });
  if ('error' in resolved) throw new Error(resolved.error);
  const model: ResolvedModel = resolved;
  const provider = await createProvider(model, { retry: { baseDelayMs: 1, ...retry } });
  return { provider, modelId: model.id, model: model.model };
}
