/** Who wrote a message. Tool results are `system` messages (see DESIGN.md). */
export type Role = 'system' | 'user' | 'assistant';

/** Token counts of one model reply. `estimated` is set when any part was counted locally. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  /** Of `outputTokens`, those the model spent reasoning (thinking), when the API says. */
  reasoningTokens?: number;
  /** Searches the provider's hosted web search ran for the reply (billed apart from tokens). */
  webSearches?: number;
  estimated?: boolean;
}

/**
 * Reasoning state a provider gave with a reply and needs back, unchanged and in its place, on
 * every later request: Anthropic's signed `thinking` and `redacted_thinking` blocks, the
 * Responses API's `reasoning` items with their encrypted content. fence never reads or
 * changes `raw`; it is stored in the session log exactly as it arrived.
 */
export interface ReasoningPart {
  /** The API that made it: it is sent back to that API only (another provider never sees it). */
  api: 'anthropic' | 'openai-responses';
  /** The block or item exactly as received, once the stream has assembled it. */
  raw: Record<string, unknown>;
  /** What a person may read of it: the thinking text or the summary; absent when redacted. */
  text?: string;
  /**
   * The native call (an index into `meta.toolCalls`) it came before; absent: before the
   * message's text (and so before every call).
   */
  beforeCall?: number;
}

/**
 * A provider-native tool call of an assistant message. The message's text shows it as a
 * `@name(id): {json}` line; replaying history uses this structure, never the text.
 */
export interface NativeToolCall {
  id: string;
  name: string;
  /** The arguments object as JSON text. */
  arguments: string;
}

/**
 * One item of the model's checklist (the `plan` tool): where a step of the task stands. The
 * checklist lives in the log only, on the result of the `plan` call that set it (see
 * `latestPlan`).
 */
export interface PlanItem {
  text: string;
  status: 'pending' | 'in_progress' | 'done';
}

/** The image types fence sends to models. */
export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/**
 * An image attached to a message (a prompt's, or a tool result's such as `read` of a PNG), by
 * reference: the bytes live in the session folder, stored once per content hash, so the log
 * stays small and a resumed or forked session sends them again. The bytes are what the model
 * gets, already scaled down (see `prepareImage`), never the original file.
 */
export interface ImageRef {
  /** Where the bytes are, relative to the session folder: `images/<sha256>.<png|jpg|gif|webp>`. */
  file: string;
  mediaType: ImageMediaType;
  /** Size in pixels of the stored (sent) image. */
  width: number;
  height: number;
  /** What the user or the tool called it (a path as given), for display only. */
  name?: string;
  /**
   * The bytes, base64: set only on the copies of a message handed to a provider for one
   * request (the agent reads them from the session folder), never in the log.
   */
  data?: string;
}

/** Facts about a message that are not part of what the model reads. */
export interface MessageMeta {
  /** Model id (`provider/model`) that wrote an assistant message. */
  model?: string;
  usage?: Usage;
  /** Why the reply ended: `end`, `max_tokens`, `tool_use` (stopped at a complete block), `aborted`, `error`. */
  stopReason?: string;
  /** For a tool result: the tool that produced it. */
  tool?: string;
  /** For a tool result: whether the tool failed. */
  isError?: boolean;
  /** For a tool result: where the full output was saved, when the message holds only head and tail. */
  fullOutput?: string;
  /**
   * A reply cut short by the user or an error (the text is what arrived); a tool result of a
   * call that fence was stopped in the middle of (see `interruptedCallNote`).
   */
  interrupted?: boolean;
  /** The message is a tool result (a `system` message the adapters send in their API's shape). */
  toolResult?: boolean;
  /** For an assistant message: its native tool calls (provider-native format only). */
  toolCalls?: NativeToolCall[];
  /** For an assistant message: the reasoning state its reply carried, in the order it came (see `ReasoningPart`). */
  reasoning?: ReasoningPart[];
  /** For an assistant message: the queries of the provider's hosted web searches for the reply, in order ('' when it named none). */
  webSearches?: string[];
  /**
   * A message fence wrote besides the model's turns: a nudge to go on (`nudge`), a warning about
   * repeats (`loop`), a tool the person ran from the chat and its result (`user_tool`), the
   * news that a resumed session has a new shell and Python kernel (`new_runtimes`).
   */
  notice?: 'nudge' | 'loop' | 'user_tool' | 'new_runtimes';
  /**
   * A summary fence had the model write to fit the context window: requests carry it instead
   * of the log's messages after the task up to index `through` (which stay in the log).
   */
  compaction?: { through: number };
  /** Images the model reads with this message (a user's prompt, a tool result), in order; see `ImageRef`. */
  images?: ImageRef[];
  /** For the result of a `plan` call: the whole checklist as it stands from this message on. */
  plan?: PlanItem[];
}

/**
 * One message of a conversation, exactly as it is stored (one JSON object per line in
 * `conversation.jsonl`) and as the provider adapters receive it.
 */
export interface Message {
  role: Role;
  content: string;
  /** ISO 8601. */
  timestamp: string;
  callId?: string;
  hide?: boolean;
  pinned?: boolean;
  meta?: MessageMeta;
}

/** Makes a message stamped with the current time. */
export function createMessage(role: Role, content: string, extra: Omit<Message, 'role' | 'content' | 'timestamp'> = {}): Message {
  return { role, content, timestamp: new Date().toISOString(), ...extra };
}
