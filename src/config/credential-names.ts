/**
 * Which environment variables are named like credentials: the rule that keeps them from the
 * processes the model drives (`childEnvironment`), and from a project's command tools unless
 * the user's own configuration passes them (`loadConfig`).
 */

/**
 * The provider keys fence itself reads (see `resolveModel`; a test checks this list against it):
 * never passed on unless named in `pass_env`.
 */
export const PROVIDER_KEY_VARIABLES: readonly string[] = ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENROUTER_API_KEY'];

/**
 * The word parts that mark a credential. A name is split at every character that is not a
 * letter or a digit (`AWS_SECRET_ACCESS_KEY` → AWS, SECRET, ACCESS, KEY); a part that is one
 * of these words, its plural, or ends with one (`APIKEY`, `PGPASSWORD`, `OAUTH`, `SSHPASS`)
 * marks the name. Case does not matter.
 */
export const CREDENTIAL_WORDS: readonly string[] = ['KEY', 'TOKEN', 'SECRET', 'PASSWORD', 'PASSWD', 'PASSPHRASE', 'PASS', 'CREDENTIAL', 'AUTH', 'COOKIE', 'WEBHOOK', 'DSN'];

/**
 * Words that mark a credential only as a whole part (or its plural), being too short to be
 * matched at the end of one: `GITHUB_PAT`, not `COMPAT`.
 */
export const WHOLE_PART_WORDS: readonly string[] = ['PAT'];

/** Parts that end with a credential word without being one: `COMPASS_HOME`, `PROXY_BYPASS`. */
const HARMLESS_PARTS: readonly string[] = ['COMPASS', 'BYPASS', 'SURPASS', 'TRESPASS', 'OVERPASS', 'UNDERPASS', 'ENCOMPASS'];

/**
 * Names the rule catches that hold no secret and that programs read: less's key-binding files.
 * (`KEYTIMEOUT`, `TOKENIZERS_PARALLELISM`, `GIT_AUTHOR_NAME`, `PYTHON_KEYRING_BACKEND`
 * are not caught in the first place: the word only starts their part.)
 */
export const HARMLESS_LOOK_ALIKES: readonly string[] = ['LESSKEY', 'LESSKEYIN', 'LESSKEY_SYSTEM', 'LESSKEYIN_SYSTEM'];

/** The shell's own working folder variables, which end with `PWD` and hold no password. */
const WORKING_FOLDER_NAMES: readonly string[] = ['PWD', 'OLDPWD'];

const ENDING_WORD = new RegExp(`(${CREDENTIAL_WORDS.join('|')})S?$`);
const WHOLE_WORD = new RegExp(`^(${WHOLE_PART_WORDS.join('|')})S?$`);

/**
 * Whether `name` looks like a credential's: a part marked by {@link CREDENTIAL_WORDS} or
 * {@link WHOLE_PART_WORDS}; a name ending with `PWD` (`MYSQL_PWD`, `DBPWD`) but `PWD` and
 * `OLDPWD` themselves; a connection string (`CONNECTION_STRING`, `ConnectionStrings__Main`).
 * `SSH_AUTH_SOCK` counts: it is a way to use keys.
 */
export function looksLikeCredential(name: string): boolean {
  const upper = name.toUpperCase();
  if (HARMLESS_LOOK_ALIKES.includes(upper)) return false;
  if (upper.endsWith('PWD') && !WORKING_FOLDER_NAMES.includes(upper)) return true;
  const parts = upper.split(/[^A-Z0-9]+/).filter((part) => part !== '');
  if (parts.join('').includes('CONNECTIONSTRING')) return true;
  return parts.some((part) => WHOLE_WORD.test(part) || (ENDING_WORD.test(part) && !HARMLESS_PARTS.includes(part)));
}

/** Whether `name` is kept out of the model's processes unless the user's `pass_env` names it. */
export function isWithheld(name: string): boolean {
  return PROVIDER_KEY_VARIABLES.includes(name.toUpperCase()) || looksLikeCredential(name);
}

/**
 * A URL with a password in it, anywhere in a text: `postgres://user:pw@host/db`,
 * `redis://:pw@host`, `jdbc:mysql://u:p@h`. A user alone (`ssh://git@host`) is not one.
 */
const URL_WITH_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:[^\s/@]+@/i;

/** Whether `value` holds a URL with a password in it; such a variable is withheld whatever its name. */
export function holdsPasswordUrl(value: string): boolean {
  return URL_WITH_PASSWORD.test(value);
}
