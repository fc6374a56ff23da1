import { describe, expect, it } from 'vitest';
import { dollars, sessionUsage, shortCount } from '../../src/tui/session-usage';
import { createMessage, type Message, type Usage } from '../../src/conversation/message';
import { costOf, modelInfo, type ModelInfo } from '../../src/llm/model-info';

const LOCAL = 'local/house-model';
/** Prices of the local model, USD per million tokens. */
const prices: Record<string, ModelInfo> = {
  [LOCAL]: { inputPerMTok: 2, outputPerMTok: 10, cacheReadPerMTok: 0.5, cacheWritePerMTok: 4 },
};

function reply(usage: Usage, model = LOCAL): Message {
  return createMessage('assistant', 'a reply', { meta: { model, usage } });
}

function summary(usage: Usage, model = LOCAL): Message {
  return createMessage('system', 'Summary of the earlier conversation', { meta: { compaction: { through: 3 }, model, usage } });
}

const prompt = (text = 'a prompt') => createMessage('user', text);
const toolResult = () => createMessage('system', 'output', { meta: { toolResult: true, tool: 'shell' } });

describe('sessionUsage: totals', () => {
  it('is all zeros for a log without usage', () => {
    expect(sessionUsage([prompt(), toolResult()])).toEqual({
      requests: 0,
      takenBack: 0,
      inputTokens: 0,
      outputTokens: 0,
      reasoningTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0,
      unpriced: [],
      estimated: false,
      lastInputTokens: 0,
    });
  });

  it('counts reasoning tokens among the output tokens, priced as output', () => {
    const log = [prompt(), reply({ inputTokens: 100, outputTokens: 50, reasoningTokens: 40 }), reply({ inputTokens: 10, outputTokens: 5 })];
    const usage = sessionUsage(log, prices);
    expect(usage).toMatchObject({ outputTokens: 55, reasoningTokens: 40 });
    // 110 input tokens at $2 and 55 output tokens at $10 per million: the reasoning is in the output.
    expect(usage.costUsd).toBeCloseTo((110 * 2 + 55 * 10) / 1e6, 12);
  });

  it('adds up the usage of the replies and of the compaction summaries, nothing else', () => {
    const log = [
      prompt(),
      reply({ inputTokens: 100, outputTokens: 20, cacheReadTokens: 1000, cacheWriteTokens: 50 }),
      toolResult(),
      reply({ inputTokens: 30, outputTokens: 7 }),
      summary({ inputTokens: 400, outputTokens: 60, cacheReadTokens: 5 }),
      prompt('next'),
      reply({ inputTokens: 10, outputTokens: 3, cacheWriteTokens: 2 }),
    ];
    const usage = sessionUsage(log, prices);
    expect(usage.requests).toBe(4);
    expect(usage.inputTokens).toBe(540);
    expect(usage.outputTokens).toBe(90);
    expect(usage.cacheReadTokens).toBe(1005);
    expect(usage.cacheWriteTokens).toBe(52);
  });

  it('does not change the log', () => {
    const log = [prompt(), reply({ inputTokens: 1, outputTokens: 1 })];
    const copy = structuredClone(log);
    sessionUsage(log, prices);
    expect(log).toEqual(copy);
  });
});

