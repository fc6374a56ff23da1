import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  isWithin,
  lexicalAccess,
  pathAccess,
  protectedPaths,
  readRefusal,
  realPathOf,
  withRealPaths,
  writeRefusal,
} from '../../src/os-sandbox/policy';
import { machinePolicy, useSandboxMachine } from '../support/sandbox-machine';

const machine = useSandboxMachine();

describe('isWithin', () => {
  it('is true for the root and what is under it, false for a sibling sharing a prefix', () => {
    expect(isWithin('/a/b', '/a/b')).toBe(true);
    expect(isWithin('/a/b/c/d', '/a/b')).toBe(true);
    expect(isWithin('/a/bc', '/a/b')).toBe(false);
    expect(isWithin('/a', '/a/b')).toBe(false);
    expect(isWithin('/a/..b', '/a')).toBe(true);
  });
});

describe('protectedPaths', () => {
  it("protects fence's configuration and git's hooks and config in a repository", () => {
    expect(protectedPaths('/w', true)).toEqual(['/w/fence.toml', '/w/.fence', '/w/.git/hooks', '/w/.git/config']);
  });

  it('protects the whole of .git where there is no repository yet', () => {
    expect(protectedPaths('/w', false)).toEqual(['/w/fence.toml', '/w/.fence', '/w/.git']);
  });
});

describe('lexicalAccess', () => {
  it('allows writing in the writable paths and reading elsewhere', () => {
    const { workspace, extra, outside } = machine();
    const policy = machinePolicy(machine());
    expect(lexicalAccess(policy, join(workspace, 'src/new.ts'))).toBe('write');
    expect(lexicalAccess(policy, join(extra, 'deep/x'))).toBe('write');
    expect(lexicalAccess(policy, join(outside, 'notes.txt'))).toBe('read');
    expect(lexicalAccess(policy, '/etc/passwd')).toBe('read');
  });

  it('denies the denied paths, but reads the readable exception inside them', () => {
    const { key, fenceHome, outputs } = machine();
    const policy = machinePolicy(machine());
    expect(lexicalAccess(policy, key)).toBe('none');
    expect(lexicalAccess(policy, join(fenceHome, 'sessions/session-1/log.jsonl'))).toBe('none');
    expect(lexicalAccess(policy, join(outputs, 'cut-output.txt'))).toBe('read');
    expect(lexicalAccess(policy, join(outputs, '..', 'log.jsonl'))).toBe('none');
  });

  it('keeps the protected paths read-only inside the workspace', () => {
    const { workspace } = machine();
    const policy = machinePolicy(machine());
    for (const path of ['fence.toml', '.fence/programs/p.js', '.git/hooks/pre-commit', '.git/config']) {
      expect(lexicalAccess(policy, join(workspace, path))).toBe('read');
    }
    expect(lexicalAccess(policy, join(workspace, '.git/HEAD'))).toBe('write');
  });

  it('reads everything but the denied paths in read-only, and allows all with the sandbox off', () => {
    const { workspace, key } = machine();
    expect(lexicalAccess(machinePolicy(machine(), 'read-only'), join(workspace, 'src/app.ts'))).toBe('read');
    expect(lexicalAccess(machinePolicy(machine(), 'read-only'), key)).toBe('none');
    expect(lexicalAccess(machinePolicy(machine(), 'off'), key)).toBe('write');
  });
});

