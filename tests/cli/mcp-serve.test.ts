import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { listTraces, type ProgramTrace } from '../../src/ptc/trace';
import { FENCE_BIN, useCliRun } from '../support/run-cli';
import { mcpTestServer } from '../support/mcp-test-config';
import { GREET, programRig } from '../support/served-programs';

const cli = useCliRun();

const SUM = ['// intent: add numbers up', '// param numbers: number[]', 'print("adding");', 'return args.numbers.reduce((a, b) => a + b, 0);'].join('\n');
const PEEK = [
  '// intent: look at the secret key',
  'try {',
  '  return { text: await read({ path: "secret/key.txt" }) };',
  '} catch (error) {',
  '  return { refused: error.message };',
  '}',
].join('\n');
const SPIN = ['// intent: spin until stopped', '// param spin: boolean = false', 'do {', '  await glob({ pattern: "*.js" });', '} while (args.spin);', 'return "stopped spinning";'].join('\n');
const DRAFT = ['// intent: a draft nobody approved', 'return "draft";'].join('\n');
const TALLY = [
  '// intent: tally the names given',
  '// param names: string[] = ["ada"]',
  '// param broken: boolean = false',
  '// returns: { total: number; names: string[]; first?: string }',
  'if (args.broken) return { total: "many" };',
  'return { total: args.names.length, names: args.names, ...(args.names.length ? { first: args.names[0] } : {}) };',
].join('\n');
const COUNT = ['// intent: count the javascript files', '// param silent: boolean = false', '// returns: integer', 'const files = await glob({ pattern: "*.js" });', 'return args.silent ? undefined : files.length;'].join('\n');
const GLOB_MANY = ['// intent: glob many times', '// param times: integer = 1', 'for (let i = 0; i < args.times; i++) await glob({ pattern: "*.js" });', 'return args.times;'].join('\n');

const { env, fence, saveProgram } = programRig(cli);

/** A client connected to `fence mcp serve` on the test's workspace, as `clientName`. */
async function connect(clientName = 'Test Client/1', extraArgs: string[] = [], extraConfig = ''): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [FENCE_BIN, 'mcp', 'serve', '-w', cli.dirs.workspace, ...extraArgs],
    cwd: cli.dirs.workspace,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(cli.dirs.workspace), ...env(extraConfig) },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: clientName, version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

