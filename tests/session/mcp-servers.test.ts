import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServers, MCP_TOOL_CACHE_MS, type McpServerStart } from '../../src/session/mcp-servers';
import { mcpTestServer } from '../support/mcp-test-config';
import { useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-mcp-servers-');
let open: McpServerStart[] = [];

afterEach(async () => {
  await Promise.all(open.map((server) => server.connection.close()));
  open = [];
});

const startsFile = () => join(workspace(), 'starts.txt');
const starts = () => (existsSync(startsFile()) ? readFileSync(startsFile(), 'utf8').split('\n').filter(Boolean).length : 0);
const cacheDir = () => join(workspace(), 'home', 'mcp-tools');

async function connect(args: string[] = [], cache: Parameters<typeof connectMcpServers>[2] = { dir: cacheDir() }): Promise<McpServerStart> {
  const [server] = await connectMcpServers({ calc: mcpTestServer(args, { env: { STARTED_FILE: startsFile() } }) }, workspace(), cache);
  if (!server) throw new Error('no server');
  open.push(server);
  return server;
}

describe('getting MCP servers ready', () => {
  it('starts and lists a server once, then takes its tools from the cache and starts it on the first call', { timeout: 60_000 }, async () => {
    const first = await connect();
    expect(first.cached).toBeUndefined();
    expect(first.listed?.map((t) => t.name)).toContain('get-sum');
    expect(starts()).toBe(1);
    expect(readdirSync(cacheDir())).toHaveLength(1);
    await first.connection.close();

    const second = await connect();
    expect(second.cached).toBe(true);
    expect(second.listed?.map((t) => t.name)).toEqual(first.listed?.map((t) => t.name));
    expect(starts()).toBe(1);
    const result = await second.connection.callTool('get-sum', { a: 2, b: 3 }, new AbortController().signal);
    expect(result.structuredContent).toEqual({ sum: 5 });
    expect(starts()).toBe(2);
  });

  it('lists afresh when the configuration changed, the listing is a day old, or a refresh is asked for', { timeout: 60_000 }, async () => {
    await (await connect()).connection.close();
    const changed = await connect(['--many', '2']);
    expect(changed.cached).toBeUndefined();
    expect(changed.listed?.map((t) => t.name)).toContain('tool-2');
    await changed.connection.close();

    const later = Date.now() + MCP_TOOL_CACHE_MS + 60_000;
    expect((await connect([], { dir: cacheDir(), now: () => later })).cached).toBeUndefined();
    expect((await connect([], { dir: cacheDir(), refresh: true })).cached).toBeUndefined();
    expect(starts()).toBe(4);
    // Nothing of the configuration but its hash is written.
    for (const file of readdirSync(cacheDir())) expect(readFileSync(join(cacheDir(), file), 'utf8')).not.toContain('starts.txt');
  });

  it('caches nothing for a server that does not start, and stops a cached one that never started without error', { timeout: 60_000 }, async () => {
    const failed = await connect(['--fail-start']);
    expect(failed.error).toMatch(/exited \(code 3\)/);
    expect(existsSync(cacheDir())).toBe(false);
    await (await connect()).connection.close();
    const idle = await connect();
    expect(idle.cached).toBe(true);
    await expect(idle.connection.close()).resolves.toBeUndefined();
    // The failing server exits before it counts; the good one started once, for its listing.
    expect(starts()).toBe(1);
  });

  it("lists a running server again when it says its tools changed, for the next session's cache", { timeout: 60_000 }, async () => {
    await (await connect()).connection.close();
    const lazy = await connect();
    expect(lazy.cached).toBe(true);
    expect(lazy.listed?.map((t) => t.name)).not.toContain('added-1');
    const result = await lazy.connection.callTool('add-tool', {}, new AbortController().signal);
    expect(result.content[0]?.text).toBe('added added-1');
    const cached = () => readdirSync(cacheDir()).map((file) => readFileSync(join(cacheDir(), file), 'utf8')).join('');
    for (let i = 0; i < 200 && !cached().includes('"added-1"'); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(cached()).toContain('"added-1"');
    await lazy.connection.close();
    expect((await connect()).listed?.map((t) => t.name)).toContain('added-1');
  });

  it("lists a stdio server afresh when a file its arguments name changed (its script, edited)", { timeout: 60_000 }, async () => {
    const script = join(workspace(), 'server-settings.json');
    writeFileSync(script, '{}');
    await (await connect(['--settings', script])).connection.close();
    expect((await connect(['--settings', script])).cached).toBe(true);
    writeFileSync(script, '{"changed": true}');
    expect((await connect(['--settings', script])).cached).toBeUndefined();
  });

  it('starts every server without a cache folder', { timeout: 60_000 }, async () => {
    await (await connect([], {})).connection.close();
    expect((await connect([], {})).cached).toBeUndefined();
    expect(starts()).toBe(2);
  });
});
