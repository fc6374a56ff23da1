import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { costOf, modelInfo, resolveReasoning, unsentReasoningNote, type ModelInfo } from '../../src/llm/model-info';

const SONNET_4_6: ModelInfo = {
  contextWindow: 1_000_000,
  maxOutputTokens: 128_000,
  inputPerMTok: 3,
  outputPerMTok: 15,
  cacheReadPerMTok: 0.3,
  cacheWritePerMTok: 3.75,
  reasoning: { default: 'medium' },
};
const SONNET_4_5: ModelInfo = { ...SONNET_4_6, contextWindow: 200_000, maxOutputTokens: 64_000 };
const GPT_5: ModelInfo = { contextWindow: 400_000, maxOutputTokens: 128_000, inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.125, reasoning: { default: 'medium' } };
const GPT_4O: ModelInfo = { contextWindow: 128_000, maxOutputTokens: 16_384, inputPerMTok: 2.5, outputPerMTok: 10, cacheReadPerMTok: 1.25, reasoning: false };

describe('modelInfo', () => {
  it('gives the table entry of a known model', () => {
    expect(modelInfo('anthropic/claude-sonnet-4-6')).toEqual(SONNET_4_6);
    expect(modelInfo('anthropic/claude-sonnet-4-5')).toEqual(SONNET_4_5);
    expect(modelInfo('anthropic/claude-opus-4-5')).toEqual({
      contextWindow: 200_000,
      maxOutputTokens: 64_000,
      inputPerMTok: 5,
      outputPerMTok: 25,
      cacheReadPerMTok: 0.5,
      cacheWritePerMTok: 6.25,
      reasoning: { default: 'medium' },
    });
    expect(modelInfo('anthropic/claude-opus-4-1')).toEqual({
      contextWindow: 200_000,
      maxOutputTokens: 32_000,
      inputPerMTok: 15,
      outputPerMTok: 75,
      cacheReadPerMTok: 1.5,
      cacheWritePerMTok: 18.75,
      reasoning: { default: 'medium' },
    });
    expect(modelInfo('anthropic/claude-haiku-4-5')).toEqual({
      contextWindow: 200_000,
      maxOutputTokens: 64_000,
      inputPerMTok: 1,
      outputPerMTok: 5,
      cacheReadPerMTok: 0.1,
      cacheWritePerMTok: 1.25,
      reasoning: { default: 'medium' },
    });
    expect(modelInfo('anthropic/claude-3-5-haiku')).toMatchObject({ maxOutputTokens: 8_192, inputPerMTok: 0.8, cacheWritePerMTok: 1 });
    expect(modelInfo('openai/gpt-5')).toEqual(GPT_5);
    expect(modelInfo('openai/gpt-5-mini')).toEqual({ ...GPT_5, inputPerMTok: 0.25, outputPerMTok: 2, cacheReadPerMTok: 0.025 });
    expect(modelInfo('openai/gpt-4.1')).toEqual({ contextWindow: 1_047_576, maxOutputTokens: 32_768, inputPerMTok: 2, outputPerMTok: 8, cacheReadPerMTok: 0.5, reasoning: false });
    expect(modelInfo('openai/gpt-4o')).toEqual(GPT_4O);
    expect(modelInfo('openai/o4-mini')).toEqual({ contextWindow: 200_000, maxOutputTokens: 100_000, inputPerMTok: 1.1, outputPerMTok: 4.4, cacheReadPerMTok: 0.275, reasoning: { default: 'medium' } });
  });

  it('finds the base entry of a dated snapshot or a -latest alias, by the longest name', () => {
    expect(modelInfo('anthropic/claude-sonnet-4-5-20250929')).toEqual(SONNET_4_5);
    expect(modelInfo('anthropic/claude-sonnet-4-20250514')).toEqual({ ...SONNET_4_5, reasoning: { retired: '2026-06-15' } });
    // claude-opus-4-1-… is Opus 4.1, not Opus 4 (the same prices, but found by the longer name).
    expect(modelInfo('anthropic/claude-opus-4-1-20250805')).toEqual(modelInfo('anthropic/claude-opus-4-1'));
    expect(modelInfo('anthropic/claude-opus-4-5-20251101')).toEqual(modelInfo('anthropic/claude-opus-4-5'));
    expect(modelInfo('anthropic/claude-3-5-haiku-latest')).toEqual(modelInfo('anthropic/claude-3-5-haiku'));
    expect(modelInfo('openai/gpt-4o-2024-08-06')).toEqual(GPT_4O);
    expect(modelInfo('openai/gpt-4o-mini-2024-07-18')).toEqual(modelInfo('openai/gpt-4o-mini'));
    expect(modelInfo('openai/gpt-4o-mini')).toMatchObject({ inputPerMTok: 0.15 });
    expect(modelInfo('openai/gpt-5-2025-08-07')).toEqual(GPT_5);
  });

  it('prefers an exact entry to a base one: the first GPT-4o snapshot has its own prices', () => {
    expect(modelInfo('openai/gpt-4o-2024-05-13')).toEqual({ contextWindow: 128_000, inputPerMTok: 5, outputPerMTok: 15, reasoning: false });
  });

  it('gives nothing for a name that extends a known one by more than a date', () => {
    expect(modelInfo('openai/gpt-5-pro')).toEqual({});
    expect(modelInfo('openai/gpt-5.1')).toEqual({});
    expect(modelInfo('openai/gpt-5-chat-latest')).toEqual({});
    expect(modelInfo('anthropic/claude-opus-4-9')).toEqual({});
    expect(modelInfo('anthropic/claude-sonnet-4-6-2026')).toEqual({});
  });

  it('maps OpenRouter ids of Anthropic and OpenAI models onto the vendor entry', () => {
    expect(modelInfo('openrouter/anthropic/claude-sonnet-4.6')).toEqual(SONNET_4_6);
    expect(modelInfo('openrouter/anthropic/claude-sonnet-4-6')).toEqual(SONNET_4_6);
    expect(modelInfo('openrouter/anthropic/claude-3.7-sonnet')).toEqual(modelInfo('anthropic/claude-3-7-sonnet'));
    expect(modelInfo('openrouter/anthropic/claude-3.5-haiku-20241022')).toEqual(modelInfo('anthropic/claude-3-5-haiku'));
    // OpenAI names keep their dots.
    expect(modelInfo('openrouter/openai/gpt-4.1')).toEqual(modelInfo('openai/gpt-4.1'));
    expect(modelInfo('openrouter/openai/gpt-5')).toEqual(GPT_5);
    expect(modelInfo('openrouter/openai/gpt-4-1')).toEqual({});
  });

  it('gives {} for local models, other vendors, variants and malformed ids', () => {
    expect(modelInfo('local/qwen3')).toEqual({});
    expect(modelInfo('local/gpt-5')).toEqual({});
    expect(modelInfo('openrouter/google/gemini-2.5-pro')).toEqual({});
    expect(modelInfo('openrouter/anthropic/claude-sonnet-4.6:thinking')).toEqual({});
    expect(modelInfo('openrouter/openai')).toEqual({});
    expect(modelInfo('anthropic/unknown-model')).toEqual({});
    expect(modelInfo('anthropic/')).toEqual({});
    expect(modelInfo('claude-sonnet-4-6')).toEqual({});
    expect(modelInfo('anthropic/claude-sonnet-4-6/extra')).toEqual({});
    expect(modelInfo('openai/constructor')).toEqual({});
    expect(modelInfo('openai/__proto__')).toEqual({});
    expect(modelInfo('')).toEqual({});
  });

  it('puts the override for that exact id over the table entry, field by field', () => {
    const overrides: Record<string, ModelInfo> = {
      'anthropic/claude-sonnet-4-6': { contextWindow: 200_000, inputPerMTok: 2.5 },
      'local/qwen3': { contextWindow: 32_768, maxOutputTokens: 8_192, inputPerMTok: 0, outputPerMTok: 0 },
      'openrouter/anthropic/claude-sonnet-4.6': { outputPerMTok: 16 },
    };
    expect(modelInfo('anthropic/claude-sonnet-4-6', overrides)).toEqual({ ...SONNET_4_6, contextWindow: 200_000, inputPerMTok: 2.5 });
    expect(modelInfo('local/qwen3', overrides)).toEqual({ contextWindow: 32_768, maxOutputTokens: 8_192, inputPerMTok: 0, outputPerMTok: 0 });
    expect(modelInfo('openrouter/anthropic/claude-sonnet-4.6', overrides)).toEqual({ ...SONNET_4_6, outputPerMTok: 16 });
    // Only the exact id: a dated snapshot keeps the table's figures.
    expect(modelInfo('anthropic/claude-sonnet-4-6-20260217', overrides)).toEqual(SONNET_4_6);
    expect(modelInfo('local/other', overrides)).toEqual({});
  });

  it('ignores override fields that are explicitly undefined', () => {
    expect(modelInfo('openai/gpt-5', { 'openai/gpt-5': { inputPerMTok: undefined, outputPerMTok: 12 } })).toEqual({ ...GPT_5, outputPerMTok: 12 });
  });

  it('returns a new object: changing it changes neither the table nor the overrides', () => {
    const overrides: Record<string, ModelInfo> = { 'local/qwen3': { contextWindow: 32_768 } };
    const first = modelInfo('openai/gpt-5');
    first.inputPerMTok = 99;
    const local = modelInfo('local/qwen3', overrides);
    local.contextWindow = 1;
    expect(modelInfo('openai/gpt-5')).toEqual(GPT_5);
    expect(overrides['local/qwen3']).toEqual({ contextWindow: 32_768 });
  });

  it('never throws and always gives a plain object of non-negative numbers', () => {
    fc.assert(
      fc.property(fc.string(), (id) => {
        const info = modelInfo(id);
        expect(Object.values(info).every((value) => typeof value === 'number' && value >= 0)).toBe(true);
      }),
    );
  });
});

