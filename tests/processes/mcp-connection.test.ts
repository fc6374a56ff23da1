import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { McpServerConfig } from '../../src/config/config-schema';
import { McpConnection } from '../../src/processes/mcp-connection';
import { isAlive } from '../support/bash-sessions';
import { mcpTestServer } from '../support/mcp-test-config';
import { useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-mcp-');
const opened: McpConnection[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((connection) => connection.close()));
});

function connect(config: McpServerConfig = mcpTestServer(), name = 'finance'): McpConnection {
  const connection = new McpConnection({ name, config, cwd: workspace() });
  opened.push(connection);
  return connection;
}

const signal = () => new AbortController().signal;
const text = (result: { content: { text?: string }[] }) => result.content.map((c) => c.text ?? '').join('');

describe('McpConnection', () => {
  it('lists the tools of a stdio server and calls one', async () => {
    const connection = connect();
    const listed = await connection.listTools();
    if (!listed.ok) throw new Error(listed.error);
    expect(listed.tools.map((t) => t.name)).toEqual(['get-sum', 'echo', 'fail', 'crash', 'sleep', 'env-keys', 'delete-all', 'add-tool']);
    expect(listed.tools[0]?.inputSchema).toMatchObject({ type: 'object', properties: { a: { type: 'number' } } });
    const result = await connection.callTool('get-sum', { a: 2, b: 3 }, signal());
    expect(result).toEqual({ content: [{ type: 'text', text: 'The sum is 5' }], structuredContent: { sum: 5 } });
    expect(connection.transport).toBe('stdio');
  });

  it('shares one start between concurrent connects, and starts once', async () => {
    const connection = connect();
    const [a, b] = await Promise.all([connection.connect(), connection.connect()]);
    expect(a).toEqual({ ok: true });
    expect(b).toEqual({ ok: true });
    const pid = connection.pid;
    expect(pid).toBeTypeOf('number');
    await connection.callTool('echo', { text: 'hi' }, signal());
    expect(connection.pid).toBe(pid);
  });

  it('lists all 50 extra tools of a large server', async () => {
    const listed = await connect(mcpTestServer(['--many', '50'])).listTools();
    expect(listed.ok && listed.tools.length).toBe(58);
  });

  it('passes an isError result through', async () => {
    const result = await connect().callTool('fail', {}, signal());
    expect(result).toEqual({ content: [{ type: 'text', text: 'the ledger is locked' }], isError: true });
  });

  it('gives the server a minimal environment plus its env table', async () => {
    const result = await connect(mcpTestServer([], { env: { FINANCE_TOKEN: 't0k' } })).callTool('env-keys', {}, signal());
    const keys = JSON.parse(text(result)) as string[];
    expect(keys).toContain('FINANCE_TOKEN');
    expect(keys).toContain('PATH');
    const allowed = new Set(['PATH', 'HOME', 'LANG', 'TMPDIR', 'TERM', 'FINANCE_TOKEN', 'FENCE_WORKSPACE']);
    // node itself may add a variable or two of its own (e.g. for the loader); nothing of ours leaks.
    expect(keys.filter((key) => !allowed.has(key) && !key.startsWith('NODE_'))).toEqual([]);
    expect(keys).not.toContain('USER');
  });

  it('answers a crash mid-call clearly, and the next call starts the server again', async () => {
    const connection = connect();
    await connection.connect();
    const first = connection.pid;
    const crashed = await connection.callTool('crash', {}, signal());
    expect(crashed.isError).toBe(true);
    expect(crashed.failure).toBe('server finance exited (code 1) during crash: panic: ledger corrupted');
    const next = await connection.callTool('get-sum', { a: 1, b: 1 }, signal());
    expect(next.structuredContent).toEqual({ sum: 2 });
    expect(connection.pid).not.toBe(first);
  });

  it('stops a call at its timeout, and one whose signal aborts', async () => {
    const connection = connect(mcpTestServer([], { timeout: 0.3 }));
    const slow = await connection.callTool('sleep', { ms: 5000 }, signal());
    expect(slow.failure).toBe('server finance did not answer sleep within 0.3 s');
    const other = connect();
    await other.connect();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const aborted = await other.callTool('sleep', { ms: 5000 }, controller.signal);
    expect(aborted.failure).toBe('sleep was interrupted');
    const before = new AbortController();
    before.abort();
    expect((await connection.callTool('echo', { text: 'x' }, before.signal)).failure).toBe('echo was interrupted before it started');
  });

  it('says why a server did not start, with its stderr', async () => {
    const failing = await connect(mcpTestServer(['--fail-start'])).connect();
    expect(failing).toEqual({ ok: false, error: 'server finance exited (code 3) before it answered: finance: no FINANCE_TOKEN given' });
    const missing = await connect({ command: 'fence-no-such-mcp-server' }, 'ghost').listTools();
    expect(missing).toEqual({ ok: false, error: 'server ghost did not start: command "fence-no-such-mcp-server" not found' });
    const call = await connect({ command: 'fence-no-such-mcp-server' }, 'ghost').callTool('x', {}, signal());
    expect(call.failure).toBe('server ghost is not available: server ghost did not start: command "fence-no-such-mcp-server" not found');
  });

  it('stops the process on close, more than once, and refuses calls afterwards', async () => {
    const connection = connect();
    await connection.connect();
    const pid = connection.pid ?? -1;
    expect(isAlive(pid)).toBe(true);
    await Promise.all([connection.close(), connection.close()]);
    expect(isAlive(pid)).toBe(false);
    await connection.close();
    const after = await connection.callTool('echo', { text: 'x' }, signal());
    expect(after.failure).toBe('server finance is not available: the connection to server finance is closed');
  });

  it('says when the folder named as its cwd does not exist', async () => {
    for (const missing of [join(workspace(), 'no-such-folder'), join(workspace(), '..', 'fence-no-such-folder')]) {
      const result = await connect(mcpTestServer([], { cwd: missing, source: 'user' }), 'lost').connect();
      expect(result).toEqual({ ok: false, error: `server lost did not start: its working folder ${resolve(missing)} does not exist` });
    }
  });

  it('gives the server FENCE_WORKSPACE and ${workspace} in its arguments', async () => {
    const [command = '', ...args] = mcpTestServer().args ?? [];
    const connection = connect({ command: process.execPath, args: [command, ...args, '--root', '${workspace}'] });
    const keys = JSON.parse(text(await connection.callTool('env-keys', {}, signal()))) as string[];
    expect(keys).toContain('FENCE_WORKSPACE');
    const pid = connection.pid ?? -1;
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toContain(workspace());
  });

  it('starts the server in a session of its own, and stops what it started in its group on close', async () => {
    const marker = join(workspace(), 'child.pid');
    const server = mcpTestServer();
    const line = [server.command, ...(server.args ?? [])].map((word) => `'${word}'`).join(' ');
    const connection = connect({ command: 'sh', args: ['-c', `sleep 300 & echo $! > '${marker}'; exec ${line}`] });
    await connection.connect();
    const pid = connection.pid ?? -1;
    // Its session is its own: the session id in /proc/<pid>/stat (field 6) is its own pid.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    expect(Number(fields[3])).toBe(pid);
    const child = Number(readFileSync(marker, 'utf8'));
    expect(isAlive(child)).toBe(true);
    await connection.close();
    expect(isAlive(pid)).toBe(false);
    for (let tries = 0; tries < 50 && isAlive(child); tries++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(isAlive(child)).toBe(false);
  });

  it('says when an HTTP server cannot be reached', async () => {
    const result = await connect({ url: 'http://127.0.0.1:9/mcp', timeout: 5 }, 'remote').connect();
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(/^server remote failed before it answered: /);
  });

  it('lists and calls the tools of a streamable HTTP server, sending its headers', async () => {
    const seen: (string | undefined)[] = [];
    const http = createServer(async (req, res) => {
      seen.push(req.headers.authorization);
      // Stateless: a fresh server and transport for each request.
      const server = new McpServer({ name: 'http-test', version: '1.0.0' });
      server.registerTool('shout', { description: 'Upper-cases.', inputSchema: { text: z.string() } }, async ({ text }) => ({
        content: [{ type: 'text', text: text.toUpperCase() }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = http.address() as AddressInfo;
      const connection = connect({ url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: 'Bearer abc' } }, 'remote');
      const listed = await connection.listTools();
      expect(listed.ok && listed.tools.map((t) => t.name)).toEqual(['shout']);
      expect(await connection.callTool('shout', { text: 'hi' }, signal())).toEqual({ content: [{ type: 'text', text: 'HI' }] });
      expect(connection.transport).toBe('http');
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.every((value) => value === 'Bearer abc')).toBe(true);
      await connection.close();
    } finally {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });
});
