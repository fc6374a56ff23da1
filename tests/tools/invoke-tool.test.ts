import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { PolicyRule } from '../../src/policy/admit';
import type { ToolSpec } from '../../src/tools/define-tool';
import { globTool } from '../../src/tools/glob';
import { grepTool } from '../../src/tools/grep';
import { invokeTool, type CallerPolicy } from '../../src/tools/invoke-tool';
import { readTool } from '../../src/tools/read';
import { fakeTool } from '../support/fake-tool';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-invoke-');
const program = 'program:0123456789ab';

function invoke(spec: ToolSpec, input: unknown, caller: Partial<CallerPolicy> = {}) {
  return invokeTool(spec, input, makeToolContext(workspace()), { principal: 'model', rules: [], ...caller });
}

/** `secrets/key.txt`, `secrets/deep/token.txt`, `data/notes.txt` and two ways into secrets through symlinks. */
async function workspaceWithSecrets(): Promise<void> {
  const root = workspace();
  await mkdir(join(root, 'secrets', 'deep'), { recursive: true });
  await mkdir(join(root, 'data'));
  await writeFile(join(root, 'secrets', 'key.txt'), 'hunter2 is the key\n');
  await writeFile(join(root, 'secrets', 'deep', 'token.txt'), 'hunter3 token\n');
  await writeFile(join(root, 'data', 'notes.txt'), 'hunter gatherer notes\n');
  await symlink(join(root, 'secrets', 'key.txt'), join(root, 'data', 'key-link.txt'));
  await symlink('../secrets', join(root, 'data', 'vault'));
}

const secretsForPrograms: PolicyRule[] = [
  { tool: 'read', resource: 'secrets/**', principal: 'program:*', action: 'deny', reason: 'secrets stay out of programs' },
];

describe('invokeTool: validation', () => {
  it('refuses invalid input with each problem and the example, without running the tool', async () => {
    const tool = fakeTool({ parameters: z.object({ path: z.string(), count: z.number() }) });
    const { decision, resource, result } = await invoke(tool.spec, { count: 'three' });
    expect(tool.calls).toHaveLength(0);
    expect(decision).toEqual({ action: 'allow' });
    expect(resource).toBeUndefined();
    expect(result.isError).toBe(true);
    const lines = result.output.split('\n');
    expect(lines[0]).toBe('Invalid input for fake:');
    expect(lines[1]).toMatch(/^- path: /);
    expect(lines[2]).toMatch(/^- count: /);
    expect(lines[3]).toBe('Write it like this:');
    expect(lines.slice(4).join('\n')).toBe('await fake({ path: "a.txt" })');
  });

  it("writes the example in the caller's notation, a program call by default", async () => {
    const example = async (notation?: CallerPolicy['notation']) => {
      const { result } = await invoke(readTool as ToolSpec, { path: 3 }, notation === undefined ? {} : { notation });
      expect(result.isError).toBe(true);
      return result.output.slice(result.output.indexOf('Write it like this:\n') + 'Write it like this:\n'.length);
    };
    expect(await example()).toBe('await read({ path: "src/app.ts" })');
    expect(await example('program')).toBe('await read({ path: "src/app.ts" })');
    expect(await example('python')).toBe('read(path="src/app.ts")');
    expect(await example('markdown')).toBe('```read src/app.ts\n```');
    expect(await example('xml')).toBe('<tool-use><read args="src/app.ts"/></tool-use>');
    expect(await example('tool')).toBe('{"path":"src/app.ts"}');
  });

  it('names the whole input when it is not an object', async () => {
    const tool = fakeTool();
    const { result } = await invoke(tool.spec, 'a.txt');
    expect(result.output).toMatch(/^Invalid input for fake:\n- input: /);
    expect(tool.calls).toHaveLength(0);
  });

  it('runs the tool with the parsed input, defaults filled in', async () => {
    const tool = fakeTool({ parameters: z.object({ path: z.string(), limit: z.number().default(10) }) });
    const { decision, resource, result } = await invoke(tool.spec, { path: 'a.txt' });
    expect(decision).toEqual({ action: 'allow' });
    expect(resource).toBe('a.txt');
    expect(result).toEqual({ output: 'done', value: { input: { path: 'a.txt', limit: 10 } } });
    expect(tool.calls.map((c) => c.input)).toEqual([{ path: 'a.txt', limit: 10 }]);
    expect(tool.calls[0]?.ctx.workspace).toBe(workspace());
  });
});

