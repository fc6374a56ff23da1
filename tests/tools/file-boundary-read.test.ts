import { rmSync, symlinkSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DENIED_IN_HOME, type SandboxPolicy } from '../../src/os-sandbox/policy';
import type { ToolContext, ToolResult } from '../../src/tools/define-tool';
import { walkBoundary } from '../../src/tools/file-boundary';
import { findFiles, globTool } from '../../src/tools/glob';
import { grepTool } from '../../src/tools/grep';
import { readTool } from '../../src/tools/read';
import { makeToolContext } from '../support/tool-context';
import { KEY_TEXT, machineContext, machinePolicy, snapshot, useSandboxMachine } from '../support/sandbox-machine';

const machine = useSandboxMachine();

const SECRET_TEXT = 'SECRET 42';

function read(path: string, ctx: ToolContext = machineContext(machine())): Promise<ToolResult> {
  return readTool.execute(readTool.parameters.parse({ path }), ctx);
}

function glob(pattern: string, ctx: ToolContext = machineContext(machine())): Promise<ToolResult> {
  return globTool.execute(globTool.parameters.parse({ pattern }), ctx);
}

function grep(pattern: string, path?: string, ctx: ToolContext = machineContext(machine())): Promise<ToolResult> {
  return grepTool.execute(grepTool.parameters.parse({ pattern, path }), ctx);
}

/** Replaces the file at `path` by a link to `target`. */
function swapForLink(path: string, target: string): void {
  rmSync(path);
  symlinkSync(target, path);
}

/** Nothing of the key or the secrets anywhere in a result: output, value or details. */
function expectNoSecret(result: ToolResult): void {
  const text = JSON.stringify(result);
  expect(text).not.toContain(KEY_TEXT);
  expect(text).not.toContain(SECRET_TEXT);
}

/**
 * The machine with more to hide: `~/secrets/` (denied, not hidden, so walks would enter it),
 * `private/` and `docs/token.txt` inside the workspace (denied), and links to `docs/`, from the workspace to the home, to
 * `~/.ssh`, to the key and to `~/secrets`.
 */
async function withLinksAndSecrets(): Promise<SandboxPolicy> {
  const { home, workspace, key } = machine();
  await mkdir(join(home, 'secrets', 'deep'), { recursive: true });
  await writeFile(join(home, 'secrets', 'deep', 'token.txt'), `${SECRET_TEXT}\n`);
  await writeFile(join(home, 'public.txt'), 'SECRET-free, public\n');
  await mkdir(join(workspace, 'private'));
  await writeFile(join(workspace, 'private', 'p.txt'), `${SECRET_TEXT}\n`);
  await mkdir(join(workspace, 'docs'));
  await writeFile(join(workspace, 'docs', 'token.txt'), `${SECRET_TEXT}\n`);
  await writeFile(join(workspace, 'docs', 'readme.md'), 'plain readme\n');
  await symlink(join(workspace, 'docs'), join(workspace, 'docs-link'));
  await symlink(home, join(workspace, 'home-link'));
  await symlink(join(home, '.ssh'), join(workspace, 'ssh-link'));
  await symlink(join(home, 'secrets'), join(workspace, 'secrets-link'));
  await symlink(key, join(workspace, 'key-link'));
  const policy = machinePolicy(machine());
  return { ...policy, denied: [...policy.denied, join(home, 'secrets'), join(workspace, 'private'), join(workspace, 'docs', 'token.txt')] };
}

