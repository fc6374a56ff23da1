import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
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

/** What `serveHttp` needs. */
export interface ServeHttpOptions {
  address: HttpAddress;
  token: string;
  /** A fresh server of the programs, for one client's session. */
  newServer(): ProgramServer;
  /** Reports a problem of one request (one line, for stderr). */
  problem(line: string): void;
}

/**
 * Serves MCP's streamable HTTP at `/mcp` on `address`. Every request must have an allowed
 * `Origin` (otherwise 403) and the bearer token (otherwise 401). Sessions are stateful: an
 * `initialize` without a session id gets a new transport with its own server (so each client's
 * name is its own principal and its notifications go to it), kept under the session id the SDK
 * made until the client ends it with DELETE or the endpoint closes. Resolves once listening;
 * an error when the address cannot be bound.
 */
export async function serveHttp(options: ServeHttpOptions): Promise<HttpServing | { error: string }> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: ProgramServer }>();
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
      return session.transport.handleRequest(request, response);
    }
    // No session yet: only an initialize starts one; the transport refuses anything else.
    const server = options.newServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { transport, server });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
      void server.server.close().catch(() => undefined);
    };
    await server.server.connect(transport);
    await transport.handleRequest(request, response);
    if (!transport.sessionId || !sessions.has(transport.sessionId)) await server.server.close().catch(() => undefined);
  }

  const listening = await new Promise<AddressInfo | { error: string }>((resolve) => {
    http.once('error', (error: NodeJS.ErrnoException) => resolve({ error: `cannot listen on ${urlHost(options.address.host)}:${options.address.port}: ${error.code ?? error.message}` }));
    http.listen(options.address.port, options.address.host, () => resolve(http.address() as AddressInfo));
  });
  if ('error' in listening) return listening;
  bound = { host: options.address.host, port: listening.port };
  return {
    address: bound,
    async listChanged() {
      await Promise.all([...sessions.values()].map(({ server }) => server.listChanged()));
    },
    async close() {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map(({ transport }) => transport.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Answers with a status and a JSON-RPC error, as the SDK's transport answers its own refusals. */
function refuse(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}
