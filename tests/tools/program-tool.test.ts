import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildToolset } from '../../src/session/toolset';
import type { FenceConfig } from '../../src/config/config';
import { DEFAULT_PTC_CONFIG, type PtcConfig } from '../../src/config/config-schema';
import type { PolicyRule } from '../../src/policy/admit';
import { runProgram } from '../../src/ptc/run-program';
import { writeApproval } from '../../src/ptc/approvals';
import { approvedPrograms, codeHash, programRoots, saveProgram, writeRecord, type SavedProgram } from '../../src/ptc/saved-programs';
import type { ProgramRun } from '../../src/ptc/run-program';
import type { ProgramTrace } from '../../src/ptc/trace';
import type { ToolSpec } from '../../src/tools/define-tool';
import { invokeTool } from '../../src/tools/invoke-tool';
import { MAX_PROGRAM_DEPTH } from '../../src/tools/program-tool';
import { useTempSession } from '../support/temp-session';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-program-tool-');
const session = useTempSession();

function config(fields: { policy?: PolicyRule[]; ptc?: Partial<PtcConfig> } = {}): FenceConfig {
  return { toolFormat: 'markdown', models: {}, mcpServers: {}, tools: {}, policy: fields.policy ?? [], ptc: { ...DEFAULT_PTC_CONFIG, ...fields.ptc }, sandbox: { writable: [], denyRead: [], network: false, passEnv: [], ignored: [] }, sources: [] };
}

const sessionRef = () => ({ id: session().id, dir: session().dir });
const roots = () => programRoots(session().home, workspace());

/**
 * Runs `code` once with the session's `ptc` tool (declared defaults as its args), saves it as
 * `name` and approves it: the way a program becomes a tool, without the command line.
 */
async function approve(name: string, code: string, known: string[] = ['read', 'glob', 'grep']): Promise<SavedProgram> {
  const ptc = tool(buildToolset(config(), sessionRef()).tools, 'ptc');
  const result = await ptc.execute(ptc.parameters.parse({ code }), makeToolContext(workspace()));
  const { trace } = result.details as ProgramRun;
  expect(trace.error).toBeUndefined();
  return approveTrace(name, trace, known);
}

function approveTrace(name: string, trace: ProgramTrace, known: string[]): SavedProgram {
  const user = roots()[1];
  if (!user) throw new Error('no user root');
  const saved = saveProgram(roots(), user, name, trace, known);
  if ('error' in saved) throw new Error(saved.error);
  const { version, tools } = saved.record;
  const why = writeApproval(session().home, { scope: 'user', name, version, sha256: codeHash(saved.code), tools, approvedAt: new Date().toISOString() });
  if (why) throw new Error(why);
  return saved;
}

function toolsWith(fields: Parameters<typeof config>[0] = {}): ToolSpec[] {
  return buildToolset(config(fields), sessionRef(), [], approvedPrograms(roots(), session().home)).tools;
}

