import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { PolicyRule } from '../../src/policy/admit';
import { createProgramStore } from '../../src/ptc/program-store';
import { PYTHON_PRINCIPAL } from '../../src/ptc/python-bridge';
import type { ProgramCall, ProgramRun } from '../../src/ptc/run-program';
import { builtinTools } from '../../src/tools/builtin-tools';
import { toolDeclarations } from '../../src/tools/declarations';
import type { ToolSpec } from '../../src/tools/define-tool';
import { globTool } from '../../src/tools/glob';
import { grepTool } from '../../src/tools/grep';
import { createPtcTool, describeRun, eligibleTools, programTools, type PtcToolOptions } from '../../src/tools/ptc';
import { readTool } from '../../src/tools/read';
import { fakeTool } from '../support/fake-tool';
import { sampleTrace } from '../support/sample-trace';
import { useTempSession } from '../support/temp-session';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-ptc-');
const session = useTempSession();

const fileTools = [readTool, globTool, grepTool] as ToolSpec[];
const names = (tools: readonly ToolSpec[]) => tools.map((t) => t.name);

function programCall(fields: Partial<ProgramCall> = {}): ProgramCall {
  return { principal: 'program:0123456789ab', signal: new AbortController().signal, ...fields };
}

function ptcTool(options: Partial<PtcToolOptions> = {}) {
  return createPtcTool({ tools: fileTools, rules: [], session: { id: session().id, dir: session().dir }, ...options });
}

async function runPtc(code: string, options: Partial<PtcToolOptions> = {}, signal?: AbortSignal) {
  const tool = ptcTool(options);
  const result = await tool.execute(tool.parameters.parse({ code }), makeToolContext(workspace(), signal));
  return { result, run: result.details as ProgramRun | undefined };
}

async function notesWorkspace(): Promise<void> {
  const root = workspace();
  await mkdir(join(root, 'notes'));
  await mkdir(join(root, 'secrets'));
  await writeFile(join(root, 'notes', 'a.txt'), 'alpha\nTODO: one\n');
  await writeFile(join(root, 'notes', 'b.txt'), 'beta\nTODO: two\nTODO: three\n');
  await writeFile(join(root, 'secrets', 'key.txt'), 'hunter2\n');
}

const secretsRule: PolicyRule[] = [
  { tool: 'read', resource: 'secrets/**', principal: 'program:*', action: 'deny', reason: 'secrets stay out of programs' },
];

describe('eligibleTools', () => {
  it('keeps the tools whose callers include program: the read-only built-ins', () => {
    expect(names(eligibleTools(builtinTools()))).toEqual(['read', 'glob', 'grep', 'fetch']);
  });

  it('adds a tool named in the extra names, keeping the given order', () => {
    expect(names(eligibleTools(builtinTools(), ['save']))).toEqual(['save', 'read', 'glob', 'grep', 'fetch']);
    expect(names(eligibleTools(builtinTools(), ['shell', 'patch']))).toEqual(['shell', 'patch', 'read', 'glob', 'grep', 'fetch']);
  });

  it('keeps registered tools by their callers', () => {
    const both = fakeTool({ name: 'lookup' }).spec;
    const programOnly = fakeTool({ name: 'get_expenses', callers: ['program'] }).spec;
    const directOnly = fakeTool({ name: 'ask_user', callers: ['direct'] }).spec;
    expect(names(eligibleTools([...builtinTools(), both, programOnly, directOnly]))).toEqual(['read', 'glob', 'grep', 'fetch', 'lookup', 'get_expenses']);
  });

  it('never keeps ptc, even when named or callable from programs', () => {
    const ptc = ptcTool();
    const programPtc = fakeTool({ name: 'ptc', callers: ['program'] }).spec;
    expect(names(eligibleTools([...fileTools, ptc as ToolSpec], ['ptc']))).toEqual(['read', 'glob', 'grep']);
    expect(names(eligibleTools([programPtc], ['ptc']))).toEqual([]);
  });
});

