import type { Message, ReasoningPart, Usage } from '../conversation/message';
import type { FailureKind } from './failure';

/** A tool offered to a provider's native tool-call API (provider-native format only). */
export interface ToolSchema {
  name: string;
  description: string;
  /** JSON schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/** What a caller asks of a provider for one reply. */
export interface StreamRequest {
  /** The provider's own model name (the part after `provider/`). */
  model: string;
  messages: readonly Message[];
  tools?: ToolSchema[];
  /** Aborting ends the stream promptly with `done` (stopReason `aborted`). */
  signal?: AbortSignal;
  maxTokens?: number;
  /**
   * How hard the model should think, mapped by each adapter to its API's field. The agent
   * resolves it (`--reasoning`, the configuration, else the model table's default); absent:
   * no level, and the adapter sends nothing about reasoning.
   */
  reasoning?: ReasoningLevel;
  /**
   * Offer the provider's hosted web search (Anthropic's `web_search` server tool, the Responses
   * API's `web_search` tool): the provider searches and the model answers with what it found;
   * each search is a `web_search` event, never a tool call. Only adapters whose API has one
   * honour it (see `offersWebSearch`).
   */
  webSearch?: boolean;
}

/** `--reasoning`: off, or how much reasoning to ask for. */
export type ReasoningLevel = 'off' | 'low' | 'medium' | 'high';

/** Why a reply ended. */
export type StopReason = 'end' | 'max_tokens' | 'tool_use' | 'aborted' | 'error';

/**
 * Events of one streamed reply.
 * - `text`: a piece of the assistant's text.
 * - `tool_call`: a native tool call's id and name (on its first event) and a piece of its JSON arguments.
 * - `usage`: token counts; may come more than once, the last one holds.
 * - `thinking`: a piece of the model's readable thinking or reasoning summary, for the person
 *   (dim in the chat, progress on stderr); never part of the reply's text.
 * - `reasoning`: one complete piece of reasoning state to keep and send back (see
 *   `ReasoningPart`), in stream order among the `text` and `tool_call` events.
 * - `retry`: the request failed in a way worth retrying and will be sent again after `delayMs`.
 * - `web_search`: the provider ran a search of its own (hosted web search), with its query when
 *   it says; fence runs nothing for it.
 * - `restart`: the connection dropped mid-reply and the request is being sent again:
 *   discard every `text`, `tool_call`, `thinking` and `reasoning` event received so far.
 * - `done`: always the last event. With stopReason `error`, `error` is a one-line message fit for a user,
 *   and `errorKind` says when the key was refused or the rate limit outlasted the retries.
 */
export type StreamEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; index: number; id?: string; name?: string; argumentsDelta: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'thinking'; text: string }
  | { type: 'reasoning'; part: ReasoningPart }
  | { type: 'web_search'; query: string }
  | { type: 'retry'; attempt: number; delayMs: number; reason: string }
  | { type: 'restart'; attempt: number; reason: string }
  | { type: 'done'; stopReason: StopReason; error?: string; errorKind?: FailureKind };

/**
 * A streaming model API. `stream` never throws and never rejects: every failure, including
 * an abort, ends the iteration with a `done` event.
 */
export interface Provider {
  /** `openai`, `anthropic`, `openrouter` or `local`. */
  readonly name: string;
  stream(request: StreamRequest): AsyncIterable<StreamEvent>;
  /**
   * Opens the connection to the model's server ahead of the first request, so that its connect
   * and TLS handshake overlap what the caller does before it sends (see `NodeFetch.preconnect`).
   * Absent when the provider was given a fetch of its own.
   */
  preconnect?(): void;
}
