import { createMessage } from '../conversation/message';
import type { SessionStore } from '../conversation/session-store';
import type { RunOutcome } from './agent';

/**
 * What the step loop needs of the person's hooks (`[[hooks]]`, see `src/hooks/`): those at the
 * start of the session, before each prompt and when a run would end. The hooks around tool
 * calls run in `invokeTool` (`ToolContext.toolHooks`). Every method never throws.
 */
export interface RunHooks {
  /** The `session_start` hooks' stdout the first time it is called (undefined when they printed nothing), undefined after. */
  sessionStart(): Promise<string | undefined>;
  /** Before a prompt is sent: `refused` with the reason for the person, else text for the model. */
  prompt(prompt: string, signal?: AbortSignal): Promise<{ refused: string } | { context?: string }>;
  /** When a run would end: a reason for the model to go on, or undefined. `active`: it already went on for one. */
  stop(facts: { answer: string; active: boolean }, signal?: AbortSignal): Promise<string | undefined>;
}

/** Times in one run a stop hook may send the model back to work before the run ends anyway. */
export const MAX_STOP_HOOK_REFUSALS = 3;

/**
 * Runs the hooks before a prompt: appends what the `session_start` hooks printed (the first
 * prompt of the session only) as a system message, then runs the `prompt` hooks. A refusal is
 * the run's outcome (`stopped` by `hook`, the prompt neither stored nor sent); otherwise the
 * `context` to append after the prompt, when the hooks printed any.
 */
export async function hooksBeforePrompt(
  hooks: RunHooks | undefined,
  store: SessionStore,
  prompt: string,
  signal: AbortSignal | undefined,
): Promise<{ refused: RunOutcome } | { context?: string }> {
  if (!hooks) return {};
  const started = await hooks.sessionStart();
  if (started) store.append(createMessage('system', `session_start hook:\n${started}`));
  const answer = await hooks.prompt(prompt, signal);
  if ('refused' in answer) return { refused: { status: 'stopped', stop: 'hook', reason: `a prompt hook refused the prompt: ${answer.refused}`, answer: '' } };
  return answer.context ? { context: `prompt hook:\n${answer.context}` } : {};
}

/**
 * Asks the `stop` hooks whether a run that ended (`ended`, a `done` outcome) may end, after
 * `refusals` earlier refusals in this run. `go_on` when a hook said no: its reason was appended
 * for the model, and the run takes another step. After `MAX_STOP_HOOK_REFUSALS` the run ends
 * anyway, `stopped` by `hook`, saying the stop hook kept refusing.
 */
export async function stopHookVerdict(
  hooks: RunHooks,
  store: SessionStore,
  ended: RunOutcome & { status: 'done' },
  refusals: number,
  signal: AbortSignal | undefined,
): Promise<RunOutcome | 'go_on'> {
  const reason = await hooks.stop({ answer: ended.answer, active: refusals > 0 }, signal);
  if (reason === undefined) return ended;
  if (refusals >= MAX_STOP_HOOK_REFUSALS) {
    const last = reason.split('\n').find((line) => line.trim() !== '') ?? reason;
    return { status: 'stopped', stop: 'hook', reason: `the stop hook kept refusing to let the run end (${MAX_STOP_HOOK_REFUSALS} times); its last reason: ${last}`, answer: ended.answer };
  }
  const how = ended.completed ? 'call complete again once it is' : 'answer again once it is';
  store.append(createMessage('system', `A stop hook does not let this run end yet:\n${reason}\nGo on with the task, and ${how} done.`));
  return 'go_on';
}