describe('programTools', () => {
  it('has one function per tool', () => {
    expect(Object.keys(programTools(fileTools, makeToolContext(workspace()), []))).toEqual(['read', 'glob', 'grep']);
  });

  it("gives the program the tool's value", async () => {
    const tool = fakeTool({ execute: async (input) => ({ output: 'text for the model', value: { got: input.path } }) });
    const { fake } = programTools([tool.spec], makeToolContext(workspace()), []);
    expect(await fake?.({ path: 'a.txt' }, programCall())).toEqual({ decision: { action: 'allow' }, resource: 'a.txt', ok: true, value: { got: 'a.txt' } });
  });

  it('gives the text output when the tool has no value, and keeps falsy values', async () => {
    const textOnly = fakeTool({ name: 'text_only', execute: async () => ({ output: 'just text' }) });
    const zero = fakeTool({ name: 'zero', execute: async () => ({ output: 'zero', value: 0 }) });
    const map = programTools([textOnly.spec, zero.spec], makeToolContext(workspace()), []);
    expect(await map.text_only?.({ path: 'a' }, programCall())).toMatchObject({ ok: true, value: 'just text' });
    expect(await map.zero?.({ path: 'a' }, programCall())).toMatchObject({ ok: true, value: 0 });
  });

  it('turns an error result into ok false with the output as the error', async () => {
    const tool = fakeTool({ execute: async () => ({ output: 'a.txt does not exist', isError: true }) });
    const { fake } = programTools([tool.spec], makeToolContext(workspace()), []);
    expect(await fake?.({ path: 'a.txt' }, programCall())).toEqual({ decision: { action: 'allow' }, resource: 'a.txt', ok: false, error: 'a.txt does not exist' });
  });

  it('leaves out the resource when the tool has none', async () => {
    const tool = fakeTool({ resource: () => undefined });
    const outcome = await programTools([tool.spec], makeToolContext(workspace()), []).fake?.({ path: 'a' }, programCall());
    expect(outcome).not.toHaveProperty('resource');
  });

  it("admits each call with the program's principal and intent", async () => {
    const tool = fakeTool();
    const rules: PolicyRule[] = [{ tool: 'fake', principal: 'program:*', intent: '*secret*', action: 'deny', reason: 'no' }];
    const { fake } = programTools([tool.spec], makeToolContext(workspace()), rules);
    expect(await fake?.({ path: 'a' }, programCall({ intent: 'find the secret' }))).toEqual({
      decision: { action: 'deny', reason: 'no', rule: 0 },
      resource: 'a',
      ok: false,
      error: 'fake denied: no',
    });
    expect(await fake?.({ path: 'a' }, programCall({ intent: 'count notes' }))).toMatchObject({ ok: true });
    expect(await fake?.({ path: 'a' }, programCall({ principal: 'model', intent: 'find the secret' }))).toMatchObject({ ok: true });
    expect(tool.calls).toHaveLength(2);
  });

  it("runs the tool with the call's signal and a missing argument as an empty object", async () => {
    const tool = fakeTool({ parameters: z.object({}) });
    const controller = new AbortController();
    const { fake } = programTools([tool.spec], makeToolContext(workspace()), []);
    expect(await fake?.(undefined, programCall({ signal: controller.signal }))).toMatchObject({ ok: true });
    expect(tool.calls[0]?.input).toEqual({});
    expect(tool.calls[0]?.ctx.signal).toBe(controller.signal);
  });

  it('refuses invalid arguments with the validation message', async () => {
    const tool = fakeTool();
    const outcome = await programTools([tool.spec], makeToolContext(workspace()), []).fake?.({ file: 'a' }, programCall());
    expect(outcome).toMatchObject({ ok: false, decision: { action: 'allow' }, error: expect.stringMatching(/^Invalid input for fake:\n- path: /) });
    expect(tool.calls).toHaveLength(0);
  });

  it('shows the example as the caller writes calls: JavaScript in a program, keyword arguments in Python', async () => {
    const tool = fakeTool();
    const { fake } = programTools([tool.spec], makeToolContext(workspace()), []);
    const fromProgram = await fake?.({ file: 'a' }, programCall());
    expect(fromProgram).toMatchObject({ ok: false, error: expect.stringMatching(/\nWrite it like this:\nawait fake\(\{ path: "a\.txt" \}\)$/) });
    const fromPython = await fake?.({ file: 'a' }, programCall({ principal: PYTHON_PRINCIPAL }));
    expect(fromPython).toMatchObject({ ok: false, error: expect.stringMatching(/\nWrite it like this:\nfake\(path="a\.txt"\)$/) });
    expect(tool.calls).toHaveLength(0);
  });
});

