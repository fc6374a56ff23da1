import type { AgentEvent } from '../agent/agent';
import type { RunStop } from '../agent/run-stop';
import type { Message, PlanItem, Usage } from '../conversation/message';
import type { ToolFormat, ToolUse } from '../parse/tool-use';
import { visibleText } from '../processes/visible-text';
import { planOfResult } from '../tools/plan';
import type { ToolRunOutcome } from '../tools/run-tool-use';

/**
 * What stdout carries in a one-shot run: the final answer as text, one JSON result, or one
 * JSON object per line as the run goes.
 */
export type OutputFormat = 'text' | 'json' | 'stream-json';

/** Token counts as the JSON outputs report them. */
export interface UsageTotals {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /** Of `output_tokens`, those spent reasoning, summed; present only when some were reported. */
  reasoning_tokens?: number;
  /** Searches the provider's hosted web search ran (`--web-search`), summed; present only when some were. */
  web_searches?: number;
  /** Some count was made locally rather than reported by the provider. */
  estimated: boolean;
}

/** What a run came to, as the JSON outputs report it (snake_case keys, stable). */
export interface RunSummary {
  /**
   * The final answer: a reply without a tool call, or what `complete` said (when it said
   * nothing, the model's last words outside tool calls); after a stop, what the last reply said
   * before its tool call. Never a tool block; '' when there is nothing to say.
   */
  result: string;
  /** '' when the run failed before it opened a session. */
  session_id: string;
  stop_reason: RunStop;
  /** The stop reason is neither `done` nor `complete`. */
  is_error: boolean;
  /** Model requests made. */
  turns: number;
  usage: UsageTotals;
  /** Null when the model's prices are unknown; written rounded to a billionth of a dollar. */
  cost_usd: number | null;
  duration_ms: number;
  /** One line, when there is one. */
  error?: string;
  /** The model's checklist as the session ends (see the `plan` tool), when it made one. */
  plan?: PlanItem[];
}

/** What the `init` line of stream-json reports about the session a run works in. */
export interface SessionStart {
  session_id: string;
  model: string;
  tool_format: ToolFormat;
  tools: string[];
  cwd: string;
  /** The OS sandbox the session's commands run in: `workspace-write (bubblewrap)`, `off`, … (see `describeSandbox`). */
  sandbox: string;
  /** The reasoning level sent with the run's requests, when one is. */
  reasoning?: string;
}

/** The lines of stream-json, each one JSON object; every line names its session. */
export type StreamJsonLine =
  | ({ type: 'init' } & SessionStart)
  | { type: 'prompt'; session_id: string; text: string }
  | { type: 'thinking'; session_id: string; text: string }
  | { type: 'web_search'; session_id: string; query: string }
  | { type: 'assistant'; session_id: string; text: string; usage?: UsageTotals; stop_reason?: string }
  | { type: 'tool_use'; session_id: string; tool: string; call_id?: string; input: Record<string, unknown> }
  | { type: 'tool_result'; session_id: string; tool: string; call_id?: string; output: string; is_error: boolean; full_output?: string }
  | { type: 'retry'; session_id: string; attempt: number; delay_ms: number; reason: string; restart?: true }
  | { type: 'compaction'; session_id: string; ok: true; through: number; summary: string }
  | { type: 'compaction'; session_id: string; ok: false; error: string }
  | { type: 'plan'; session_id: string; items: PlanItem[] }
  | ({ type: 'result' } & RunSummary);

/** A stream-json writer: one call per line written, in run order. */
export interface StreamJsonWriter {
  /** Writes the `init` line and remembers the session id for the lines that follow. */
  start(info: SessionStart): void;
  /** Writes the line(s) an agent event maps to, or nothing for events the stream leaves out. */
  event(event: AgentEvent): void;
  /** Writes the `result` line: the same object `jsonResult` prints. */
  result(summary: RunSummary): void;
}

/**
 * The final answer as `--output-format text` writes it on stdout, ending with a line break. To a
 * terminal it is made visible first (see `visibleText`), so the model's answer cannot drive the
 * terminal; to a pipe or a file it is written exactly as the model wrote it, for scripts.
 */
export function textAnswer(answer: string, toTerminal: boolean): string {
  const text = toTerminal ? visibleText(answer) : answer;
  return text.endsWith('\n') ? text : `${text}\n`;
}

/**
 * The whole result of a run for `--output-format json`: one line of JSON (the same object as
 * stream-json's `result` line, keys in a fixed order) followed by a line break. Never throws.
 */
export function jsonResult(summary: RunSummary): string {
  return `${jsonLine(resultLine(summary))}\n`;
}

/**
 * The result of a run that ended before it began (bad usage, no key, a workspace that does
 * not exist, a session that could not be opened): no session, no request, nothing spent.
 */
