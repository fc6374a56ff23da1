import type { Message } from './message';

/**
 * The messages to append to a session's log when it is resumed, before its next request, so
 * that a session stopped at any moment (even by `kill -9`) goes on with a valid request and a
 * model that knows which tool call was cut off. Looks only at the log's end: the last
 * assistant message and the tool results after it, when nothing else follows it.
 *
 * - Each native call of that message (`meta.toolCalls`, first of each id, non-empty ids) with
 *   no tool result carrying its `callId` after it gets one: a `system` message with that
 *   `callId` and `meta: { toolResult, tool: <call name>, isError, interrupted }`, saying the
 *   call was interrupted and may or may not have taken effect. So every call keeps its result,
 *   which the chat APIs require.
 * - A message with no native calls whose `stopReason` is `tool_use` (a markdown or XML block
 *   that was about to run, or running) and that is the log's last message gets one such
 *   result without `callId` and without `meta.tool`: the block's tool is in its text only,
 *   and this layer does not parse text.
 * - Anything else — a log ending with a user message, a final answer, a reply cut short, all
 *   calls answered, an empty log — needs nothing: `[]`.
 *
 * Pure: reads `log`, changes nothing; `now` stamps the messages it makes.
 */
export function messagesToRepair(log: readonly Message[], now: Date = new Date()): Message[] {
  let index = log.length - 1;
  while (index >= 0 && isToolResult(log[index])) index--;
  const last = log[index];
  if (last === undefined || last.role !== 'assistant') return [];
  const results = log.slice(index + 1);
  const timestamp = now.toISOString();

  const calls = last.meta?.toolCalls ?? [];
  if (calls.length > 0) {
    const seen = new Set<string>();
    const repairs: Message[] = [];
    for (const call of calls) {
      if (call.id === '' || seen.has(call.id)) continue;
      seen.add(call.id);
      if (results.some((result) => result.callId === call.id)) continue;
      repairs.push(interruptedResult(timestamp, call.name, call.id));
    }
    return repairs;
  }
  if (last.meta?.stopReason === 'tool_use' && results.length === 0) return [interruptedResult(timestamp)];
  return [];
}

function isToolResult(message: Message | undefined): boolean {
  return message?.role === 'system' && message.meta?.toolResult === true;
}

/** What a session that goes on in a new process has lost of its shell and Python kernel. */
const NEW_RUNTIMES =
  "The session goes on in a new shell and a new Python kernel: the working folder is the workspace again, and the old shell's variables, functions and jobs and the old kernel's variables and imports are gone.";

/**
 * What the model reads when a session is resumed after it used the shell or Python since it
 * was last told that they are new: a resumed session runs in a new process, so they are new
 * even when the last run ended well. `undefined` when the log says nothing it would contradict:
 * no shell or Python result since the last interruption note or notice of new runtimes (an
 * interruption note says the same). Pure: reads `log` only.
 */
export function newRuntimesNotice(log: readonly Message[]): string | undefined {
  for (let index = log.length - 1; index >= 0; index--) {
    const meta = log[index]?.meta;
    if (meta?.interrupted || meta?.notice === 'new_runtimes') return undefined;
    if (isToolResult(log[index]) && (meta?.tool === 'shell' || meta?.tool === 'python')) {
      return `fence was restarted since the last tool call. ${NEW_RUNTIMES}`;
    }
  }
  return undefined;
}

/**
 * What the model reads about a call that fence was stopped in the middle of, whatever stopped
 * it: Ctrl-C or SIGTERM in a one-shot run, `--timeout`, a chat closed by a signal (the agent
 * puts it before what the call printed), or `kill -9` and a crash (the result added at the
 * next resume). It holds in each case: the call may or may not have taken effect; the shell
 * and the Python kernel did not survive, so their state is gone; background processes were
 * swept by a clean stop but may outlive a killed fence.
 */
export function interruptedCallNote(tool?: string): string {
  const call = tool ? `${tool} call` : 'tool call';
  return [
    `Interrupted: fence stopped before this ${call} finished or before its result was recorded.`,
    'It may or may not have taken effect, wholly or in part: check before repeating it.',
    NEW_RUNTIMES,
    'Background processes the old shell started were stopped, unless fence was killed outright: look for them (ps) before starting them again.',
  ].join(' ');
}

function interruptedResult(timestamp: string, tool?: string, callId?: string): Message {
  return {
    role: 'system',
    content: interruptedCallNote(tool),
    timestamp,
    ...(callId !== undefined ? { callId } : {}),
    meta: { toolResult: true, ...(tool ? { tool } : {}), isError: true, interrupted: true },
  };
}
