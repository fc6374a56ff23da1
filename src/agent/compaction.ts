import { createMessage, type Message, type Usage } from '../conversation/message';
import type { Provider } from '../llm/provider';
import { truncateOutput } from '../tools/truncate-output';
import { summaryPlanNote } from './plan-notes';
import { streamReply } from './stream-reply';

/**
 * Compaction: when a session nears its context window, the model writes a summary of the older
 * part, which requests carry from then on instead of that part. The summary is appended to the
 * log as a `system` message with `meta.compaction.through`, the index of the last log message
 * it stands for; nothing is removed from the log, so the whole session stays readable and a
 * resumed session is compacted the same way.
 */

/** How the model is asked to summarize. */
const SUMMARY_INSTRUCTIONS = [
  "You compact the history of a coding agent's session so that it can go on with less context.",
  'Write the summary the agent will read instead of the conversation below: the task and where it stands, what was done (files changed, commands run and what they showed), what was learned, what failed and why, and what is left to do.',
  'Keep exact file paths, names, commands, numbers and error messages. Write plain text, no preamble.',
].join('\n');

/** Each message of the transcript the summarizer reads is cut to this many characters. */
const TRANSCRIPT_LIMITS = { maxChars: 4000, headChars: 1500, tailChars: 2000 };

/** How many leading messages stay in every request: the system prompt(s) and the first user message (the task). */
export function headLength(log: readonly Message[]): number {
  let index = 0;
  while (index < log.length && log[index]?.role === 'system' && !log[index]?.meta?.toolResult) index++;
  const task = log.findIndex((message, i) => i >= index && message.role === 'user');
  return task === -1 ? index : task + 1;
}

/**
 * The log as requests see it: its head, then the latest summary in place of the messages it
 * stands for, then everything after them (other than summaries). Without a summary, the log
 * itself. Messages are the log's own objects, so per-message caches keep working.
 */
export function compactedView(log: readonly Message[]): Message[] {
  let latest: Message | undefined;
  for (let i = log.length - 1; i >= 0 && !latest; i--) if (log[i]?.meta?.compaction) latest = log[i];
  if (!latest?.meta?.compaction) return [...log];
  const head = headLength(log);
  const through = Math.max(latest.meta.compaction.through, head - 1);
  const rest = log.slice(through + 1).filter((message) => !message.meta?.compaction);
  return [...log.slice(0, head), latest, ...rest];
}

/**
 * Where a compaction of `view` may end: all but the last `keepRecent` messages after the head,
 * moved back so that no tool result is separated from its call. Undefined when there is
 * nothing worth compacting.
 */
export function compactionEnd(view: readonly Message[], keepRecent: number): number | undefined {
  let end = view.length - keepRecent - 1;
  while (end >= 0 && view[end + 1]?.meta?.toolResult) end--;
  return end >= headLength(view) + 1 ? end : undefined;
}

/** What a summary request came to. */
export type SummaryOutcome = { ok: true; message: Message; usage?: Usage } | { ok: false; error: string; usage?: Usage };

/**
 * Asks the model for a summary of `view[head..end]` and makes the message to append: it stands
 * for the log up to the message `view[end]` is (found in `log`). Gives up after `timeoutMs` or
 * when `signal` aborts. Never throws.
 */
export async function summarize(options: {
  provider: Provider;
  model: string;
  modelId: string;
  log: readonly Message[];
  view: readonly Message[];
  end: number;
  timeoutMs: number;
  /** Most characters of transcript to send: the newest messages are kept, older ones counted. */
  maxChars: number;
  signal?: AbortSignal;
}): Promise<SummaryOutcome> {
  const { view, end, log } = options;
  const last = view[end];
  const through = last === undefined ? -1 : log.lastIndexOf(last);
  if (through === -1) return { ok: false, error: 'nothing to summarize' };
  // The newest messages first, until the transcript is as long as the summarizer can read.
  const parts: string[] = [];
  let chars = 0;
  let index = end;
  for (; index >= headLength(view); index--) {
    const message = view[index];
    if (!message) break;
    const part = `## ${label(message)}\n${truncateOutput(message.content, TRANSCRIPT_LIMITS).text}`;
    if (chars + part.length > options.maxChars && parts.length > 0) break;
    parts.unshift(part);
    chars += part.length + 2;
  }
  const skipped = index - headLength(view) + 1;
  if (skipped > 0) parts.unshift(`[${skipped} earlier messages are not shown]`);
  const transcript = parts.join('\n\n');
  const task = view.slice(0, headLength(view)).find((message) => message.role === 'user')?.content ?? '';
  const request = [
    createMessage('system', SUMMARY_INSTRUCTIONS),
    createMessage('user', `The task:\n${task}\n\nThe conversation to summarize:\n\n${transcript}`),
  ];
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const reply = await streamReply(options.provider, { model: options.model, messages: request }, { signal });
  const usage = reply.usage;
  if (reply.stopReason === 'error' || reply.stopReason === 'aborted' || !reply.text.trim()) {
    const why = timeout.aborted ? `no summary within ${Math.round(options.timeoutMs / 1000)} s` : (reply.error ?? 'the summary was empty or cut off');
    return { ok: false, error: why, ...(usage ? { usage } : {}) };
  }
  const text = `Summary of the earlier conversation (compacted to fit the context window):\n\n${reply.text.trim()}${summaryPlanNote(log, through)}`;
  const message = createMessage('system', text, {
    meta: { compaction: { through }, model: options.modelId, ...(usage ? { usage } : {}) },
  });
  return { ok: true, message, ...(usage ? { usage } : {}) };
}

function label(message: Message): string {
  if (message.meta?.toolResult) return `result of ${message.meta.tool ?? 'a tool'}${message.meta.isError ? ' (error)' : ''}`;
  if (message.meta?.compaction) return 'summary of what came before';
  return message.role;
}
