import { lookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { checkedLookup } from '../os-sandbox/checked-lookup';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Readable } from 'node:stream';
import { hostOf, type WebHosts } from './web-hosts';
import { FetchRefusal, parseWebUrl } from './web-url';

/** The caps of one fetch; each has a default (see `DEFAULT_FETCH_LIMITS`). */
export interface FetchLimits {
  /** Most bytes of body read (after decompression); the rest is not read, and the page says it was cut. */
  maxBytes: number;
  /** Most time for the whole fetch, redirects included; then the connection is dropped. */
  timeoutMs: number;
  /** Most redirects followed. */
  maxRedirects: number;
}

/** 5 MB of body, 30 seconds, 5 redirects. */
export const DEFAULT_FETCH_LIMITS: FetchLimits = { maxBytes: 5 * 1024 * 1024, timeoutMs: 30_000, maxRedirects: 5 };

/** How a name is turned into addresses: all of them, IPv4 and IPv6. */
export type ResolveHost = (host: string) => Promise<string[]>;

/** What one fetch needs besides the URL. */
export interface FetchPageOptions {
  hosts: WebHosts;
  /** Stops the fetch (the run was stopped). */
  signal?: AbortSignal;
  limits?: Partial<FetchLimits>;
  /** The system's resolver by default. */
  resolve?: ResolveHost;
}

/** A page as the server sent it, after redirects. */
export interface FetchedPage {
  /** The URL the body came from (the last hop). */
  url: string;
  status: number;
  statusText: string;
  /** The `content-type` header, empty when the server sent none. */
  contentType: string;
  body: Buffer;
  /** The body was longer than `maxBytes` and was cut there. */
  cut: boolean;
}

const USER_AGENT = 'fence (terminal coding agent; fetches a page when asked)';
const ACCEPT = 'text/html;q=1.0, text/markdown;q=0.95, text/plain;q=0.9, application/json;q=0.8, application/xhtml+xml;q=0.8, */*;q=0.1';

const resolveWithSystem: ResolveHost = async (host) => (await lookup(host, { all: true, verbatim: true })).map((found) => found.address);

/**
 * Fetches `url` with a GET and gives the body. Only `http:` and `https:` URLs without a user
 * or password are fetched. Each hop — the first URL and every redirect — is checked before a
 * connection is made: a redirect may lead to a host `[web] allow` lists or to the first URL's
 * own host (which was admitted), nowhere else; the host is resolved once, its addresses are
 * checked (`WebHosts.addressRefusal`), and the connection is made to those addresses only, so
 * a second DNS answer cannot point it elsewhere. No cookies, no credentials, a plain user
 * agent. Gives up after `limits.timeoutMs` or when `signal` aborts, dropping the connection.
 * Throws `FetchRefusal` with a one-line reason for anything it refuses or cannot do.
 */
