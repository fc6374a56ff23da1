/**
 * A fake model server for tests: a real HTTP server on 127.0.0.1 (random port) that speaks the
 * OpenAI Chat Completions, OpenAI Responses and Anthropic Messages streaming wire formats, so
 * the real SDKs and adapters run in every test (in this process, or in a CLI started as a
 * subprocess).
 *
 * Base URLs: an OpenAI client (OPENAI_BASE_URL) uses `server.openaiBaseURL` (`${url}/v1`); an
 * Anthropic client (ANTHROPIC_BASE_URL) uses `server.anthropicBaseURL` (`url` itself).
 *
 * Replies are scripted in order with `server.reply(r => r.text('Hi'))`; each request takes the
 * next one whatever its format, and the same script is rendered as Chat Completions,
 * Responses or Anthropic SSE by the request's path. With the queue empty, a request gets the
 * plain text reply `(no scripted reply)` and is recorded with `scripted: false`.
 *
 * Thinking state a reply hands out (signatures, encrypted reasoning) is listed in
 * `server.issued`; `checkThinkingReturned` tells whether a later request sent it back intact.
 */
import { createServer, STATUS_CODES, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { StreamEvent } from '../../src/llm/provider';
import { checkToolCallPairing } from './fake-llm-checks';
import { renderResponses, responsesInputError } from './fake-llm-responses';
import {
  callsAfter,
  halves,
  ReplyBuilder,
  stopOf,
  type FakeStatusOptions,
  type Frame,
  type IssuedState,
  type Rendered,
  type Script,
  type ScriptIds,
} from './fake-llm-script';
import type { RecordedRequest, WireBody, WireFormat } from './fake-llm-wire';

export { checkThinkingReturned, checkToolCallPairing } from './fake-llm-checks';
export { ENCRYPTED_REASONING } from './fake-llm-responses';
export { ReplyBuilder, type FakeStatusOptions, type FakeStop, type FakeUsage, type IssuedState } from './fake-llm-script';
export type { RecordedRequest, WireBody, WireFormat, WireItem, WireMessage } from './fake-llm-wire';

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
  /**
   * Every piece of thinking state the replies handed out, in order (see `checkThinkingReturned`);
   * recorded when a reply is rendered, so a reply cut short still counts it.
   */
  readonly issued: IssuedState[];
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
  const issued: IssuedState[] = [];
  const closed: Promise<void>[] = [];
  const sockets = new Set<Socket>();
  const timers = new Map<NodeJS.Timeout, () => void>();
  const waiters: { count: number; resolve: () => void }[] = [];
  let callIds = 0;
  let seals = 0;
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

  const ids: ScriptIds = {
    callId: () => `call_${++callIds}`,
    seal: (text) => Buffer.from(`${++seals}:${text}`).toString('base64'),
  };
  const build = (steps: (reply: ReplyBuilder) => unknown) => {
    const builder = new ReplyBuilder(ids);
    steps(builder);
    return builder.script;
  };

  const server = createServer((req, res) => {
    const arrivedAt = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://fake').pathname;
      const format = formatOf(path);
      const body = parseBody(Buffer.concat(chunks).toString('utf8'));
      const refused = format === 'unknown' ? undefined : refusal(format, body);
      const routed = format === 'unknown' ? undefined : routes.find((route) => route.match(body));
      const script =
        format === 'unknown' ? undefined
        : refused ? refused
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
      res.on('close', () => {
        if (!res.writableEnded && !cutByServer.has(res) && !stopping) recorded.leftEarly = true;
      });
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      if (format === 'unknown') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no such endpoint: ${path}` } }));
        return;
      }
      const chosen = script ?? build((r) => r.text('(no scripted reply)'));
      const rendered = render(format, chosen, body, { request: requests.length - 1, issue: (state) => issued.push(state) });
      void play(res, format, chosen, body, rendered, { sleep, isStopping: () => stopping, onFrame: () => (recorded.lastFrameAt = performance.now()) });
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
    issued,
    get pending() {
      return queue.length;
    },
    get connections() {
      return connections;
    },
    reply(steps) {
      queue.push(build(steps));
      return fake;
    },
    route(match, steps) {
      routes.push({ match, script: () => build(steps) });
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

function formatOf(path: string): WireFormat | 'unknown' {
  if (path.endsWith('/chat/completions')) return 'openai';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/messages')) return 'anthropic';
  return 'unknown';
}

/**
 * The 400 a real API answers to a request whose native tool calls are not each answered once
 * (the Responses API names the first call id at fault); undefined for a valid request.
 */
function refusal(format: WireFormat, body: WireBody): Script | undefined {
  const refused = format === 'responses' ? responsesInputError(body) : undefined;
  if (refused !== undefined) return new ReplyBuilder(unusedIds).status(400, refused).script;
  const problems = checkToolCallPairing({ body });
  if (problems.length === 0) return undefined;
  return new ReplyBuilder(unusedIds).status(400, { message: `invalid tool calls: ${problems.join('; ')}` }).script;
}

const unusedIds: ScriptIds = { callId: () => 'call_unused', seal: () => 'unused' };

/** What the renderers need besides the script and body: the request's index, and where issued state goes. */
interface RenderContext {
  request: number;
  issue: (state: IssuedState) => void;
}

function render(format: WireFormat, script: Script, body: WireBody, context: RenderContext): Rendered | undefined {
  if (script.status || body.stream !== true) return undefined;
  if (format === 'responses') return renderResponses(script, body, context);
  return format === 'openai' ? renderOpenAI(script, body) : renderAnthropic(script, body, context);
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

async function play(
  res: ServerResponse,
  format: WireFormat,
  script: Script,
  body: WireBody,
  rendered: Rendered | undefined,
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
  if (body.stream !== true || !rendered) {
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'the fake server only streams' } }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
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
      cutByServer.add(res);
      res.socket?.destroy();
      return;
    case 'hang':
      return;
  }
}

/** Responses the server itself cut mid-stream (a scripted `cut`), which the client did not leave. */
const cutByServer = new WeakSet<ServerResponse>();

function write(res: ServerResponse, data: string): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => res.write(data, () => resolve()));
}

/**
 * Chat Completions chunks. Thinking is sent as `reasoning_content` deltas, as some
 * OpenAI-compatible servers send it (OpenAI's own models never do); redacted thinking is left out.
 */
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
    if (step.kind === 'thinking') for (const part of halves(step.text)) frames.push({ data: chunk({ reasoning_content: part }) });
    if (step.kind === 'tool_call') {
      const index = toolIndex++;
      frames.push({ data: chunk({ tool_calls: [{ index, id: step.id, type: 'function', function: { name: step.name, arguments: '' } }] }) });
      for (const part of halves(step.args)) frames.push({ data: chunk({ tool_calls: [{ index, function: { arguments: part } }] }) });
    }
  }
  const reason = { end: 'stop', max_tokens: 'length', tool_use: 'tool_calls' }[stopOf(script)];
  const { input, output, cacheRead = 0, reasoning } = script.usage;
  const finish = [chunk({}, reason)];
  const options = body.stream_options;
  if (typeof options === 'object' && options !== null && 'include_usage' in options && options.include_usage === true) {
    const usage = {
      prompt_tokens: input + cacheRead,
      completion_tokens: output,
      total_tokens: input + cacheRead + output,
      prompt_tokens_details: { cached_tokens: cacheRead },
      ...(reasoning === undefined ? {} : { completion_tokens_details: { reasoning_tokens: reasoning } }),
    };
    finish.push(data({ ...head, choices: [], usage }));
  }
  finish.push('data: [DONE]\n\n');
  return { frames, finish, error: (type, message) => data({ error: { message, type, code: null, param: null } }) };
}

/**
 * Anthropic Messages events. A thinking step is a `thinking` block: its text in
 * `thinking_delta`s, then one `signature_delta`; a redacted one is a `redacted_thinking` block
 * whole in its start event. Each signature and redacted block is recorded as issued.
 */
function renderAnthropic(script: Script, body: WireBody, context: RenderContext): Rendered {
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
  const block = (start: Record<string, unknown>, deltas: Record<string, unknown>[]) => {
    closeText();
    index++;
    frames.push({ data: event('content_block_start', { index, content_block: start }) });
    for (const delta of deltas) frames.push({ data: event('content_block_delta', { index, delta }) });
    frames.push({ data: event('content_block_stop', { index }) });
  };
  const after = callsAfter(script.steps);
  script.steps.forEach((step, stepIndex) => {
    const before = after[stepIndex] === undefined ? {} : { before: after[stepIndex] };
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
      const deltas = halves(step.args).map((part) => ({ type: 'input_json_delta', partial_json: part }));
      block({ type: 'tool_use', id: step.id, name: step.name, input: {} }, deltas);
    }
    if (step.kind === 'thinking') {
      const deltas = halves(step.text).map((part) => ({ type: 'thinking_delta', thinking: part }));
      block({ type: 'thinking', thinking: '', signature: '' }, [...deltas, { type: 'signature_delta', signature: step.signature }]);
      context.issue({ request: context.request, format: 'anthropic', kind: 'thinking', value: step.signature, text: step.text, ...before });
    }
    if (step.kind === 'web_search') {
      const deltas = halves(JSON.stringify({ query: step.query })).map((part) => ({ type: 'input_json_delta', partial_json: part }));
      block({ type: 'server_tool_use', id: step.id, name: 'web_search', input: {} }, deltas);
      const result = { type: 'web_search_result', title: `About ${step.query}`, url: 'https://example.org/result', encrypted_content: 'enc', page_age: null };
      block({ type: 'web_search_tool_result', tool_use_id: step.id, content: [result] }, []);
    }
    if (step.kind === 'redacted_thinking') {
      block({ type: 'redacted_thinking', data: step.data }, []);
      context.issue({ request: context.request, format: 'anthropic', kind: 'redacted_thinking', value: step.data, ...before });
    }
  });
  const finish: string[] = [];
  if (openText) finish.push(event('content_block_stop', { index }));
  const reason = { end: 'end_turn', max_tokens: 'max_tokens', tool_use: 'tool_use' }[stopOf(script)];
  const searches = script.steps.filter((step) => step.kind === 'web_search').length;
  const searchUsage = searches > 0 ? { server_tool_use: { web_search_requests: searches, web_fetch_requests: 0 } } : {};
  finish.push(event('message_delta', { delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: output, ...searchUsage } }));
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

/** The body of an HTTP error reply: Anthropic's shape, or OpenAI's (the same for Chat Completions and Responses). */
function errorBody(format: WireFormat, status: { code: number } & FakeStatusOptions): unknown {
  const message = status.message ?? STATUS_CODES[status.code] ?? `HTTP ${status.code}`;
  if (format === 'anthropic') {
    return { type: 'error', error: { type: status.type ?? ANTHROPIC_ERROR_TYPES[status.code] ?? 'api_error', message } };
  }
  const type = status.type ?? (status.code === 429 ? 'rate_limit_exceeded' : status.code >= 500 ? 'server_error' : 'invalid_request_error');
  return { error: { message, type, param: status.param ?? null, code: null } };
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
