import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ProgramServer } from './mcp-serve';

/** The environment variable whose value clients must send as their bearer token. */
export const TOKEN_VARIABLE = 'FENCE_MCP_TOKEN';

/** The path the MCP endpoint answers at. */
export const MCP_PATH = '/mcp';

/** The host `--http` binds when none is given. */
const DEFAULT_HOST = '127.0.0.1';

/** Where `--http [host:]port` asks to listen. */
export interface HttpAddress {
  host: string;
  /** 0 lets the system choose a free port. */
  port: number;
}

/**
 * Reads `--http`'s value: a port, or `host:port` (an IPv6 host in brackets, as in `[::1]:8080`).
 * The host is 127.0.0.1 when none is given.
 */
export function parseHttpAddress(text: string): HttpAddress | { error: string } {
  const match = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):)?(\d{1,5})$/.exec(text.trim());
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) return { error: `--http wants [host:]port, such as 8765 or 127.0.0.1:8765, not "${text}"` };
  const host = match[1]?.replace(/^\[|\]$/g, '') ?? DEFAULT_HOST;
  return { host, port };
}

/** Whether `host` names this machine's loopback interface only. */
export function isLoopback(host: string): boolean {
  const lower = host.toLowerCase();
  return lower === 'localhost' || lower === '::1' || /^127(\.\d{1,3}){3}$/.test(lower) || /^::ffff:127(\.\d{1,3}){3}$/.test(lower);
}

/** `host` as it is written in a URL (an IPv6 address in brackets). */
function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** The URL clients reach the endpoint at; a wildcard host (`0.0.0.0`, `::`) is reached as 127.0.0.1. */
export function endpointUrl(address: HttpAddress): string {
  const host = address.host === '0.0.0.0' || address.host === '::' ? DEFAULT_HOST : address.host;
  return `http://${urlHost(host)}:${address.port}${MCP_PATH}`;
}

/**
 * The bearer token to require: `FENCE_MCP_TOKEN` when it is set and not blank, otherwise a
 * fresh random one (32 bytes, hex) the caller shows to the person. An error when the address
 * is not loopback and the token would be a generated one: a token shown on a screen is not
 * enough to open the programs to a network.
 */
export function chooseToken(address: HttpAddress, env: NodeJS.ProcessEnv): { token: string; generated: boolean } | { error: string } {
  const given = env[TOKEN_VARIABLE]?.trim();
  if (given) return { token: given, generated: false };
  if (!isLoopback(address.host)) return { error: `serving on ${address.host}, beyond this machine's loopback, needs ${TOKEN_VARIABLE} set to the token clients must send` };
  return { token: randomBytes(32).toString('hex'), generated: true };
}

/** Whether the request carries `Authorization: Bearer <token>`, compared in constant time. */
export function hasToken(request: IncomingMessage, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match?.[1]) return false;
  // Digests have one length whatever was sent, so the comparison tells nothing about the token's.
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(match[1]), digest(token));
}

/**
 * Whether the request's `Origin` may reach the endpoint: none at all (clients that are not
 * browsers send none), or this server's own origin by 127.0.0.1, localhost or the bound host.
 * A page elsewhere that a browser lets at a loopback port (DNS rebinding) is refused.
 */
export function originAllowed(request: IncomingMessage, address: HttpAddress): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  const hosts = new Set([DEFAULT_HOST, 'localhost', urlHost(address.host)]);
  return [...hosts].some((host) => origin.toLowerCase() === `http://${host.toLowerCase()}:${address.port}`);
}

/** An HTTP endpoint serving programs, from `serveHttp`. */
export interface HttpServing {
  /** Where it listens, with the port the system chose when 0 was asked. */
  address: HttpAddress;
  /** Tells every connected client the list of tools changed. */
  listChanged(): Promise<void>;
  /** Ends every MCP session and stops listening. */
  close(): Promise<void>;
}

/** How many MCP sessions an endpoint keeps open at once, unless told otherwise. */
export const DEFAULT_SESSION_LIMIT = 32;

/** How long a session may go without a request before it is closed, unless told otherwise: 30 minutes. */
export const DEFAULT_IDLE_MS = 30 * 60 * 1000;