describe('invokeTool: admission', () => {
  it('refuses a call a deny rule matches, with its reason, without running the tool', async () => {
    const tool = fakeTool();
    const rules: PolicyRule[] = [{ tool: 'fake', resource: 'private/**', action: 'deny', reason: 'private files stay private' }];
    const { decision, resource, result } = await invoke(tool.spec, { path: 'private/a.txt' }, { rules });
    expect(tool.calls).toHaveLength(0);
    expect(decision).toEqual({ action: 'deny', reason: 'private files stay private', rule: 0 });
    expect(resource).toBe('private/a.txt');
    expect(result).toEqual({ output: 'fake denied: private files stay private', isError: true });

    const other = await invoke(tool.spec, { path: 'public/a.txt' }, { rules });
    expect(other.result.isError).toBeUndefined();
    expect(tool.calls).toHaveLength(1);
  });

  it('names the rule when a deny rule gives no reason', async () => {
    const tool = fakeTool();
    const rules: PolicyRule[] = [{ tool: 'other', action: 'allow' }, { tool: 'fake', action: 'deny' }];
    const { result } = await invoke(tool.spec, { path: 'a' }, { rules });
    expect(result.output).toBe('fake denied: denied by policy rule 2 (tool "fake")');
    expect(tool.calls).toHaveLength(0);
  });

  it('refuses a call an ask rule matches: nobody can confirm it here', async () => {
    const tool = fakeTool();
    const rules: PolicyRule[] = [{ tool: 'fake', action: 'ask', reason: 'writes outside the project' }];
    const { decision, result } = await invoke(tool.spec, { path: 'a' }, { rules });
    expect(tool.calls).toHaveLength(0);
    expect(decision).toEqual({ action: 'ask', reason: 'writes outside the project', rule: 0 });
    expect(result.isError).toBe(true);
    expect(result.output).toContain('needs confirmation');
    expect(result.output).toContain('writes outside the project');
    expect(result.output).toBe('fake needs confirmation, which nobody can give here: writes outside the project');
  });

  it('applies a rule for principal program:* to programs and not to the model', async () => {
    const tool = fakeTool();
    const rules: PolicyRule[] = [{ tool: '*', principal: 'program:*', action: 'deny', reason: 'not from programs' }];
    const fromProgram = await invoke(tool.spec, { path: 'a' }, { principal: program, rules });
    expect(fromProgram.result).toEqual({ output: 'fake denied: not from programs', isError: true });
    expect(tool.calls).toHaveLength(0);
    const fromModel = await invoke(tool.spec, { path: 'a' }, { principal: 'model', rules });
    expect(fromModel.decision).toEqual({ action: 'allow' });
    expect(tool.calls).toHaveLength(1);
  });

  it('matches a rule against the caller intent', async () => {
    const tool = fakeTool();
    const rules: PolicyRule[] = [{ tool: 'fake', intent: '*delete*', action: 'deny', reason: 'no deleting' }];
    const deleting = await invoke(tool.spec, { path: 'a' }, { principal: program, intent: 'Delete old logs', rules });
    expect(deleting.decision.action).toBe('deny');
    const tidying = await invoke(tool.spec, { path: 'a' }, { principal: program, intent: 'tidy the logs', rules });
    expect(tidying.decision.action).toBe('allow');
    const silent = await invoke(tool.spec, { path: 'a' }, { principal: program, rules });
    expect(silent.decision.action).toBe('allow');
    expect(tool.calls).toHaveLength(2);
  });

  it('admits on the tool name alone when the tool has no resource', async () => {
    const tool = fakeTool({ resource: () => undefined });
    const rules: PolicyRule[] = [{ tool: 'fake', resource: '**', action: 'deny' }];
    const { decision, resource } = await invoke(tool.spec, { path: 'a' }, { rules });
    expect(resource).toBeUndefined();
    expect(decision).toEqual({ action: 'allow' });
  });

  it("admits the read tool on the real path: '..' and symlinks cannot reach a denied folder", async () => {
    await workspaceWithSecrets();
    const rules: PolicyRule[] = [{ tool: 'read', resource: 'secrets/**', action: 'deny', reason: 'no secrets' }];
    for (const path of ['secrets/key.txt', 'data/../secrets/key.txt', './data/../secrets/key.txt', join(workspace(), 'secrets/key.txt'), 'data/key-link.txt', 'data/vault/key.txt']) {
      const { decision, resource, result } = await invoke(readTool as ToolSpec, { path }, { rules });
      expect(resource, path).toBe('secrets/key.txt');
      expect(decision, path).toMatchObject({ action: 'deny', reason: 'no secrets' });
      expect(result, path).toEqual({ output: 'read denied: no secrets', isError: true });
    }
    const deep = await invoke(readTool as ToolSpec, { path: 'data/vault/deep/token.txt' }, { rules });
    expect(deep.resource).toBe('secrets/deep/token.txt');
    expect(deep.decision.action).toBe('deny');

    const allowed = await invoke(readTool as ToolSpec, { path: 'data/notes.txt' }, { rules });
    expect(allowed.resource).toBe('data/notes.txt');
    expect(allowed.result).toMatchObject({ output: 'hunter gatherer notes\n', value: 'hunter gatherer notes\n' });
  });
});

