import { lookup } from 'node:dns/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import { checkedLookup } from './checked-lookup';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import type { NetworkDecision, NetworkRules } from './network-rules';

/**
 * The network of a sandbox that may reach only some hosts, or every host (`network = true`).
 * Inside, there is no network but loopback; an HTTP proxy in fence's own process, outside,
 * listens on a Unix socket that is mounted into the sandbox, and lets through only what the
 * `NetworkRules` allow: `CONNECT host:port` for HTTPS and anything tunnelled, plain `http://`
 * requests forwarded. It resolves each name once, asks the rules about every address, and
 * connects to the address it checked, never looking the name up again (a second answer could
 * point elsewhere); a plain request goes out with a `Host` header naming the host it was sent
 * to. In each sandboxed process tree a small forwarder (run with fence's own Node) listens on
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

/** How the proxy finds the addresses of a name: all of them, IPv4 and IPv6. */
export type ResolveHost = (host: string) => Promise<string[]>;

const resolveWithSystem: ResolveHost = async (host) => (await lookup(host, { all: true, verbatim: true })).map((found) => found.address);

/**
 * Starts the proxy for `rules`, with its socket and forwarder in `dir` (an empty folder fence
 * owns). The socket exists when this returns (a Unix socket is bound at once); a later failure
 * of the server only means no connection gets through. `resolve` finds a name's addresses (the
 * system's resolver by default).
 */
export function startNetworkProxy(dir: string, rules: NetworkRules, resolve: ResolveHost = resolveWithSystem): NetworkProxy {
  const socket = join(dir, 'proxy.sock');
  const forwarder = join(dir, 'forward.cjs');
  writeFileSync(forwarder, FORWARDER, { mode: 0o444 });
  const open = new Set<Socket>();
  const track = (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  };
  const admit = (host: string, port: number) => admitTarget(rules, resolve, host, port);
  const server: Server = createServer((req, res) => void forward(req, res, admit));
  server.on('connection', track);
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => void tunnel(req, client, head, admit, track));
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

/** Where a connection to `host:port` may go: the checked addresses, or the refusal. */
type Admission = { addresses: string[] } | { refusal: string; status: number };

/**
 * Asks the rules about `host` on `port`: first the name, then (resolved once) every address
 * it has; gives the addresses to connect to, all of them checked.
 */
async function admitTarget(rules: NetworkRules, resolve: ResolveHost, host: string, port: number): Promise<Admission> {
  const name = host.replace(/^\[(.*)\]$/, '$1');
  if (!rules.hostAllowed(name, port)) return { refusal: refusalText({ allowed: false, rule: 'host', host: name }), status: 403 };
  let addresses: string[];
  try {
    addresses = isIP(name) ? [name] : await resolve(name);
  } catch {
    return { refusal: `fence sandbox proxy: cannot find the address of ${name}\n`, status: 502 };
  }
  const decision = rules.decide(name, port, addresses);
  if (!decision.allowed) return { refusal: refusalText(decision), status: 403 };
  return { addresses };
}

/** A `CONNECT host:port` tunnel: opened to a checked address when the rules allow it. */
async function tunnel(req: IncomingMessage, client: Socket, head: Buffer, admit: (host: string, port: number) => Promise<Admission>, track: (s: Socket) => void): Promise<void> {
  client.on('error', () => client.destroy());
  const target = splitHostPort(req.url ?? '', 443);
  const admission = target ? await admit(target.host, target.port) : { refusal: refusalText({ allowed: false, rule: 'host', host: req.url ?? '' }), status: 403 };
  if (!target || 'refusal' in admission) {
    if ('refusal' in admission) client.end(refusalResponse(admission.status, admission.refusal));
    return;
  }
  const upstream = connect({ host: target.host, port: target.port, lookup: checkedLookup(admission.addresses), autoSelectFamily: true }, () => {
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
}

/** The lines that put a sandboxed process's traffic through the proxy. */
export function proxyEnvironment(): Record<string, string> {
  const url = `http://127.0.0.1:${PROXY_PORT}`;
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: 'localhost,127.0.0.1', no_proxy: 'localhost,127.0.0.1' };
}

/**
 * A plain `http://` request through the proxy: forwarded to a checked address when the
 * rules allow its host, with `Host` naming that host (whatever the client sent: a server
 * choosing its site by `Host` must not be asked for one the rules never saw), and without the
 * headers meant for the proxy.
 */
async function forward(req: IncomingMessage, res: ServerResponse, admit: (host: string, port: number) => Promise<Admission>): Promise<void> {
  let url: URL;
  try {
    url = new URL(req.url ?? '');
  } catch {
    res.writeHead(400).end('fence sandbox proxy: a request through a proxy names its whole URL\n');
    return;
  }
  const port = Number(url.port || 80);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const admission = url.protocol === 'http:' ? await admit(host, port) : { refusal: refusalText({ allowed: false, rule: 'host', host }), status: 403 };
  if ('refusal' in admission) {
    res.writeHead(admission.status, { 'content-type': 'text/plain' }).end(admission.refusal);
    return;
  }
  const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: url.host };
  delete headers['proxy-authorization'];
  delete headers['proxy-connection'];
  const upstream = httpRequest({ host, port, lookup: checkedLookup(admission.addresses), path: `${url.pathname}${url.search}`, method: req.method, headers }, (answer) => {
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

/** The line a refused request gets, naming the host (and the address it was refused for). */
function refusalText(decision: Exclude<NetworkDecision, { allowed: true }>): string {
  if (decision.rule === 'host') return `fence sandbox: ${decision.host} is not among the hosts this session may reach ([sandbox] network)\n`;
  const where = decision.address ? ` resolves to ${decision.address}, an address of this machine or of a private network` : ' has no address';
  return `fence sandbox: ${decision.host}${where}; list it as "private:${decision.host}" in [sandbox] network to reach it\n`;
}

function refusalResponse(status: number, text: string): string {
  const reason = status === 403 ? 'Forbidden' : 'Bad Gateway';
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`;
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
