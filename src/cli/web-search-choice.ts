import type { FenceConfig } from '../config/config';
import { offersWebSearch } from '../llm/create-provider';
import type { ResolvedModel } from '../llm/models';

/** Whether a run offers the provider's hosted web search, and the line to say when it cannot. */
export type WebSearchChoice = { on: boolean; note?: string } | { error: string };

/**
 * Decides hosted web search for a run of `resolved`: asked by `--web-search` (`flag`) or by
 * `[web] search = true`. A model whose API has no hosted search (Chat Completions, OpenRouter,
 * local servers; see `offersWebSearch`) is an error when the flag asked, and a note (search
 * off) when only the configuration did, so a config that turns it on does not stop runs of
 * other models. Off unless asked.
 */
export function webSearchChoice(flag: boolean | undefined, config: FenceConfig, resolved: Pick<ResolvedModel, 'id' | 'provider'>): WebSearchChoice {
  const asked = flag === true || config.web?.search === true;
  if (!asked) return { on: false };
  const api = resolved.provider === 'anthropic' ? undefined : config.providers?.[resolved.provider]?.api;
  if (offersWebSearch(resolved.provider, api)) return { on: true };
  const why = `${resolved.id} has no hosted web search (Anthropic models and OpenAI's Responses API have one)`;
  if (flag === true) return { error: `--web-search: ${why}` };
  return { on: false, note: `fence: [web] search left off: ${why}` };
}