describe('pathAccess', () => {
  it('judges a link by where it leads: the stricter of the two wins', async () => {
    const { workspace, key, outside, home } = machine();
    const policy = machinePolicy(machine());
    await symlink(key, join(workspace, 'key-link'));
    await symlink(join(outside, 'notes.txt'), join(workspace, 'notes-link'));
    await symlink(join(workspace, 'src/app.ts'), join(workspace, 'app-link'));
    await symlink(join(home, '.ssh'), join(workspace, 'ssh-link'));
    expect(pathAccess(policy, join(workspace, 'key-link'))).toBe('none');
    expect(pathAccess(policy, join(workspace, 'ssh-link/config'))).toBe('none');
    expect(pathAccess(policy, join(workspace, 'notes-link'))).toBe('read');
    expect(pathAccess(policy, join(workspace, 'app-link'))).toBe('write');
  });

  it('judges a path that does not exist yet by its nearest existing folder, links followed', async () => {
    const { workspace, outside } = machine();
    const policy = machinePolicy(machine());
    await symlink(outside, join(workspace, 'out-link'));
    expect(pathAccess(policy, join(workspace, 'a/b/new.txt'))).toBe('write');
    expect(pathAccess(policy, join(workspace, 'out-link/a/b/new.txt'))).toBe('read');
  });

  it('follows a dangling link to where writing through it would create a file', async () => {
    const { workspace, outside, home } = machine();
    const policy = machinePolicy(machine());
    await symlink(join(outside, 'not-yet.txt'), join(workspace, 'dangling'));
    await symlink(join(home, '.ssh', 'authorized_keys'), join(workspace, 'dangling-key'));
    await symlink('../outside/missing-folder/x.txt', join(workspace, 'dangling-relative'));
    expect(pathAccess(policy, join(workspace, 'dangling'))).toBe('read');
    expect(pathAccess(policy, join(workspace, 'dangling-key'))).toBe('none');
    expect(pathAccess(policy, join(workspace, 'dangling-relative'))).toBe('read');
  });

  it('gives up on a link loop without hanging, judging the path as written', async () => {
    const { workspace } = machine();
    await symlink('loop-b', join(workspace, 'loop-a'));
    await symlink('loop-a', join(workspace, 'loop-b'));
    expect(pathAccess(machinePolicy(machine()), join(workspace, 'loop-a'))).toBe('write');
  });

  it('recognises a denied folder that is itself a link, reached through another link', async () => {
    const { workspace, home, root } = machine();
    // Dotfiles kept elsewhere: ~/.ssh is a link to the real folder.
    await mkdir(join(root, 'dotfiles'));
    await rename(join(home, '.ssh'), join(root, 'dotfiles', 'ssh'));
    await symlink(join(root, 'dotfiles', 'ssh'), join(home, '.ssh'));
    await symlink(join(root, 'dotfiles', 'ssh', 'id_ed25519'), join(workspace, 'key-link'));
    const policy = machinePolicy(machine());
    expect(pathAccess(policy, join(workspace, 'key-link'))).toBe('none');
    expect(pathAccess(policy, join(root, 'dotfiles', 'ssh', 'config'))).toBe('none');
  });

  it('lets a workspace named through a link be written, by its real path too', async () => {
    const { workspace, root } = machine();
    await symlink(workspace, join(root, 'workspace-link'));
    const policy = { ...machinePolicy(machine()), workspace: join(root, 'workspace-link'), writable: [join(root, 'workspace-link')] };
    expect(pathAccess(policy, join(root, 'workspace-link', 'src/app.ts'))).toBe('write');
    expect(pathAccess(policy, join(workspace, 'src/app.ts'))).toBe('write');
  });

  it('allows everything with the sandbox off, links or not', async () => {
    const { workspace, key } = machine();
    await symlink(key, join(workspace, 'key-link'));
    expect(pathAccess(machinePolicy(machine(), 'off'), join(workspace, 'key-link'))).toBe('write');
  });
});

describe('realPathOf', () => {
  it('resolves links, and appends the missing rest to the nearest existing folder', async () => {
    const { workspace, outside } = machine();
    await symlink(outside, join(workspace, 'out-link'));
    expect(realPathOf(join(workspace, 'out-link', 'notes.txt'))).toBe(join(outside, 'notes.txt'));
    expect(realPathOf(join(workspace, 'out-link', 'a', 'b'))).toBe(join(outside, 'a', 'b'));
    expect(realPathOf(join(workspace, 'src', '..', 'fence.toml'))).toBe(join(workspace, 'fence.toml'));
  });

  it("reads a dangling link's relative target against the link's real folder", async () => {
    const { workspace, outside } = machine();
    await mkdir(join(outside, 'deep'));
    await symlink('../missing.txt', join(outside, 'deep', 'dangling'));
    await symlink(join(outside, 'deep'), join(workspace, 'deep-link'));
    expect(realPathOf(join(workspace, 'deep-link', 'dangling'))).toBe(join(outside, 'missing.txt'));
  });
});

