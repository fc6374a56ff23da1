import type { Message } from '../conversation/message';
import { costOf, modelInfo, type ModelInfo } from '../llm/model-info';

/** What a session's requests came to, from the usage recorded in its log. */
export interface SessionUsage {
  /** Model replies with usage: the agent's turns and compaction summaries, those taken back included. */
  requests: number;
  /** Of `requests`, those whose replies `/undo` took back. */
  takenBack: number;
  inputTokens: number;
  outputTokens: number;
  /** Of `outputTokens`, those spent reasoning (as far as the APIs said). */
  reasoningTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** USD; undefined when a model's prices are unknown. */
  costUsd: number | undefined;
  /** Models whose prices are unknown. */
  unpriced: string[];
  /** Some count was made locally, not reported by the provider. */
  estimated: boolean;
  /** Input tokens (cached ones included) of the last reply of the agent, not a summary: how full the context is. */
  lastInputTokens: number;
}

/**
 * Adds up the usage of every message that has one (each reply, each summary), priced by its own
 * model from fence's table and the config's `[models]`: those of `log`, and those of `undone`
 * (the messages undo took back: their requests were paid for all the same). Only `log` tells
 * how full the context is. Only reads.
 */
export function sessionUsage(
  log: readonly Message[],
  overrides: Readonly<Record<string, ModelInfo>> = {},
  undone: readonly Message[] = [],
): SessionUsage {
  const totals: SessionUsage = {
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
  };
  const infos = new Map<string, ModelInfo>();
  const paid = [...undone.map((message) => ({ message, current: false })), ...log.map((message) => ({ message, current: true }))];
  for (const { message, current } of paid) {
    const usage = message.meta?.usage;
    if (!usage) continue;
    totals.requests += 1;
    if (!current) totals.takenBack += 1;
    totals.inputTokens += usage.inputTokens;
    totals.outputTokens += usage.outputTokens;
    totals.reasoningTokens += usage.reasoningTokens ?? 0;
    totals.cacheReadTokens += usage.cacheReadTokens ?? 0;
    totals.cacheWriteTokens += usage.cacheWriteTokens ?? 0;
    if (usage.estimated) totals.estimated = true;
    if (current && message.role === 'assistant') totals.lastInputTokens = usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
    const model = message.meta?.model ?? '';
    let info = infos.get(model);
    if (!info) infos.set(model, (info = modelInfo(model, overrides)));
    const cost = costOf(usage, info);
    if (cost === undefined) {
      if (!totals.unpriced.includes(model)) totals.unpriced.push(model);
      totals.costUsd = undefined;
    } else if (totals.costUsd !== undefined) {
      totals.costUsd += cost;
    }
  }
  return totals;
}

/** `950`, `12.3k`, `456k`, `1.20M`: three significant figures or so. */
export function shortCount(n: number): string {
  if (n < 1000) return String(n);
  if (n < 99_950) return `${(n / 1000).toFixed(1)}k`;
  if (n < 999_500) return `${(n / 1000).toFixed(0)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

/** `$0.0123`, `$1.23`. */
export function dollars(usd: number): string {
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}