describe('costOf', () => {
  it('prices input and output tokens per million', () => {
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 1_000_000 }, SONNET_4_6)).toBe(18);
    expect(costOf({ inputTokens: 200_000, outputTokens: 40_000 }, { inputPerMTok: 5, outputPerMTok: 25 })).toBe(2);
    expect(costOf({ inputTokens: 0, outputTokens: 0 }, SONNET_4_6)).toBe(0);
  });

  it('prices cache reads and writes at their own prices', () => {
    // 1M × $3 + 0.5M × $15 + 2M × $0.30 + 0.4M × $3.75 = 3 + 7.5 + 0.6 + 1.5
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 500_000, cacheReadTokens: 2_000_000, cacheWriteTokens: 400_000 }, SONNET_4_6)).toBeCloseTo(12.6, 12);
    // 100k × $1.25 + 10k × $10 + 800k × $0.125 = 0.125 + 0.1 + 0.1
    expect(costOf({ inputTokens: 100_000, outputTokens: 10_000, cacheReadTokens: 800_000 }, GPT_5)).toBeCloseTo(0.325, 12);
  });

  it('prices cache reads and writes at the input price when theirs is unknown', () => {
    const info: ModelInfo = { inputPerMTok: 2, outputPerMTok: 8 };
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 0, cacheReadTokens: 1_000_000, cacheWriteTokens: 1_000_000 }, info)).toBe(6);
    expect(costOf({ inputTokens: 0, outputTokens: 0, cacheWriteTokens: 500_000 }, { ...info, cacheReadPerMTok: 0.5 })).toBe(1);
    expect(costOf({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 500_000 }, { ...info, cacheWritePerMTok: 10 })).toBe(1);
  });

  it('counts an estimated usage like any other', () => {
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 0, estimated: true }, GPT_5)).toBe(1.25);
  });

  it('is undefined when the input or the output price is unknown', () => {
    const usage = { inputTokens: 1000, outputTokens: 1000 };
    expect(costOf(usage, {})).toBeUndefined();
    expect(costOf(usage, { inputPerMTok: 3 })).toBeUndefined();
    expect(costOf(usage, { outputPerMTok: 15 })).toBeUndefined();
    expect(costOf(usage, { contextWindow: 200_000, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 })).toBeUndefined();
    expect(costOf(usage, modelInfo('local/qwen3'))).toBeUndefined();
  });

  it('treats a price of zero as known', () => {
    expect(costOf({ inputTokens: 5000, outputTokens: 5000, cacheReadTokens: 5000 }, { inputPerMTok: 0, outputPerMTok: 0 })).toBe(0);
  });

  it('adds up: the cost of two requests is the sum of their costs', () => {
    const tokens = fc.integer({ min: 0, max: 2_000_000 });
    fc.assert(
      fc.property(tokens, tokens, tokens, tokens, tokens, tokens, (i1, o1, r1, i2, o2, w2) => {
        const a = costOf({ inputTokens: i1, outputTokens: o1, cacheReadTokens: r1 }, SONNET_4_6) ?? NaN;
        const b = costOf({ inputTokens: i2, outputTokens: o2, cacheWriteTokens: w2 }, SONNET_4_6) ?? NaN;
        const both = costOf({ inputTokens: i1 + i2, outputTokens: o1 + o2, cacheReadTokens: r1, cacheWriteTokens: w2 }, SONNET_4_6) ?? NaN;
        expect(both).toBeCloseTo(a + b, 9);
        expect(both).toBeGreaterThanOrEqual(0);
      }),
    );
  });
});