function tool(tools: readonly ToolSpec[], name: string): ToolSpec {
  const found = tools.find((t) => t.name === name);
  if (!found) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(', ')}`);
  return found;
}

async function call(spec: ToolSpec, input: unknown) {
  return spec.execute(spec.parameters.parse(input), makeToolContext(workspace()));
}

function traces(): ProgramTrace[] {
  const dir = join(session().dir, 'traces');
  return readdirSync(dir).map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as ProgramTrace);
}

const FIRST_LINE = [
  '// intent: give the first line of a file',
  '// param path: string = "a.txt" — the file',
  '// returns: string',
  'const text = await read({ path: args.path });',
  'return text.split("\\n")[0];',
].join('\n');

describe('an approved program as a tool', () => {
  it("has the declared parameters, the intent as its description, and returns the code's value", async () => {
    await writeFile(join(workspace(), 'a.txt'), 'alpha\nsecond\n');
    await writeFile(join(workspace(), 'b.txt'), 'beta\n');
    await approve('first_line', FIRST_LINE);
    const spec = tool(toolsWith(), 'first_line');
    expect(spec.description).toBe('Give the first line of a file (saved program first_line@1)');
    expect(spec.callers).toEqual(['direct', 'program']);
    expect(spec.mutating).toBe(false);
    expect(spec.returns).toBe('string');
    expect(z.toJSONSchema(spec.parameters, { io: 'input' })).toMatchObject({ properties: { path: { type: 'string', default: 'a.txt' } } });
    const result = await call(spec, { path: 'b.txt' });
    expect(result.isError).toBeFalsy();
    expect(result.value).toBe('beta');
    expect(result.output).toContain('Result: "beta"');
    // Defaults fill what the caller leaves out.
    expect((await call(spec, {})).value).toBe('alpha');
    const run = traces().find((t) => t.principal === 'program:first_line@1' && (t.args as { path: string }).path === 'b.txt');
    expect(run?.calls.map((c) => c.tool)).toEqual(['read']);
    expect(run?.program).toBe('first_line@1');
  });

  it('keeps in its trace how the call that ran it was admitted', async () => {
    await writeFile(join(workspace(), 'a.txt'), 'alpha\n');
    await approve('first_line', FIRST_LINE);
    const rules: PolicyRule[] = [{ tool: 'first_line', principal: 'mcp:*', action: 'allow' }];
    const { result } = await invokeTool(tool(toolsWith({ policy: rules }), 'first_line'), {}, makeToolContext(workspace()), { principal: 'mcp:some-client', rules });
    const { trace } = result.details as ProgramRun;
    expect(trace.admission).toEqual({ action: 'allow', rule: 0 });
    expect(trace.program).toBe('first_line@1');
    expect(traces().find((t) => t.id === trace.id)?.admission).toEqual({ action: 'allow', rule: 0 });
  });

  it('gives what the program printed when it returns nothing, and is callable from a program', async () => {
    await writeFile(join(workspace(), 'a.txt'), 'alpha\n');
    await approve('shout', '// intent: print a file loudly\nprint((await read({ path: "a.txt" })).toUpperCase().trim());');
    const tools = toolsWith();
    const ptc = tool(tools, 'ptc');
    const result = await ptc.execute(ptc.parameters.parse({ code: 'const said = await shout({});\nprint(`[${said}]`);' }), makeToolContext(workspace()));
    expect((result.details as ProgramRun).trace.stdout).toBe('[ALPHA\n]\n');
  });

  it('may call only the tools its record names', async () => {
    await writeFile(join(workspace(), 'a.txt'), 'alpha\n');
    const saved = await approve('lister', '// intent: list files\nconst files = await glob({ pattern: "*.txt" });\nreturn files;');
    expect(saved.record.tools).toEqual(['glob']);
    // A reviewer narrows what it may call: the record is what counts, not the session.
    saved.record.tools = [];
    writeRecord(saved.dir, saved.record);
    const result = await call(tool(toolsWith(), 'lister'), {});
    expect(result.isError).toBe(true);
    expect(result.output).toContain('lister@1 may call only the tools it was saved with (none), not glob');
    // Widening is not the reviewer's to do after approval: a record naming a tool the approval did not is not offered.
    saved.record.tools = ['glob', 'shell'];
    writeRecord(saved.dir, saved.record);
    expect(toolsWith().map((t) => t.name)).not.toContain('lister');
  });

  it('runs the code that was approved and listed, not what the file holds when it is called', async () => {
    await writeFile(join(workspace(), 'a.txt'), 'alpha\nsecond\n');
    const saved = await approve('first_line', FIRST_LINE);
    const spec = tool(toolsWith(), 'first_line');
    // The file is swapped after the session listed its programs.
    await writeFile(join(saved.dir, 'v1.js'), FIRST_LINE.replace('return text.split("\\n")[0];', 'return "swapped";'));
    const result = await call(spec, {});
    expect(result.isError).toBeFalsy();
    expect(result.value).toBe('alpha');
    // The next listing sees other code than the approved, and offers nothing.
    expect(toolsWith().map((t) => t.name)).not.toContain('first_line');
  });

  it('refuses to run a saved program that comes without an approval of its code', async () => {
    await writeFile(join(workspace(), 'a.txt'), 'alpha\n');
    const saved = await approve('first_line', FIRST_LINE);
    const [listed] = approvedPrograms(roots(), session().home);
    if (!listed?.approval) throw new Error('first_line was not offered');
    const unapproved = buildToolset(config(), sessionRef(), [], [{ ...listed, approval: undefined }]).tools;
    const stale = buildToolset(config(), sessionRef(), [], [{ ...listed, code: `${listed.code}\n// more` }]).tools;
    for (const tools of [unapproved, stale]) {
      const result = await call(tool(tools, 'first_line'), {});
      expect(result.isError).toBe(true);
      expect(result.output).toBe('first_line@1 was not run: its code is not the code you approved (fence programs approve first_line@1 after reviewing it)');
    }
    expect(saved.record.name).toBe('first_line');
    expect(traces().some((t) => t.principal === 'program:first_line@1')).toBe(false);
  });

  it('answers a tool its record names that the session lacks as a failed call', async () => {
    const code = [
      '// intent: use a tool that may be gone',
      '// param use: boolean = false',
      'if (!args.use) return "not used";',
      'try { await finance_get_members({}); } catch (e) { return e.message; }',
    ].join('\n');
    const { trace } = await runProgram({ code, tools: {}, session: sessionRef(), args: { use: false } });
    const saved = approveTrace('gone', trace, ['finance_get_members']);
    expect(saved.record.tools).toEqual(['finance_get_members']);
    const spec = tool(toolsWith(), 'gone');
    // A tool the session lacks might do anything: the program counts as mutating.
    expect(spec.mutating).toBe(true);
    expect((await call(spec, { use: true })).value).toBe('tool finance_get_members is not available in this session');
  });

  it('runs as program:<name>@<version>, so policy rules can target it', async () => {
    await writeFile(join(workspace(), 'a.txt'), 'alpha\n');
    await approve('first_line', FIRST_LINE);
    const tools = toolsWith({ policy: [{ tool: 'read', principal: 'program:first_line@*', action: 'deny', reason: 'not for this program' }] });
    const result = await call(tool(tools, 'first_line'), {});
    expect(result.isError).toBe(true);
    expect(result.output).toContain('not for this program');
  });

  it("runs as an outside caller's principal when one is given, and the programs it calls as themselves", async () => {
    await writeFile(join(workspace(), 'a.txt'), 'alpha\n');
    await approve('first_line', FIRST_LINE);
    const outer = ['// intent: call first_line', 'return await first_line({ path: "a.txt" });'].join('\n');
    const firstLine = async () => ({ decision: { action: 'allow' as const }, ok: true as const, value: 'alpha' });
    const { trace } = await runProgram({ code: outer, tools: { first_line: firstLine }, session: sessionRef() });
    approveTrace('outer', trace, ['first_line']);
    const tools = toolsWith({ policy: [{ tool: 'first_line', principal: 'mcp:*', action: 'deny', reason: 'not for clients' }] });
    const spec = tool(tools, 'outer');
    const result = await spec.execute(spec.parameters.parse({}), { ...makeToolContext(workspace()), principal: 'mcp:some-client' });
    expect(result.isError).toBe(true);
    expect(result.output).toContain('not for clients');
    expect(traces().some((t) => t.principal === 'mcp:some-client' && t.intent === 'call first_line')).toBe(true);

    // Without the rule, the inner program runs, as itself.
    const allowed = tool(toolsWith(), 'outer');
    const ran = await allowed.execute(allowed.parameters.parse({}), { ...makeToolContext(workspace()), principal: 'mcp:some-client' });
    expect(ran.value).toBe('alpha');
    expect(traces().some((t) => t.principal === 'program:first_line@1')).toBe(true);
  });

  it(`stops programs calling programs past ${MAX_PROGRAM_DEPTH} deep`, async () => {
    // Saved from a run that stopped at once; called with a depth, it calls itself.
    const code = [
      '// intent: call myself',
      '// param n: integer = 0',
      'if (args.n === 0) return 0;',
      'return 1 + (await nest({ n: args.n - 1 }));',
    ].join('\n');
    const { trace } = await runProgram({ code, tools: {}, session: sessionRef(), args: { n: 0 } });
    approveTrace('nest', trace, ['nest']);
    const spec = tool(toolsWith(), 'nest');
    const fits = await call(spec, { n: MAX_PROGRAM_DEPTH - 1 });
    expect(fits.value).toBe(MAX_PROGRAM_DEPTH - 1);
    const deep = await call(spec, { n: MAX_PROGRAM_DEPTH });
    expect(deep.isError).toBe(true);
    expect(deep.output).toContain(`saved programs may call each other only ${MAX_PROGRAM_DEPTH} deep`);
  });

  it('is mutating when a tool it may call is, and is left out when its name is taken', async () => {
    const { trace } = await runProgram({ code: '// intent: write a note\nreturn 1;', tools: {}, session: sessionRef() });
    approveTrace('writer', { ...trace, code: `${trace.code}\n// save({ path: "n.txt", content: "x" }) in a later version` }, ['save']);
    const readOnly = await approve('read', '// intent: shadow read\nreturn 2;');
    expect(readOnly.record.name).toBe('read');
    await approve('describe', '// intent: shadow describe\nreturn 3;');
    const toolset = buildToolset(config({ ptc: { eligible: ['save'] } }), sessionRef(), [], approvedPrograms(roots(), session().home));
    expect(tool(toolset.tools, 'writer').mutating).toBe(true);
    expect(toolset.problems).toEqual([
      'saved program describe@1 left out: another tool is named describe',
      'saved program read@1 left out: another tool is named read',
    ]);
  });
});
