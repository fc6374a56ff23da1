import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SandboxPolicy } from '../../src/os-sandbox/policy';
import { appendTool } from '../../src/tools/append';
import type { ToolContext, ToolResult, ToolSpec } from '../../src/tools/define-tool';
import { patchTool } from '../../src/tools/patch';
import { readTool } from '../../src/tools/read';
import { saveTool } from '../../src/tools/save';
import { resolveWorkspacePath } from '../../src/tools/workspace-path';
import { machineContext, machinePolicy, snapshot, useSandboxMachine } from '../support/sandbox-machine';

const machine = useSandboxMachine();

type WriteTool = 'save' | 'append' | 'patch';
const WRITE_TOOLS: readonly WriteTool[] = ['save', 'append', 'patch'];
const SPECS: Record<WriteTool, ToolSpec> = { save: saveTool as ToolSpec, append: appendTool as ToolSpec, patch: patchTool as ToolSpec };

/** An input for `tool` that would succeed on `path` were it allowed: a patch replaces the file's first line, or creates it. */
function inputFor(tool: WriteTool, path: string, ctx: ToolContext): Record<string, unknown> {
  if (tool !== 'patch') return { path, content: `written by ${tool}\n` };
  const absolute = resolveWorkspacePath(ctx.workspace, path);
  const first = existsSync(absolute) && statSync(absolute).isFile() ? readFileSync(absolute, 'utf8').split('\n')[0] : '';
  return { path, patch: `<<<<<<< ORIGINAL\n${first}\n=======\nwritten by patch\n>>>>>>> UPDATED` };
}

/** Runs `tool` on `path` as the model would (input parsed), recording the checkpoints it asks for. */
async function write(tool: WriteTool, path: string, policy?: SandboxPolicy): Promise<{ result: ToolResult; checkpoints: string[] }> {
  const checkpoints: string[] = [];
  const ctx: ToolContext = { ...machineContext(machine(), policy), beforeWrite: (absolute) => checkpoints.push(absolute) };
  if (policy === undefined) delete ctx.sandboxPolicy;
  const spec = SPECS[tool];
  const result = await spec.execute(spec.parameters.parse(inputFor(tool, path, ctx)), ctx);
  return { result, checkpoints };
}

/** Expects every write tool to refuse `path` with a message matching `message`, leaving the whole machine as it was. */
async function expectRefused(path: string, message: RegExp, policy: SandboxPolicy = machinePolicy(machine())): Promise<void> {
  for (const tool of WRITE_TOOLS) {
    const before = await snapshot(machine().root);
    const { result, checkpoints } = await write(tool, path, policy);
    expect(result, `${tool} ${path}`).toEqual({ output: expect.stringMatching(message), isError: true });
    expect(checkpoints, `${tool} ${path} took a checkpoint`).toEqual([]);
    expect(await snapshot(machine().root), `${tool} ${path} changed the files`).toEqual(before);
  }
}

/** Expects every write tool to write `path` (resolved against the workspace to `absolute`). */
async function expectWritten(path: string, absolute: string, policy?: SandboxPolicy): Promise<void> {
  for (const tool of WRITE_TOOLS) {
    const { result, checkpoints } = await write(tool, path, policy);
    expect(result.isError, `${tool} ${path}: ${result.output}`).toBeUndefined();
    expect(checkpoints).toEqual([absolute]);
    expect(await readFile(absolute, 'utf8')).toContain(`written by ${tool}`);
  }
}

describe('save, append and patch in a workspace-write sandbox', () => {
  it('write inside the workspace, new folders and all', async () => {
    const { workspace } = machine();
    await expectWritten('src/app.ts', join(workspace, 'src/app.ts'));
    await expectWritten('new/deep/file.md', join(workspace, 'new/deep/file.md'));
    await expectWritten('.git/HEAD', join(workspace, '.git/HEAD'));
  });

  it('write in a [sandbox] writable folder', async () => {
    const { extra } = machine();
    await expectWritten(join(extra, 'cache.txt'), join(extra, 'cache.txt'));
    await expectWritten(join(extra, 'more/new.txt'), join(extra, 'more/new.txt'));
  });

  it('refuse a path outside the writable folders, absolute or climbing out, creating no folder', async () => {
    const { outside } = machine();
    const refused = /cannot be written: the sandbox lets this session write only in the workspace and .*\. Write there instead\.$/;
    await expectRefused(join(outside, 'notes.txt'), refused);
    await expectRefused(join(outside, 'new-folder/deeper/new.txt'), refused);
    await expectRefused('../outside/notes.txt', refused);
    await expectRefused('src/../../outside/new.txt', refused);
    await expectRefused('../outside/new-folder/', refused);
    await expectRefused('"../outside/quoted.txt"', refused);
    await expectRefused('..', refused);
  });

  it("refuse fence's configuration and git's hooks and config, which stay readable", async () => {
    const protectedMessage = /is protected by the sandbox: fence\.toml, \.fence\/ and git's hooks and config stay read-only\. If it must change, tell the user what to change\.$/;
    for (const path of ['fence.toml', '.fence/programs/p.js', '.fence/new.toml', '.git/hooks/pre-commit', '.git/hooks/post-checkout', '.git/config', './.git//config']) {
      await expectRefused(path, protectedMessage);
    }
    const ctx = machineContext(machine());
    for (const path of ['fence.toml', '.git/config', '.git/hooks/pre-commit']) {
      expect((await readTool.execute({ path }, ctx)).isError, path).toBeUndefined();
    }
  });

  it('refuse anything under .git when the workspace has no repository, creating no .git', async () => {
    const { workspace } = machine();
    await rm(join(workspace, '.git'), { recursive: true });
    await expectRefused('.git/HEAD', /^\.git\/HEAD cannot be written: the workspace has no git repository.*Ask the user to create it \(git init\) outside fence\.$/);
    await expectRefused('.git/hooks/pre-commit', /no git repository/);
    expect(existsSync(join(workspace, '.git'))).toBe(false);
  });

  it('refuse a denied file, saying it can be neither read nor written', async () => {
    await expectRefused(machine().key, /cannot be read or written: the sandbox denies it/);
    await expectRefused(join(machine().home, '.ssh/authorized_keys'), /cannot be read or written: the sandbox denies it/);
  });
});