export function resultBeforeRun(stop: RunStop, error: string, durationMs: number): RunSummary {
  return { result: '', session_id: '', stop_reason: stop, is_error: true, turns: 0, usage: usageTotals([]), cost_usd: 0, duration_ms: durationMs, error };
}

/**
 * Makes the writer for `--output-format stream-json`. Each call of `write` gets one complete
 * line: a JSON object without line breaks inside it, ending in `\n`, so the stream can be read
 * line by line (`jq -c`, `readline`). Each prompt starts with a `prompt` line. A reply's
 * readable thinking is one `thinking` line, written whole before its `assistant` line. Text deltas and
 * `turn` events are left out: a reply appears once, whole, as an `assistant` line. Each request sent again is one `retry` line,
 * marked `restart` when the connection dropped mid-reply (the `restart` event and the `retry`
 * after it make one line). Every `tool_result` follows its `tool_use`, as the agent sends a
 * `tool_start` before each `tool_end`; a `plan` call that set the checklist adds a `plan`
 * line with all its items after its `tool_result`. Event types it does not know are ignored.
 * Never throws for odd input; errors thrown by `write` itself reach the caller.
 */
export function createStreamJsonWriter(write: (line: string) => void): StreamJsonWriter {
  let sessionId = '';
  /** The attempt a `restart` announced, until its `retry` comes. */
  let restarted: number | undefined;
  /** The thinking of the reply under way, written whole before its `assistant` line. */
  let thinking = '';
  const emit = (line: StreamJsonLine) => write(`${jsonLine(line)}\n`);
  const toolUse = (use: ToolUse): StreamJsonLine => ({ type: 'tool_use', session_id: sessionId, tool: use.tool, ...callId(use), input: toolInput(use) });
  /** The lines of one event. To report a new event type, add its case; any other writes nothing. */
  const thought = (): StreamJsonLine[] => {
    const text = thinking;
    thinking = '';
    return text ? [{ type: 'thinking', session_id: sessionId, text }] : [];
  };
  const linesFor = (event: AgentEvent): StreamJsonLine[] => {
    switch (event.type) {
      case 'prompt':
        return [{ type: 'prompt', session_id: sessionId, text: event.message.content }];
      case 'thinking':
        thinking += event.text;
        return [];
      case 'turn':
        // The thinking of a reply that ended without a message (a failed request).
        return thought();
      case 'reply_end':
        return [...thought(), assistantLine(event.message, sessionId)];
      case 'tool_start':
        return [toolUse(event.use)];
      case 'tool_end': {
        // A plan call's new checklist follows its result, whole.
        const plan = planOfResult(event.outcome.tool, event.outcome.result);
        const items = plan?.map(({ text, status }) => ({ text, status }));
        return [toolResultLine(event.use, event.outcome, sessionId), ...(items ? [{ type: 'plan' as const, session_id: sessionId, items }] : [])];
      }
      case 'restart':
        thinking = '';
        // Always followed by the `retry` of the same attempt, which carries the wait: one line for both.
        restarted = event.attempt;
        return [];
      case 'retry': {
        const restart = restarted === event.attempt;
        restarted = undefined;
        return [{ type: 'retry', session_id: sessionId, attempt: event.attempt, delay_ms: event.delayMs, reason: event.reason, ...(restart ? { restart } : {}) }];
      }
      case 'compaction':
        return [{ type: 'compaction', session_id: sessionId, ok: true, through: event.message.meta?.compaction?.through ?? 0, summary: event.message.content }];
      case 'compaction_failed':
        return [{ type: 'compaction', session_id: sessionId, ok: false, error: event.error }];
      case 'web_search':
        return [{ type: 'web_search', session_id: sessionId, query: event.query }];
      case 'text':
      default:
        return [];
    }
  };
  return {
    start(info) {
      sessionId = info.session_id;
      const { session_id, model, tool_format, tools, cwd, sandbox, reasoning } = info;
      emit({ type: 'init', session_id, model, tool_format, ...(reasoning ? { reasoning } : {}), tools: [...tools], cwd, sandbox });
    },
    event(event) {
      for (const line of linesFor(event)) emit(line);
    },
    result(summary) {
      for (const line of thought()) emit(line);
      emit(resultLine(summary));
    },
  };
}

/**
 * The token counts of a run: the `meta.usage` of every assistant message among `messages`,
 * summed (missing cache counts are 0). `estimated` when any of them was. Messages of other
 * roles, and assistant messages without usage, add nothing.
 */
