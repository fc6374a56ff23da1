/**
 * A fake model server for tests: a real HTTP server on 127.0.0.1 (random port) that speaks the
 * OpenAI Chat Completions and Anthropic Messages streaming wire formats, so the real SDKs and
 * adapters run in every test (in this process, or in a CLI started as a subprocess).
 *
 * Base URLs: an OpenAI client (OPENAI_BASE_URL) uses `server.openaiBaseURL` (`${url}/v1`); an
 * Anthropic client (ANTHROPIC_BASE_URL) uses `server.anthropicBaseURL` (`url` itself).
 *
 * Replies are scripted in order with `server.reply(r => r.text('Hi'))`; each request takes the
 * next one whatever its format, and the same script is rendered as OpenAI or Anthropic SSE by
 * the request's path. With the queue empty, a request gets the plain text reply
 * `(no scripted reply)` and is recorded with `scripted: false`.
 */
import { createServer, STATUS_CODES, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { StreamEvent } from '../../src/llm/provider';

/** Token counts the fake reports; `input` excludes cached tokens, as Anthropic counts. */
export interface FakeUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
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
}

type Step = { kind: 'text'; text: string } | { kind: 'tool_call'; id: string; name: string; args: string } | { kind: 'delay'; ms: number };
type Ending = { kind: 'finish' } | { kind: 'cut' } | { kind: 'hang' } | { kind: 'stream_error'; type: string; message: string };

interface Script {
  status?: { code: number } & FakeStatusOptions;
  steps: Step[];
  ending: Ending;
  usage: FakeUsage;
  stop?: FakeStop;
}

/** Scripts one reply. Every method returns the builder, so calls chain. */
export class ReplyBuilder {
  readonly script: Script = { steps: [], ending: { kind: 'finish' }, usage: { input: 10, output: 5 } };

  constructor(private readonly nextCallId: () => string) {}

  /** One streamed piece of text (one delta event). */
  text(text: string): this {
    this.script.steps.push({ kind: 'text', text });
    return this;
  }

  /** A native tool call; its arguments stream in two pieces. The id defaults to `call_<n>`. */
  toolCall(name: string, args: Record<string, unknown>, id: string = this.nextCallId()): this {
    this.script.steps.push({ kind: 'tool_call', id, name, args: JSON.stringify(args) });
    return this;
  }

