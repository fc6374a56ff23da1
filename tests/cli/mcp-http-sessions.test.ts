import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { endpointUrl, serveHttp, type HttpServing, type ServeHttpOptions } from '../../src/cli/mcp-http';
import { createProgramServer, type ProgramServer } from '../../src/cli/mcp-serve';

const TOKEN = 'a-token-for-the-test-only';

/** A `tools/call` the test holds open: it is known to have reached the server once `started` resolves. */
interface HeldCall {
  started: Promise<void>;
  release(): void;
}

/** An endpoint whose servers serve no programs and answer a call of `wait` only when the test releases it. */
interface Endpoint {
  url: string;
  /** Readies the call of `wait` with `{ key }`; make it with `callWait`. */
  hold(key: string): HeldCall;
  /** The names of the clients whose servers were closed. */
  closedServers(): (string | undefined)[];
}

let serving: HttpServing | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await serving?.close();
  serving = undefined;
});

/** Serves on a port the system picks, with the session limits given. */
async function serve(limits: Pick<ServeHttpOptions, 'sessionLimit' | 'idleMs'>): Promise<Endpoint> {
  const held = new Map<string, { started: () => void; released: Promise<void> }>();
  const servers: { served: ProgramServer; closed: boolean }[] = [];
  const newServer = (): ProgramServer => {
    const served = createProgramServer({
      tools: () => [],
      rules: () => [],
      context: () => {
        throw new Error('no program runs in these tests');
      },
      version: '0.0.0',
    });
    served.server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
      const call = held.get(String(request.params.arguments?.key));
      if (!call) throw new Error('a call the test did not hold');
      call.started();
      await call.released;
      return { content: [{ type: 'text', text: 'released' }] };
    });
    const entry = { served, closed: false };
    served.server.onclose = () => {
      entry.closed = true;
    };
    servers.push(entry);
    return served;
  };
  const problems: string[] = [];
  const started = await serveHttp({ address: { host: '127.0.0.1', port: 0 }, token: TOKEN, newServer, problem: (line) => problems.push(line), ...limits });
  if ('error' in started) throw new Error(started.error);
  serving = started;
  return {
    url: endpointUrl(started.address),
    hold(key) {
      let release = () => {};
      let markStarted = () => {};
      const startedCall = new Promise<void>((resolve) => (markStarted = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      held.set(key, { started: markStarted, released });
      return { started: startedCall, release: () => release() };
    },
    closedServers: () => servers.filter((entry) => entry.closed).map((entry) => entry.served.server.getClientVersion()?.name),
  };
}

/** A client of the endpoint as `name`, closed after the test. */
async function connect(url: string, name: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** Calls `wait` with `key` (see `Endpoint.hold`). */
function callWait(client: Client, key: string): Promise<CallToolResult> {
  return client.callTool({ name: 'wait', arguments: { key } }) as Promise<CallToolResult>;
}

const RAW_HEADERS = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

/** A raw `initialize`, as a client outside the SDK sends it. */
function initialize(url: string): Promise<Response> {
  const body = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  return fetch(url, { method: 'POST', headers: RAW_HEADERS, body: JSON.stringify(body) });
}

/** Starts a session with a raw `initialize` and gives its id. */
async function rawSession(url: string): Promise<string> {
  const response = await initialize(url);
  expect(response.status).toBe(200);
  await response.text();
  const id = response.headers.get('mcp-session-id');
  if (!id) throw new Error('no session id in the answer to initialize');
  return id;
}

/**
 * Resolves once session `id` is closed: opens its stream of server messages (GET) and waits
 * for the server to end it, or finds the session already gone (404).
 */
async function closed(url: string, id: string): Promise<void> {
  const response = await fetch(url, { headers: { Authorization: `Bearer ${TOKEN}`, Accept: 'text/event-stream', 'mcp-session-id': id } });
  expect([200, 404]).toContain(response.status);
  await response.text();
}

/** A raw `tools/list` in session `id`. */
function listTools(url: string, id: string): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { ...RAW_HEADERS, 'mcp-session-id': id }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
}

describe('sessions of fence mcp serve --http', () => {
  it('closes the session idle longest to make room, never one that is answering a request', async () => {
    const { url, hold, closedServers } = await serve({ sessionLimit: 3 });
    const busy = await connect(url, 'busy');
    const used = await connect(url, 'used');
    const idle = await connect(url, 'idle');
    const held = hold('busy');
    const call = callWait(busy, 'busy');
    await held.started;
    await used.listTools();

    const fresh = await connect(url, 'fresh');
    await expect(idle.listTools()).rejects.toMatchObject({ code: 404 });
    await vi.waitFor(() => expect(closedServers()).toEqual(['idle']));
    held.release();
    expect((await call).content).toEqual([{ type: 'text', text: 'released' }]);
    for (const client of [busy, used, fresh]) expect((await client.listTools()).tools).toEqual([]);
  });

  it('answers 503 to a new session when every session is answering a request, and makes room once one is done', async () => {
    const { url, hold, closedServers } = await serve({ sessionLimit: 2 });
    const first = await connect(url, 'first');
    const second = await connect(url, 'second');
    const calls = [hold('first'), hold('second')];
    const pending = [callWait(first, 'first'), callWait(second, 'second')];
    await Promise.all(calls.map((held) => held.started));

    const refused = await initialize(url);
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringContaining('at its limit of 2 sessions') }, id: null });
    await expect(connect(url, 'third')).rejects.toThrow(/at its limit of 2 sessions/);
    expect(closedServers()).toEqual([]);

    calls[0]?.release();
    expect((await pending[0])?.content).toEqual([{ type: 'text', text: 'released' }]);
    const third = await connect(url, 'third');
    await expect(first.listTools()).rejects.toMatchObject({ code: 404 });
    calls[1]?.release();
    expect((await pending[1])?.content).toEqual([{ type: 'text', text: 'released' }]);
    expect((await third.listTools()).tools).toEqual([]);
    expect((await second.listTools()).tools).toEqual([]);
  });

  it('closes a session that has had no request for idleMs; its client gets 404 and can start again', async () => {
    const { url, closedServers } = await serve({ idleMs: 200 });
    const client = await connect(url, 'quiet');
    // A session started after the client's expires no sooner than it.
    const later = await rawSession(url);
    await closed(url, later);

    await expect(client.listTools()).rejects.toMatchObject({ code: 404 });
    const gone = await listTools(url, later);
    expect(gone.status).toBe(404);
    expect(closedServers().sort()).toEqual(['quiet', 'raw']);
    const again = await connect(url, 'quiet again');
    expect((await again.listTools()).tools).toEqual([]);
  });

  it('keeps a session whose request is still being answered past idleMs', async () => {
    const { url, hold, closedServers } = await serve({ idleMs: 200 });
    const client = await connect(url, 'patient');
    const held = hold('patient');
    const call = callWait(client, 'patient');
    await held.started;
    // A session started after the call began, left idle: once it is closed, the client's would be too if the call did not count.
    const later = await rawSession(url);
    await closed(url, later);

    expect(closedServers()).toEqual(['raw']);
    held.release();
    expect((await call).content).toEqual([{ type: 'text', text: 'released' }]);
    expect((await client.listTools()).tools).toEqual([]);
  });
});