export function usageTotals(messages: readonly Message[]): UsageTotals {
  const totals: UsageTotals = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, estimated: false };
  for (const message of messages) {
    const usage = message.role === 'assistant' ? message.meta?.usage : undefined;
    if (!usage) continue;
    totals.input_tokens += usage.inputTokens;
    totals.output_tokens += usage.outputTokens;
    totals.cache_read_tokens += usage.cacheReadTokens ?? 0;
    totals.cache_write_tokens += usage.cacheWriteTokens ?? 0;
    if (usage.reasoningTokens) totals.reasoning_tokens = (totals.reasoning_tokens ?? 0) + usage.reasoningTokens;
    if (usage.webSearches) totals.web_searches = (totals.web_searches ?? 0) + usage.webSearches;
    if (usage.estimated) totals.estimated = true;
  }
  return totals;
}

function assistantLine(message: Message, sessionId: string): StreamJsonLine {
  const { meta } = message;
  return {
    type: 'assistant',
    session_id: sessionId,
    text: message.content,
    ...(meta?.usage ? { usage: snakeUsage(meta.usage) } : {}),
    ...(meta?.stopReason !== undefined ? { stop_reason: meta.stopReason } : {}),
  };
}

function toolResultLine(use: ToolUse, outcome: ToolRunOutcome, sessionId: string): StreamJsonLine {
  return {
    type: 'tool_result',
    session_id: sessionId,
    tool: outcome.tool,
    ...callId(use),
    output: outcome.result.output,
    is_error: outcome.result.isError === true,
    ...(outcome.fullOutputPath ? { full_output: outcome.fullOutputPath } : {}),
  };
}

/** A call's input as the model wrote it: its arguments object, or a block's words and body. */
function toolInput(use: ToolUse): Record<string, unknown> {
  if (use.kwargs) return use.kwargs;
  return use.format === 'tool' ? {} : { args: [...use.args], content: use.content };
}

function callId(use: ToolUse): { call_id?: string } {
  return use.callId ? { call_id: use.callId } : {};
}

function snakeUsage(usage: Usage): UsageTotals {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_read_tokens: usage.cacheReadTokens ?? 0,
    cache_write_tokens: usage.cacheWriteTokens ?? 0,
    ...(usage.reasoningTokens ? { reasoning_tokens: usage.reasoningTokens } : {}),
    ...(usage.webSearches ? { web_searches: usage.webSearches } : {}),
    estimated: usage.estimated === true,
  };
}

/** The result object with its keys in the documented order, whatever order `summary` has. */
function resultLine(summary: RunSummary): StreamJsonLine {
  const { usage } = summary;
  return {
    type: 'result',
    result: summary.result,
    session_id: summary.session_id,
    stop_reason: summary.stop_reason,
    is_error: summary.is_error,
    turns: summary.turns,
    usage: {
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      cache_read_tokens: usage.cache_read_tokens,
      cache_write_tokens: usage.cache_write_tokens,
      ...(usage.reasoning_tokens ? { reasoning_tokens: usage.reasoning_tokens } : {}),
      ...(usage.web_searches ? { web_searches: usage.web_searches } : {}),
      estimated: usage.estimated,
    },
    cost_usd: summary.cost_usd === null ? null : roundUsd(summary.cost_usd),
    duration_ms: summary.duration_ms,
    ...(summary.error !== undefined ? { error: summary.error } : {}),
    ...(summary.plan ? { plan: summary.plan.map(({ text, status }) => ({ text, status })) } : {}),
  };
}

/**
 * A cost to the billionth of a dollar: sums of prices per token carry binary noise
 * (`0.0015899999999999998`) that a reader of the JSON should not see.
 */
function roundUsd(usd: number): number {
  return Math.round(usd * 1e9) / 1e9;
}

/**
 * One line of JSON. `JSON.stringify` escapes line breaks, control characters and lone
 * surrogates; U+2028 and U+2029, which it leaves as they are, are escaped too, since some
 * readers split lines on them. A value JSON cannot hold (a bigint, a cycle in tool arguments)
 * is written as a string rather than thrown; should even that fail (a `toJSON` that throws), the
 * line keeps only its type and session with an `error`.
 */
function jsonLine(line: StreamJsonLine): string {
  let text: string;
  try {
    text = JSON.stringify(line, plainValues);
  } catch {
    try {
      text = JSON.stringify(line, withoutRepeats());
    } catch {
      text = JSON.stringify({ type: line.type, session_id: line.session_id, error: 'this line could not be written as JSON' });
    }
  }
  return text.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

function plainValues(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/** A replacer that writes an object met a second time as `"[repeated]"`, which breaks cycles. */
function withoutRepeats(): (key: string, value: unknown) => unknown {
  const seen = new WeakSet<object>();
  return (_key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (typeof value !== 'object' || value === null) return value;
    if (seen.has(value)) return '[repeated]';
    seen.add(value);
    return value;
  };
}