describe('withRealPaths', () => {
  it('adds the real path of each linked path, keeping each path once', async () => {
    const { root, workspace } = machine();
    await symlink(workspace, join(root, 'workspace-link'));
    const policy = { ...machinePolicy(machine()), writable: [join(root, 'workspace-link')], denied: [workspace, join(root, 'workspace-link')] };
    expect(withRealPaths(policy).writable).toEqual([join(root, 'workspace-link'), workspace]);
    expect(withRealPaths(policy).denied).toEqual([workspace, join(root, 'workspace-link')]);
  });
});

describe('writeRefusal', () => {
  it('allows what may be written', () => {
    const { workspace, extra } = machine();
    expect(writeRefusal(machinePolicy(machine()), join(workspace, 'src/new.ts'), 'src/new.ts')).toBeUndefined();
    expect(writeRefusal(machinePolicy(machine()), join(extra, 'x'), join(extra, 'x'))).toBeUndefined();
  });

  it('names the writable paths when a write is outside them', () => {
    const { outside, extra } = machine();
    const path = join(outside, 'x.txt');
    expect(writeRefusal(machinePolicy(machine()), path, path)).toBe(
      `${path} cannot be written: the sandbox lets this session write only in the workspace and ${extra}. Write there instead.`,
    );
    const workspaceOnly = { ...machinePolicy(machine()), writable: [machine().workspace] };
    expect(writeRefusal(workspaceOnly, path, path)).toMatch(/write only in the workspace\. Write there instead\.$/);
  });

  it('says where a link leads', async () => {
    const { workspace, outside } = machine();
    await symlink(join(outside, 'notes.txt'), join(workspace, 'notes-link'));
    expect(writeRefusal(machinePolicy(machine()), join(workspace, 'notes-link'), 'notes-link')).toMatch(
      new RegExp(`^notes-link \\(it leads to ${join(outside, 'notes.txt')}\\) cannot be written: `),
    );
  });

  it('tells protected paths, a missing repository, read-only mode and denied paths apart', async () => {
    const { workspace, key } = machine();
    const policy = machinePolicy(machine());
    expect(writeRefusal(policy, join(workspace, '.git/config'), '.git/config')).toBe(
      ".git/config is protected by the sandbox: fence.toml, .fence/ and git's hooks and config stay read-only. If it must change, tell the user what to change.",
    );
    expect(writeRefusal(machinePolicy(machine(), 'read-only'), join(workspace, 'a.txt'), 'a.txt')).toBe(
      'a.txt cannot be written: the sandbox is read-only in this session, so no file can be changed. Describe the change to the user instead.',
    );
    expect(writeRefusal(policy, key, key)).toBe(
      `${key} cannot be read or written: the sandbox denies it (keys, credentials, fence's own data and the paths the user denied stay out of reach). Work without it, or ask the user for what you need.`,
    );
    const noRepository = { ...policy, protected: protectedPaths(workspace, false) };
    expect(writeRefusal(noRepository, join(workspace, '.git/HEAD'), '.git/HEAD')).toMatch(/^\.git\/HEAD cannot be written: the workspace has no git repository/);
  });
});

describe('readRefusal', () => {
  it('allows all but the denied paths, and the readable exception among them', async () => {
    const { outside, outputs, fenceHome } = machine();
    const policy = machinePolicy(machine());
    expect(readRefusal(policy, join(outside, 'notes.txt'), 'x')).toBeUndefined();
    expect(readRefusal(policy, join(outputs, 'cut-output.txt'), 'x')).toBeUndefined();
    expect(readRefusal(policy, join(fenceHome, 'config.toml'), 'config.toml')).toBe(
      "config.toml cannot be read: the sandbox denies it (keys, credentials, fence's own data and the paths the user denied stay out of reach). Work without it, or ask the user for what you need.",
    );
  });

  it('refuses a link into a denied folder, saying where it leads', async () => {
    const { workspace, key } = machine();
    await writeFile(join(workspace, 'plain.txt'), 'x\n');
    await symlink(key, join(workspace, 'key-link'));
    expect(readRefusal(machinePolicy(machine()), join(workspace, 'key-link'), 'key-link')).toMatch(new RegExp(`^key-link \\(it leads to ${key}\\) cannot be read`));
    expect(readRefusal(machinePolicy(machine()), join(workspace, 'plain.txt'), 'plain.txt')).toBeUndefined();
  });
});
