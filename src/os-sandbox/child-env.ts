import { holdsPasswordUrl, isWithheld } from '../config/credential-names';

/**
 * The environment of the processes the model drives (the persistent shell and the Python
 * kernel): fence's own, without the keys fence talks to the model with, without variables
 * whose names look like credentials and without those whose value is a URL with a password, so
 * that a model running `env` does not put them into the conversation. The user names in
 * `[sandbox] pass_env` of their own config.toml those to keep.
 */

export {
  CREDENTIAL_WORDS,
  HARMLESS_LOOK_ALIKES,
  holdsPasswordUrl,
  isWithheld,
  looksLikeCredential,
  PROVIDER_KEY_VARIABLES,
  WHOLE_PART_WORDS,
} from '../config/credential-names';

/**
 * `env` (fence's, by default) without the variables {@link isWithheld} names and those whose
 * value {@link holdsPasswordUrl}, except those named in `passEnv`, which are kept when set.
 */
export function childEnvironment(passEnv: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const pass = new Set(passEnv);
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (pass.has(key) || (!isWithheld(key) && !holdsPasswordUrl(value))) result[key] = value;
  }
  return result;
}
