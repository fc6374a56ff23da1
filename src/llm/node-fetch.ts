import http from 'node:http';
import net from 'node:net';
import type https from 'node:https';
import { createRequire } from 'node:module';
import { pipeline, type Readable } from 'node:stream';
import type zlib from 'node:zlib';
import { BodyStream } from './body-stream';
import { FetchHeaders } from './fetch-headers';
import { FetchResponse } from './fetch-response';

/** The `fetch` signature the provider SDKs accept. */
export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** fence's fetch: a {@link Fetch} that can open its first connection ahead of the request. */
export interface NodeFetch extends Fetch {
  /**
   * Opens a connection (TCP, and TLS for https) to `url`'s server now, for the next request
   * to it to take: the connect and the TLS handshake then overlap what the caller does before
   * sending. At most one waits per server; unused, it is closed after the idle time, and it
   * never keeps the process alive. A connection that fails is dropped quietly: the request
   * makes its own and reports what happens to that one. Not for other protocols (ignored).
   */
  preconnect(url: string | URL): void;
}

/** Options of {@link createNodeFetch}. */
export interface NodeFetchOptions {
  /** How long an idle kept-alive socket stays open (default 5 s; a shorter `keep-alive` hint from the server wins). */
  idleSocketMs?: number;
}

/** A request, normalised from whatever a caller handed to fetch. */
interface Outgoing {
  url: URL;
  method: string;
  headers: Record<string, string>;
  /** A string is sent as UTF-8 as it is: a request body of hundreds of kilobytes is not copied first. */
  body: Buffer | string | undefined;
  signal: AbortSignal | undefined;
}

/** Statuses whose responses never have a body. */
const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

/**
 * Runs once what reading a response runs — its headers, and its body read as a provider SDK
 * reads a reply it leaves early — so that the first reply of a process does not pay for the
 * first run of that code. Called while the first request is out (or, in the chat, while the
 * person reads the prompt).
 */
export async function warmUpFetch(): Promise<void> {
  const chunks = [new TextEncoder().encode('{}'), new TextEncoder().encode('{}')];
  const body = new BodyStream({ next: async () => (chunks.length > 0 ? { done: false, value: chunks.shift() ?? new Uint8Array(0) } : { done: true, value: undefined }), cancel: () => undefined });
  const response = new FetchResponse(body, { status: 200, statusText: 'OK', headers: new FetchHeaders({ 'content-type': 'application/json' }), url: '' });
  response.headers.get('content-type');
  for await (const part of response.body ?? []) if (part.length > 0) break;
}

/** Built-in modules only some requests need (TLS, compressed bodies), loaded on first use. */
const requireBuiltin = createRequire(import.meta.url);

/**
 * A `fetch` built on `node:http`/`node:https` with its own keep-alive agents, for the SDKs to
 * use instead of the global fetch (lighter on memory and faster per request).
 *
 * Guarantees: response bodies stream as a `ReadableStream` in the order the bytes arrived (a
 * body that breaks off still delivers what came before the error); gzip, deflate and br bodies
 * are decoded; aborting `signal` destroys the request and rejects (or errors the body) with an
 * error named `AbortError`; a failed connection rejects with `TypeError('fetch failed')` whose
 * `cause` is the socket error; a socket goes back to the pool only once its body was read to
 * the end, otherwise it is destroyed. Idle sockets do not keep the process alive. Responses
 * are `FetchResponse`s with `FetchHeaders`, so no request loads Node's own fetch classes.
 * Not supported: redirects (answered as they are), streaming request bodies (they are read first).
 */
export function createNodeFetch(options: NodeFetchOptions = {}): NodeFetch {
  const timeout = options.idleSocketMs ?? 5_000;
  const early = new EarlyConnections(timeout);
  let tls: { module: typeof https; agent: https.Agent } | undefined;
  const agents: Agents = {
    http: early.serve(new http.Agent({ keepAlive: true, timeout }), 'http:'),
    https: () => {
      if (!tls) {
        const module = requireBuiltin('node:https') as typeof https;
        tls = { module, agent: early.serve(new module.Agent({ keepAlive: true, timeout }), 'https:') };
      }
      return tls;
    },
  };
  // A FetchResponse has every member the SDKs read of a Response (see fetch-response.ts); its
  // body is a BodyStream rather than a web stream.
  const fetch = async (input: string | URL | Request, init?: RequestInit) => (await send(await toOutgoing(input, init ?? {}), agents)) as unknown as Response;
  return Object.assign(fetch, { preconnect: (url: string | URL) => early.open(url) });
}

