/**
 * `fence mcp serve`: the round trip of one served call of a small program that reads a file
 * (client → fence → program sandbox → tool → client) over stdio and over streamable HTTP, and
 * a serve's start-up to the answer of the first `tools/list`, with the default sandbox.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { execa } from 'execa';
import { FENCE_BIN } from './edges';
import { median } from './ptc';

/** The program served: one tool call and a small result. */
const PROGRAM = ['// intent: read the note', 'const text = await read({ path: "note.txt" });', 'return { length: text.length };'].join('\n');

const TOKEN = 'bench-token';

/** Medians, milliseconds. */
export interface McpServeFigures {
  /** One call of the program, over stdio and over HTTP (200 calls each). */
  callMs: { stdio: number; http: number };
  /** One call of fence's `read` served with `--tools` over stdio (a one-call program; 200 calls). */
  toolCallMs: number;
  /** Spawn → the first `tools/list` answered, over stdio and over HTTP (5 starts each). */
  startMs: { stdio: number; http: number };
}

/** A workspace with the program saved and approved, and the environment serves run with. */
async function prepare(): Promise<{ workspace: string; env: Record<string, string> }> {
  // Under /var/tmp rather than /tmp: inside the OS sandbox /tmp is the session's own folder.
  const root = mkdtempSync('/var/tmp/fence-bench-serve-');
  const workspace = join(root, 'work');
  mkdirSync(workspace);
  mkdirSync(join(root, 'xdg'));
  writeFileSync(join(workspace, 'note.txt'), 'a short note\n');
  writeFileSync(join(workspace, 'note.js'), PROGRAM);
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, LANG: 'C.UTF-8', FENCE_HOME: join(root, 'home'), XDG_CONFIG_HOME: join(root, 'xdg') };
  const fence = (args: string[]) => execa(process.execPath, [FENCE_BIN, ...args], { cwd: workspace, env, extendEnv: false, input: '' });
  const run = await fence(['run', 'note.js']);
  const trace = /^trace (\S+)/m.exec(run.stderr)?.[1];
  if (!trace) throw new Error(`the bench program did not run: ${run.stderr}`);
  await fence(['programs', 'save', 'note', '--from-trace', trace]);
  await fence(['programs', 'approve', 'note@1']);
  return { workspace, env };
}

/** A client of a stdio serve. */
async function stdioClient(workspace: string, env: Record<string, string>, extraArgs: string[] = []): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [FENCE_BIN, 'mcp', 'serve', '-w', workspace, ...extraArgs], cwd: workspace, env, stderr: 'ignore' }));
  return client;
}

/** An HTTP serve on a free port, once it names its URL, and a client of it. */
async function httpClient(workspace: string, env: Record<string, string>): Promise<{ client: Client; child: ChildProcess }> {
  const child = spawn(process.execPath, [FENCE_BIN, 'mcp', 'serve', '-w', workspace, '--http', '0'], { cwd: workspace, env: { ...env, FENCE_MCP_TOKEN: TOKEN }, stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const found = /over HTTP at (\S+\/mcp)/.exec(stderr)?.[1];
      if (found) resolve(found);
    });
    child.once('exit', () => reject(new Error(`the serve ended: ${stderr}`)));
  });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
  return { client, child };
}

/** Stops an HTTP serve and waits for it to end. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Median of `count` calls of the program (or of `tool` with `args`), after ten to warm up. */
async function callMedian(client: Client, count: number, tool = 'note', args: Record<string, unknown> = {}): Promise<number> {
  const call = async () => {
    const result = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
    if (result.isError) throw new Error(`the served call failed: ${JSON.stringify(result.content)}`);
  };
  for (let i = 0; i < 10; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  return median(times);
}

/** Runs both transports: calls first, then start-ups. */
export async function mcpServeFigures(calls = 200, starts = 5): Promise<McpServeFigures> {
  const { workspace, env } = await prepare();
  const stdio = await stdioClient(workspace, env);
  const stdioCall = await callMedian(stdio, calls).finally(() => stdio.close());
  const withTools = await stdioClient(workspace, env, ['--tools']);
  const toolCall = await callMedian(withTools, calls, 'read', { path: 'note.txt' }).finally(() => withTools.close());
  const http = await httpClient(workspace, env);
  const httpCall = await callMedian(http.client, calls).finally(async () => {
    await http.client.close();
    await stopChild(http.child);
  });

  const stdioStarts: number[] = [];
  const httpStarts: number[] = [];
  for (let i = 0; i < starts; i++) {
    let t0 = performance.now();
    const client = await stdioClient(workspace, env);
    await client.listTools();
    stdioStarts.push(performance.now() - t0);
    await client.close();
    t0 = performance.now();
    const served = await httpClient(workspace, env);
    await served.client.listTools();
    httpStarts.push(performance.now() - t0);
    await served.client.close();
    await stopChild(served.child);
  }
  return { callMs: { stdio: stdioCall, http: httpCall }, toolCallMs: toolCall, startMs: { stdio: median(stdioStarts), http: median(httpStarts) } };
}
