import { randomBytes } from 'node:crypto';
import type { NativeToolCall, ReasoningPart, Usage } from '../conversation/message';
import { completeUsage } from '../llm/estimate-tokens';
import type { FailureKind } from '../llm/failure';
import type { Provider, StopReason, StreamRequest } from '../llm/provider';
import { ReaderScanner } from '../parse/reader-scanner';
import type { ToolStreamScanner, ToolUse } from '../parse/tool-use';
import { ReasoningCollector } from './reasoning-parts';

/** What one streamed reply came to. */
export interface Reply {
  /**
   * The reply's text, up to and including the first complete tool block when there is one
   * (anything after its closing fence line is left out, even what arrived before fence knew
   * the block was complete).
   */
  text: string;
  /** The first complete tool block (markdown and XML formats). */
  toolUse?: ToolUse;
  /**
   * The native tool calls, in the order the provider numbered them, their arguments exactly as
   * streamed (not yet checked). Only when the stream ended normally; a call without an id was
   * given one.
   */
  toolCalls?: NativeToolCall[];
  usage?: Usage;
  /**
   * The reasoning state the reply carried, in stream order, each part's `beforeCall` set (see
   * `ReasoningPart`); absent when there was none. Parts after a cut tool block are left out.
   */
  reasoning?: ReasoningPart[];
  /** The queries of the provider's hosted web searches for the reply, in order; absent when it ran none. */
  webSearches?: string[];
  /** `tool_use` when fence stopped the stream at a complete tool block. */
  stopReason: StopReason;
  /** One-line message when stopReason is `error`. */
  error?: string;
  /** With `error`: the key was refused, or the rate limit outlasted the retries. */
  errorKind?: FailureKind;
}

/** Progress of a reply, for display. `text` carries only text that is kept. */
export type ReplyEvent =
  | { type: 'text'; text: string }
  | { type: 'thinking'; text: string }
  /** The provider searched the web for the reply (its hosted search): shown, never run by fence. */
  | { type: 'web_search'; query: string }
  | { type: 'retry'; attempt: number; delayMs: number; reason: string }
  | { type: 'restart'; attempt: number; reason: string };

/** How a reply is read. */
export interface ReplyOptions {
  /**
   * Makes the scanner for tool blocks in the text (markdown, XML). Absent: the text is not
   * scanned, and native tool calls are collected instead.
   */
  scanner?: () => ToolStreamScanner;
  signal?: AbortSignal;
  onEvent?: (event: ReplyEvent) => void;
}

/**
 * Streams one reply. With a scanner, the text is scanned for tool blocks as it arrives, and at
 * the first complete block fence stops reading, which aborts the HTTP request: text after the
 * block is neither paid for nor kept, and the tool can start without waiting for the provider
 * to wind down. A markdown block is complete when the line after its closing fence has arrived
 * (see `FencedBlock`), or when the reply ends: then `scanner.finish()` settles it — but only
 * when the model ended the reply, not when its length limit cut it. The usage of a stopped
 * reply is what the provider had reported, completed by a local estimate. Without a scanner,
 * the whole reply is read and its native tool calls assembled from their deltas. Never throws
 * (providers end every failure with a `done` event).
 */