function text(result: CallToolResult): string {
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

/** Every trace written under the test's FENCE_HOME. */
function traces(): ProgramTrace[] {
  return listTraces(cli.dirs.home).map((stored) => stored.trace);
}

describe('fence mcp serve', () => {
  it('serves approved programs with their schemas, runs calls as the client, and refuses what policy denies', { timeout: 180_000 }, async () => {
    mkdirSync(join(cli.dirs.workspace, 'secret'));
    writeFileSync(join(cli.dirs.workspace, 'secret', 'key.txt'), 'hunter2\n');
    // Saved side by side: each has its own file, trace, record and approval.
    await Promise.all([saveProgram('greet', GREET), saveProgram('sum', SUM, true, '{"numbers":[1,2]}'), saveProgram('peek', PEEK), saveProgram('draft', DRAFT, false)]);

    const { client, stderr } = await connect();
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['greet', 'peek', 'sum']);
      const greet = tools.find((tool) => tool.name === 'greet');
      expect(greet?.description).toBe('Greet someone by name');
      expect(greet?.inputSchema).toMatchObject({
        type: 'object',
        properties: { name: { type: 'string', default: 'world', description: 'who to greet' }, times: { type: 'integer', default: 1 } },
      });
      expect(greet?.inputSchema.required ?? []).toEqual([]);
      expect(tools.find((tool) => tool.name === 'sum')?.inputSchema).toMatchObject({ properties: { numbers: { type: 'array', items: { type: 'number' } } }, required: ['numbers'] });
      expect(tools.find((tool) => tool.name === 'peek')?.inputSchema).toMatchObject({ type: 'object', properties: {} });

      const hello = (await client.callTool({ name: 'greet', arguments: { name: 'Ada' } })) as CallToolResult;
      expect(hello.isError).toBeFalsy();
      expect(hello.content[0]).toEqual({ type: 'text', text: 'hello Ada' });
      expect(hello.structuredContent).toEqual({ greeting: 'hello Ada', times: 1 });

      const defaults = (await client.callTool({ name: 'greet', arguments: {} })) as CallToolResult;
      expect(defaults.structuredContent).toEqual({ greeting: 'hello world', times: 1 });

      const total = (await client.callTool({ name: 'sum', arguments: { numbers: [1, 2, 3.5] } })) as CallToolResult;
      expect(total.content[0]).toEqual({ type: 'text', text: 'adding' });
      expect(total.structuredContent).toEqual({ result: 6.5 });

      const wrong = (await client.callTool({ name: 'greet', arguments: { name: 42 } })) as CallToolResult;
      expect(wrong.isError).toBe(true);
      expect(text(wrong)).toContain('name:');
      const missing = (await client.callTool({ name: 'sum', arguments: {} })) as CallToolResult;
      expect(missing.isError).toBe(true);
      expect(text(missing)).toContain('numbers');

      const peek = (await client.callTool({ name: 'peek', arguments: {} })) as CallToolResult;
      expect(JSON.stringify(peek)).not.toContain('hunter2');
      expect(peek.structuredContent).toEqual({ refused: expect.stringContaining('read denied') });

      const draft = (await client.callTool({ name: 'draft', arguments: {} })) as CallToolResult;
      expect(draft.isError).toBe(true);
      expect(JSON.stringify(draft)).not.toContain('"draft"}');
      expect(stderr()).toContain('serving 3 approved programs');
    } finally {
      await client.close();
    }

    // One trace per call that ran (the bad arguments and the unserved draft ran nothing), each as the client.
    const mine = traces().filter((trace) => trace.principal.startsWith('mcp:'));
    expect(mine).toHaveLength(4);
    expect(new Set(mine.map((trace) => trace.principal))).toEqual(new Set(['mcp:test-client-1']));
    expect(mine.map((trace) => trace.intent)).toContain('look at the secret key');
    const list = await fence(['trace', 'list']);
    expect(list.stdout.match(/look at the secret key/g)?.length).toBe(2);
  });

  it('tells the client when a program is approved while it serves', { timeout: 180_000 }, async () => {
    await Promise.all([saveProgram('greet', GREET), saveProgram('draft', DRAFT, false)]);
    const { client } = await connect();
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['greet']);
      const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
      expect((await fence(['programs', 'approve', 'draft@1'])).exitCode).toBe(0);
      await changed;
      expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['draft', 'greet']);
      const draft = (await client.callTool({ name: 'draft', arguments: {} })) as CallToolResult;
      expect(draft.structuredContent).toEqual({ result: 'draft' });
    } finally {
      await client.close();
    }
  });

  it("stops a program when the client cancels the call, and goes on serving", { timeout: 180_000 }, async () => {
    await saveProgram('spin', SPIN);
    const { client } = await connect();
    try {
      const controller = new AbortController();
      const call = client.callTool({ name: 'spin', arguments: { spin: true } }, undefined, { signal: controller.signal });
      setTimeout(() => controller.abort(), 500);
      await expect(call).rejects.toThrow();
      let stopped: ReturnType<typeof traces>[number] | undefined;
      while (!stopped) {
        stopped = traces().find((trace) => trace.principal.startsWith('mcp:'));
        if (!stopped) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(stopped.ok).toBe(false);
      expect(stopped.error?.kind).toBe('aborted');
      const after = (await client.callTool({ name: 'spin', arguments: {} })) as CallToolResult;
      expect(after.structuredContent).toEqual({ result: 'stopped spinning' });
    } finally {
      await client.close();
    }
  });

  it("declares a program's result shape as its outputSchema, and never sends a result that breaks it", { timeout: 180_000 }, async () => {
    await Promise.all([saveProgram('tally', TALLY), saveProgram('count_js', COUNT), saveProgram('greet', GREET)]);
    const { client } = await connect();
    try {
      const { tools } = await client.listTools();
      expect(tools.find((tool) => tool.name === 'tally')?.outputSchema).toMatchObject({
        type: 'object',
        properties: { total: { type: 'number' }, names: { type: 'array', items: { type: 'string' } }, first: { type: 'string' } },
        required: ['total', 'names'],
      });
      expect(tools.find((tool) => tool.name === 'count_js')?.outputSchema).toMatchObject({ type: 'object', properties: { result: { type: 'integer' } }, required: ['result'] });
      // No returns: line, so no promise about the shape.
      expect(tools.find((tool) => tool.name === 'greet')?.outputSchema).toBeUndefined();

      // The SDK's client checks structuredContent against outputSchema itself: these pass that check.
      const tally = (await client.callTool({ name: 'tally', arguments: { names: ['ada', 'bob'] } })) as CallToolResult;
      expect(tally.structuredContent).toEqual({ total: 2, names: ['ada', 'bob'], first: 'ada' });
      const count = (await client.callTool({ name: 'count_js', arguments: {} })) as CallToolResult;
      expect(count.isError).toBeFalsy();
      expect(count.structuredContent).toEqual({ result: 3 });

      const broken = (await client.callTool({ name: 'tally', arguments: { broken: true } })) as CallToolResult;
      expect(broken.isError).toBe(true);
      expect(broken.structuredContent).toBeUndefined();
      expect(text(broken)).toContain('The program returned a value that is not its declared type { total: number; names: string[]; first?: string }');
      expect(text(broken)).toMatch(/total: .*number/);
      const silent = (await client.callTool({ name: 'count_js', arguments: { silent: true } })) as CallToolResult;
      expect(silent.isError).toBe(true);
      expect(text(silent)).toContain('The program returned nothing, though it declares the type integer');
    } finally {
      await client.close();
    }
  });

  it('tells a client that asks how a long program is going, a tool call at a time', { timeout: 180_000 }, async () => {
    await saveProgram('glob_many', GLOB_MANY);
    const { client } = await connect();
    try {
      const told: { progress: number; message?: string }[] = [];
      // Enough calls to outlast a few of the 200 ms between notifications, few enough for a busy machine's wall clock.
      const result = (await client.callTool({ name: 'glob_many', arguments: { times: 800 } }, undefined, { onprogress: (progress) => told.push(progress) })) as CallToolResult;
      expect(result.structuredContent, text(result)).toEqual({ result: 800 });
      expect(told.length).toBeGreaterThan(0);
      // Coalesced, so far fewer than one a call, each counting the calls ended so far.
      expect(told.length).toBeLessThan(800);
      for (const [i, note] of told.entries()) {
        expect(note.message).toMatch(/^glob: ok \(\d+ tool calls? so far\)$/);
        expect(note.progress).toBeLessThanOrEqual(800);
        if (i > 0) expect(note.progress).toBeGreaterThan(told[i - 1]?.progress ?? Infinity);
      }
      // Without a progress token, nothing is sent and the call still answers.
      const quiet = (await client.callTool({ name: 'glob_many', arguments: { times: 5 } })) as CallToolResult;
      expect(quiet.structuredContent).toEqual({ result: 5 });
    } finally {
      await client.close();
    }
  });

  it("serves fence's own program-callable tools with --tools, each call admitted and traced as the client's", { timeout: 180_000 }, async () => {
    mkdirSync(join(cli.dirs.workspace, 'secret'));
    writeFileSync(join(cli.dirs.workspace, 'secret', 'key.txt'), 'hunter2\n');
    writeFileSync(join(cli.dirs.workspace, 'notes.txt'), 'alpha\nbeta\n');
    const outside = join(dirname(cli.dirs.workspace), 'outside.txt');
    writeFileSync(outside, 'OUTSIDE-THE-WORKSPACE\n');
    await saveProgram('greet', GREET);
    // The rule docs/mcp.md gives for keeping served calls in the workspace.
    const inWorkspace = '\n[[policy]]\nprincipal = "mcp:*"\ntool = "*"\nresource = "/**"\naction = "deny"\nreason = "clients stay in the workspace"\n';
    // An MCP server of the user's own: its tools are served too, under their fence names.
    const { command, args } = mcpTestServer();
    const server = `\n[mcp.servers.extra]\ncommand = ${JSON.stringify(command)}\nargs = ${JSON.stringify(args)}\n`;
    const { client, stderr } = await connect('Tool User', ['--tools'], inWorkspace + server);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(['greet', 'read', 'glob', 'grep', 'extra_echo']));
      // Only what programs may call: never the shell or the file writers.
      for (const name of ['shell', 'save', 'patch', 'append', 'python', 'ptc']) expect(names).not.toContain(name);
      expect(tools.find((tool) => tool.name === 'read')?.inputSchema).toMatchObject({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] });
      expect(stderr()).toMatch(/serving 1 approved program and \d+ tools over stdio: greet@1/);

      const notes = (await client.callTool({ name: 'read', arguments: { path: 'notes.txt' } })) as CallToolResult;
      expect(notes.isError).toBeFalsy();
      expect(text(notes)).toContain('alpha');
      const echoed = (await client.callTool({ name: 'extra_echo', arguments: { text: 'through two servers' } })) as CallToolResult;
      expect(echoed.isError).toBeFalsy();
      expect(text(echoed)).toContain('through two servers');
      const found = (await client.callTool({ name: 'glob', arguments: { pattern: '*.txt' } })) as CallToolResult;
      expect(found.structuredContent).toEqual({ result: ['notes.txt'] });

      const secret = (await client.callTool({ name: 'read', arguments: { path: 'secret/key.txt' } })) as CallToolResult;
      expect(secret.isError).toBe(true);
      expect(text(secret)).toContain('read denied');
      expect(JSON.stringify(secret)).not.toContain('hunter2');
      const far = (await client.callTool({ name: 'read', arguments: { path: outside } })) as CallToolResult;
      expect(far.isError).toBe(true);
      expect(text(far)).toContain('clients stay in the workspace');
      expect(JSON.stringify(far)).not.toContain('OUTSIDE-THE-WORKSPACE');
      const wrong = (await client.callTool({ name: 'read', arguments: { path: 7 } })) as CallToolResult;
      expect(wrong.isError).toBe(true);
      expect(text(wrong)).toContain('path');

      // Each call is a trace of one call, with its decision; `fence trace show` tells it.
      const id = secret._meta?.['fence/trace'];
      expect(typeof id).toBe('string');
      const shown = await fence(['trace', 'show', String(id)]);
      expect(shown.stdout).toContain('principal mcp:tool-user');
      expect(shown.stdout).toMatch(/#1 \+\d+ ms {2}read \{"path":"secret\/key.txt"\} {2}\[deny: /);
      expect(shown.stdout).toContain('return await read(args);');
      expect(shown.stdout).not.toContain('hunter2');
    } finally {
      await client.close();
    }
    const mine = traces().filter((trace) => trace.principal === 'mcp:tool-user');
    expect(mine.map((trace) => trace.calls[0]?.tool).sort()).toEqual(['extra_echo', 'glob', 'read', 'read', 'read']);
  });

  it('shows a served call with the program, the client and each admission decision in fence trace show', { timeout: 180_000 }, async () => {
    mkdirSync(join(cli.dirs.workspace, 'secret'));
    writeFileSync(join(cli.dirs.workspace, 'secret', 'key.txt'), 'hunter2\n');
    await saveProgram('peek', PEEK);
    const { client } = await connect('Claude Code');
    let id: unknown;
    try {
      const peek = (await client.callTool({ name: 'peek', arguments: {} })) as CallToolResult;
      id = peek._meta?.['fence/trace'];
    } finally {
      await client.close();
    }
    const shown = await fence(['trace', 'show', String(id)]);
    expect(shown.exitCode).toBe(0);
    const lines = shown.stdout.split('\n');
    expect(lines).toContain('program peek@1');
    expect(lines).toContain('principal mcp:claude-code · intent: look at the secret key');
    expect(lines).toContain('admitted: allow');
    expect(shown.stdout).toMatch(/read \{"path":"secret\/key.txt"\} {2}\[deny: .*secret/);
    expect(shown.stdout).not.toContain('hunter2');
  });

  it('prints a client config that starts it on the workspace, with nothing else a client would need to pass', { timeout: 180_000 }, async () => {
    // Nothing approved yet: the serve says where it looked.
    const empty = await connect();
    try {
      expect((await empty.client.listTools()).tools).toEqual([]);
      expect(empty.stderr()).toContain(`no approved program found in ${cli.dirs.home} (FENCE_HOME)`);
    } finally {
      await empty.client.close();
    }
    // A serve that served no call leaves no session behind (clients start one each time they start).
    const sessions = join(cli.dirs.home, 'sessions');
    expect(existsSync(sessions) ? readdirSync(sessions) : []).toEqual([]);
    await saveProgram('greet', GREET);
    const result = await fence(['mcp', 'serve', '-w', cli.dirs.workspace, '--print-config']);
    expect(result.exitCode).toBe(0);
    const config = JSON.parse(result.stdout) as { mcpServers: { fence: { command: string; args: string[]; env: Record<string, string> } } };
    expect(config.mcpServers.fence.command).toBe(process.execPath);
    expect(config.mcpServers.fence.args).toEqual([FENCE_BIN, 'mcp', 'serve', '-w', cli.dirs.workspace]);
    // Clients pass a server few variables of their own: the config carries where fence keeps its programs.
    expect(config.mcpServers.fence.env).toEqual({ FENCE_HOME: cli.dirs.home, XDG_CONFIG_HOME: env().XDG_CONFIG_HOME });
    // Started as a client starts it (the SDK adds only HOME, PATH and a few more of its own), it serves the program.
    const { command, args, env: passed } = config.mcpServers.fence;
    const started = new Client({ name: 'config-client', version: '1.0.0' });
    await started.connect(new StdioClientTransport({ command, args, env: passed, stderr: 'ignore' }));
    try {
      expect((await started.listTools()).tools.map((tool) => tool.name)).toEqual(['greet']);
    } finally {
      await started.close();
    }
    const withTools = JSON.parse((await fence(['mcp', 'serve', '-w', cli.dirs.workspace, '--tools', '--print-config'])).stdout) as typeof config;
    expect(withTools.mcpServers.fence.args).toEqual([FENCE_BIN, 'mcp', 'serve', '-w', cli.dirs.workspace, '--tools']);
  });
});