/** The largest body read from a request without a session id (one that may be an `initialize`). */
const MAX_START_BODY_BYTES = 4 * 1024 * 1024;

/** What `serveHttp` needs. */
export interface ServeHttpOptions {
  address: HttpAddress;
  token: string;
  /** A fresh server of the programs, for one client's session. */
  newServer(): ProgramServer;
  /** Reports a problem of one request (one line, for stderr). */
  problem(line: string): void;
  /** How many sessions may be open at once (see `serveHttp`). Default `DEFAULT_SESSION_LIMIT`. */
  sessionLimit?: number;
  /** How long, in milliseconds, a session may go without a request before it is closed. Default `DEFAULT_IDLE_MS`. */
  idleMs?: number;
}

/** One client's MCP session: its transport, its server, and how it is being used. */
interface Session {
  transport: StreamableHTTPServerTransport;
  server: ProgramServer;
  /** Requests other than the long-lived `GET` stream that have not been answered yet. */
  inFlight: number;
  /** When its last such request was answered (or when it started), from `Date.now()`. */
  lastUsed: number;
}

/**
 * Serves MCP's streamable HTTP at `/mcp` on `address`. Every request must have an allowed
 * `Origin` (otherwise 403) and the bearer token (otherwise 401). Sessions are stateful: an
 * `initialize` without a session id gets a new transport with its own server (so each client's
 * name is its own principal and its notifications go to it), kept under the session id the SDK
 * made until the client ends it with DELETE, it is closed as described below, or the endpoint
 * closes. Resolves once listening; an error when the address cannot be bound.
 *
 * At most `sessionLimit` sessions are open at once. An `initialize` that would pass the limit
 * closes the session idle longest among those with no request being answered; when every
 * session has one, the `initialize` is answered 503 and nothing is closed. A session with no
 * request for `idleMs` is closed; one timer, which does not keep the process alive, looks for
 * them. A closed session's transport and server are both closed, and a request that names it
 * is answered 404 like any unknown session, so its client initializes again.
 */
