import { mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { trustWorkspace } from '../../src/config/trust';
import { mcpListCommand } from '../../src/cli/mcp-command';
import { openSession } from '../../src/session/open-session';
import { isAlive } from '../support/bash-sessions';
import { mcpTestServer } from '../support/mcp-test-config';
import { useTempWorkspace } from '../support/tool-context';

const root = useTempWorkspace('fence-mcp-cli-');

/** A workspace whose fence.toml names these servers, and an empty user config folder. */
async function workspaceWith(servers: Record<string, { command: string; args?: string[] } | { url: string }>) {
  const workspace = join(root(), 'work');
  await mkdir(workspace, { recursive: true });
  const tables = Object.entries(servers).map(([name, server]) =>
    'url' in server
      ? `[mcp.servers.${name}]\nurl = ${JSON.stringify(server.url)}\n`
      : `[mcp.servers.${name}]\ncommand = ${JSON.stringify(server.command)}\nargs = ${JSON.stringify(server.args ?? [])}\n`,
  );
  await writeFile(join(workspace, 'fence.toml'), tables.join('\n'));
  const env = { XDG_CONFIG_HOME: join(root(), 'xdg'), FENCE_HOME: join(root(), 'home') };
  trustWorkspace(workspace, env.FENCE_HOME);
  return { workspace, env };
}

async function list(workspace: string, env: NodeJS.ProcessEnv) {
  let stdout = '';
  let stderr = '';
  const code = await mcpListCommand({ workspace, env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('fence mcp list', () => {
  it('lists each server with its transport and tools, and the error of one that did not start', async () => {
    const { workspace, env } = await workspaceWith({ finance: mcpTestServer(), broken: mcpTestServer(['--fail-start']) });
    const { code, stdout, stderr } = await list(workspace, env);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    const [finance, broken] = stdout.trimEnd().split('\n\n');
    expect(finance?.split('\n')[0]).toMatch(/^finance \(stdio: .*mcp-test-server\.ts\)$/);
    expect(finance).toContain('\n  finance_get_sum     Adds two numbers.\n');
    expect(finance).toContain('\n  finance_delete_all  Deletes every record.');
    expect(broken).toMatch(/^broken \(stdio: .*--fail-start\)\n {2}did not start: exited \(code 3\) before it answered: finance: no FINANCE_TOKEN given$/);
  });

  it('exits 1 when no configured server starts, and 0 when none is configured', async () => {
    const failing = await workspaceWith({ ghost: { command: 'fence-no-such-mcp-server' } });
    expect(await list(failing.workspace, failing.env)).toMatchObject({ code: 1, stdout: expect.stringContaining('command "fence-no-such-mcp-server" not found') });
    const none = await workspaceWith({});
    expect(await list(none.workspace, none.env)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no MCP servers configured/) });
  });

  it('says so when the config is wrong', async () => {
    const { workspace, env } = await workspaceWith({});
    await writeFile(join(workspace, 'fence.toml'), '[mcp.servers.x]\nargs = []\n');
    trustWorkspace(workspace, env.FENCE_HOME);
    expect(await list(workspace, env)).toEqual({ code: 1, stdout: '', stderr: 'fence: fence.toml: mcp.servers.x: needs command (a server fence starts) or url (a streamable HTTP server)\n' });
  });
});

describe('openSession with MCP servers', () => {
  it('opens without waiting for the servers, whose tools join once listed, warns of one that fails when it fails, and stops them on close', { timeout: 60_000 }, async () => {
    const { workspace, env } = await workspaceWith({ finance: mcpTestServer(), broken: mcpTestServer(['--fail-start']) });
    const loaded = loadConfig({ workspace, env });
    if ('error' in loaded) throw new Error(loaded.error);
    const warnings: string[] = [];
    const session = await openSession({
      home: join(root(), 'home'),
      workspace,
      modelId: 'local/test',
      config: loaded.config,
      signal: new AbortController().signal,
      warn: (line) => warnings.push(line),
    });
    try {
      // Not in the cache: the system prompt was written before the server listed its tools.
      expect(session.store.log[0]?.content).not.toContain('finance_get_sum');
      for (let i = 0; i < 600 && (!session.registry.get('finance_get_sum') || warnings.length === 0); i++) await new Promise((done) => setTimeout(done, 50));
      expect(warnings).toEqual(['fence: MCP server broken did not start: exited (code 3) before it answered: finance: no FINANCE_TOKEN given']);
      const sum = session.registry.get('finance_get_sum');
      expect(sum).toBeDefined();
      const ptc = session.registry.get('ptc');
      expect(ptc?.instructions).toContain('declare function finance_get_sum');
      expect(session.toolNotices?.take()).toMatch(/^MCP server finance finished starting/);
      expect(session.store.info.tools).toContain('finance_get_sum');
      const result = await sum?.execute({ a: 4, b: 5 }, session.toolContext);
      expect(result?.value).toEqual({ sum: 9 });
    } finally {
      await session.close();
    }
    const alive: number[] = [];
    for (const pid of await pidsOfTestServers()) if (isAlive(pid)) alive.push(pid);
    expect(alive).toEqual([]);
  });
});

/** Pids of the processes of test servers whose working folder is in this test's folder (Linux only; elsewhere none). */
async function pidsOfTestServers(): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    if (cmdline.includes('mcp-test-server') && cwd.startsWith(root())) pids.push(Number(entry));
  }
  return pids;
}
