import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolUse } from '../../src/parse/tool-use';
import { defineTool, type ToolSpec } from '../../src/tools/define-tool';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { blockInput, runToolUse } from '../../src/tools/run-tool-use';
import { saveTool } from '../../src/tools/save';
import { makeTempWorkspace, makeToolContext } from '../support/tool-context';

/** Echoes its body; answers to `echo` and `say`. */
const echoTool = defineTool({
  name: 'echo',
  description: 'Echo the body.',
  instructions: 'Echoes.',
  example: { text: 'hello' },
  blockTypes: ['echo', 'say'],
  parameters: z.object({ text: z.string() }),
  block: { content: 'text' },
  callers: ['direct'],
  mutating: false,
  execute: async ({ text }) => ({ output: text, value: text }),
});

/** Two positional args, both required; reports what it received. */
const copyTool = defineTool({
  name: 'copy',
  description: 'Copy a file.',
  instructions: 'Copies.',
  example: { from: 'from.txt', to: 'to.txt' },
  blockTypes: ['copy'],
  parameters: z.object({ from: z.string().min(1), to: z.string().min(1) }),
  block: { args: ['from', 'to'] },
  callers: ['direct'],
  mutating: true,
  execute: async ({ from, to }) => ({ output: `${from} -> ${to}` }),
});

const boomTool = defineTool({
  name: 'boom',
  description: 'Always throws.',
  instructions: 'Throws.',
  example: {},
  blockTypes: ['boom'],
  parameters: z.object({}),
  block: {},
  callers: ['direct'],
  mutating: false,
  execute: async () => {
    throw new Error('the disk is on fire');
  },
});

/** Prints `count` numbered lines and reports failure, as a failing command with long output would. */
const linesTool = defineTool({
  name: 'lines',
  description: 'Print numbered lines.',
  instructions: 'Prints.',
  example: { count: 3 },
  blockTypes: ['lines'],
  parameters: z.object({ count: z.coerce.number().int() }),
  block: { args: ['count'] },
  callers: ['direct'],
  mutating: false,
  execute: async ({ count }) => ({ output: Array.from({ length: count }, (_, i) => `line ${i + 1}`).join('\n'), isError: true }),
});

const registry = new ToolRegistry([echoTool, copyTool, boomTool, linesTool, readTool] as ToolSpec[]);

function markdown(tool: string, args: string[] = [], content = ''): ToolUse {
  return { tool, args, content, format: 'markdown', start: 0, end: 0 };
}

