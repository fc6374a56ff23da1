import type { AgentModel, ContextOptions } from '../agent/agent';
import type { ProvidersConfig } from '../config/config';
import type { Usage } from '../conversation/message';
import { createProvider } from '../llm/create-provider';
import { costOf, modelInfo, type ModelInfo } from '../llm/model-info';
import type { ResolvedModel } from '../llm/models';
import type { ProviderOptions } from '../llm/provider-options';
import type { WarningSink } from '../llm/sdk-warnings';

/**
 * What an Agent needs to talk to a resolved model: its provider (the SDK loaded here), the
 * model's context window shared between request and reply, and its prices. Used when a run
 * starts and when the chat switches models. `warn` receives the SDK's own warnings, one line
 * each (default: `fence: …` on stderr). `providers` is the configuration's `[providers]`
 * tables: the API an OpenAI-compatible provider is spoken to through (see `defaultApi`).
 */
export async function loadAgentModel(
  resolved: ResolvedModel,
  overrides: Readonly<Record<string, ModelInfo>>,
  warn?: WarningSink,
  providers: Readonly<ProvidersConfig> = {},
): Promise<AgentModel & { info: ModelInfo }> {
  const info = modelInfo(resolved.id, overrides);
  const options: ProviderOptions = warn ? { warn } : {};
  const api = resolved.provider === 'anthropic' ? undefined : providers[resolved.provider]?.api;
  if (api) options.api = api;
  const provider = await createProvider(resolved, options);
  return {
    provider,
    modelId: resolved.id,
    model: resolved.model,
    costOf: (usage: Usage) => costOf(usage, info),
    ...(info.images === false ? { images: false } : {}),
    ...(info.contextWindow ? { context: contextFor(info.contextWindow, info.maxOutputTokens, resolved.id) } : {}),
    info,
  };
}

/**
 * How a model's window is shared: the reply keeps its own limit (at most 16k tokens, and at
 * most a quarter of the window), the request gets the rest. OpenAI's models count tokens as
 * the o200k tokenizer does; for the others counts get a margin.
 */
function contextFor(window: number, maxOutput: number | undefined, modelId: string): ContextOptions {
  const reserve = Math.min(maxOutput ?? 16_000, 16_000, Math.floor(window / 4));
  return { window, reserve, exactTokenizer: /^(openai|openrouter\/openai)\//.test(modelId) };
}
