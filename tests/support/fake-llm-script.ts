/**
 * The scripted replies of the fake model server (`fake-llm.ts`): what a reply says, built
 * step by step, independent of the wire format it is later rendered in.
 */

/** Token counts the fake reports; `input` excludes cached tokens, as Anthropic counts. */
export interface FakeUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  /** Output tokens spent thinking (part of `output`); reported by the OpenAI formats only. */
  reasoning?: number;
}

/** How a scripted reply says it ended (rendered as each API names it). */
export type FakeStop = 'end' | 'max_tokens' | 'tool_use';

/** Options of an HTTP error reply. */
export interface FakeStatusOptions {
  /** `retry-after` header, in seconds. */
  retryAfter?: number;
  /** `retry-after-ms` header. */
  retryAfterMs?: number;
  message?: string;
  /** Error type in the body (default: what the API uses for that status). */
  type?: string;
  /** OpenAI formats: the request field at fault, `param` in the body (default null). */
  param?: string;
}

/** One step of a scripted reply. */
export type Step =
  | { kind: 'text'; text: string }
  | { kind: 'tool_call'; id: string; name: string; args: string }
  | { kind: 'thinking'; text: string; signature: string }
  | { kind: 'redacted_thinking'; data: string }
  | { kind: 'web_search'; id: string; query: string }
  | { kind: 'delay'; ms: number }
  | { kind: 'end_message' };

/** How a scripted reply ends once its steps are sent. */
export type Ending = { kind: 'finish' } | { kind: 'cut' } | { kind: 'hang' } | { kind: 'stream_error'; type: string; message: string };

/** A whole scripted reply. */
export interface Script {
  status?: { code: number } & FakeStatusOptions;
  steps: Step[];
  ending: Ending;
  usage: FakeUsage;
  stop?: FakeStop;
}

/** Where a builder takes its generated ids from (the server counts, so ids never repeat). */
export interface ScriptIds {
  /** The next tool call id, `call_<n>`. */
  callId: () => string;
  /** The next opaque seal of a thinking step: its signature, or its encrypted content. */
  seal: (text: string) => string;
}

/** Scripts one reply. Every method returns the builder, so calls chain. */
export class ReplyBuilder {
  readonly script: Script = { steps: [], ending: { kind: 'finish' }, usage: { input: 10, output: 5 } };

  constructor(private readonly ids: ScriptIds) {}

  /** One streamed piece of text (one delta event). */
  text(text: string): this {
    this.script.steps.push({ kind: 'text', text });
    return this;
  }

  /** A native tool call; its arguments stream in two pieces. The id defaults to `call_<n>`. */
  toolCall(name: string, args: Record<string, unknown>, id: string = this.ids.callId()): this {
    this.script.steps.push({ kind: 'tool_call', id, name, args: JSON.stringify(args) });
    return this;
  }

  /** A native tool call whose arguments are sent exactly as given (broken JSON, not an object, empty). */
  rawToolCall(name: string, args: string, id: string = this.ids.callId()): this {
    this.script.steps.push({ kind: 'tool_call', id, name, args });
    return this;
  }

  /**
   * A block of visible thinking, streamed in two pieces. Anthropic: a `thinking` block ending
   * with a `signature_delta` (the signature defaults to a seal unique to this step). Responses:
   * a `reasoning` item whose summary is the text and whose `encrypted_content` is the same seal.
   * Chat Completions: `reasoning_content` deltas.
   */
  thinking(text: string, signature: string = this.ids.seal(text)): this {
    this.script.steps.push({ kind: 'thinking', text, signature });
    return this;
  }

  /**
   * Thinking the client may not read. Anthropic: a `redacted_thinking` block carrying `data`,
   * whole in its start event. Responses: a `reasoning` item with no summary whose
   * `encrypted_content` is `data`. Chat Completions: nothing.
   */
  redactedThinking(data: string): this {
    this.script.steps.push({ kind: 'redacted_thinking', data });
    return this;
  }

