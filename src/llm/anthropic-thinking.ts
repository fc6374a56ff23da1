import type { ThinkingConfigParam } from '@anthropic-ai/sdk/resources/messages';
import type { ReasoningPart } from '../conversation/message';
import { modelInfo } from './model-info';
import type { ReasoningLevel, StreamEvent } from './provider';

/**
 * Tokens of thinking asked for at each `--reasoning` level. The API's minimum is 1024; the
 * reply's own room is added on top (see {@link thinkingRequest}).
 */
export const THINKING_BUDGETS: Readonly<Record<Exclude<ReasoningLevel, 'off'>, number>> = { low: 2048, medium: 8192, high: 24_576 };

/** The beta that lets Claude think between tool calls with manual (budgeted) thinking. */
export const INTERLEAVED_THINKING_BETA = 'interleaved-thinking-2025-05-14';

/** The API's smallest thinking budget. */
const MIN_BUDGET = 1024;

/**
 * Models that take adaptive thinking (`type: 'adaptive'` with an effort) and reject or
 * deprecate a fixed budget: Claude 4.6 and later, Mythos and Fable.
 */
const ADAPTIVE = /^claude-(opus-4-[6-9]|sonnet-4-6|(opus|sonnet|haiku)-[5-9]|mythos|fable)/;

/** The request fields that thinking sets. */
export interface ThinkingRequest {
  thinking?: ThinkingConfigParam;
  /** Adaptive thinking's effort. */
  output_config?: { effort: Exclude<ReasoningLevel, 'off'> };
  max_tokens: number;
  /** `anthropic-beta` values to send. */
  betas: string[];
}

/**
 * What a request asks of thinking, given the model, the level (absent: no thinking field at
 * all), the reply room the caller chose (`maxTokens`), and whether native tools are offered.
 * - `off` is no thinking field for budgeted models, which think only when asked, and
 *   `thinking: { type: 'disabled' }` for adaptive ones: from Claude Opus 5 on, a request
 *   without the field thinks adaptively.
 * - Budgeted models get `thinking: { type: 'enabled', budget_tokens }` from
 *   {@link THINKING_BUDGETS}, and with tools the interleaved-thinking beta.
 * - Adaptive models (Claude 4.6 and later) get `thinking: { type: 'adaptive' }` and
 *   `output_config.effort` set to the level; they think between tool calls without a beta.
 * In both, `max_tokens` is the reply room plus the level's budget (thinking counts toward it),
 * capped at the model's longest reply when fence knows it, and always above the budget.
 * Never throws.
 */
export function thinkingRequest(model: string, level: ReasoningLevel | undefined, maxTokens: number, tools: boolean): ThinkingRequest {
  if (level === 'off' && ADAPTIVE.test(model)) return { thinking: { type: 'disabled' }, max_tokens: maxTokens, betas: [] };
  if (level === undefined || level === 'off') return { max_tokens: maxTokens, betas: [] };
  const cap = modelInfo(`anthropic/${model}`).maxOutputTokens;
  let budget = THINKING_BUDGETS[level];
  let total = maxTokens + budget;
  if (cap !== undefined && total > cap) {
    total = Math.max(cap, MIN_BUDGET + 1);
    // Keep at least a quarter of the cap for the reply itself.
    budget = Math.max(MIN_BUDGET, Math.min(budget, total - Math.max(1, Math.floor(cap / 4))));
  }
  if (ADAPTIVE.test(model)) return { thinking: { type: 'adaptive' }, output_config: { effort: level }, max_tokens: total, betas: [] };
  const betas = tools && !model.startsWith('claude-3-') ? [INTERLEAVED_THINKING_BETA] : [];
  return { thinking: { type: 'enabled', budget_tokens: budget }, max_tokens: total, betas };
}

type ThinkingEvent = Extract<StreamEvent, { type: 'thinking' | 'reasoning' }>;

/**
 * Assembles the thinking and redacted-thinking blocks of one streamed reply. A block becomes
 * a `reasoning` event only at its `content_block_stop`, exactly as the API gave it (a
 * `thinking` block's text and signature put together from their deltas); its thinking text
 * also comes out piece by piece as `thinking` events. A reply cut before a block stops never
 * yields a half block. Never throws.
 */
export class ThinkingBlocks {
  private readonly open = new Map<number, { raw: Record<string, unknown>; thinking?: string[] }>();

  /** A block started: remembers it when it is thinking. */
  start(index: number, block: { type: string } & Record<string, unknown>): ThinkingEvent[] {
    if (block.type === 'redacted_thinking') {
      this.open.set(index, { raw: { ...block } });
      return [];
    }
    if (block.type !== 'thinking') return [];
    const text = typeof block.thinking === 'string' ? block.thinking : '';
    this.open.set(index, { raw: { ...block }, thinking: [text] });
    return text === '' ? [] : [{ type: 'thinking', text }];
  }

  /** A piece of thinking text. */
  thinking(index: number, text: string): ThinkingEvent[] {
    const block = this.open.get(index);
    if (!block?.thinking || text === '') return [];
    block.thinking.push(text);
    return [{ type: 'thinking', text }];
  }

  /** The signature that seals a thinking block (it comes whole, but pieces are joined). */
  signature(index: number, signature: string): void {
    const block = this.open.get(index);
    if (!block) return;
    const previous = typeof block.raw.signature === 'string' ? block.raw.signature : '';
    block.raw.signature = previous + signature;
  }

  /** A block stopped: the reasoning part when it was a thinking block. */
  stop(index: number): ThinkingEvent[] {
    const block = this.open.get(index);
    if (!block) return [];
    this.open.delete(index);
    if (block.thinking === undefined) return [{ type: 'reasoning', part: { api: 'anthropic', raw: block.raw } }];
    const text = block.thinking.join('');
    const raw = { ...block.raw, thinking: text };
    const part: ReasoningPart = { api: 'anthropic', raw };
    if (text !== '') part.text = text;
    return [{ type: 'reasoning', part }];
  }
}
