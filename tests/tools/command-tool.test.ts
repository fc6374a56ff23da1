import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CommandToolConfig } from '../../src/config/config';
import { bubblewrapSandbox, offPolicy, sandboxSupport } from '../../src/os-sandbox/os-sandbox';
import { createCommandTool } from '../../src/tools/command-tool';
import type { ToolSpec } from '../../src/tools/define-tool';
import { renderCall } from '../../src/tools/notation';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';
import { isAlive } from '../support/bash-sessions';

const workspace = useTempWorkspace('fence-command-tool-');

/** Writes `tools/<name>.js` in the workspace and makes a tool that runs it with node. */
async function scriptTool(name: string, source: string, extra: Partial<CommandToolConfig> = {}): Promise<ToolSpec> {
  await mkdir(join(workspace(), 'tools'), { recursive: true });
  await writeFile(join(workspace(), 'tools', `${name}.js`), source);
  return createCommandTool(name, { description: `The ${name} tool`, command: [process.execPath, `tools/${name}.js`], ...extra });
}

function run(tool: ToolSpec, input: Record<string, unknown> = {}, signal?: AbortSignal) {
  return tool.execute(tool.parameters.parse(input), makeToolContext(workspace(), signal));
}

/** Reads all of stdin, then calls `body(args)` and prints its JSON. */
const echoArgs = `
let text = '';
process.stdin.on('data', (chunk) => (text += chunk));
process.stdin.on('end', () => {
  const args = JSON.parse(text);
  console.log(JSON.stringify({ args, cwd: process.cwd() }));
});
`;

/** Resolves once `pid` has ended; fails the test after a generous while. */
async function processGone(pid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (!(isAlive(pid))) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`process ${pid} is still running`);
}