  /**
   * Ends the message being written, so that later text starts a new one. Responses: the
   * message item is done (`response.output_item.done`) and the next text opens another item,
   * as when a model writes several messages in one reply. Chat Completions and Anthropic:
   * nothing (the text goes on).
   */
  endMessage(): this {
    this.script.steps.push({ kind: 'end_message' });
    return this;
  }

  /**
   * A search of the provider's hosted web search, run by the API itself. Anthropic: a
   * `server_tool_use` block (its input streamed in two pieces) and a `web_search_tool_result`
   * block with one result, counted in `usage.server_tool_use.web_search_requests`. Responses: a
   * `web_search_call` item. Chat Completions: nothing (it has no hosted search).
   */
  webSearch(query: string, id: string = `srvtoolu_${this.ids.callId()}`): this {
    this.script.steps.push({ kind: 'web_search', id, query });
    return this;
  }

  /** Waits before the next step. */
  delay(ms: number): this {
    this.script.steps.push({ kind: 'delay', ms });
    return this;
  }

  /** The usage reported in the stream (default input 10, output 5). */
  usage(usage: Partial<FakeUsage>): this {
    Object.assign(this.script.usage, usage);
    return this;
  }

  /** The stop reason (default `tool_use` when the reply has a tool call, else `end`). */
  stop(reason: FakeStop): this {
    this.script.stop = reason;
    return this;
  }

  /** Answers with an HTTP error instead of a stream. */
  status(code: number, options: FakeStatusOptions = {}): this {
    this.script.status = { code, ...options };
    return this;
  }

  /** Destroys the connection after the steps, mid-stream. */
  cut(): this {
    this.script.ending = { kind: 'cut' };
    return this;
  }

  /** Never finishes after the steps (until the client goes away or the server closes). */
  hang(): this {
    this.script.ending = { kind: 'hang' };
    return this;
  }

  /**
   * Ends the stream with the API's in-stream error instead of finishing: Anthropic's `error`
   * event, a Chat Completions chunk with `error`, or Responses' `response.failed` (its
   * `error.code` is `type`).
   */
  streamError(type = 'overloaded_error', message = 'Overloaded'): this {
    this.script.ending = { kind: 'stream_error', type, message };
    return this;
  }
}

/** A piece of a rendered stream: an SSE frame to write, or a pause. */
export type Frame = { data: string } | { delay: number };

/** A script rendered in one wire format. */
export interface Rendered {
  /** The steps, in order. */
  frames: Frame[];
  /** What a finished stream sends after the steps. */
  finish: string[];
  /** The in-stream error event sent instead of `finish`. */
  error: (type: string, message: string) => string;
}

/**
 * Thinking state a reply handed out, to come back unchanged in later requests: an Anthropic
 * `thinking` block's signature or a `redacted_thinking` block's data, or a Responses
 * `reasoning` item's `encrypted_content` (issued only when the request's `include` asks).
 */
export interface IssuedState {
  /** Index in `server.requests` of the request whose reply carried it. */
  request: number;
  format: 'anthropic' | 'responses';
  kind: 'thinking' | 'redacted_thinking' | 'reasoning';
  /** The opaque value: signature, redacted data, or encrypted content. */
  value: string;
  /** Anthropic `thinking` only: the thinking text, which must come back unchanged too. */
  text?: string;
  /** Responses only: the reasoning item's id. */
  itemId?: string;
  /** The id of the first tool call after it in the same reply, if there was one. */
  before?: string;
}

/** The stop reason a script ends with. */
export function stopOf(script: Script): FakeStop {
  return script.stop ?? (script.steps.some((step) => step.kind === 'tool_call') ? 'tool_use' : 'end');
}

/** A text in two streamed pieces (one if it is a single character, none if empty). */
export function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)].filter((part) => part !== '');
}

/** For each step, the id of the first tool call at or after it in the script. */
export function callsAfter(steps: readonly Step[]): (string | undefined)[] {
  const after: (string | undefined)[] = [];
  let next: string | undefined;
  for (let index = steps.length - 1; index >= 0; index--) {
    const step = steps[index]!;
    if (step.kind === 'tool_call') next = step.id;
    after[index] = next;
  }
  return after;
}

/** Reads `key` of an object, if `value` is one. */
export function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
