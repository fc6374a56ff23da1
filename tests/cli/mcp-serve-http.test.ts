import { spawn, type ChildProcess } from 'node:child_process';
import { dirname } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { listTraces } from '../../src/ptc/trace';
import { FENCE_BIN, useCliRun } from '../support/run-cli';
import { GREET, programRig } from '../support/served-programs';

const cli = useCliRun();
const { env, fence, saveProgram } = programRig(cli);

const TOKEN = 'a-token-for-the-test-only';

/** A running `fence mcp serve --http`, with its endpoint and the token it printed (if it made one). */
interface Serving {
  child: ChildProcess;
  url: string;
  printedToken?: string;
  stderr: () => string;
  stdout: () => string;
}

let running: Serving | undefined;
afterEach(async () => {
  await stop(running);
  running = undefined;
});

/** Starts the serve on a port the system picks and waits for the line naming its URL. */
async function serve(extraEnv: Record<string, string> = {}): Promise<Serving> {
  const child = spawn(process.execPath, [FENCE_BIN, 'mcp', 'serve', '-w', cli.dirs.workspace, '--http', '0'], {
    cwd: cli.dirs.workspace,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(cli.dirs.workspace), ...env(), ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const found = /over HTTP at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr)?.[1];
      if (found && (extraEnv.FENCE_MCP_TOKEN || /Bearer [0-9a-f]{64}/.test(stderr))) resolve(found);
    });
    child.once('exit', (code) => reject(new Error(`fence mcp serve exited (${code}): ${stderr}`)));
  });
  expect(url).not.toMatch(/:0\/mcp$/);
  running = { child, url, stderr: () => stderr, stdout: () => stdout, ...(/Bearer ([0-9a-f]{64})/.exec(stderr)?.[1] ? { printedToken: /Bearer ([0-9a-f]{64})/.exec(stderr)?.[1] } : {}) };
  return running;
}

/** Stops a serve with SIGTERM and expects it to end cleanly, having written nothing on stdout. */
async function stop(serving: Serving | undefined): Promise<void> {
  if (!serving) return;
  if (serving.child.exitCode === null) {
    const exited = new Promise<number | null>((resolve) => serving.child.once('exit', (code) => resolve(code)));
    serving.child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }
  expect(serving.stdout()).toBe('');
}

/** A client of the endpoint sending `token`, as `name`. */
async function connect(url: string, token: string, name: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** A raw `initialize` request, as a client outside the SDK sends it. */
function initialize(url: string, headers: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
}

/** The principals of every trace written under the test's FENCE_HOME. */
function tracePrincipals(): string[] {
  return listTraces(cli.dirs.home).map((stored) => stored.trace.principal);
}

describe('fence mcp serve --http', () => {
  it('serves approved programs to each client in its own session, with the token it printed', { timeout: 180_000 }, async () => {
    await saveProgram('greet', GREET);
    const { url, printedToken, stderr } = await serve();
    expect(stderr()).toContain('serving 1 approved program over HTTP');
    expect(printedToken).toBeDefined();
    const ada = await connect(url, printedToken ?? '', 'Ada Client');
    const bob = await connect(url, printedToken ?? '', 'Bob Client');
    try {
      expect((await ada.listTools()).tools.map((tool) => tool.name)).toEqual(['greet']);
      const hello = (await ada.callTool({ name: 'greet', arguments: { name: 'Ada' } })) as CallToolResult;
      expect(hello.isError).toBeFalsy();
      expect(hello.content[0]).toEqual({ type: 'text', text: 'hello Ada' });
      expect(hello.structuredContent).toEqual({ greeting: 'hello Ada', times: 1 });
      const other = (await bob.callTool({ name: 'greet', arguments: { name: 'Bob', times: 2 } })) as CallToolResult;
      expect(other.structuredContent).toEqual({ greeting: 'hello Bob', times: 2 });
    } finally {
      await ada.close();
      await bob.close();
    }
    expect(tracePrincipals().filter((principal) => principal.startsWith('mcp:')).sort()).toEqual(['mcp:ada-client', 'mcp:bob-client']);
  });

  it('tells every connected client when a program is approved while it serves', { timeout: 180_000 }, async () => {
    await Promise.all([saveProgram('greet', GREET), saveProgram('draft', ['// intent: a draft', 'return "draft";'].join('\n'), false)]);
    const { url } = await serve({ FENCE_MCP_TOKEN: TOKEN });
    const clients = [await connect(url, TOKEN, 'one'), await connect(url, TOKEN, 'two')];
    try {
      for (const client of clients) expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['greet']);
      const told = clients.map((client) => new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve())));
      expect((await fence(['programs', 'approve', 'draft@1'])).exitCode).toBe(0);
      await Promise.all(told);
      for (const client of clients) expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['draft', 'greet']);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });

  it('answers 401 without the token or with a wrong one, and 403 to a foreign Origin', { timeout: 60_000 }, async () => {
    const { url } = await serve({ FENCE_MCP_TOKEN: TOKEN });
    const port = new URL(url).port;
    expect((await initialize(url, {})).status).toBe(401);
    expect((await initialize(url, { Authorization: 'Bearer not-the-token' })).status).toBe(401);
    expect((await initialize(url, { Authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect((await initialize(url, { Authorization: `Bearer ${TOKEN}`, Origin: 'http://evil.example' })).status).toBe(403);
    expect((await initialize(url, { Authorization: `Bearer ${TOKEN}`, Origin: `http://evil.example:${port}` })).status).toBe(403);
    expect((await initialize(url, { Authorization: `Bearer ${TOKEN}`, Origin: `http://localhost:${port}` })).status).toBe(200);
    expect((await initialize(url, { Authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    const client = await connect(url, TOKEN, 'with env token');
    await client.close();
  });

  it('refuses to bind beyond loopback without FENCE_MCP_TOKEN, in one line', async () => {
    const result = await fence(['mcp', 'serve', '-w', cli.dirs.workspace, '--http', '0.0.0.0:0']);
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining('needs FENCE_MCP_TOKEN')]);
    const bad = await fence(['mcp', 'serve', '-w', cli.dirs.workspace, '--http', 'nine']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([expect.stringContaining('--http wants [host:]port')]);
  });

  it('prints a config for an HTTP client that reads the token from the environment', async () => {
    const result = await fence(['mcp', 'serve', '-w', cli.dirs.workspace, '--http', '8765', '--print-config']);
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      mcpServers: { fence: { type: 'http', url: 'http://127.0.0.1:8765/mcp', headers: { Authorization: 'Bearer ${FENCE_MCP_TOKEN}' } } },
    });
  });
});