describe('sessionUsage: cost', () => {
  it('prices every request at the given prices per million tokens', () => {
    const log = [
      reply({ inputTokens: 1_000_000, outputTokens: 100_000 }), // 2 + 1 = 3
      reply({ inputTokens: 200_000, outputTokens: 0, cacheReadTokens: 2_000_000, cacheWriteTokens: 500_000 }), // 0.4 + 1 + 2 = 3.4
      summary({ inputTokens: 50_000, outputTokens: 10_000 }), // 0.1 + 0.1 = 0.2
    ];
    expect(sessionUsage(log, prices).costUsd).toBeCloseTo(6.6, 10);
  });

  it('prices cache reads and writes at the input price when the model has no cache prices', () => {
    const overrides = { 'local/plain': { inputPerMTok: 3, outputPerMTok: 6 } };
    const log = [reply({ inputTokens: 1_000_000, outputTokens: 1_000_000, cacheReadTokens: 1_000_000, cacheWriteTokens: 1_000_000 }, 'local/plain')];
    expect(sessionUsage(log, overrides).costUsd).toBeCloseTo(3 + 6 + 3 + 3, 10);
  });

  it("prices each message by its own model", () => {
    const overrides = { ...prices, 'local/cheap': { inputPerMTok: 0.1, outputPerMTok: 0.2 } };
    const log = [reply({ inputTokens: 1_000_000, outputTokens: 1_000_000 }), reply({ inputTokens: 1_000_000, outputTokens: 1_000_000 }, 'local/cheap')];
    expect(sessionUsage(log, overrides).costUsd).toBeCloseTo(2 + 10 + 0.1 + 0.2, 10);
  });

  it("uses fence's own table for a known model", () => {
    const model = 'anthropic/claude-sonnet-4-5';
    const usage: Usage = { inputTokens: 12_000, outputTokens: 3_000, cacheReadTokens: 40_000, cacheWriteTokens: 1_000 };
    const expected = costOf(usage, modelInfo(model));
    expect(expected).toBeGreaterThan(0);
    expect(sessionUsage([reply(usage, model)]).costUsd).toBeCloseTo(expected ?? Number.NaN, 12);
    // The same figure by hand, from the table's Sonnet prices (3 / 15 / 0.3 / 3.75 USD per million).
    expect(sessionUsage([reply(usage, model)]).costUsd).toBeCloseTo((12_000 * 3 + 3_000 * 15 + 40_000 * 0.3 + 1_000 * 3.75) / 1e6, 12);
  });

  it('lets the overrides replace the prices of a known model', () => {
    const model = 'anthropic/claude-sonnet-4-5';
    const overrides = { [model]: { inputPerMTok: 1, outputPerMTok: 1 } };
    const log = [reply({ inputTokens: 1_000_000, outputTokens: 1_000_000 }, model)];
    expect(sessionUsage(log, overrides).costUsd).toBeCloseTo(2, 10);
  });

  it('has no cost, and lists the model as unpriced, when its prices are unknown', () => {
    const usage = sessionUsage([reply({ inputTokens: 10, outputTokens: 5 }, 'local/mystery')]);
    expect(usage.costUsd).toBeUndefined();
    expect(usage.unpriced).toEqual(['local/mystery']);
  });

  it('has no cost as soon as one request is unpriced, and lists each unpriced model once', () => {
    const log = [
      reply({ inputTokens: 10, outputTokens: 5 }),
      reply({ inputTokens: 10, outputTokens: 5 }, 'local/mystery'),
      reply({ inputTokens: 10, outputTokens: 5 }),
      summary({ inputTokens: 10, outputTokens: 5 }, 'local/mystery'),
      reply({ inputTokens: 10, outputTokens: 5 }, 'local/other-mystery'),
    ];
    const usage = sessionUsage(log, prices);
    expect(usage.costUsd).toBeUndefined();
    expect(usage.unpriced).toEqual(['local/mystery', 'local/other-mystery']);
    // The token totals are still there.
    expect(usage.requests).toBe(5);
    expect(usage.inputTokens).toBe(50);
  });

  it('counts a model with only an input price as unpriced', () => {
    const overrides = { 'local/half': { inputPerMTok: 1 } };
    const usage = sessionUsage([reply({ inputTokens: 10, outputTokens: 5 }, 'local/half')], overrides);
    expect(usage.costUsd).toBeUndefined();
    expect(usage.unpriced).toEqual(['local/half']);
  });

  it('does not list priced models as unpriced', () => {
    expect(sessionUsage([reply({ inputTokens: 10, outputTokens: 5 })], prices).unpriced).toEqual([]);
  });
});