export async function fetchPage(url: string, options: FetchPageOptions): Promise<FetchedPage> {
  const limits = { ...DEFAULT_FETCH_LIMITS, ...options.limits };
  const resolve = options.resolve ?? resolveWithSystem;
  const first = parseWebUrl(url);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), limits.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
  const stopped = () => (options.signal?.aborted ? 'the fetch was stopped' : `no complete answer from ${first.host} within ${limits.timeoutMs / 1000} s`);
  try {
    let current = first;
    for (let hop = 0; ; hop++) {
      if (hop > 0 && !options.hosts.listed(current) && !sameHost(current, first)) {
        throw new FetchRefusal(`${first.href} redirected to ${current.href}, whose host ${hostOf(current)} is not in [web] allow`);
      }
      const addresses = await addressesOf(current, resolve, signal, stopped);
      const refusal = options.hosts.addressRefusal(current, addresses);
      if (refusal) throw new FetchRefusal(hop === 0 ? refusal : `${first.href} redirected to ${current.href}: ${refusal}`);
      const response = await get(current, addresses, signal, stopped);
      const location = response.headers.location;
      if (response.statusCode !== undefined && response.statusCode >= 300 && response.statusCode < 400 && location) {
        response.destroy();
        if (hop >= limits.maxRedirects) throw new FetchRefusal(`${first.href} redirected more than ${limits.maxRedirects} times`);
        current = parseWebUrl(new URL(location, current).href, `${current.href} redirected to`);
        continue;
      }
      const { body, cut } = await readBody(response, current, limits.maxBytes, signal, stopped);
      return {
        url: current.href,
        status: response.statusCode ?? 0,
        statusText: response.statusMessage ?? '',
        contentType: headerText(response.headers['content-type']),
        body,
        cut,
      };
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The same host name (an `http:` to `https:` upgrade changes the port, not the host asked about). */
function sameHost(a: URL, b: URL): boolean {
  return hostOf(a) === hostOf(b);
}

async function addressesOf(url: URL, resolve: ResolveHost, signal: AbortSignal, stopped: () => string): Promise<string[]> {
  const host = hostOf(url);
  if (isIP(host)) return [host];
  try {
    return await raceSignal(resolve(host), signal, stopped);
  } catch (error) {
    if (error instanceof FetchRefusal) throw error;
    throw new FetchRefusal(`cannot find the address of ${host}`);
  }
}

function get(url: URL, addresses: readonly string[], signal: AbortSignal, stopped: () => string): Promise<IncomingMessage> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new FetchRefusal(stopped()));
    const req = request(url, {
      method: 'GET',
      lookup: checkedLookup(addresses),
      // No keep-alive pool: each fetch has its own connection, dropped when it ends.
      agent: false,
      headers: { 'user-agent': USER_AGENT, accept: ACCEPT, 'accept-encoding': 'gzip, deflate, br', 'accept-language': 'en;q=1.0, *;q=0.5' },
    });
    const onAbort = () => {
      req.destroy();
      reject(new FetchRefusal(stopped()));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('response', (response) => {
      signal.removeEventListener('abort', onAbort);
      resolve(response);
    });
    req.on('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      reject(signal.aborted ? new FetchRefusal(stopped()) : new FetchRefusal(`fetching ${url.href} failed: ${connectionProblem(error)}`));
    });
    req.end();
  });
}

/** The body, decompressed, up to `maxBytes`; more is not read. */
async function readBody(response: IncomingMessage, url: URL, maxBytes: number, signal: AbortSignal, stopped: () => string): Promise<{ body: Buffer; cut: boolean }> {
  const decoded = decoder(response);
  const chunks: Buffer[] = [];
  let size = 0;
  let cut = false;
  const onAbort = () => {
    decoded.destroy();
    response.destroy();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const chunk of decoded as AsyncIterable<Buffer>) {
      const room = maxBytes - size;
      if (chunk.length >= room) {
        chunks.push(chunk.subarray(0, room));
        size += room;
        cut = chunk.length > room;
        if (cut) break;
        continue;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } catch (error) {
    if (signal.aborted) throw new FetchRefusal(stopped());
    throw new FetchRefusal(`reading ${url.href} failed: ${connectionProblem(error)}`);
  } finally {
    signal.removeEventListener('abort', onAbort);
    decoded.destroy();
    response.destroy();
  }
  if (signal.aborted) throw new FetchRefusal(stopped());
  return { body: Buffer.concat(chunks, size), cut };
}

function decoder(response: IncomingMessage): Readable {
  const encoding = headerText(response.headers['content-encoding']).trim().toLowerCase();
  const make = encoding === 'gzip' || encoding === 'x-gzip' ? createGunzip : encoding === 'deflate' ? createInflate : encoding === 'br' ? createBrotliDecompress : undefined;
  if (!make) return response;
  const stream = make();
  response.on('error', (error) => stream.destroy(error));
  return response.pipe(stream);
}

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
}

function connectionProblem(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
}

function raceSignal<T>(promise: Promise<T>, signal: AbortSignal, stopped: () => string): Promise<T> {
  if (signal.aborted) return Promise.reject(new FetchRefusal(stopped()));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new FetchRefusal(stopped()));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
