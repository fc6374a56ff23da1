/** The APIs fence talks to; the first part of every model id. */
export type ProviderName = 'openai' | 'anthropic' | 'openrouter' | 'local';

/** A model id resolved against the environment: everything needed to create its provider. */
export interface ResolvedModel {
  /** `provider/model`, e.g. `anthropic/claude-sonnet-4-6`. */
  id: string;
  provider: ProviderName;
  /** The provider's own model name (the part after `provider/`). */
  model: string;
  apiKey: string;
  /** Where `apiKey` comes from, for the message when a server refuses it. */
  keySource: KeySource;
  /** Where the API lives, when it is not the provider's public endpoint. */
  baseURL?: string;
  /** No id was given: this is the default for the first API key found. */
  defaulted?: boolean;
}

/**
 * Why a model id cannot be used, in one line. `badId` when the id itself is malformed (no
 * provider, no model, an unknown provider): bad usage, as opposed to a missing key or server.
 */
export interface ModelProblem {
  error: string;
  badId?: true;
}

/**
 * The environment variable a provider's key is read from (`ANTHROPIC_API_KEY`, …), and whether
 * it was set: when it was not, a placeholder key was sent to a compatible server.
 */
export interface KeySource {
  variable: string;
  set: boolean;
}

/** The models picked when no id is given, in the order their keys are looked for. */
export const DEFAULT_MODELS = [
  { key: 'ANTHROPIC_API_KEY', id: 'anthropic/claude-sonnet-4-6' },
  { key: 'OPENAI_API_KEY', id: 'openai/gpt-5' },
  { key: 'OPENROUTER_API_KEY', id: 'openrouter/anthropic/claude-sonnet-4.6' },
] as const;

/** The public endpoint of OpenRouter's OpenAI-compatible API. */
export const OPENROUTER_BASE_URL = 'https://openrouter.ai/api/v1';

/** Sent as the key to OpenAI-compatible servers that need none (most local ones). */
export const PLACEHOLDER_API_KEY = 'local';

const PREFIXES = 'openai/<model>, anthropic/<model>, openrouter/<vendor>/<model> or local/<model>';
const NO_KEY =
  'no API key: set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY, or point OPENAI_BASE_URL at a local server and use -m local/<model>';

/**
 * Resolves a model id (`provider/model`) against the environment. Without an id, picks the
 * default of the first key present (Anthropic, then OpenAI, then OpenRouter) and sets
 * `defaulted`. Returns `{ error }` with one line telling how to fix the configuration when
 * the id is malformed (then with `badId`) or the provider has no key; never throws and never
 * reads anything but `env`.
 *
 * Keys and endpoints: `anthropic/` uses ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; `openai/`
 * uses OPENAI_API_KEY and OPENAI_BASE_URL; `openrouter/` uses OPENROUTER_API_KEY (and
 * OPENROUTER_BASE_URL, when set); `local/` needs only OPENAI_BASE_URL (OPENAI_API_KEY is sent
 * when set). When a base URL is set but no key, a placeholder key is used: that is how local
 * servers and test servers are reached.
 */
export function resolveModel(id: string | undefined, env: NodeJS.ProcessEnv): ResolvedModel | ModelProblem {
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const wanted = id?.trim();
  if (!wanted) {
    const found = DEFAULT_MODELS.find((entry) => read(entry.key) !== undefined);
    if (found) {
      const resolved = resolveModel(found.id, env);
      return 'error' in resolved ? resolved : { ...resolved, defaulted: true };
    }
    if (read('OPENAI_BASE_URL')) {
      return { error: 'OPENAI_BASE_URL is set but no model was given: pass -m local/<model> with the name your server serves' };
    }
    return { error: NO_KEY };
  }

  const slash = wanted.indexOf('/');
  const prefix = wanted.slice(0, slash);
  const model = wanted.slice(slash + 1);
  // No model name holds a space or a line break: such an id is two words run together (a pasted `/model a\nb`).
  if (/\s/.test(wanted)) return { error: `model ${JSON.stringify(wanted)} holds a space or a line break: give one id, such as openai/gpt-5`, badId: true };
  if (slash <= 0) return { error: `model "${wanted}" has no provider prefix: use ${PREFIXES}`, badId: true };
  if (!model) return { error: `model "${wanted}" names no model after the provider: use ${PREFIXES}`, badId: true };

  switch (prefix) {
    case 'anthropic':
      return withKey(wanted, 'anthropic', model, read('ANTHROPIC_API_KEY'), read('ANTHROPIC_BASE_URL'), 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL');
    case 'openai':
      return withKey(wanted, 'openai', model, read('OPENAI_API_KEY'), read('OPENAI_BASE_URL'), 'OPENAI_API_KEY', 'OPENAI_BASE_URL');
    case 'openrouter': {
      const key = read('OPENROUTER_API_KEY');
      const baseURL = read('OPENROUTER_BASE_URL') ?? OPENROUTER_BASE_URL;
      if (!key) return { error: `no API key for ${wanted}: set OPENROUTER_API_KEY` };
      return { id: wanted, provider: 'openrouter', model, apiKey: key, keySource: { variable: 'OPENROUTER_API_KEY', set: true }, baseURL };
    }
    case 'local': {
      const baseURL = read('OPENAI_BASE_URL');
      if (!baseURL) {
        return { error: `${wanted} needs a server: set OPENAI_BASE_URL to its OpenAI-compatible endpoint (e.g. http://localhost:11434/v1)` };
      }
      const key = read('OPENAI_API_KEY');
      return { id: wanted, provider: 'local', model, apiKey: key ?? PLACEHOLDER_API_KEY, keySource: { variable: 'OPENAI_API_KEY', set: key !== undefined }, baseURL };
    }
    default:
      return { error: `unknown provider "${prefix}" in model "${wanted}": use ${PREFIXES}`, badId: true };
  }
}

function withKey(
  id: string,
  provider: 'openai' | 'anthropic',
  model: string,
  key: string | undefined,
  baseURL: string | undefined,
  keyName: string,
  urlName: string,
): ResolvedModel | ModelProblem {
  if (!key && !baseURL) return { error: `no API key for ${id}: set ${keyName} (or ${urlName} for a compatible server)` };
  const resolved: ResolvedModel = { id, provider, model, apiKey: key ?? PLACEHOLDER_API_KEY, keySource: { variable: keyName, set: key !== undefined } };
  if (baseURL) resolved.baseURL = baseURL;
  return resolved;
}