describe('sessionUsage: replies taken back by /undo', () => {
  it('counts their requests, tokens and cost, since they were paid for', () => {
    const log = [prompt(), reply({ inputTokens: 100_000, outputTokens: 1000 })];
    const undone = [prompt('taken back'), reply({ inputTokens: 200_000, outputTokens: 3000 }), toolResult(), summary({ inputTokens: 50_000, outputTokens: 500 })];
    const usage = sessionUsage(log, prices, undone);
    expect(usage.requests).toBe(3);
    expect(usage.takenBack).toBe(2);
    expect(usage.inputTokens).toBe(350_000);
    expect(usage.outputTokens).toBe(4500);
    // 350k in at $2/M and 4.5k out at $10/M.
    expect(usage.costUsd).toBeCloseTo(0.7 + 0.045, 10);
    expect(usage.costUsd).toBeCloseTo((sessionUsage(log, prices).costUsd ?? 0) + (sessionUsage(undone, prices).costUsd ?? 0), 10);
  });

  it('measures how full the context is from the conversation alone', () => {
    const usage = sessionUsage([reply({ inputTokens: 40, outputTokens: 1 })], prices, [reply({ inputTokens: 90_000, outputTokens: 1 })]);
    expect(usage.lastInputTokens).toBe(40);
    expect(sessionUsage([prompt()], prices, [reply({ inputTokens: 90_000, outputTokens: 1 })]).lastInputTokens).toBe(0);
  });

  it('leaves the cost unknown when a taken-back reply came from a model without prices', () => {
    const usage = sessionUsage([reply({ inputTokens: 10, outputTokens: 5 })], prices, [reply({ inputTokens: 10, outputTokens: 5 }, 'local/mystery')]);
    expect(usage.costUsd).toBeUndefined();
    expect(usage.unpriced).toEqual(['local/mystery']);
  });
});

describe('sessionUsage: estimated and lastInputTokens', () => {
  it('is estimated when any count was made locally', () => {
    const exact = [reply({ inputTokens: 1, outputTokens: 1 }), reply({ inputTokens: 1, outputTokens: 1 })];
    expect(sessionUsage(exact, prices).estimated).toBe(false);
    const mixed = [reply({ inputTokens: 1, outputTokens: 1 }), reply({ inputTokens: 1, outputTokens: 1, estimated: true }), reply({ inputTokens: 1, outputTokens: 1 })];
    expect(sessionUsage(mixed, prices).estimated).toBe(true);
  });

  it('gives the input tokens of the last reply, cached ones included', () => {
    const log = [
      reply({ inputTokens: 5000, outputTokens: 10, cacheReadTokens: 9000 }),
      prompt(),
      reply({ inputTokens: 300, outputTokens: 10, cacheReadTokens: 20_000, cacheWriteTokens: 700 }),
      toolResult(),
    ];
    expect(sessionUsage(log, prices).lastInputTokens).toBe(21_000);
  });

  it('is 0 when no reply has usage', () => {
    expect(sessionUsage([prompt()], prices).lastInputTokens).toBe(0);
  });
});

describe('shortCount', () => {
  it('writes counts under a thousand as they are', () => {
    expect(shortCount(0)).toBe('0');
    expect(shortCount(950)).toBe('950');
    expect(shortCount(999)).toBe('999');
  });

  it('writes thousands with a k', () => {
    expect(shortCount(1000)).toBe('1.0k');
    expect(shortCount(1234)).toBe('1.2k');
    expect(shortCount(45_000)).toBe('45.0k');
    expect(shortCount(250_400)).toBe('250k');
  });

  it('writes millions with an M and two decimals', () => {
    expect(shortCount(1_000_000)).toBe('1.00M');
    expect(shortCount(1_200_000)).toBe('1.20M');
    expect(shortCount(34_567_000)).toBe('34.57M');
  });

  it('keeps three figures: 12.3k, 456k, and 1.00M rather than 1000k', () => {
    expect(shortCount(12_300)).toBe('12.3k');
    expect(shortCount(99_949)).toBe('99.9k');
    expect(shortCount(456_000)).toBe('456k');
    expect(shortCount(999_999)).toBe('1.00M');
  });
});

describe('dollars', () => {
  it('writes amounts under a dollar with four decimals', () => {
    expect(dollars(0.0123)).toBe('$0.0123');
    expect(dollars(0)).toBe('$0.0000');
    expect(dollars(0.5)).toBe('$0.5000');
  });

  it('writes a dollar and more with two decimals', () => {
    expect(dollars(1.23)).toBe('$1.23');
    expect(dollars(1)).toBe('$1.00');
    expect(dollars(42.5)).toBe('$42.50');
  });
});
