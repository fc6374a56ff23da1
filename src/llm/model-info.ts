import type { Usage } from '../conversation/message';
import type { ReasoningLevel } from './provider';

/** The levels `--reasoning` and the configuration's `reasoning` accept, weakest first. */
export const REASONING_LEVELS = ['off', 'low', 'medium', 'high'] as const satisfies readonly ReasoningLevel[];

/**
 * Whether a model reasons: `false` when it does not, else the level fence asks for when none
 * is given (`default`), or, for a model past its retirement date, that date (`retired`,
 * `YYYY-MM-DD`) and no default.
 */
export type ModelReasoning = false | { default: ReasoningLevel } | { retired: string };

/**
 * What fence knows about one model: the size of its context window, the longest reply it may
 * write, and its prices in US dollars per million tokens. Every field is optional: a field that
 * is absent is unknown, never zero.
 */
export interface ModelInfo {
  /** Tokens of prompt and reply together that one request may hold. */
  contextWindow?: number;
  /** The most tokens one reply may have. */
  maxOutputTokens?: number;
  /** USD per million prompt tokens not read from the cache. */
  inputPerMTok?: number;
  /** USD per million reply tokens (reasoning tokens included). */
  outputPerMTok?: number;
  /** USD per million prompt tokens read from the cache. Absent: the input price. */
  cacheReadPerMTok?: number;
  /** USD per million prompt tokens written to the cache. Absent: the input price. */
  cacheWritePerMTok?: number;
  /** Whether the model reasons, and how much by default (see `ModelReasoning`). Absent: unknown. */
  reasoning?: ModelReasoning;
  /**
   * Whether the model takes images. `false`: fence refuses to attach one (a clear error before
   * anything is sent). Absent: unknown, taken as yes (a local server's model says so itself).
   */
  images?: boolean;
}

/** The vendors whose models the table knows, by the first part of their ids. */
type Vendor = 'anthropic' | 'openai';

/*
 * The figures below come from the vendors' public price lists and model pages as of 2026-11:
 * Anthropic's pricing page (base input, 5-minute cache writes, cache hits, output) and its
 * model overview pages (context window, max output); OpenAI's model pages (input, cached
 * input, output, context window, max output tokens). Where a figure could not be confirmed
 * the field is left out.
 *
 * Anthropic bills a cache write at 1.25 times the input price (the 5-minute cache, the one
 * fence asks for) and a cache hit at a tenth of it. OpenAI does not bill cache writes apart
 * from input, so its entries leave `cacheWritePerMTok` to default to the input price.
 *
 * Reasoning (as of 2026-11): OpenAI's API reference for `reasoning.effort` says every model
 * before gpt-5.1 defaults to `medium`, so GPT-5, GPT-5 mini, GPT-5 nano, o3 and o4-mini get
 * `medium`; GPT-4.1 and GPT-4o are not reasoning models. Anthropic's extended thinking pages
 * list Claude Sonnet 3.7, Sonnet 4 and 4.5, Haiku 4.5, Opus 4, 4.1 and 4.5, and the 4.6
 * models (4.7 and later think adaptively only); the API thinks only when asked, and fence asks
 * for `medium` by default on those that are current. Claude 3.5 Haiku has no extended
 * thinking. Anthropic's deprecation notices retired Claude Sonnet 3.7 and Claude 3.5 Haiku on
 * 2026-02-19, and Claude Sonnet 4 and Opus 4 on 2026-06-15: those entries carry the date and
 * no default.
 *
 * Long-context surcharges are not modelled: Claude Opus/Sonnet 4.6 and later bill their whole
 * 1M window at these prices, and the older Claude models listed here have a 200K window unless
 * a beta header (which fence does not send) opens a larger one.
 */

const CLAUDE_OPUS_4_5_PRICES = { inputPerMTok: 5, outputPerMTok: 25, cacheReadPerMTok: 0.5, cacheWritePerMTok: 6.25 } as const;
const CLAUDE_OPUS_4_PRICES = { inputPerMTok: 15, outputPerMTok: 75, cacheReadPerMTok: 1.5, cacheWritePerMTok: 18.75 } as const;
const CLAUDE_SONNET_PRICES = { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 } as const;