describe('createCommandTool', () => {
  it('passes the arguments as JSON on stdin and returns the JSON it prints', async () => {
    const tool = await scriptTool('get_expenses', echoArgs, {
      parameters: { type: 'object', properties: { id: { type: 'string' }, year: { type: 'integer' } }, required: ['id'] },
    });
    const result = await run(tool, { id: 'e1', year: 2024 });
    expect(result.isError).toBeUndefined();
    expect(result.value).toEqual({ args: { id: 'e1', year: 2024 }, cwd: workspace() });
    expect(result.output).toBe(JSON.stringify(result.value, null, 2));
  });

  it('validates arguments against the JSON schema, and takes any object without one', async () => {
    const strict = createCommandTool('t', {
      description: 'd',
      command: ['x'],
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    });
    expect(strict.parameters.safeParse({}).success).toBe(false);
    expect(strict.parameters.safeParse({ id: 3 }).success).toBe(false);
    expect(strict.parameters.safeParse({ id: 'e1' }).success).toBe(true);
    const loose = createCommandTool('t', { description: 'd', command: ['x'] });
    expect(loose.parameters.parse({ anything: [1, 2] })).toEqual({ anything: [1, 2] });
  });

  it('refuses a parameters schema that is not an object schema', () => {
    expect(() => createCommandTool('t', { description: 'd', command: ['x'], parameters: { type: 'string' } })).toThrow(/type "object"/);
  });

  it('describes itself: callers, returns, resource, and placeholder arguments as example', () => {
    const tool = createCommandTool('get_expenses', {
      description: 'Expense records of one employee',
      command: ['x'],
      parameters: { type: 'object', properties: { id: { type: 'string' }, note: { type: 'string' } }, required: ['id'] },
      callers: ['program'],
      returns: 'Expense[]',
    });
    expect(tool).toMatchObject({ name: 'get_expenses', description: 'Expense records of one employee', callers: ['program'], mutating: false, returns: 'Expense[]', blockTypes: [] });
    expect(tool.example).toEqual({ id: '...' });
    expect(renderCall(tool, tool.example, 'program')).toBe('await get_expenses({ id: "..." })');
    expect(renderCall(tool, tool.example, 'python')).toBe('get_expenses(id="...")');
    expect(tool.instructions).toBe('Call it from a program: await get_expenses({ id: "..." }). It returns Expense[].');
    expect(tool.resource?.({ id: 'e1', note: 'a b' }, makeToolContext(workspace()))).toBe('{"id":"e1","note":"a b"}');
    const both = createCommandTool('weather', { description: 'd', command: ['x'], parameters: { type: 'object', properties: { days: { type: 'integer' } } } });
    expect(both.callers).toEqual(['direct', 'program']);
    expect(both.returns).toBeUndefined();
    expect(both.example).toEqual({ days: 1 });
    expect(both.instructions).toBe(
      'Call it from a program: await weather({ days: 1 }). It can also be called directly as a tool with the same JSON arguments.',
    );
    expect(renderCall(both, both.example, 'tool')).toBe('{"days":1}');
    const direct = createCommandTool('ping', { description: 'd', command: ['x'], callers: ['direct'] });
    expect(direct.example).toEqual({});
    expect(direct.instructions).toBe('Call it as a tool with a JSON object of arguments: {}.');
  });

  it('picks example values from the schema: examples, defaults, enums, else a placeholder of the type', () => {
    const tool = createCommandTool('t', {
      description: 'd',
      command: ['x'],
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', examples: ['Oslo'] },
          units: { type: 'string', enum: ['metric', 'imperial'] },
          days: { type: 'integer', default: 3 },
          hourly: { type: 'boolean' },
          tags: { type: 'array' },
          where: { type: 'object' },
          label: { type: 'string' },
          extra: { type: 'string' },
        },
        required: ['city', 'units', 'days', 'hourly', 'tags', 'where', 'label'],
      },
    });
    expect(tool.example).toEqual({ city: 'Oslo', units: 'metric', days: 3, hourly: true, tags: [], where: {}, label: '...' });
    expect(tool.parameters.safeParse(tool.example).success).toBe(true);
  });

  it('runs in a minimal environment: secrets of the session stay out unless named', async () => {
    const tool = await scriptTool('show_env', 'console.log(JSON.stringify(process.env));', { env: ['FENCE_TEST_NAMED'] });
    process.env.FENCE_TEST_SECRET = 'hunter2';
    process.env.FENCE_TEST_NAMED = 'visible';
    try {
      const env = (await run(tool)).value as Record<string, string>;
      expect(env.FENCE_TEST_SECRET).toBeUndefined();
      expect(env.FENCE_TEST_NAMED).toBe('visible');
      expect(env.TERM).toBe('dumb');
      expect(env.PATH).toBe(process.env.PATH);
      expect(Object.keys(env).every((key) => ['PATH', 'HOME', 'LANG', 'TMPDIR', 'TERM', 'FENCE_TEST_NAMED'].includes(key))).toBe(true);
    } finally {
      delete process.env.FENCE_TEST_SECRET;
      delete process.env.FENCE_TEST_NAMED;
    }
  });

  it('runs in the configured folder, relative to the workspace', async () => {
    await mkdir(join(workspace(), 'sub'));
    const tool = await scriptTool('where', 'console.log(JSON.stringify(process.cwd()));', { command: [process.execPath, '../tools/where.js'], cwd: 'sub' });
    expect((await run(tool)).value).toBe(join(workspace(), 'sub'));
    const lost = await scriptTool('lost', 'console.log(1)', { cwd: 'missing' });
    expect(await run(lost)).toMatchObject({ isError: true, output: `lost: its working folder ${join(workspace(), 'missing')} does not exist` });
  });

  it('does not mind a command that never reads its stdin', async () => {
    const tool = await scriptTool('constant', 'console.log("[1, 2, 3]");');
    expect(await run(tool, { big: 'x'.repeat(200_000) })).toMatchObject({ value: [1, 2, 3] });
  });

  it('reports a non-zero exit with the end of stderr', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `log line ${i}`).join('\\n');
    const tool = await scriptTool('failing', `console.error("${lines}\\nunknown employee e9"); process.exit(3);`);
    const result = await run(tool);
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^failing failed with exit code 3:\n/);
    expect(result.output).toContain('unknown employee e9');
    expect(result.output).not.toContain('log line 5\n');
    expect(result.details).toMatchObject({ exitCode: 3 });
  });

  it('stops a command that runs past its timeout, with the processes it started', async () => {
    const tool = await scriptTool(
      'sleepy',
      `const { spawn } = require('node:child_process');
       const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
       require('node:fs').writeFileSync('child.pid', String(child.pid));
       setInterval(() => {}, 1000);`,
      { timeout: 1 },
    );
    const result = await run(tool);
    expect(result).toMatchObject({ isError: true, output: 'sleepy timed out after 1 s and was stopped' });
    await processGone(Number(await readFile(join(workspace(), 'child.pid'), 'utf8')));
  });

  it('runs a command to its end under a timeout longer than a timer can wait', async () => {
    // 1e9 s is past setTimeout's longest delay (~24.8 days), which Node turns into 1 ms.
    const slowish = await scriptTool('slowish', 'setTimeout(() => console.log("{}"), 200);', { timeout: 1e9 });
    expect(await run(slowish)).toMatchObject({ output: '{}' });
  });

  it('stops a command when the signal aborts', async () => {
    const tool = await scriptTool('endless', 'setInterval(() => {}, 1000);');
    const controller = new AbortController();
    const pending = run(tool, {}, controller.signal);
    controller.abort();
    expect(await pending).toMatchObject({ isError: true, output: 'endless was interrupted', details: { interrupted: true } });
    expect(await run(tool, {}, controller.signal)).toMatchObject({ isError: true, output: 'endless was interrupted before it started', details: { interrupted: true } });
  });

  it('reports output that is not JSON, and no output at all', async () => {
    const chatty = await scriptTool('chatty', 'console.log("Found 3 expenses: " + "x".repeat(500));');
    const result = await run(chatty);
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^chatty printed something that is not JSON: Found 3 expenses: x+$/);
    expect(result.output.length).toBeLessThan(260);
    const silent = await scriptTool('silent', '');
    expect(await run(silent)).toMatchObject({ isError: true, output: 'silent printed nothing; a tool must print one JSON value' });
  });

  it('stops a command that prints too much', async () => {
    const tool = await scriptTool('flood', 'const s = "x".repeat(1 << 20); for (let i = 0; i < 12; i++) process.stdout.write(s);');
    expect(await run(tool)).toMatchObject({ isError: true, output: 'flood printed more than 10 MB and was stopped' });
  });

  it('reports a command that does not exist', async () => {
    const tool = createCommandTool('typo', { description: 'd', command: ['nodee-not-installed', 'x.js'] });
    expect(await run(tool)).toMatchObject({ isError: true, output: 'typo: command "nodee-not-installed" not found' });
  });
});