describe('resolveReasoning', () => {
  it('takes the level given over the model default, for any model', () => {
    expect(resolveReasoning('high', modelInfo('openai/gpt-5'))).toBe('high');
    expect(resolveReasoning('off', modelInfo('anthropic/claude-sonnet-4-6'))).toBe('off');
    // Said explicitly, a level goes even to a model the table does not know.
    expect(resolveReasoning('medium', modelInfo('local/qwen3'))).toBe('medium');
  });

  it('sends no level to a model the table says does not reason, whose API would refuse it, and says so', () => {
    expect(resolveReasoning('low', modelInfo('openai/gpt-4o'))).toBeUndefined();
    expect(resolveReasoning('high', modelInfo('openrouter/openai/gpt-4.1'))).toBeUndefined();
    expect(unsentReasoningNote('openai/gpt-4o', modelInfo('openai/gpt-4o'), 'low')).toBe(
      'fence: openai/gpt-4o does not reason, so the reasoning level low is not sent (its API would refuse the request)',
    );
    // Nothing is lost by off, and nothing is held back from a model that reasons or is unknown.
    expect(unsentReasoningNote('openai/gpt-4o', modelInfo('openai/gpt-4o'), 'off')).toBeUndefined();
    expect(unsentReasoningNote('openai/gpt-5', modelInfo('openai/gpt-5'), 'high')).toBeUndefined();
    expect(unsentReasoningNote('local/qwen3', modelInfo('local/qwen3'), 'high')).toBeUndefined();
    expect(unsentReasoningNote('openai/gpt-4o', modelInfo('openai/gpt-4o'), undefined)).toBeUndefined();
  });

  it('falls back on the model default, and sends nothing to models that do not reason, are retired or unknown', () => {
    expect(resolveReasoning(undefined, modelInfo('openai/gpt-5-mini'))).toBe('medium');
    expect(resolveReasoning(undefined, modelInfo('openai/o3'))).toBe('medium');
    expect(resolveReasoning(undefined, modelInfo('anthropic/claude-opus-4-8'))).toBe('medium');
    expect(resolveReasoning(undefined, modelInfo('openrouter/anthropic/claude-sonnet-4.5'))).toBe('medium');
    expect(resolveReasoning(undefined, modelInfo('openai/gpt-4.1'))).toBeUndefined();
    expect(resolveReasoning(undefined, modelInfo('anthropic/claude-3-7-sonnet-20250219'))).toBeUndefined();
    expect(modelInfo('anthropic/claude-3-7-sonnet-20250219').reasoning).toEqual({ retired: '2026-02-19' });
    expect(resolveReasoning(undefined, modelInfo('local/qwen3'))).toBeUndefined();
  });
});
