import { DEFAULT_VM_LIMITS } from '../../src/program-vm/run-in-vm';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FenceConfig } from '../../src/config/config';
import { DEFAULT_PTC_CONFIG, type CommandToolConfig, type PtcConfig } from '../../src/config/config-schema';
import type { PolicyRule } from '../../src/policy/admit';
import type { ProgramRun } from '../../src/ptc/run-program';
import { buildToolset, sandboxLimits } from '../../src/session/toolset';
import type { ToolSpec } from '../../src/tools/define-tool';
import { useTempSession } from '../support/temp-session';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-toolset-');
const session = useTempSession();

/** Prints `{ id, name }` for the `id` it reads on stdin. */
const LOOKUP_SCRIPT = `
let text = '';
process.stdin.on('data', (chunk) => (text += chunk));
process.stdin.on('end', () => {
  const { id } = JSON.parse(text);
  console.log(JSON.stringify({ id, name: id === 'e1' ? 'Ada' : 'unknown' }));
});
`;

async function lookupScript(): Promise<CommandToolConfig> {
  await mkdir(join(workspace(), 'tools'), { recursive: true });
  await writeFile(join(workspace(), 'tools', 'lookup.js'), LOOKUP_SCRIPT);
  return {
    description: 'Look up an employee by id',
    command: [process.execPath, 'tools/lookup.js'],
    parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    returns: '{ id: string; name: string }',
  };
}

function config(fields: { tools?: Record<string, CommandToolConfig>; policy?: PolicyRule[]; ptc?: Partial<PtcConfig> } = {}): FenceConfig {
  return { toolFormat: 'markdown', models: {}, mcpServers: {}, tools: fields.tools ?? {}, policy: fields.policy ?? [], ptc: { ...DEFAULT_PTC_CONFIG, ...fields.ptc }, sandbox: { writable: [], denyRead: [], network: false, passEnv: [], ignored: [] }, sources: [] };
}

const names = (tools: readonly ToolSpec[]) => tools.map((t) => t.name);
const sessionRef = () => ({ id: session().id, dir: session().dir });

/** Runs `code` with the toolset's ptc tool in the workspace. */
async function runWith(tools: readonly ToolSpec[], code: string) {
  const ptc = tools.find((t) => t.name === 'ptc');
  if (!ptc) throw new Error('no ptc tool');
  const result = await ptc.execute(ptc.parameters.parse({ code }), makeToolContext(workspace()));
  return { result, run: result.details as ProgramRun };
}

describe('sandboxLimits', () => {
  it('maps the defaults of [ptc] to bytes and milliseconds: the sandbox defaults, exactly', () => {
    expect(sandboxLimits(DEFAULT_PTC_CONFIG)).toEqual({
      memoryBytes: 64 * 1024 * 1024,
      cpuTimeMs: 10_000,
      wallTimeMs: 30_000,
      stackBytes: 256 * 1024,
      maxToolCalls: 1000,
      maxConcurrentCalls: 16,
      maxOutputBytes: 1024 * 1024,
    });
    expect(sandboxLimits(DEFAULT_PTC_CONFIG)).toEqual(DEFAULT_VM_LIMITS);
  });

  it('maps MB, seconds (fractions too) and KB', () => {
    const ptc: PtcConfig = {
      ...DEFAULT_PTC_CONFIG,
      memoryMb: 32,
      cpuTimeSeconds: 0.5,
      wallTimeSeconds: 2.25,
      stackKb: 128,
      maxToolCalls: 7,
      maxConcurrentCalls: 3,
      maxOutputKb: 4,
      storeMaxKb: 1,
    };
    expect(sandboxLimits(ptc)).toEqual({
      memoryBytes: 32 * 1024 * 1024,
      cpuTimeMs: 500,
      wallTimeMs: 2250,
      stackBytes: 128 * 1024,
      maxToolCalls: 7,
      maxConcurrentCalls: 3,
      maxOutputBytes: 4096,
    });
  });
});