/**
 * Connections opened ahead of a request (see {@link NodeFetch.preconnect}), one per server at
 * most, handed to the agent when it next creates a connection to that server.
 */
class EarlyConnections {
  private readonly waiting = new Map<string, { socket: net.Socket; timer: NodeJS.Timeout }>();

  constructor(private readonly idleMs: number) {}

  open(target: string | URL): void {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return;
    // As node:http names the host: without the brackets of an IPv6 address.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const key = connectionKey(url.protocol, host, port);
    if (this.waiting.has(key)) return;
    const socket =
      url.protocol === 'https:'
        ? (requireBuiltin('node:tls') as typeof import('node:tls')).connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }) })
        : net.connect({ host, port });
    const drop = (): void => {
      clearTimeout(timer);
      if (this.waiting.get(key)?.socket === socket) this.waiting.delete(key);
      socket.destroy();
    };
    const timer = setTimeout(drop, this.idleMs).unref();
    socket.once('error', drop);
    socket.unref();
    this.waiting.set(key, { socket, timer });
  }

  /** `agent`, taking a waiting connection to the server of a request before making one. */
  serve<A extends http.Agent>(agent: A, protocol: 'http:' | 'https:'): A {
    const make = agent.createConnection.bind(agent) as (options: object, done: (error: Error | null, socket: net.Socket) => void) => net.Socket | undefined;
    const take = (options: { host?: string | null; port?: number | string | null }): net.Socket | undefined => {
      if (this.waiting.size === 0) return undefined;
      const key = connectionKey(protocol, options.host ?? 'localhost', Number(options.port));
      const early = this.waiting.get(key);
      if (!early) return undefined;
      this.waiting.delete(key);
      clearTimeout(early.timer);
      const { socket } = early;
      socket.removeAllListeners('error');
      if (socket.destroyed) return undefined;
      socket.ref();
      return socket;
    };
    Object.assign(agent, {
      createConnection: (options: { host?: string | null; port?: number | string | null }, done: (error: Error | null, socket: net.Socket) => void) =>
        take(options) ?? make(options, done),
    });
    return agent;
  }
}

function connectionKey(protocol: string, host: string, port: number): string {
  return `${protocol}//${host}:${port}`;
}

/** The keep-alive agents of one fetch; the TLS one made on the first https request. */
interface Agents {
  http: http.Agent;
  https: () => { module: typeof https; agent: https.Agent };
}

async function toOutgoing(input: string | URL | Request, init: RequestInit): Promise<Outgoing> {
  const request = typeof input === 'string' || input instanceof URL ? undefined : input;
  const url = new URL(request ? request.url : String(input));
  const headers = new FetchHeaders(request?.headers);
  new FetchHeaders(init.headers).forEach((value, name) => headers.set(name, value));
  const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
  const signal = init.signal ?? request?.signal ?? undefined;
  const source = init.body !== undefined ? init.body : request?.body ? await request.arrayBuffer() : null;
  const body = await toBody(source, headers);
  const plain: Record<string, string> = {};
  headers.forEach((value, name) => {
    plain[name] = value;
  });
  if (body !== undefined && plain['content-length'] === undefined) plain['content-length'] = String(Buffer.byteLength(body));
  return { url, method, headers: plain, body, signal };
}

async function toBody(body: RequestInit['body'] | ArrayBuffer, headers: FetchHeaders): Promise<Buffer | string | undefined> {
  if (body === null || body === undefined) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  // Blobs, form data, search params and streams: let the platform serialise them.
  const serialised = new Response(body);
  const type = serialised.headers.get('content-type');
  if (type !== null && !headers.has('content-type')) headers.set('content-type', type);
  return Buffer.from(await serialised.arrayBuffer());
}