describe('read in a sandbox', () => {
  it('refuses a denied file and folder, as written or through a link, showing none of it', async () => {
    const { home, key } = machine();
    await withLinksAndSecrets();
    const refused = /cannot be read: the sandbox denies it \(keys, credentials, fence's own data and the paths the user denied stay out of reach\)\. Work without it, or ask the user for what you need\.$/;
    for (const path of [key, join(home, '.ssh'), 'key-link', 'ssh-link', 'ssh-link/', 'ssh-link/id_ed25519', 'home-link/.ssh/id_ed25519', 'home-link/.ssh/../.ssh/config']) {
      const result = await read(path);
      expect(result, path).toEqual({ output: expect.stringMatching(refused), isError: true });
      expectNoSecret(result);
    }
    expect((await read('key-link')).output).toMatch(new RegExp(`^key-link \\(it leads to ${key}\\) cannot be read`));
  });

  it('says a missing file in a denied folder is denied, naming none of its neighbours', async () => {
    const result = await read(join(machine().home, '.ssh', 'id_ed25518'));
    expect(result.output).toMatch(/cannot be read: the sandbox denies it/);
    expect(result.output).not.toContain('id_ed25519');
  });

  it('reads what is not denied: outside the workspace, protected files, and in read-only mode', async () => {
    const { outside, home } = machine();
    expect(await read(join(outside, 'notes.txt'))).toMatchObject({ output: 'outside notes\n' });
    expect(await read(join(home, '.bashrc'))).toMatchObject({ output: 'export EDITOR=vi\n' });
    expect(await read('.git/hooks/pre-commit')).toMatchObject({ output: '#!/bin/sh\nexit 0\n' });
    expect(await read('src/app.ts', machineContext(machine(), machinePolicy(machine(), 'read-only')))).toMatchObject({ output: 'export const app = 1;\n' });
  });

  it('reads everything with the sandbox off', async () => {
    expect(await read(machine().key, machineContext(machine(), machinePolicy(machine(), 'off')))).toMatchObject({ output: `${KEY_TEXT}\n` });
  });
});

describe("the session's saved tool outputs inside the denied fence folder", () => {
  it('are readable, by path and through a link; their siblings are not', async () => {
    const { outputs, fenceHome, workspace } = machine();
    expect(await read(join(outputs, 'cut-output.txt'))).toMatchObject({ output: 'the whole output\nline two\n' });
    expect(await read(outputs)).toMatchObject({ value: ['cut-output.txt'] });
    await symlink(join(outputs, 'cut-output.txt'), join(workspace, 'output-link'));
    expect(await read('output-link')).toMatchObject({ output: 'the whole output\nline two\n' });
    for (const path of [join(outputs, '..', 'log.jsonl'), join(outputs, '..'), join(fenceHome, 'config.toml'), join(fenceHome, 'sessions')]) {
      const result = await read(path);
      expect(result, path).toMatchObject({ output: expect.stringMatching(/cannot be read: the sandbox denies it/), isError: true });
      expect(result.output).not.toContain('session log');
    }
  });

  it('can be searched with grep, and the fence folder around them cannot', async () => {
    const { outputs, fenceHome } = machine();
    expect((await grep('whole', outputs)).value).toEqual([{ path: join(outputs, 'cut-output.txt'), line: 1, text: 'the whole output' }]);
    expect(await grep('secret', fenceHome)).toMatchObject({ output: expect.stringMatching(/cannot be read: the sandbox denies it/), isError: true });
  });
});

describe('glob in a sandbox', () => {
  it('lists nothing reached through a link into a denied folder', async () => {
    const policy = await withLinksAndSecrets();
    const ctx = machineContext(machine(), policy);
    for (const pattern of ['ssh-link/*', 'ssh-link/**', 'secrets-link/**', 'secrets-link/deep/*', 'home-link/secrets/**', 'home-link/.ssh/*', 'private/*', 'docs/*', 'docs-link/*', '**']) {
      const result = await glob(pattern, ctx);
      expect((result.value as string[]).filter((path) => /ssh-link|secrets|private|id_ed25519|token/.test(path)), pattern).toEqual([]);
    }
    expect((await glob('home-link/*', ctx)).value).toEqual(['home-link/public.txt']);
    expect((await glob('docs-link/*', ctx)).value).toEqual(['docs-link/readme.md']);
    expect((await glob('**', ctx)).value).toEqual(['docs/readme.md', 'fence.toml', 'src/app.ts']);
  });

  it('would list them without a sandbox (what the test above guards against)', async () => {
    await withLinksAndSecrets();
    const open = makeToolContext(machine().workspace);
    expect((await glob('ssh-link/*', open)).value).toEqual(['ssh-link/config', 'ssh-link/id_ed25519']);
    expect((await glob('secrets-link/deep/*', open)).value).toEqual(['secrets-link/deep/token.txt']);
    expect((await glob('private/*', open)).value).toEqual(['private/p.txt']);
    expect((await glob('docs-link/*', open)).value).toEqual(['docs-link/readme.md', 'docs-link/token.txt']);
  });

  it('leaves denied files out without a word', async () => {
    const policy = await withLinksAndSecrets();
    expect(await glob('ssh-link/*', machineContext(machine(), policy))).toMatchObject({ output: 'no files match ssh-link/*', value: [] });
  });
});

describe('grep in a sandbox', () => {
  it('finds nothing reached through a link into a denied folder', async () => {
    const policy = await withLinksAndSecrets();
    const ctx = machineContext(machine(), policy);
    for (const path of [undefined, 'docs', 'home-link', 'home-link/', 'secrets-link/../home-link']) {
      const result = await grep('SECRET|PRIVATE', path, ctx);
      expectNoSecret(result);
      expect((result.value as { path: string }[]).map((match) => match.path), String(path)).toEqual(path?.includes('home-link') ? ['home-link/public.txt'] : []);
    }
  });

  it('searches the readable exception inside a denied folder it walks, and nothing else there', async () => {
    const policy = await withLinksAndSecrets();
    const { home } = machine();
    await mkdir(join(home, 'secrets', 'shared'));
    await writeFile(join(home, 'secrets', 'shared', 'note.txt'), 'SECRET-free note\n');
    const ctx = machineContext(machine(), { ...policy, readable: [...policy.readable, join(home, 'secrets', 'shared')] });
    for (const path of ['home-link', home]) {
      const result = await grep('SECRET', path, ctx);
      expectNoSecret(result);
      expect(result.output, path).toBe([`${path === home ? home : 'home-link'}/public.txt:1: SECRET-free, public`, `${path === home ? home : 'home-link'}/secrets/shared/note.txt:1: SECRET-free note`].join('\n'));
    }
  });

  it('refuses a denied file or folder named as its path', async () => {
    const policy = await withLinksAndSecrets();
    const ctx = machineContext(machine(), policy);
    for (const path of ['ssh-link', 'key-link', 'secrets-link', 'secrets-link/deep', 'private', 'home-link/secrets', join(machine().home, '.ssh')]) {
      const result = await grep('SECRET|PRIVATE', path, ctx);
      expect(result, path).toMatchObject({ output: expect.stringMatching(/cannot be read: the sandbox denies it/), isError: true });
      expectNoSecret(result);
    }
  });

  it('would find them without a sandbox (what the tests above guard against)', async () => {
    await withLinksAndSecrets();
    const open = makeToolContext(machine().workspace);
    expect(JSON.stringify(await grep('SECRET', 'home-link', open))).toContain(SECRET_TEXT);
    expect(JSON.stringify(await grep('SECRET', 'private', open))).toContain(SECRET_TEXT);
    expect(JSON.stringify(await grep('SECRET', 'docs', open))).toContain(SECRET_TEXT);
    expect(JSON.stringify(await grep('PRIVATE', 'key-link', open))).toContain(KEY_TEXT);
  });

  it('does not follow a file that became a link into a denied folder while the search ran', async () => {
    const { workspace, key } = machine();
    await writeFile(join(workspace, 'a.txt'), 'PRIVATE? not yet\n');
    const ctx: ToolContext = {
      ...machineContext(machine()),
      // Called just before each file is read: the moment to swap the file for a link.
      canAccess: (_tool, resource) => {
        if (resource === 'a.txt') swapForLink(join(workspace, 'a.txt'), key);
        return true;
      },
    };
    const result = await grep('PRIVATE', undefined, ctx);
    expectNoSecret(result);
    expect(result.value).toEqual([]);
  });

  it('leaves the files of a denied folder out without a word, and changes nothing', async () => {
    const policy = await withLinksAndSecrets();
    await writeFile(join(machine().workspace, 'src', 'todo.ts'), '// SECRET-free TODO\n');
    const before = await snapshot(machine().root);
    const result = await grep('SECRET', undefined, machineContext(machine(), policy));
    expect(result.output).toBe('src/todo.ts:1: // SECRET-free TODO');
    expect(await snapshot(machine().root)).toEqual(before);
  });
});

describe('walkBoundary', () => {
  it('leaves out the denied paths under the root, not folders holding a readable exception', async () => {
    const policy = await withLinksAndSecrets();
    const { workspace, root } = machine();
    expect(walkBoundary({ sandboxPolicy: policy }, workspace)?.leftOut).toEqual(['private', 'docs/token.txt']);
    expect(walkBoundary({ sandboxPolicy: policy }, join(workspace, 'home-link'))?.leftOut.sort()).toEqual([...DENIED_IN_HOME, 'secrets'].sort());
    expect(walkBoundary({ sandboxPolicy: policy }, root)?.leftOut).toContain('home/.ssh');
    expect(walkBoundary({ sandboxPolicy: policy }, root)?.leftOut).not.toContain('home/.fence');
  });

  it('hides the files whose folder leads into a denied folder, judging ordinary files by their path', async () => {
    const policy = await withLinksAndSecrets();
    const { workspace, home } = machine();
    const boundary = walkBoundary({ sandboxPolicy: policy }, join(workspace, 'secrets-link'));
    expect(boundary?.shows(join(workspace, 'secrets-link', 'deep', 'token.txt'))).toBe(false);
    expect(boundary?.shows(join(workspace, 'home-link', 'secrets', 'deep', 'token.txt'))).toBe(false);
    expect(boundary?.shows(join(workspace, 'home-link', 'public.txt'))).toBe(true);
    expect(boundary?.shows(join(home, 'secrets', 'deep', 'token.txt'))).toBe(false);
    expect(boundary?.shows(join(workspace, 'src', 'app.ts'))).toBe(true);
    expect(boundary?.shows(join(workspace, 'docs-link', 'token.txt'))).toBe(false);
    expect(boundary?.shows(join(workspace, 'docs-link', 'readme.md'))).toBe(true);
  });

  it('gives findFiles folders it does not enter', async () => {
    await withLinksAndSecrets();
    const { workspace } = machine();
    expect(await findFiles(workspace, '**')).toContain('private/p.txt');
    expect(await findFiles(workspace, '**', undefined, ['private'])).not.toContain('private/p.txt');
    expect(await findFiles(workspace, 'private/**', undefined, ['private'])).toEqual([]);
  });

  it('is absent without a sandbox or with it off', () => {
    expect(walkBoundary({}, machine().workspace)).toBeUndefined();
    expect(walkBoundary({ sandboxPolicy: machinePolicy(machine(), 'off') }, machine().workspace)).toBeUndefined();
  });
});
