import type { Usage } from '../conversation/message';
import { completeUsage } from '../llm/estimate-tokens';
import type { Provider, StopReason, StreamRequest } from '../llm/provider';
import { MarkdownStreamScanner } from '../parse/stream-scanner';
import type { IsTool, ToolUse } from '../parse/tool-use';

/** What one streamed reply came to. */
export interface Reply {
  /** The reply's text, up to and including the first complete tool block when there is one. */
  text: string;
  toolUse?: ToolUse;
  usage?: Usage;
  /** `tool_use` when fence stopped the stream at a complete tool block. */
  stopReason: StopReason;
  /** One-line message when stopReason is `error`. */
  error?: string;
}

/** Progress of a reply, for display. `text` carries only text that is kept. */
export type ReplyEvent =
  | { type: 'text'; text: string }
  | { type: 'retry'; attempt: number; delayMs: number; reason: string }
  | { type: 'restart'; attempt: number; reason: string };

/**
 * Streams one reply and scans it for tool blocks as it arrives. At the first complete block
 * fence stops reading, which aborts the HTTP request: text after the block is neither paid for
 * nor kept, and the tool can start without waiting for the provider to wind down. The usage
 * of such a reply is what the provider had reported, completed by a local estimate. Never
 * throws (providers end every failure with a `done` event).
 */
export async function streamReply(
  provider: Provider,
  request: Omit<StreamRequest, 'signal'>,
  isTool: IsTool,
  options: { signal?: AbortSignal; onEvent?: (event: ReplyEvent) => void } = {},
): Promise<Reply> {
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort();
  options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  let scanner = new MarkdownStreamScanner(isTool);
  let toolUse: ToolUse | undefined;
  let usage: Usage | undefined;
  let stopReason: StopReason = 'error';
  let error: string | undefined = 'the stream ended without a reply';
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
          scanner = new MarkdownStreamScanner(isTool);
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
          // Native tool calls belong to the provider-native format, which is not offered here.
          break;
        case 'done':
          stopReason = event.stopReason;
          error = event.error;
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
  if (!toolUse && stopReason !== 'error' && !options.signal?.aborted) toolUse = scanner.finish();
  if (toolUse) {
    const text = scanner.text.slice(0, toolUse.end).trimEnd();
    const finalUsage = stoppedAtBlock ? completeUsage(usage, request.messages, text.length) : usage;
    return { text, toolUse, usage: finalUsage, stopReason: 'tool_use' };
  }
  return { text: scanner.text, usage, stopReason, error: stopReason === 'error' ? error : undefined };
}
