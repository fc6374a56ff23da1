/**
 * Requests as the fake model server (`fake-llm.ts`) receives and records them: the fields of
 * the three wire formats that tests look at.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** The wire format of a request, by its path. */
export type WireFormat = 'openai' | 'responses' | 'anthropic';

/** A wire message as Chat Completions or Anthropic Messages receives it (only the fields tests look at). */
export interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type?: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** An item of a Responses request's `input` (only the fields tests look at). */
export interface WireItem {
  /** `message` (also when absent and `role` is set), `reasoning`, `function_call`, `function_call_output`, … */
  type?: string;
  role?: string;
  content?: unknown;
  id?: string | null;
  /** `function_call` and `function_call_output`. */
  call_id?: string;
  /** `function_call`. */
  name?: string;
  /** `function_call`. */
  arguments?: string;
  /** `function_call_output`. */
  output?: unknown;
  /** `reasoning`. */
  summary?: unknown;
  /** `reasoning`. */
  encrypted_content?: string | null;
  [field: string]: unknown;
}

/** A request body as any of the APIs receives it (only the fields tests look at). */
export interface WireBody {
  model?: string;
  /** Chat Completions and Anthropic Messages. */
  messages?: WireMessage[];
  /** Anthropic Messages. */
  system?: unknown;
  tools?: unknown[];
  stream?: boolean;
  /** Responses: the conversation (or one user text). */
  input?: string | WireItem[];
  /** Responses: the system prompt. */
  instructions?: string;
  /** Responses: extra output asked for, e.g. `reasoning.encrypted_content`. */
  include?: string[];
  /** Responses: whether the server keeps the response (false for stateless use). */
  store?: boolean;
  /** Responses: reasoning effort, and whether a summary is wanted. */
  reasoning?: { effort?: string | null; summary?: string | null };
  /** Anthropic Messages: extended thinking. */
  thinking?: { type: string; budget_tokens?: number };
  [field: string]: unknown;
}

/** One request the fake received. */
export interface RecordedRequest {
  method: string;
  path: string;
  /** `openai` is Chat Completions; `unknown` a path no API has. */
  format: WireFormat | 'unknown';
  headers: IncomingHttpHeaders;
  /** The body as sent (`{}` when it was not a JSON object). */
  body: WireBody;
  /** False when the queue was empty and the default reply was sent. */
  scripted: boolean;
  /** `performance.now()` when the whole request body had arrived (for benchmarks). */
  receivedAt: number;
  /**
   * `performance.now()` when the request's headers arrived: the client had done all its work
   * for it (the body is built before it is sent), and the server none of its own yet.
   */
  arrivedAt: number;
  /** `performance.now()` when the last frame of the reply was handed to the socket, if any was. */
  lastFrameAt?: number;
  /**
   * True once the client closed the connection before the reply was over (it stopped reading,
   * as fence does at the first complete tool block); absent while it reads or after the server
   * ended the reply (a `cut` is the server's doing and does not count).
   */
  leftEarly?: boolean;
}

/** The input items of a Responses body (a plain-text input is one user message). */
export function inputItems(body: WireBody): WireItem[] {
  if (typeof body.input === 'string') return [{ type: 'message', role: 'user', content: body.input }];
  return Array.isArray(body.input) ? body.input : [];
}