/** Fence's level for a current Claude model that thinks (the API itself thinks only when asked). */
const THINKS = { reasoning: { default: 'medium' } } as const;
/** OpenAI's documented default effort for its reasoning models before gpt-5.1. */
const REASONS = { reasoning: { default: 'medium' } } as const;
const NO_REASONING = { reasoning: false } as const;

const ANTHROPIC_MODELS: Readonly<Record<string, ModelInfo>> = {
  'claude-opus-4-8': { contextWindow: 1_000_000, maxOutputTokens: 128_000, ...CLAUDE_OPUS_4_5_PRICES, ...THINKS },
  'claude-opus-4-7': { contextWindow: 1_000_000, maxOutputTokens: 128_000, ...CLAUDE_OPUS_4_5_PRICES, ...THINKS },
  'claude-opus-4-6': { contextWindow: 1_000_000, maxOutputTokens: 128_000, ...CLAUDE_OPUS_4_5_PRICES, ...THINKS },
  'claude-opus-4-5': { contextWindow: 200_000, maxOutputTokens: 64_000, ...CLAUDE_OPUS_4_5_PRICES, ...THINKS },
  'claude-opus-4-1': { contextWindow: 200_000, maxOutputTokens: 32_000, ...CLAUDE_OPUS_4_PRICES, ...THINKS },
  'claude-opus-4-0': { contextWindow: 200_000, maxOutputTokens: 32_000, ...CLAUDE_OPUS_4_PRICES, reasoning: { retired: '2026-06-15' } },
  'claude-opus-4': { contextWindow: 200_000, maxOutputTokens: 32_000, ...CLAUDE_OPUS_4_PRICES, reasoning: { retired: '2026-06-15' } },
  'claude-sonnet-4-6': { contextWindow: 1_000_000, maxOutputTokens: 128_000, ...CLAUDE_SONNET_PRICES, ...THINKS },
  'claude-sonnet-4-5': { contextWindow: 200_000, maxOutputTokens: 64_000, ...CLAUDE_SONNET_PRICES, ...THINKS },
  'claude-sonnet-4-0': { contextWindow: 200_000, maxOutputTokens: 64_000, ...CLAUDE_SONNET_PRICES, reasoning: { retired: '2026-06-15' } },
  'claude-sonnet-4': { contextWindow: 200_000, maxOutputTokens: 64_000, ...CLAUDE_SONNET_PRICES, reasoning: { retired: '2026-06-15' } },
  'claude-3-7-sonnet': { contextWindow: 200_000, maxOutputTokens: 64_000, ...CLAUDE_SONNET_PRICES, reasoning: { retired: '2026-02-19' } },
  'claude-haiku-4-5': { contextWindow: 200_000, maxOutputTokens: 64_000, inputPerMTok: 1, outputPerMTok: 5, cacheReadPerMTok: 0.1, cacheWritePerMTok: 1.25, ...THINKS },
  'claude-3-5-haiku': { contextWindow: 200_000, maxOutputTokens: 8_192, inputPerMTok: 0.8, outputPerMTok: 4, cacheReadPerMTok: 0.08, cacheWritePerMTok: 1, reasoning: { retired: '2026-02-19' } },
};

const GPT_5_LIMITS = { contextWindow: 400_000, maxOutputTokens: 128_000 } as const;
const GPT_4_1_LIMITS = { contextWindow: 1_047_576, maxOutputTokens: 32_768 } as const;
const GPT_4O_LIMITS = { contextWindow: 128_000, maxOutputTokens: 16_384 } as const;
const O_SERIES_LIMITS = { contextWindow: 200_000, maxOutputTokens: 100_000 } as const;