describe('invokeTool: canAccess', () => {
  it('gives the tool a canAccess that refuses what the caller may not touch', async () => {
    await workspaceWithSecrets();
    const tool = fakeTool();
    await invoke(tool.spec, { path: 'x' }, { principal: program, rules: secretsForPrograms });
    await invoke(tool.spec, { path: 'x' }, { principal: 'model', rules: secretsForPrograms });
    const [asProgram, asModel] = tool.calls.map((c) => c.ctx.canAccess);
    expect(asProgram?.('read', 'secrets/key.txt')).toBe(false);
    expect(asProgram?.('read', 'data/key-link.txt')).toBe(false);
    expect(asProgram?.('read', 'data/notes.txt')).toBe(true);
    expect(asProgram?.('save', 'secrets/key.txt')).toBe(true);
    expect(asModel?.('read', 'secrets/key.txt')).toBe(true);
  });

  it('makes glob leave out the files a program may not read, and only for programs', async () => {
    await workspaceWithSecrets();
    const asProgram = await invoke(globTool as ToolSpec, { pattern: '**/*.txt' }, { principal: program, rules: secretsForPrograms });
    expect(asProgram.decision).toEqual({ action: 'allow' });
    expect(asProgram.result.value).toEqual(['data/notes.txt']);
    expect(asProgram.result.output).not.toContain('secrets/');
    expect(asProgram.result.output).toContain('(2 matching files you may not read left out)');

    const asModel = await invoke(globTool as ToolSpec, { pattern: '**/*.txt' }, { principal: 'model', rules: secretsForPrograms });
    // Symbolic links are not listed by glob at all.
    expect(asModel.result.value).toEqual(['data/notes.txt', 'secrets/deep/token.txt', 'secrets/key.txt']);
  });

  it('makes grep leave out the files a program may not read', async () => {
    await workspaceWithSecrets();
    const asProgram = await invoke(grepTool as ToolSpec, { pattern: 'hunter' }, { principal: program, rules: secretsForPrograms });
    expect(asProgram.result.isError).toBeUndefined();
    expect(asProgram.result.value).toEqual([{ path: 'data/notes.txt', line: 1, text: 'hunter gatherer notes' }]);
    expect(asProgram.result.output).not.toContain('hunter2');
    expect(asProgram.result.output).not.toContain('hunter3');

    const asModel = await invoke(grepTool as ToolSpec, { pattern: 'hunter' }, { principal: 'model', rules: secretsForPrograms });
    const paths = (asModel.result.value as { path: string }[]).map((m) => m.path);
    expect(paths).toContain('secrets/key.txt');
    expect(paths).toContain('secrets/deep/token.txt');
  });

  it('makes grep through a symlinked folder leave out the files behind it that a program may not read', async () => {
    await workspaceWithSecrets();
    const asProgram = await invoke(grepTool as ToolSpec, { pattern: 'hunter', path: 'data/vault' }, { principal: program, rules: secretsForPrograms });
    expect(asProgram.result.isError).toBeUndefined();
    expect(asProgram.result.value).toEqual([]);
    expect(asProgram.result.output).not.toContain('hunter2');
    const asModel = await invoke(grepTool as ToolSpec, { pattern: 'hunter', path: 'data/vault' }, { principal: 'model', rules: secretsForPrograms });
    expect(asModel.result.output).toContain('hunter2');
  });

  it('refuses grep over a denied folder itself', async () => {
    await workspaceWithSecrets();
    const rules: PolicyRule[] = [{ tool: 'grep', resource: 'secrets/**', principal: 'program:*', action: 'deny', reason: 'no searching secrets' }];
    const { decision, resource, result } = await invoke(grepTool as ToolSpec, { pattern: 'hunter', path: 'data/vault' }, { principal: program, rules });
    expect(resource).toBe('secrets');
    expect(decision.action).toBe('deny');
    expect(result).toEqual({ output: 'grep denied: no searching secrets', isError: true });
  });
});

describe('invokeTool: failures', () => {
  it('turns what the tool throws into an error result naming the tool', async () => {
    const tool = fakeTool({
      execute: async () => {
        throw new Error('disk on fire');
      },
    });
    const { decision, resource, result } = await invoke(tool.spec, { path: 'a' });
    expect(result).toEqual({ output: 'fake failed: disk on fire', isError: true });
    expect(decision).toEqual({ action: 'allow' });
    expect(resource).toBe('a');
  });

  it('turns a thrown non-Error into its text', async () => {
    const tool = fakeTool({
      execute: async () => {
        throw 'plain text';
      },
    });
    expect((await invoke(tool.spec, { path: 'a' })).result).toEqual({ output: 'fake failed: plain text', isError: true });
  });

  it('turns a throwing resource() into an error result, without running the tool', async () => {
    const tool = fakeTool({
      resource: () => {
        throw new Error('cannot resolve');
      },
    });
    const { result } = await invoke(tool.spec, { path: 'a' });
    expect(result).toEqual({ output: 'fake failed: cannot resolve', isError: true });
    expect(tool.calls).toHaveLength(0);
  });

  it('passes an error result of the tool through unchanged', async () => {
    const tool = fakeTool({ execute: async () => ({ output: 'no such thing', isError: true }) });
    expect((await invoke(tool.spec, { path: 'a' })).result).toEqual({ output: 'no such thing', isError: true });
  });
});