describe('save, append and patch through links', () => {
  it('refuse a link in the workspace to a file outside, which stays unchanged', async () => {
    const { workspace, outside } = machine();
    await symlink(join(outside, 'notes.txt'), join(workspace, 'notes-link'));
    await expectRefused('notes-link', new RegExp(`^notes-link \\(it leads to ${join(outside, 'notes.txt')}\\) cannot be written`));
    expect(await readFile(join(outside, 'notes.txt'), 'utf8')).toBe('outside notes\n');
  });

  it('refuse a new file in a linked folder outside, creating neither it nor its folders', async () => {
    const { workspace, outside } = machine();
    await symlink(outside, join(workspace, 'out-link'));
    await expectRefused('out-link/new.txt', /^out-link\/new\.txt \(it leads to .*\) cannot be written/);
    await expectRefused('out-link/a/b/new.txt', /cannot be written/);
    await expectRefused('out-link/', /cannot be written/);
    expect(existsSync(join(outside, 'a'))).toBe(false);
  });

  it('refuse a dangling link whose target would be created outside', async () => {
    const { workspace, outside } = machine();
    await symlink(join(outside, 'not-yet.txt'), join(workspace, 'dangling'));
    await expectRefused('dangling', /^dangling \(it leads to .*not-yet\.txt\) cannot be written/);
    expect(existsSync(join(outside, 'not-yet.txt'))).toBe(false);
  });

  it('refuse a link to a denied file, and a link to a protected folder', async () => {
    const { workspace, key } = machine();
    await symlink(key, join(workspace, 'key-link'));
    await symlink(join(workspace, '.git/hooks'), join(workspace, 'hooks-link'));
    await expectRefused('key-link', /^key-link \(it leads to .*\) cannot be read or written/);
    await expectRefused('hooks-link/pre-commit', /is protected by the sandbox/);
    await expectRefused('hooks-link/post-merge', /is protected by the sandbox/);
  });

  it('write through a link that stays inside the workspace', async () => {
    const { workspace } = machine();
    await mkdir(join(workspace, 'real'));
    await symlink(join(workspace, 'real'), join(workspace, 'alias'));
    await expectWritten('alias/file.txt', join(workspace, 'alias/file.txt'));
    expect(await readFile(join(workspace, 'real/file.txt'), 'utf8')).toContain('written by');
  });
});

describe('save, append and patch in other modes', () => {
  it('refuse everything in read-only, the workspace too', async () => {
    const readOnly = machinePolicy(machine(), 'read-only');
    const message = /cannot be written: the sandbox is read-only in this session, so no file can be changed\. Describe the change to the user instead\.$/;
    await expectRefused('src/app.ts', message, readOnly);
    await expectRefused('brand/new.txt', message, readOnly);
    await expectRefused(join(machine().extra, 'cache.txt'), message, readOnly);
  });

  it('write anywhere with the sandbox off, or without a sandbox', async () => {
    const { workspace, outside } = machine();
    const off = machinePolicy(machine(), 'off');
    await expectWritten('fence.toml', join(workspace, 'fence.toml'), off);
    await expectWritten(join(outside, 'notes.txt'), join(outside, 'notes.txt'), off);
    await expectWritten(join(outside, 'no-sandbox.txt'), join(outside, 'no-sandbox.txt'));
  });
});

describe('the preview of a refused write', () => {
  it('is the refusal, as a note, and not the file', async () => {
    const { workspace, key } = machine();
    await symlink(key, join(workspace, 'key-link'));
    const ctx = machineContext(machine());
    const preview = await saveTool.preview?.({ path: 'key-link', content: 'x' }, ctx);
    expect(preview).toEqual({ kind: 'note', text: expect.stringMatching(/^key-link \(it leads to .*\) cannot be read or written/) });
    const protectedPreview = await patchTool.preview?.({ path: '.git/config', patch: '<<<<<<< ORIGINAL\n[core]\n=======\n[x]\n>>>>>>> UPDATED' }, ctx);
    expect(protectedPreview).toEqual({ kind: 'note', text: expect.stringMatching(/is protected by the sandbox/) });
    expect(await appendTool.preview?.({ path: 'src/app.ts', content: 'x' }, ctx)).toMatchObject({ kind: 'diff' });
  });
});