export async function streamReply(provider: Provider, request: Omit<StreamRequest, 'signal'>, options: ReplyOptions = {}): Promise<Reply> {
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort();
  options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  // Without a format scanner the text is only recorded: a reader that never finds a use.
  const newScanner = options.scanner ?? (() => new ReaderScanner({ push: () => [] }));
  let scanner = newScanner();
  let calls = new CallAssembler();
  const reasoning = new ReasoningCollector();
  let searches: string[] = [];
  let toolUse: ToolUse | undefined;
  let usage: Usage | undefined;
  let stopReason: StopReason = 'error';
  let error: string | undefined = 'the stream ended without a reply';
  let errorKind: FailureKind | undefined;
  let stoppedAtBlock = false;
  try {
    for await (const event of provider.stream({ ...request, signal: controller.signal })) {
      switch (event.type) {
        case 'text': {
          const before = scanner.text.length;
          toolUse = scanner.push(event.text);
          const kept = toolUse ? event.text.slice(0, Math.max(0, toolUse.end - before)) : event.text;
          if (kept) options.onEvent?.({ type: 'text', text: kept });
          break;
        }
        case 'restart':
          scanner = newScanner();
          calls = new CallAssembler();
          reasoning.reset();
          searches = [];
          toolUse = undefined;
          options.onEvent?.(event);
          break;
        case 'retry':
          options.onEvent?.(event);
          break;
        case 'usage':
          usage = event.usage;
          break;
        case 'tool_call':
          calls.add(event);
          break;
        case 'thinking':
          options.onEvent?.(event);
          break;
        case 'web_search':
          searches.push(event.query);
          options.onEvent?.(event);
          break;
        case 'reasoning':
          reasoning.add(event.part, scanner.text.length, calls.size);
          break;
        case 'done':
          stopReason = event.stopReason;
          error = event.error;
          errorKind = event.errorKind;
          break;
      }
      if (toolUse) {
        stoppedAtBlock = true;
        break; // leaving the loop ends the provider's stream and its HTTP request
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', onOuterAbort);
  }
  // Only a reply the model ended itself settles a block still in doubt at its end (a closing
  // fence with no line after it, or prose written against it); a reply cut by its length
  // limit may have been inside a nested block of the file it was writing.
  const endedByModel = stopReason === 'end' || stopReason === 'tool_use';
  if (!toolUse && endedByModel && !options.signal?.aborted) toolUse = scanner.finish();
  if (toolUse) {
    const text = scanner.text.slice(0, toolUse.end).trimEnd();
    const finalUsage = stoppedAtBlock ? completeUsage(usage, request.messages, text.length) : usage;
    return { text, toolUse, usage: finalUsage, stopReason: 'tool_use', ...withReasoning(reasoning, 0, toolUse.end), ...(searches.length > 0 ? { webSearches: searches } : {}) };
  }
  const reply: Reply = { text: scanner.text, usage, stopReason, error: stopReason === 'error' ? error : undefined };
  if (stopReason === 'error' && errorKind) reply.errorKind = errorKind;
  if (stopReason !== 'error' && stopReason !== 'aborted' && calls.size > 0) reply.toolCalls = calls.calls();
  if (searches.length > 0) reply.webSearches = searches;
  return Object.assign(reply, withReasoning(reasoning, reply.toolCalls?.length ?? 0));
}

/** The `reasoning` field of a reply, when it carried some. */
function withReasoning(collector: ReasoningCollector, callCount: number, textEnd?: number): Pick<Reply, 'reasoning'> {
  const parts = collector.parts(callCount, textEnd);
  return parts.length > 0 ? { reasoning: parts } : {};
}

/** Joins the deltas of native tool calls, keyed by the provider's index. */
class CallAssembler {
  readonly #byIndex = new Map<number, { id?: string; name?: string; parts: string[] }>();

  add(event: { index: number; id?: string; name?: string; argumentsDelta: string }): void {
    let call = this.#byIndex.get(event.index);
    if (!call) this.#byIndex.set(event.index, (call = { parts: [] }));
    if (event.id) call.id ??= event.id;
    // Some compatible servers repeat the id and name on every delta: the first ones count.
    if (event.name) call.name ??= event.name;
    if (event.argumentsDelta) call.parts.push(event.argumentsDelta);
  }

  get size(): number {
    return this.#byIndex.size;
  }

  calls(): NativeToolCall[] {
    return [...this.#byIndex.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ id: call.id ?? `call_${randomBytes(6).toString('hex')}`, name: call.name ?? '', arguments: call.parts.join('') }));
  }
}