function send(outgoing: Outgoing, agents: Agents): Promise<FetchResponse> {
  const { url, signal } = outgoing;
  if (signal?.aborted) return Promise.reject(abortError());
  const secure = url.protocol === 'https:';
  if (!secure && url.protocol !== 'http:') return Promise.reject(new TypeError(`fetch: unsupported protocol ${url.protocol}`));

  return new Promise<FetchResponse>((resolve, reject) => {
    const options = { method: outgoing.method, headers: outgoing.headers };
    const tls = secure ? agents.https() : undefined;
    const request = tls ? tls.module.request(url, { ...options, agent: tls.agent }) : http.request(url, { ...options, agent: agents.http });
    let body: ResponseBody | undefined;
    const release = () => signal?.removeEventListener('abort', onAbort);
    function onAbort(): void {
      const error = abortError();
      if (body) body.fail(error, { discard: true });
      else {
        release();
        reject(error);
      }
      request.destroy(error);
    }
    signal?.addEventListener('abort', onAbort, { once: true });

    request.on('error', (error) => {
      if (body) {
        body.fail(error);
        return;
      }
      release();
      reject(new TypeError('fetch failed', { cause: error }));
    });
    request.on('response', (incoming) => {
      const status = incoming.statusCode ?? 0;
      const headers = new FetchHeaders();
      const raw = incoming.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) {
        const name = raw[i];
        const value = raw[i + 1];
        if (name !== undefined && value !== undefined) headers.append(name, value);
      }
      const empty = NULL_BODY_STATUS.has(status) || outgoing.method === 'HEAD';
      body = empty ? undefined : new ResponseBody(decoded(incoming, headers.get('content-encoding')), release, () => request.destroy());
      if (empty) {
        incoming.on('end', release).on('error', release).resume();
      }
      resolve(new FetchResponse(body?.stream ?? null, { status, statusText: incoming.statusMessage ?? '', headers, url: url.href }));
    });
    request.end(outgoing.body);
  });
}

/** The body decoded according to `content-encoding` (unknown encodings pass through as they are). */
function decoded(incoming: Readable, encoding: string | null): Readable {
  const name = encoding?.trim().toLowerCase();
  if (name !== 'gzip' && name !== 'x-gzip' && name !== 'deflate' && name !== 'br') return incoming;
  const { createBrotliDecompress, createGunzip, createInflate } = requireBuiltin('node:zlib') as typeof zlib;
  const decoder = name === 'deflate' ? createInflate() : name === 'br' ? createBrotliDecompress() : createGunzip();
  return pipeline(incoming, decoder, () => undefined);
}

/**
 * A Node readable as a pull-based body stream (see `BodyStream`). Chunks are delivered in order,
 * and a failure after the chunks that arrived before it (so text sent just before a dropped
 * connection is not lost), except a failure with `discard` (an abort, a reader that stops),
 * which drops what is buffered. `onSettle` runs once, when the body ended or failed;
 * `destroyRequest` when it failed.
 */
export class ResponseBody {
  readonly stream: BodyStream;
  private readonly chunks: Uint8Array[] = [];
  private ended = false;
  private failure: { error: unknown } | undefined;
  private settled = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly source: Readable,
    private readonly onSettle: () => void,
    private readonly destroyRequest: () => void,
  ) {
    source.on('data', (chunk: Buffer) => {
      this.chunks.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      if (this.chunks.length >= 16) source.pause();
      this.notify();
    });
    source.on('end', () => {
      this.ended = true;
      this.settle();
      this.notify();
    });
    source.on('error', (error) => this.fail(error));
    source.on('close', () => {
      if (!this.ended) this.fail(Object.assign(new Error('connection closed before the response was complete'), { code: 'ECONNRESET' }));
    });
    this.stream = new BodyStream({
      next: () => this.next(),
      cancel: () => {
        this.fail(abortError(), { discard: true });
        source.destroy();
      },
    });
  }

  /** Ends the body with `error` (first failure wins); the request is destroyed so its socket is not reused. */
  fail(error: unknown, options: { discard?: boolean } = {}): void {
    if (this.ended || this.failure) return;
    this.failure = { error };
    if (options.discard) this.chunks.length = 0;
    this.destroyRequest();
    this.settle();
    this.notify();
  }

  private async next(): Promise<IteratorResult<Uint8Array, undefined>> {
    while (this.chunks.length === 0 && !this.ended && !this.failure) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
    const chunk = this.chunks.shift();
    if (chunk !== undefined) {
      if (this.chunks.length === 0 && this.source.isPaused()) this.source.resume();
      return { done: false, value: chunk };
    }
    if (this.failure) throw this.failure.error;
    return { done: true, value: undefined };
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    this.onSettle();
  }
}

function abortError(): DOMException {
  return new DOMException('This operation was aborted', 'AbortError');
}