const OPENAI_MODELS: Readonly<Record<string, ModelInfo>> = {
  'gpt-5': { ...GPT_5_LIMITS, inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.125, ...REASONS },
  'gpt-5-mini': { ...GPT_5_LIMITS, inputPerMTok: 0.25, outputPerMTok: 2, cacheReadPerMTok: 0.025, ...REASONS },
  'gpt-5-nano': { ...GPT_5_LIMITS, inputPerMTok: 0.05, outputPerMTok: 0.4, cacheReadPerMTok: 0.005, ...REASONS },
  'gpt-4.1': { ...GPT_4_1_LIMITS, inputPerMTok: 2, outputPerMTok: 8, cacheReadPerMTok: 0.5, ...NO_REASONING },
  'gpt-4.1-mini': { ...GPT_4_1_LIMITS, inputPerMTok: 0.4, outputPerMTok: 1.6, cacheReadPerMTok: 0.1, ...NO_REASONING },
  'gpt-4.1-nano': { ...GPT_4_1_LIMITS, inputPerMTok: 0.1, outputPerMTok: 0.4, cacheReadPerMTok: 0.025, ...NO_REASONING },
  'gpt-4o': { ...GPT_4O_LIMITS, inputPerMTok: 2.5, outputPerMTok: 10, cacheReadPerMTok: 1.25, ...NO_REASONING },
  // The first GPT-4o snapshot kept its launch price and has no cached-input price.
  'gpt-4o-2024-05-13': { contextWindow: 128_000, inputPerMTok: 5, outputPerMTok: 15, ...NO_REASONING },
  'gpt-4o-mini': { ...GPT_4O_LIMITS, inputPerMTok: 0.15, outputPerMTok: 0.6, cacheReadPerMTok: 0.075, ...NO_REASONING },
  o3: { ...O_SERIES_LIMITS, inputPerMTok: 2, outputPerMTok: 8, cacheReadPerMTok: 0.5, ...REASONS },
  'o4-mini': { ...O_SERIES_LIMITS, inputPerMTok: 1.1, outputPerMTok: 4.4, cacheReadPerMTok: 0.275, ...REASONS },
  // o3-mini reads text only: OpenAI's model page lists no image input.
  'o3-mini': { ...O_SERIES_LIMITS, inputPerMTok: 1.1, outputPerMTok: 4.4, cacheReadPerMTok: 0.55, ...REASONS, images: false },
};

const TABLES: Readonly<Record<Vendor, Readonly<Record<string, ModelInfo>>>> = { anthropic: ANTHROPIC_MODELS, openai: OPENAI_MODELS };

/**
 * What may follow a table name in a dated or aliased id of the same model: a snapshot date
 * (`-20250929`, `-2024-08-06`) or `-latest`. Nothing else: `gpt-5-pro` and `gpt-5.1` are other
 * models at other prices, and get no figures rather than those of `gpt-5`.
 */
const SNAPSHOT_SUFFIX = /^-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$/;

/**
 * The table entry for one vendor's model name: the entry of that exact name, else the entry
 * with the longest name that the model name extends by a snapshot suffix only.
 */
function tableEntry(vendor: Vendor, name: string): ModelInfo | undefined {
  const table = TABLES[vendor];
  const exact = Object.hasOwn(table, name) ? table[name] : undefined;
  if (exact) return exact;
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (!name.startsWith(key) || !SNAPSHOT_SUFFIX.test(name.slice(key.length))) continue;
    if (best === undefined || key.length > best.length) best = key;
  }
  return best === undefined ? undefined : table[best];
}

/**
 * The vendor and the vendor's own model name behind a fence model id, when the vendor is one
 * the table knows: `anthropic/<m>`, `openai/<m>`, `openrouter/anthropic/<m>` and
 * `openrouter/openai/<m>`. Anthropic model names are written with dashes (OpenRouter writes
 * `claude-sonnet-4.6` for `claude-sonnet-4-6`), so their dots become dashes; OpenAI names keep
 * theirs (`gpt-4.1`). An OpenRouter variant such as `:thinking` or `:free` is not mapped.
 */
function vendorModel(modelId: string): { vendor: Vendor; name: string } | undefined {
  const parts = modelId.split('/');
  const [provider, ...rest] = parts;
  const path = provider === 'openrouter' ? rest : parts;
  if (path.length !== 2) return undefined;
  const [vendor, name] = path;
  if (!name || name.includes(':')) return undefined;
  if (vendor === 'anthropic') return { vendor, name: name.replaceAll('.', '-') };
  if (vendor === 'openai') return { vendor, name };
  return undefined;
}

