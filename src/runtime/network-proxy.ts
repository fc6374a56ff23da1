import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';

/**
 * The network of a sandbox that may reach only some hosts. Inside, there is no network but
 * loopback; an HTTP proxy in fence's own process, outside, listens on a Unix socket that is
 * mounted into the sandbox, and lets through only requests to the allowed hosts: `CONNECT
 * host:port` for HTTPS and anything tunnelled, plain `http://` requests forwarded. In each
 * sandboxed process tree a small forwarder (run with fence's own Node) listens on
 * `127.0.0.1:3128` inside and passes each connection to that socket, and `HTTP_PROXY`,
 * `HTTPS_PROXY` (and their lower-case forms) point there. Programs that honour those
 * variables — curl, wget, git, pip, npm, Python's urllib and requests, Go — go through it;
 * anything else has no network at all.
 */

/** The port the forwarder listens on inside each sandbox (its own network namespace: no clash). */
export const PROXY_PORT = 3128;

/** A running proxy: where its socket and forwarder are, and how to stop it. */
export interface NetworkProxy {
  /** Folder holding the socket and the forwarder script, mounted read-only into the sandbox. */
  readonly dir: string;
  readonly socket: string;
  readonly forwarder: string;
  close(): void;
}

/**
 * Whether `host` (and `port`) is allowed by `allowed`: an entry `example.com` allows that
 * host on any port, `*.example.com` its subdomains (not itself), `example.com:443` that port only.
 * Host names compare without case.
 */
export function hostAllowed(allowed: readonly string[], host: string, port: number): boolean {
  const name = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return allowed.some((entry) => {
    const [pattern = '', only] = entry.toLowerCase().split(':');
    if (only !== undefined && Number(only) !== port) return false;
    if (pattern.startsWith('*.')) return name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1;
    return name === pattern;
  });
}

/**
 * Starts the proxy for `allowed` hosts, with its socket and forwarder in `dir` (an empty folder
 * fence owns). The socket exists when this returns (a Unix socket is bound at once); a later
 * failure of the server only means no connection gets through.
 */
export function startNetworkProxy(dir: string, allowed: readonly string[]): NetworkProxy {
  const socket = join(dir, 'proxy.sock');
  const forwarder = join(dir, 'forward.cjs');
  writeFileSync(forwarder, FORWARDER, { mode: 0o444 });
  const open = new Set<Socket>();
  const track = (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  };
  const server: Server = createServer((req, res) => forward(req, res, allowed));
  server.on('connection', track);
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = splitHostPort(req.url ?? '', 443);
    if (!target || !hostAllowed(allowed, target.host, target.port)) {
      client.end(refusal(target?.host ?? req.url ?? ''));
      return;
    }
    const upstream = connect(target.port, target.host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    track(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
    client.on('error', end);
    client.on('close', end);
  });
  server.on('error', () => undefined);
  server.listen(socket);
  server.unref();
  return {
    dir,
    socket,
    forwarder,
    close() {
      for (const s of open) s.destroy();
      server.close();
    },
  };
}

/** The lines that put a sandboxed process's traffic through the proxy. */
export function proxyEnvironment(): Record<string, string> {
  const url = `http://127.0.0.1:${PROXY_PORT}`;
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: 'localhost,127.0.0.1', no_proxy: 'localhost,127.0.0.1' };
}

/** A plain `http://` request through the proxy: forwarded when its host is allowed. */
function forward(req: IncomingMessage, res: ServerResponse, allowed: readonly string[]): void {
  let url: URL;
  try {
    url = new URL(req.url ?? '');
  } catch {
    res.writeHead(400).end('fence sandbox proxy: a request through a proxy names its whole URL\n');
    return;
  }
  const port = Number(url.port || 80);
  if (url.protocol !== 'http:' || !hostAllowed(allowed, url.hostname, port)) {
    res.writeHead(403, { 'content-type': 'text/plain' }).end(refusalText(url.hostname));
    return;
  }
  const upstream = httpRequest({ host: url.hostname, port, path: `${url.pathname}${url.search}`, method: req.method, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
  req.pipe(upstream);
}

function splitHostPort(text: string, fallback: number): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(text);
  if (!match?.[1]) return undefined;
  return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port: match[2] ? Number(match[2]) : fallback };
}

function refusalText(host: string): string {
  return `fence sandbox: ${host} is not among the hosts this session may reach ([sandbox] network)\n`;
}

function refusal(host: string): string {
  const text = refusalText(host);
  return `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`;
}

/**
 * The forwarder run inside each sandbox: `node forward.cjs <socket> <port> <ready-file>`.
 * It writes `ready-file` once it listens, so the command it runs before waits for it.
 */
const FORWARDER = `'use strict';
const net = require('node:net');
const fs = require('node:fs');
const [socket, port, ready] = process.argv.slice(2);
net
  .createServer((client) => {
    const upstream = net.connect(socket);
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on('error', end);
    upstream.on('error', end);
    client.pipe(upstream).pipe(client);
  })
  .listen(Number(port), '127.0.0.1', () => fs.writeFileSync(ready, ''));
`;