describe('a command tool and the OS sandbox', () => {
  const support = sandboxSupport();
  const writer = `
const fs = require('node:fs');
let text = '';
process.stdin.on('data', (chunk) => (text += chunk));
process.stdin.on('end', () => {
  const { path } = JSON.parse(text);
  try {
    fs.writeFileSync(path, 'written');
    console.log(JSON.stringify('wrote'));
  } catch (error) {
    console.log(JSON.stringify(error.code));
  }
});
`;

  it.skipIf(support.kind === 'none')('runs inside the session’s sandbox, and outside it when its entry says sandbox = false', async () => {
    if (support.kind === 'none') return;
    // Outside /tmp: inside the sandbox /tmp is the session's own folder.
    const outside = await mkdtemp('/var/tmp/fence-command-tool-outside-');
    const sandbox = bubblewrapSandbox({ ...offPolicy(workspace()), mode: 'workspace-write', network: false }, support.path);
    try {
      const target = join(outside, 'note.txt');
      const ctx = { ...makeToolContext(workspace()), wrapInSandbox: sandbox.wrap };
      const inside = await scriptTool('write_note', writer);
      expect((await inside.execute(inside.parameters.parse({ path: target }), ctx)).value).toBe('EROFS');
      expect(existsSync(target)).toBe(false);
      expect((await inside.execute(inside.parameters.parse({ path: join(workspace(), 'note.txt') }), ctx)).value).toBe('wrote');
      const trusted = await scriptTool('write_note_anywhere', writer, { sandbox: false });
      expect((await trusted.execute(trusted.parameters.parse({ path: target }), ctx)).value).toBe('wrote');
      expect(await readFile(target, 'utf8')).toBe('written');
    } finally {
      sandbox.close();
      await rm(outside, { recursive: true, force: true });
    }
  });
});