/** The fields of `info` that are set (an explicit `undefined` does not count). */
function definedFields(info: ModelInfo | undefined): ModelInfo {
  const fields: ModelInfo = {};
  for (const [key, value] of Object.entries(info ?? {})) {
    if (value !== undefined) Object.assign(fields, { [key]: value });
  }
  return fields;
}

/**
 * What is known about the model `modelId` (`provider/model`): the built-in table's entry for
 * it, with the fields of `overrides[modelId]` (the configuration's `[models."<id>"]` table, for
 * that exact id) put over it. OpenRouter ids of Anthropic and OpenAI models find the vendor's
 * entry (see the module's table); a dated snapshot finds its base entry. `local/*` ids and
 * models the table does not know give only the override, or `{}`. Returns a new object every
 * time; never throws.
 */
export function modelInfo(modelId: string, overrides?: Readonly<Record<string, ModelInfo>>): ModelInfo {
  const found = vendorModel(modelId);
  const base = found ? tableEntry(found.vendor, found.name) : undefined;
  const override = overrides && Object.hasOwn(overrides, modelId) ? overrides[modelId] : undefined;
  return { ...definedFields(base), ...definedFields(override) };
}

/**
 * The price in US dollars of one request's `usage` at the prices of `info`: prompt tokens not
 * read from the cache at the input price, reply tokens at the output price, cache reads at
 * `cacheReadPerMTok` and cache writes at `cacheWritePerMTok` (each the input price when
 * absent). Undefined when the input or the output price is unknown; never guesses a price.
 */
export function costOf(usage: Usage, info: ModelInfo): number | undefined {
  const { inputPerMTok, outputPerMTok } = info;
  if (inputPerMTok === undefined || outputPerMTok === undefined) return undefined;
  const microDollars =
    usage.inputTokens * inputPerMTok +
    usage.outputTokens * outputPerMTok +
    (usage.cacheReadTokens ?? 0) * (info.cacheReadPerMTok ?? inputPerMTok) +
    (usage.cacheWriteTokens ?? 0) * (info.cacheWritePerMTok ?? inputPerMTok);
  return microDollars / 1_000_000;
}

/**
 * The reasoning level of a model's requests: `explicit` (`--reasoning`, else the
 * configuration's `reasoning`, else the chat's `/reasoning`) for any model but one the table
 * says does not reason (its API refuses a request carrying a level: see `unsentReasoningNote`);
 * else the model's default from the table. A model that does not reason, a retired one and a
 * model the table does not know get no default: no level is sent. Never throws.
 */
export function resolveReasoning(explicit: ReasoningLevel | undefined, info: ModelInfo): ReasoningLevel | undefined {
  if (info.reasoning === false) return undefined;
  if (explicit) return explicit;
  return info.reasoning && 'default' in info.reasoning ? info.reasoning.default : undefined;
}

/**
 * A line for the person when a level they chose is not sent because the table says `id` does
 * not reason (OpenAI refuses `reasoning.effort` and `reasoning_effort` for gpt-4o and gpt-4.1
 * with a 400); undefined otherwise, and for `off`, which loses nothing.
 */
export function unsentReasoningNote(id: string, info: ModelInfo, explicit: ReasoningLevel | undefined): string | undefined {
  if (info.reasoning !== false || !explicit || explicit === 'off') return undefined;
  return `fence: ${id} does not reason, so the reasoning level ${explicit} is not sent (its API would refuse the request)`;
}

/**
 * A line for the person when the table says `id` is past its retirement date (its API may
 * refuse it, and it gets no default level); undefined otherwise.
 */
export function retiredNote(id: string, info: ModelInfo): string | undefined {
  if (!info.reasoning || !('retired' in info.reasoning)) return undefined;
  return `fence: ${id} was retired on ${info.reasoning.retired}: its API may refuse it, and no reasoning level is sent unless you give one. Choose a current model with -m (see docs/models.md)`;
}

/** Whether `value` is a reasoning level. */
export function isReasoningLevel(value: string): value is ReasoningLevel {
  return (REASONING_LEVELS as readonly string[]).includes(value);
}