describe('createPtcTool', () => {
  it('is a direct-only tool answering to ptc blocks, whose body is the code', () => {
    const tool = ptcTool();
    expect(tool.name).toBe('ptc');
    expect(tool.blockTypes).toEqual(['ptc']);
    expect(tool.block).toEqual({ content: 'code' });
    expect(tool.callers).toEqual(['direct']);
    expect(tool.mutating).toBe(false);
    expect(ptcTool({ tools: builtinTools().filter((t) => t.name === 'save') }).mutating).toBe(true);
  });

  it('shows the TypeScript declarations of the eligible tools in its instructions, bare for those the prompt describes', () => {
    const lookup = fakeTool({ name: 'lookup', callers: ['program'] }).spec;
    const tool = ptcTool({ tools: [...fileTools, lookup] });
    const described = (spec: ToolSpec) => spec.callers.includes('direct') && spec.blockTypes.length > 0;
    expect(tool.instructions).toContain(['The tools programs can call:', '```ts', toolDeclarations([...fileTools, lookup], { described }), '```'].join('\n'));
    // read has its own section of the prompt: its declaration repeats neither its description nor its parameters'.
    expect(tool.instructions).toContain('\ndeclare function read(args: { path: string }): Promise<string | string[]>;');
    expect(tool.instructions).not.toContain(`/** ${fileTools.find((spec) => spec.name === 'read')?.description} */`);
    // A tool only programs call is declared whole: this is where the model learns of it.
    expect(tool.instructions).toContain('/** The lookup tool, for tests. */\ndeclare function lookup(args: { path: string }): Promise<unknown>;');
    expect(tool.instructions).toContain('// intent:');
  });

  it('says when no tool can be called from programs', () => {
    const tool = ptcTool({ tools: [] });
    expect(tool.instructions).toContain('No tools can be called from programs in this session.');
    expect(tool.instructions).not.toContain('```ts');
  });

  it('runs a program that globs and reads files, and reports its output, result and trace', async () => {
    await notesWorkspace();
    const code = [
      '// intent: count the TODO lines of the notes',
      'const files = await glob({ pattern: "notes/*.txt" });',
      'const texts = await gather(files.map((path) => read({ path })));',
      'const counts = texts.map((text) => text.split("\\n").filter((line) => line.startsWith("TODO")).length);',
      'print(files.length + " files, " + counts.reduce((a, b) => a + b, 0) + " TODO lines");',
      'return Object.fromEntries(files.map((file, i) => [file, counts[i]]));',
    ].join('\n');
    const { result, run } = await runPtc(code, { rules: secretsRule });
    expect(result.isError).toBe(false);
    expect(result.value).toEqual({ 'notes/a.txt': 1, 'notes/b.txt': 2 });
    expect(run?.trace.ok).toBe(true);
    expect(result.output).toBe(
      ['2 files, 3 TODO lines', 'Result: {', '  "notes/a.txt": 1,', '  "notes/b.txt": 2', '}', `[3 tool calls; trace ${run?.trace.id}]`].join('\n'),
    );
    expect(run?.trace.intent).toBe('count the TODO lines of the notes');
    expect(run?.trace.calls.map((c) => [c.tool, c.resource, c.ok])).toEqual([
      ['glob', 'notes/*.txt', true],
      ['read', 'notes/a.txt', true],
      ['read', 'notes/b.txt', true],
    ]);
    expect(run?.trace.calls[0]?.result).toEqual(['notes/a.txt', 'notes/b.txt']);
    expect(run && existsSync(run.tracePath)).toBe(true);
    expect(run?.tracePath).toBe(join(session().dir, 'traces', `${run?.trace.id}.json`));
  });

  it('keeps denied files out of a program and counts the refused calls', async () => {
    await notesWorkspace();
    const code = [
      'const all = await glob({ pattern: "**/*.txt" });',
      'print(all.join(","));',
      'const found = await grep({ pattern: "hunter" });',
      'print(found.length + " matches");',
      'try { await read({ path: "notes/../secrets/key.txt" }); } catch (e) { print(e.message); }',
    ].join('\n');
    const { result, run } = await runPtc(code, { rules: secretsRule });
    expect(result.output).toBe(
      ['notes/a.txt,notes/b.txt', '0 matches', 'read denied: secrets stay out of programs', `[3 tool calls, 1 refused by policy; trace ${run?.trace.id}]`].join('\n'),
    );
    expect(result.output).not.toContain('hunter2');
    expect(result.isError).toBe(false);
    expect(run?.trace.calls[2]).toMatchObject({
      tool: 'read',
      resource: 'secrets/key.txt',
      decision: { action: 'deny', reason: 'secrets stay out of programs', rule: 0 },
      ok: false,
      error: 'read denied: secrets stay out of programs',
    });
  });

  it('reports a failed program with its kind, line and the output so far', async () => {
    await notesWorkspace();
    const code = ['print("start");', 'const text = await read({ path: "notes/a.txt" });', 'text.nothing.more;'].join('\n');
    const { result, run } = await runPtc(code);
    expect(result.isError).toBe(true);
    expect(result.value).toBeUndefined();
    const lines = result.output.split('\n');
    expect(lines[0]).toBe('start');
    expect(lines[1]).toMatch(/^Program failed \(thrown\) at line 3: TypeError: /);
    expect(lines[2]).toBe(`[1 tool call; trace ${run?.trace.id}]`);
    expect(lines).toHaveLength(3);
  });

  it('refuses an empty block without running anything', async () => {
    for (const code of ['', '  \n\t\n']) {
      const { result } = await runPtc(code);
      expect(result).toEqual({ output: 'The program was empty: write the JavaScript to run.', isError: true });
    }
    expect(existsSync(join(session().dir, 'traces'))).toBe(false);
  });

  it('ends an endless loop at the CPU limit and returns', async () => {
    const { result, run } = await runPtc('let n = 0;\nwhile (true) { n++; }', { limits: { cpuTimeMs: 300 } });
    expect(result.isError).toBe(true);
    expect(run?.trace.error?.kind).toBe('cpu_time');
    expect(result.output).toMatch(/^Program failed \(cpu_time\)( at line \d+)?: the program used more than its 300 ms of CPU time\n\[0 tool calls; trace /);
    expect(run?.trace.limits?.cpuTimeMs).toBe(300);
  });

  it('ends the run when the tool is aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const { result, run } = await runPtc('return 1;', {}, controller.signal);
    expect(result.isError).toBe(true);
    expect(run?.trace.error?.kind).toBe('aborted');
  });

  it('keeps store() values in the given store between programs', async () => {
    const store = createProgramStore(join(session().dir, 'program-store.json'));
    await runPtc('store("files", ["a", "b"]);', { store });
    const { result } = await runPtc('return load("files").length;', { store });
    expect(result.value).toBe(2);
    expect(JSON.parse(readFileSync(join(session().dir, 'program-store.json'), 'utf8'))).toEqual({ files: ['a', 'b'] });
  });
});

