import type { ReasoningEffort } from 'openai/resources/shared';
import type { ReasoningLevel } from './provider';

/**
 * `--reasoning` as the effort OpenAI's APIs take (the Responses API's `reasoning.effort`, Chat
 * Completions' `reasoning_effort`). `low`, `medium` and `high` are efforts of their own. `off`
 * is the least effort the model takes: `minimal` for the gpt-5 models before gpt-5.1 (they
 * take no `none`), `low` for the o-series (they take neither), `none` for the rest (gpt-5.1
 * and later, and servers that follow them).
 */
export function reasoningEffort(level: ReasoningLevel, model: string): ReasoningEffort {
  if (level !== 'off') return level;
  if (/^gpt-5(-|$)/.test(model)) return 'minimal';
  if (/^o\d/.test(model)) return 'low';
  return 'none';
}