export async function serveHttp(options: ServeHttpOptions): Promise<HttpServing | { error: string }> {
  const sessionLimit = options.sessionLimit ?? DEFAULT_SESSION_LIMIT;
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  const sessions = new Map<string, Session>();
  /** Sessions whose `initialize` is being answered: they count against the limit already. */
  const starting = new Set<Session>();
  const http: HttpServer = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      options.problem(`fence: an HTTP request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent) refuse(response, 500, 'internal error');
      else response.end();
    });
  });
  let bound: HttpAddress = options.address;

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!originAllowed(request, bound)) return refuse(response, 403, 'this Origin may not use the endpoint');
    if (!hasToken(request, options.token)) {
      response.setHeader('WWW-Authenticate', 'Bearer');
      return refuse(response, 401, `a bearer token is required (Authorization: Bearer $${TOKEN_VARIABLE})`);
    }
    const path = (request.url ?? '').split('?')[0];
    if (path !== MCP_PATH) return refuse(response, 404, `the MCP endpoint is ${MCP_PATH}`);
    const id = request.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const session = sessions.get(id);
      if (!session) return refuse(response, 404, 'no such session; initialize again');
      if (request.method !== 'GET') track(session, response);
      return session.transport.handleRequest(request, response);
    }
    // No session yet: only an initialize starts one; the transport refuses anything else.
    let body: unknown;
    if (request.method === 'POST') {
      const read = await readJson(request);
      if ('error' in read) return refuse(response, read.status, read.error, read.code);
      body = read.body;
      if (startsSession(body) && !makeRoom()) {
        return refuse(response, 503, `the server is at its limit of ${sessionLimit} sessions, all of them busy; try again later`);
      }
    }
    const server = options.newServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (sessionId) => {
        starting.delete(session);
        sessions.set(sessionId, session);
      },
    });
    const session: Session = { transport, server, inFlight: 0, lastUsed: Date.now() };
    starting.add(session);
    track(session, response);
    transport.onclose = () => {
      if (transport.sessionId && sessions.get(transport.sessionId) === session) sessions.delete(transport.sessionId);
      void server.server.close().catch(() => undefined);
    };
    try {
      await server.server.connect(transport);
      await transport.handleRequest(request, response, body);
    } finally {
      starting.delete(session);
    }
    if (!transport.sessionId || sessions.get(transport.sessionId) !== session) await server.server.close().catch(() => undefined);
  }

  /** Counts a request as being answered on `session` until its response is over. */
  function track(session: Session, response: ServerResponse): void {
    session.inFlight += 1;
    response.once('close', () => {
      session.inFlight -= 1;
      session.lastUsed = Date.now();
    });
  }

  /**
   * Makes room for one more session: true when there is room, or when the session idle longest
   * among those with no request being answered was made to leave it (it is forgotten at once
   * and closed in the background); false when there is no such session.
   */
  function makeRoom(): boolean {
    if (sessions.size + starting.size < sessionLimit) return true;
    let idlest: [string, Session] | undefined;
    for (const [id, session] of sessions) {
      if (session.inFlight === 0 && (!idlest || session.lastUsed < idlest[1].lastUsed)) idlest = [id, session];
    }
    if (!idlest) return false;
    void closeSession(...idlest);
    return true;
  }

  /** Forgets a session at once (so nothing reaches it any more), then closes its transport and its server. */
  async function closeSession(id: string, session: Session): Promise<void> {
    sessions.delete(id);
    await session.transport.close().catch(() => undefined);
    await session.server.server.close().catch(() => undefined);
  }

  /** Closes every session that has had no request for `idleMs`. */
  function sweep(): void {
    const now = Date.now();
    for (const [id, session] of sessions) {
      if (session.inFlight === 0 && now - session.lastUsed >= idleMs) void closeSession(id, session);
    }
  }

  const listening = await new Promise<AddressInfo | { error: string }>((resolve) => {
    http.once('error', (error: NodeJS.ErrnoException) => resolve({ error: `cannot listen on ${urlHost(options.address.host)}:${options.address.port}: ${error.code ?? error.message}` }));
    http.listen(options.address.port, options.address.host, () => resolve(http.address() as AddressInfo));
  });
  if ('error' in listening) return listening;
  bound = { host: options.address.host, port: listening.port };
  // A sweep every half idleMs (at most every minute) closes a session at most that long after it expired.
  const sweeper = setInterval(sweep, Math.max(10, Math.min(idleMs / 2, 60_000)));
  sweeper.unref();
  return {
    address: bound,
    async listChanged() {
      await Promise.all([...sessions.values()].map(({ server }) => server.listChanged()));
    },
    async close() {
      clearInterval(sweeper);
      const startingNow = [...starting];
      starting.clear();
      await Promise.all([...sessions].map(([id, session]) => closeSession(id, session)));
      await Promise.all(startingNow.map(({ transport }) => transport.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Whether a request's body is (or, in a batch, holds) an `initialize`, which starts a session. */
function startsSession(body: unknown): boolean {
  return (Array.isArray(body) ? body : [body]).some((message) => isInitializeRequest(message));
}

/**
 * Reads a request's body as JSON, refusing one larger than `MAX_START_BODY_BYTES` (413) or
 * that is not JSON (400, as the SDK's transport answers it).
 */
async function readJson(request: IncomingMessage): Promise<{ body: unknown } | { status: number; code: number; error: string }> {
  const chunks: Buffer[] = [];
  let size = 0;
  // A body past the limit is read to its end all the same, so the answer reaches the client.
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_START_BODY_BYTES) chunks.push(chunk);
  }
  if (size > MAX_START_BODY_BYTES) return { status: 413, code: -32000, error: `a request may be at most ${MAX_START_BODY_BYTES} bytes` };
  try {
    return { body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch {
    return { status: 400, code: -32700, error: 'Parse error: Invalid JSON' };
  }
}

/** Answers with a status and a JSON-RPC error, as the SDK's transport answers its own refusals. */
function refuse(response: ServerResponse, status: number, message: string, code = -32000): void {
  response.writeHead(status, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