let workspace: string;
let outputsDir: string;
beforeEach(async () => {
  workspace = await makeTempWorkspace('fence-run-tool-');
  outputsDir = join(workspace, '.outputs');
  await mkdir(outputsDir);
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

const run = (use: ToolUse, limits?: { maxChars: number; headChars: number; tailChars: number }) =>
  runToolUse(use, registry, makeToolContext(workspace), { outputsDir, ...(limits ? { limits } : {}) });

describe('runToolUse', () => {
  it('runs the tool a markdown tag names, by any of its tags', async () => {
    expect(await run(markdown('say', [], 'hi there'))).toEqual({ tool: 'echo', decision: { action: 'allow' }, result: { output: 'hi there', value: 'hi there' } });
  });

  it('looks a native use up by tool name and takes its kwargs as input', async () => {
    const use: ToolUse = { tool: 'copy', args: [], content: '', kwargs: { from: 'a', to: 'b' }, format: 'tool', callId: 'c1', start: 0, end: 0 };
    expect(await run(use)).toMatchObject({ tool: 'copy', result: { output: 'a -> b' } });
    const byTag: ToolUse = { tool: 'say', args: [], content: '', kwargs: { text: 'x' }, format: 'tool', callId: 'c2', start: 0, end: 0 };
    expect(await run(byTag)).toEqual({
      tool: 'say',
      result: { output: 'There is no tool named "say". The tools are: echo, copy, boom, lines, read.', isError: true },
    });
  });

  it('looks an XML use up by any of its tags, mapping args and body as in markdown', async () => {
    const xml = (tool: string, args: string[], content: string): ToolUse => ({ tool, args, content, format: 'xml', start: 0, end: 0 });
    expect(await run(xml('say', [], 'hi there'))).toEqual({ tool: 'echo', decision: { action: 'allow' }, result: { output: 'hi there', value: 'hi there' } });
    expect(await run(xml('copy', ['a.txt', 'my', 'b.txt'], ''))).toMatchObject({ tool: 'copy', result: { output: 'a.txt -> my b.txt' } });
  });

  it('answers an unknown tag with an error result naming it and the tools of the format', async () => {
    const outcome = await run(markdown('teleport', ['mars']));
    expect(outcome).toEqual({
      tool: 'teleport',
      result: { output: 'There is no tool named "teleport". The tools are: echo, copy, boom, lines, read.', isError: true },
    });
  });

  it('lists only the tools the model may call in the format of the use', async () => {
    const programOnly = defineTool({ ...echoTool, name: 'lookup', blockTypes: [], callers: ['program'] });
    const nativeOnly = defineTool({ ...echoTool, name: 'ping', blockTypes: [], callers: ['direct'] });
    const tools = new ToolRegistry([echoTool, programOnly, nativeOnly, readTool] as ToolSpec[]);
    const unknown = async (format: ToolUse['format']) =>
      (await runToolUse({ tool: 'nope', args: [], content: '', format, start: 0, end: 0 }, tools, makeToolContext(workspace), { outputsDir })).result.output;
    expect(await unknown('markdown')).toBe('There is no tool named "nope". The tools are: echo, read.');
    expect(await unknown('xml')).toBe('There is no tool named "nope". The tools are: echo, read.');
    expect(await unknown('tool')).toBe('There is no tool named "nope". The tools are: echo, ping, read.');
  });

  it('answers invalid input with the problems and the example', async () => {
    const outcome = await run(markdown('copy', ['only-one.txt']));
    expect(outcome.tool).toBe('copy');
    expect(outcome.result.isError).toBe(true);
    const lines = outcome.result.output.split('\n');
    expect(lines[0]).toBe('Invalid input for copy:');
    expect(lines.some((line) => line.startsWith('- to:'))).toBe(true);
    expect(lines.some((line) => line.startsWith('- from:'))).toBe(false);
    expect(outcome.result.output.endsWith('Write it like this:\n```copy from.txt to.txt\n```')).toBe(true);
  });

  it('writes the example of an invalid-input error in the format of the use', async () => {
    const xml: ToolUse = { tool: 'copy', args: ['only-one.txt'], content: '', format: 'xml', start: 0, end: 0 };
    expect((await run(xml)).result.output.endsWith('Write it like this:\n<tool-use><copy args="from.txt to.txt"/></tool-use>')).toBe(true);
    const native: ToolUse = { tool: 'copy', args: [], content: '', kwargs: { from: 'a' }, format: 'tool', callId: 'c1', start: 0, end: 0 };
    expect((await run(native)).result.output.endsWith('Write it like this:\n{"from":"from.txt","to":"to.txt"}')).toBe(true);
  });

  it('turns a throwing tool into an error result', async () => {
    expect(await run(markdown('boom'))).toEqual({ tool: 'boom', decision: { action: 'allow' }, result: { output: 'boom failed: the disk is on fire', isError: true } });
  });

  it('passes an output within the limit through whole, saving nothing', async () => {
    const outcome = await run(markdown('lines', ['3']));
    expect(outcome).toEqual({ tool: 'lines', decision: { action: 'allow' }, result: { output: 'line 1\nline 2\nline 3', isError: true } });
    expect(readdirSync(outputsDir)).toEqual([]);
  });

  it('cuts a long output to head and tail and saves the whole text', async () => {
    const outcome = await run(markdown('lines', ['500']), { maxChars: 400, headChars: 100, tailChars: 100 });
    const whole = Array.from({ length: 500 }, (_, i) => `line ${i + 1}`).join('\n');

    const { output, isError } = outcome.result;
    expect(isError).toBe(true);
    expect(output.startsWith('line 1\nline 2\n')).toBe(true);
    expect(output).toMatch(/\n\[… \d+ lines \(\d+ characters\) left out …\]\n/);
    expect(output).toContain('line 499\nline 500\n');
    expect(output).not.toContain('line 250\n');
    expect(output.length).toBeLessThan(400);

    const path = outcome.fullOutputPath;
    expect(path).toBeDefined();
    expect(readdirSync(outputsDir)).toHaveLength(1);
    expect(path?.startsWith(`${outputsDir}/`)).toBe(true);
    expect(readFileSync(path!, 'utf8')).toBe(whole);
    expect(output.endsWith(`\nThe full output is in ${path}.`)).toBe(true);
  });

  it('says so when the full output cannot be saved', async () => {
    await rm(outputsDir, { recursive: true });
    const outcome = await run(markdown('lines', ['500']), { maxChars: 400, headChars: 100, tailChars: 100 });
    expect(outcome.fullOutputPath).toBeUndefined();
    expect(outcome.result.output.endsWith('\nThe full output could not be saved.')).toBe(true);
  });

  it('maps a read block with its path in the body onto the tool (integration)', async () => {
    const outcome = await run(markdown('read', [], '  missing.txt \n'));
    expect(outcome.tool).toBe('read');
    expect(outcome.result.output).toContain('missing.txt');
    expect(outcome.result.output).not.toContain('Invalid input');
  });
});

describe('blockInput', () => {
  it('fills the args in order', () => {
    expect(blockInput(copyTool as ToolSpec, markdown('copy', ['a.txt', 'b.txt']))).toEqual({ from: 'a.txt', to: 'b.txt' });
  });

  it('joins extra words into the last arg', () => {
    expect(blockInput(copyTool as ToolSpec, markdown('copy', ['a.txt', 'my', 'notes.txt']))).toEqual({ from: 'a.txt', to: 'my notes.txt' });
    expect(blockInput(readTool as ToolSpec, markdown('read', ['My', 'Documents/a b.txt']))).toEqual({ path: 'My Documents/a b.txt' });
  });

  it('leaves missing args out', () => {
    expect(blockInput(copyTool as ToolSpec, markdown('copy', ['a.txt']))).toEqual({ from: 'a.txt' });
    expect(blockInput(copyTool as ToolSpec, markdown('copy', [], 'ignored body'))).toEqual({});
  });

  it('puts the body into the content parameter as it is', () => {
    const body = '  indented\n\ntext  \n';
    expect(blockInput(saveTool as ToolSpec, markdown('save', ['notes.md'], body))).toEqual({ path: 'notes.md', content: body });
    expect(blockInput(echoTool as ToolSpec, markdown('echo', [], ''))).toEqual({ text: '' });
  });

  it('trims a body that stands in for a positional arg', () => {
    expect(blockInput(readTool as ToolSpec, markdown('read', [], '\n  src/app.ts  \n'))).toEqual({ path: 'src/app.ts' });
  });

  it('lets an arg win over the body', () => {
    expect(blockInput(readTool as ToolSpec, markdown('read', ['a.txt'], 'b.txt'))).toEqual({ path: 'a.txt' });
  });
});