describe('buildToolset', () => {
  it('lists the built-ins, then the registered tools, then ptc', async () => {
    const lookup = await lookupScript();
    const toolset = buildToolset(config({ tools: { lookup, notify: { description: 'Notify someone', command: ['true'], callers: ['direct'] } } }), sessionRef());
    expect(names(toolset.tools)).toEqual(['shell', 'python', 'save', 'append', 'patch', 'read', 'glob', 'grep', 'fetch', 'plan', 'lookup', 'notify', 'ptc']);
  });

  it('makes the read-only built-ins and the program-callable registered tools eligible', async () => {
    const lookup = await lookupScript();
    const toolset = buildToolset(
      config({
        tools: {
          lookup,
          notify: { description: 'Notify someone', command: ['true'], callers: ['direct'] },
          batch: { description: 'Only for programs', command: ['true'], callers: ['program'] },
        },
      }),
      sessionRef(),
    );
    expect(names(toolset.eligible)).toEqual(['read', 'glob', 'grep', 'fetch', 'lookup', 'batch']);
    const ptc = toolset.tools.at(-1);
    expect(ptc?.instructions).toContain('declare function lookup(args: { id: string }): Promise<{ id: string; name: string }>;');
    expect(ptc?.instructions).toContain('declare function batch(');
    expect(ptc?.instructions).not.toContain('declare function notify(');
    expect(ptc?.instructions).not.toContain('declare function save(');
    expect(ptc?.mutating).toBe(false);
  });

  it('adds the built-ins that [ptc] eligible names', () => {
    const toolset = buildToolset(config({ ptc: { eligible: ['save'] } }), sessionRef());
    expect(names(toolset.eligible)).toEqual(['save', 'read', 'glob', 'grep', 'fetch']);
    const ptc = toolset.tools.at(-1);
    expect(ptc?.instructions).toContain('declare function save(');
    expect(ptc?.mutating).toBe(true);
  });

  it('maps the limits and passes the rules through', () => {
    const policy: PolicyRule[] = [{ tool: 'read', resource: 'secrets/**', principal: 'program:*', action: 'deny' }];
    const ptc: Partial<PtcConfig> = { memoryMb: 48, cpuTimeSeconds: 2, stackKb: 256, maxLiveSandboxes: 3, totalMemoryMb: 256 };
    const toolset = buildToolset(config({ policy, ptc }), sessionRef());
    expect(toolset.budget.limits).toEqual({ maxLive: 3, memoryBytes: 256 * 1024 * 1024 });
    expect(toolset.limits).toEqual(sandboxLimits({ ...DEFAULT_PTC_CONFIG, ...ptc }));
    expect(toolset.limits).toMatchObject({ memoryBytes: 48 * 1024 * 1024, cpuTimeMs: 2000, stackBytes: 256 * 1024 });
    expect(toolset.rules).toBe(policy);
  });

  it('gives the ptc tool the registered tools, the rules, the limits and a store in the session folder', async () => {
    const lookup = await lookupScript();
    await writeFile(join(workspace(), 'notes.txt'), 'hello\n');
    const policy: PolicyRule[] = [{ tool: 'read', resource: 'notes.txt', principal: 'program:*', action: 'deny', reason: 'not the notes' }];
    const { tools } = buildToolset(config({ tools: { lookup }, policy }), sessionRef());
    const code = [
      'const person = await lookup({ id: "e1" });',
      'store("person", person);',
      'try { await read({ path: "notes.txt" }); } catch (e) { print(e.message); }',
      'return person.name;',
    ].join('\n');
    const { result, run } = await runWith(tools, code);
    expect(result.isError).toBe(false);
    expect(result.value).toBe('Ada');
    expect(run.trace.stdout).toBe('read denied: not the notes\n');
    expect(run.trace.calls.map((c) => [c.tool, c.decision?.action])).toEqual([
      ['lookup', 'allow'],
      ['read', 'deny'],
    ]);
    expect(run.trace.limits).toEqual(sandboxLimits(DEFAULT_PTC_CONFIG));
    expect(run.tracePath).toBe(join(session().dir, 'traces', `${run.trace.id}.json`));
    expect(JSON.parse(readFileSync(join(session().dir, 'program-store.json'), 'utf8'))).toEqual({ person: { id: 'e1', name: 'Ada' } });
  });

  it('runs programs under the configured limits and store cap', async () => {
    const { tools } = buildToolset(config({ ptc: { cpuTimeSeconds: 0.3, storeMaxKb: 1 } }), sessionRef());
    const full = await runWith(tools, 'try { store("big", "x".repeat(2000)); } catch (e) { return e.message; }');
    expect(full.result.value).toBe('store is full: it may hold 1 KiB of JSON in a session');
    const loop = await runWith(tools, 'while (true) {}');
    expect(loop.result.isError).toBe(true);
    expect(loop.run.trace.error).toMatchObject({ kind: 'cpu_time', message: 'the program used more than its 300 ms of CPU time' });
  });
});
