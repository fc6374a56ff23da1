/**
 * The environment of the processes the model drives (the persistent shell and the Python
 * kernel): fence's own, without the keys fence talks to the model with and without variables
 * whose names look like credentials, so that a model running `env` does not put them into the
 * conversation. The user names in `[sandbox] pass_env` of their own config.toml those to keep.
 */

/**
 * The provider keys fence itself reads (see `resolveModel`; a test checks this list against it):
 * never passed on unless named in `pass_env`. Written out here: the runtime does not import llm.
 */
export const PROVIDER_KEY_VARIABLES: readonly string[] = ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENROUTER_API_KEY'];

/**
 * The word parts that mark a credential. A name is split at every character that is not a
 * letter or a digit (`AWS_SECRET_ACCESS_KEY` → AWS, SECRET, ACCESS, KEY); a part that is one
 * of these words, its plural, or ends with one (`APIKEY`, `PGPASSWORD`, `OAUTH`) marks the
 * name. Case does not matter.
 */
export const CREDENTIAL_WORDS: readonly string[] = ['KEY', 'TOKEN', 'SECRET', 'PASSWORD', 'PASSWD', 'CREDENTIAL', 'AUTH'];

/**
 * Names the rule catches that hold no secret and that programs read: less's key-binding files.
 * (`KEYTIMEOUT`, `TOKENIZERS_PARALLELISM`, `GIT_AUTHOR_NAME`, `PYTHON_KEYRING_BACKEND` are not
 * caught in the first place: the word only starts their part.)
 */
export const HARMLESS_LOOK_ALIKES: readonly string[] = ['LESSKEY', 'LESSKEYIN', 'LESSKEY_SYSTEM', 'LESSKEYIN_SYSTEM'];

const WORD_PART = new RegExp(`(${CREDENTIAL_WORDS.join('|')})S?$`);

/** Whether `name` looks like a credential's (see {@link CREDENTIAL_WORDS}); `SSH_AUTH_SOCK` does: it is a way to use keys. */
export function looksLikeCredential(name: string): boolean {
  const upper = name.toUpperCase();
  if (HARMLESS_LOOK_ALIKES.includes(upper)) return false;
  return upper.split(/[^A-Z0-9]+/).some((part) => WORD_PART.test(part));
}

/** Whether `name` is kept out of the model's processes unless passed through. */
export function isWithheld(name: string): boolean {
  return PROVIDER_KEY_VARIABLES.includes(name.toUpperCase()) || looksLikeCredential(name);
}

/**
 * `env` (fence's, by default) without the variables {@link isWithheld} names, except those
 * named in `passEnv`, which are kept when set.
 */
export function childEnvironment(passEnv: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const pass = new Set(passEnv);
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (pass.has(key) || !isWithheld(key)) result[key] = value;
  }
  return result;
}