  /** A native tool call whose arguments are sent exactly as given (broken JSON, not an object, empty). */
  rawToolCall(name: string, args: string, id: string = this.nextCallId()): this {
    this.script.steps.push({ kind: 'tool_call', id, name, args });
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

  /** Ends the stream with the API's in-stream error event instead of finishing. */
  streamError(type = 'overloaded_error', message = 'Overloaded'): this {
    this.script.ending = { kind: 'stream_error', type, message };
    return this;
  }
}

/** A wire message as either API receives it (only the fields tests look at). */
export interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type?: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** A request body as either API receives it (only the fields tests look at). */
export interface WireBody {
  model?: string;
  messages?: WireMessage[];
  system?: unknown;
  tools?: unknown[];
  stream?: boolean;
  [field: string]: unknown;
}

/** One request the fake received. */
export interface RecordedRequest {
  method: string;
  path: string;
  format: 'openai' | 'anthropic' | 'unknown';
  headers: IncomingHttpHeaders;
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
}

/** A running fake model server. */
export interface FakeLlm {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** For OpenAI clients and OPENAI_BASE_URL: `${url}/v1`. */
  readonly openaiBaseURL: string;
  /** For Anthropic clients and ANTHROPIC_BASE_URL: `url`. */
  readonly anthropicBaseURL: string;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Scripted replies not yet taken. */
  readonly pending: number;
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** Queues a reply for the next request. */
  reply(build: (reply: ReplyBuilder) => unknown): FakeLlm;
  /**
   * Answers every request that `match` accepts with the reply `build` makes, before and
   * without taking from the queue (e.g. the summary requests of compaction).
   */
  route(match: (body: WireBody) => boolean, build: (reply: ReplyBuilder) => unknown): FakeLlm;
  /** Resolves once `count` requests have been received. */
  waitForRequests(count: number): Promise<void>;
  /** Resolves when the response to request `index` (0-based) has closed: finished, cut, or left by the client. */
  responseClosed(index: number): Promise<void>;
  /** Stops the server, destroying every connection (hung and kept-alive ones too). */
  close(): Promise<void>;
}

/** Starts a fake model server on 127.0.0.1 with a random port. */
export async function startFakeLlm(): Promise<FakeLlm> {
  const queue: Script[] = [];
  const routes: { match: (body: WireBody) => boolean; script: () => Script }[] = [];
  const requests: RecordedRequest[] = [];
  const closed: Promise<void>[] = [];
  const sockets = new Set<Socket>();
  const timers = new Map<NodeJS.Timeout, () => void>();
  const waiters: { count: number; resolve: () => void }[] = [];
  let callIds = 0;
  let connections = 0;
  let stopping = false;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.set(timer, resolve);
    });

  const server = createServer((req, res) => {
    const arrivedAt = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://fake').pathname;
      const format = path.endsWith('/chat/completions') ? 'openai' : path.endsWith('/messages') ? 'anthropic' : 'unknown';
      const body = parseBody(Buffer.concat(chunks).toString('utf8'));
      // Like the real APIs, refuse a request whose native tool calls are not each answered once.
      const unpaired = format === 'unknown' ? [] : checkToolCallPairing({ body });
      const routed = format === 'unknown' ? undefined : routes.find((route) => route.match(body));
      const script =
        format === 'unknown' ? undefined
        : unpaired.length > 0 ? invalidRequest(unpaired)
        : routed ? routed.script()
        : queue.shift();
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path,
        format,
        headers: req.headers,
        body,
        scripted: script !== undefined,
        receivedAt: performance.now(),
        arrivedAt,
      };
      requests.push(recorded);
      closed.push(new Promise((resolve) => res.on('close', () => resolve())));
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      if (format === 'unknown') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no such endpoint: ${path}` } }));
        return;
      }
      const chosen = script ?? new ReplyBuilder(() => 'call_default').text('(no scripted reply)').script;
      void play(res, format, chosen, body, { sleep, isStopping: () => stopping, onFrame: () => (recorded.lastFrameAt = performance.now()) });
    });
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  const fake: FakeLlm = {
    url,
    openaiBaseURL: `${url}/v1`,
    anthropicBaseURL: url,
    requests,
    get pending() {
      return queue.length;
    },
    get connections() {
      return connections;
    },
    reply(build) {
      const builder = new ReplyBuilder(() => `call_${++callIds}`);
      build(builder);
      queue.push(builder.script);
      return fake;
    },
    route(match, build) {
      routes.push({
        match,
        script: () => {
          const builder = new ReplyBuilder(() => `call_${++callIds}`);
          build(builder);
          return builder.script;
        },
      });
      return fake;
    },
    waitForRequests(count) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    async responseClosed(index) {
      await fake.waitForRequests(index + 1);
      await closed[index];
    },
    async close() {
      stopping = true;
      for (const [timer, resolve] of timers) {
        clearTimeout(timer);
        resolve();
      }
      timers.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

function parseBody(text: string): WireBody {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as WireBody;
  } catch {
    // Not JSON: recorded as an empty body.
  }
  return {};
}

type Frame = { data: string } | { delay: number };

async function play(
  res: ServerResponse,
  format: 'openai' | 'anthropic',
  script: Script,
  body: WireBody,
  io: { sleep: (ms: number) => Promise<void>; isStopping: () => boolean; onFrame: () => void },
): Promise<void> {
  if (script.status) {
    const { code, retryAfter, retryAfterMs } = script.status;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    if (retryAfterMs !== undefined) headers['retry-after-ms'] = String(retryAfterMs);
    res.writeHead(code, headers).end(JSON.stringify(errorBody(format, script.status)));
    return;
  }
  if (body.stream !== true) {
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'the fake server only streams' } }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const rendered = format === 'openai' ? renderOpenAI(script, body) : renderAnthropic(script, body);
  const gone = () => res.destroyed || io.isStopping();
  for (const frame of rendered.frames) {
    if (gone()) return;
    if ('delay' in frame) await io.sleep(frame.delay);
    else {
      await write(res, frame.data);
      io.onFrame();
    }
  }
  if (gone()) return;
  switch (script.ending.kind) {
    case 'finish':
      for (const data of rendered.finish) await write(res, data);
      res.end();
      return;
    case 'stream_error':
      await write(res, rendered.error(script.ending.type, script.ending.message));
      res.end();
      return;
    case 'cut':
      res.socket?.destroy();
      return;
    case 'hang':
      return;
  }
}

function write(res: ServerResponse, data: string): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => res.write(data, () => resolve()));
}

interface Rendered {
  frames: Frame[];
  finish: string[];
  error: (type: string, message: string) => string;
}

function stopOf(script: Script): FakeStop {
  return script.stop ?? (script.steps.some((step) => step.kind === 'tool_call') ? 'tool_use' : 'end');
}

function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)].filter((part) => part !== '');
}

function renderOpenAI(script: Script, body: WireBody): Rendered {
  const head = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model ?? 'fake' };
  const data = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
  const chunk = (delta: unknown, finishReason: string | null = null) =>
    data({ ...head, choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }] });
  const frames: Frame[] = [{ data: chunk({ role: 'assistant', content: '' }) }];
  let toolIndex = 0;
  for (const step of script.steps) {
    if (step.kind === 'delay') frames.push({ delay: step.ms });
    if (step.kind === 'text') frames.push({ data: chunk({ content: step.text }) });
    if (step.kind === 'tool_call') {
      const index = toolIndex++;
      frames.push({ data: chunk({ tool_calls: [{ index, id: step.id, type: 'function', function: { name: step.name, arguments: '' } }] }) });
      for (const part of halves(step.args)) frames.push({ data: chunk({ tool_calls: [{ index, function: { arguments: part } }] }) });
    }
  }
  const reason = { end: 'stop', max_tokens: 'length', tool_use: 'tool_calls' }[stopOf(script)];
  const { input, output, cacheRead = 0 } = script.usage;
  const finish = [chunk({}, reason)];
  const options = body.stream_options;
  if (typeof options === 'object' && options !== null && 'include_usage' in options && options.include_usage === true) {
    const usage = { prompt_tokens: input + cacheRead, completion_tokens: output, total_tokens: input + cacheRead + output, prompt_tokens_details: { cached_tokens: cacheRead } };
    finish.push(data({ ...head, choices: [], usage }));
  }
  finish.push('data: [DONE]\n\n');
  return { frames, finish, error: (type, message) => data({ error: { message, type, code: null, param: null } }) };
}

function renderAnthropic(script: Script, body: WireBody): Rendered {
  const event = (type: string, payload: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
  const { input, output, cacheRead = 0, cacheWrite = 0 } = script.usage;
  const usage = { input_tokens: input, output_tokens: 1, cache_read_input_tokens: cacheRead, cache_creation_input_tokens: cacheWrite };
  const message = { id: 'msg_fake', type: 'message', role: 'assistant', model: body.model ?? 'fake', content: [], stop_reason: null, stop_sequence: null, usage };
  const frames: Frame[] = [{ data: event('message_start', { message }) }, { data: event('ping', {}) }];
  let index = -1;
  let openText = false;
  const closeText = () => {
    if (openText) frames.push({ data: event('content_block_stop', { index }) });
    openText = false;
  };
  for (const step of script.steps) {
    if (step.kind === 'delay') frames.push({ delay: step.ms });
    if (step.kind === 'text') {
      if (!openText) {
        index++;
        openText = true;
        frames.push({ data: event('content_block_start', { index, content_block: { type: 'text', text: '' } }) });
      }
      frames.push({ data: event('content_block_delta', { index, delta: { type: 'text_delta', text: step.text } }) });
    }
    if (step.kind === 'tool_call') {
      closeText();
      index++;
      frames.push({ data: event('content_block_start', { index, content_block: { type: 'tool_use', id: step.id, name: step.name, input: {} } }) });
      for (const part of halves(step.args)) {
        frames.push({ data: event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } }) });
      }
      frames.push({ data: event('content_block_stop', { index }) });
    }
  }
  const finish: string[] = [];
  if (openText) finish.push(event('content_block_stop', { index }));
  const reason = { end: 'end_turn', max_tokens: 'max_tokens', tool_use: 'tool_use' }[stopOf(script)];
  finish.push(event('message_delta', { delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: output } }));
  finish.push(event('message_stop', {}));
  return { frames, finish, error: (type, message) => event('error', { error: { type, message } }) };
}

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

function errorBody(format: 'openai' | 'anthropic', status: { code: number } & FakeStatusOptions): unknown {
  const message = status.message ?? STATUS_CODES[status.code] ?? `HTTP ${status.code}`;
  if (format === 'anthropic') {
    return { type: 'error', error: { type: status.type ?? ANTHROPIC_ERROR_TYPES[status.code] ?? 'api_error', message } };
  }
  const type = status.type ?? (status.code === 429 ? 'rate_limit_exceeded' : status.code >= 500 ? 'server_error' : 'invalid_request_error');
  return { error: { message, type, code: null, param: null } };
}

/** The 400 a real API answers to a request whose tool calls and results do not pair up. */
function invalidRequest(problems: readonly string[]): Script {
  return new ReplyBuilder(() => 'call_unused').status(400, { message: `invalid tool calls: ${problems.join('; ')}` }).script;
}

/**
 * Checks the native tool calls of a recorded request (either format): every call in an
 * assistant message has exactly one result with its id, after it, and no result lacks its
 * call. Returns the problems found, one line each; empty when all is well. The fake server
 * runs this on every request and answers 400 when it finds any, as the real APIs do.
 */
export function checkToolCallPairing(request: Pick<RecordedRequest, 'body'>): string[] {
  const problems: string[] = [];
  const calls = new Map<string, number>();
  for (const message of request.body.messages ?? []) {
    const blocks = Array.isArray(message.content) ? (message.content as unknown[]) : [];
    const callIds = [
      ...(message.tool_calls ?? []).map((call) => call.id),
      ...blocks.filter((block) => field(block, 'type') === 'tool_use').map((block) => String(field(block, 'id'))),
    ];
    const resultIds = [
      ...(message.role === 'tool' ? [String(message.tool_call_id)] : []),
      ...blocks.filter((block) => field(block, 'type') === 'tool_result').map((block) => String(field(block, 'tool_use_id'))),
    ];
    for (const id of callIds) {
      if (calls.has(id)) problems.push(`tool call ${id} appears twice`);
      calls.set(id, 0);
    }
    for (const id of resultIds) {
      const seen = calls.get(id);
      if (seen === undefined) problems.push(`result for ${id} has no call before it`);
      else calls.set(id, seen + 1);
    }
  }
  for (const [id, count] of calls) {
    if (count !== 1) problems.push(`tool call ${id} has ${count} results`);
  }
  return problems;
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/** Reads a whole stream into an array (for provider event streams). */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** The native tool calls of a provider event stream, assembled by index: `{ id, name, arguments }`. */
export function assembleToolCalls(events: readonly StreamEvent[]): { id?: string; name?: string; arguments: string }[] {
  const calls: { id?: string; name?: string; arguments: string }[] = [];
  for (const event of events) {
    if (event.type !== 'tool_call') continue;
    const call = (calls[event.index] ??= { arguments: '' });
    if (event.id !== undefined) call.id = event.id;
    if (event.name !== undefined) call.name = event.name;
    call.arguments += event.argumentsDelta;
  }
  return calls;
}