describe('describeRun', () => {
  const run = (overrides: Parameters<typeof sampleTrace>[0]): ProgramRun => ({ trace: sampleTrace(overrides), tracePath: '/t.json' });
  const call = { seq: 1, tool: 'read', args: {}, start: 0, durationMs: 1, ok: true };

  it('gives the output without its final line breaks, then the call count and trace', () => {
    expect(describeRun(run({ id: 't1', stdout: 'one\ntwo\n\n' }))).toBe('one\ntwo\n[0 tool calls; trace t1]');
  });

  it('leaves out an empty output and says when output was dropped', () => {
    expect(describeRun(run({ id: 't1', stdout: '' }))).toBe('[0 tool calls; trace t1]');
    expect(describeRun(run({ id: 't1', stdout: 'kept', droppedOutputBytes: 512 }))).toBe('kept\n[512 more bytes of output were dropped]\n[0 tool calls; trace t1]');
  });

  it('gives a result as pretty JSON, including falsy results', () => {
    expect(describeRun(run({ id: 't1', stdout: '', result: { a: [1] } }))).toBe('Result: {\n  "a": [\n    1\n  ]\n}\n[0 tool calls; trace t1]');
    expect(describeRun(run({ id: 't1', stdout: '', result: 0 }))).toBe('Result: 0\n[0 tool calls; trace t1]');
    expect(describeRun(run({ id: 't1', stdout: '', result: null }))).toBe('Result: null\n[0 tool calls; trace t1]');
  });

  it('gives an error with its line when known', () => {
    expect(describeRun(run({ id: 't1', stdout: 'so far\n', ok: false, error: { kind: 'thrown', message: 'Error: boom', line: 4 } }))).toBe(
      'so far\nProgram failed (thrown) at line 4: Error: boom\n[0 tool calls; trace t1]',
    );
    expect(describeRun(run({ id: 't1', stdout: '', ok: false, error: { kind: 'wall_time', message: 'too slow' } }))).toBe(
      'Program failed (wall_time): too slow\n[0 tool calls; trace t1]',
    );
  });

  it('counts calls, and the ones policy refused or asked about', () => {
    const calls = [
      { ...call, seq: 1, decision: { action: 'allow' as const } },
      { ...call, seq: 2, decision: { action: 'deny' as const, reason: 'no' }, ok: false },
      { ...call, seq: 3, decision: { action: 'ask' as const, reason: 'ask' }, ok: false },
      { ...call, seq: 4, decision: { action: 'allow' as const, rule: 0 }, ok: false, error: 'missing' },
    ];
    expect(describeRun(run({ id: 't1', stdout: '', calls: calls.slice(0, 1) }))).toBe('[1 tool call; trace t1]');
    expect(describeRun(run({ id: 't1', stdout: '', calls }))).toBe('[4 tool calls, 2 refused by policy; trace t1]');
  });
});
