/**
 * Why a run ended, one name each, as `stop_reason` in the JSON outputs; each has its own exit
 * code so that scripts can tell them apart without parsing text.
 *
 * - `done`: the model gave its final answer (a reply without a tool call).
 * - `complete`: in `--auto`, the model called `complete`.
 * - `max_turns`, `max_cost`, `max_tokens`, `timeout`: a budget ran out.
 * - `loop`: the same call or the same error kept coming back after a nudge.
 * - `no_progress`: in `--auto`, replies without a tool call kept coming after the nudges.
 * - `hook`: a prompt hook refused the prompt, or a stop hook kept refusing to let the run end.
 * - `auth`: the provider refused the key.
 * - `rate_limited`: the provider kept answering 429 after every retry.
 * - `error`: any other failure (a request that failed after retries, a bad workspace).
 * - `interrupted`: Ctrl-C or SIGTERM.
 * - `usage`: bad usage found before the run started (a session name that is not valid or is
 *   taken, a model id with an unknown provider, no prompt); the run never began.
 */
export type RunStop =
  | 'done'
  | 'complete'
  | 'max_turns'
  | 'max_cost'
  | 'max_tokens'
  | 'timeout'
  | 'loop'
  | 'no_progress'
  | 'hook'
  | 'auth'
  | 'rate_limited'
  | 'error'
  | 'interrupted'
  | 'usage';

/** The exit code for bad usage (an unknown option, a bad value, no prompt). */
export const USAGE_EXIT_CODE = 2;

/** The exit code of each stop reason. */
export const EXIT_CODES: Record<RunStop, number> = {
  done: 0,
  complete: 0,
  error: 1,
  usage: USAGE_EXIT_CODE,
  max_turns: 3,
  max_cost: 4,
  max_tokens: 5,
  timeout: 6,
  loop: 7,
  no_progress: 8,
  hook: 11,
  auth: 9,
  rate_limited: 10,
  interrupted: 130,
};
