import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspaceResource } from '../../src/policy/workspace-resource';
import { useTempWorkspace } from '../support/tool-context';

const root = useTempWorkspace('fence-resource-');

/** A workspace folder with `secrets/key.txt` and `data/`, inside the test's temp folder. */
async function makeWorkspace(): Promise<string> {
  const workspace = join(root(), 'ws');
  await mkdir(join(workspace, 'secrets'), { recursive: true });
  await mkdir(join(workspace, 'data'));
  await writeFile(join(workspace, 'secrets/key.txt'), 'k');
  return workspace;
}

describe('workspaceResource', () => {
  it('gives workspace-relative paths with / separators', async () => {
    const ws = await makeWorkspace();
    expect(workspaceResource(ws, 'secrets/key.txt')).toBe('secrets/key.txt');
    expect(workspaceResource(ws, 'data')).toBe('data');
    expect(workspaceResource(ws, '.')).toBe('.');
    expect(workspaceResource(ws, '')).toBe('.');
  });

  it('collapses .. and . segments', async () => {
    const ws = await makeWorkspace();
    expect(workspaceResource(ws, 'data/../secrets/key.txt')).toBe('secrets/key.txt');
    expect(workspaceResource(ws, './secrets/key.txt')).toBe('secrets/key.txt');
    expect(workspaceResource(ws, 'secrets/./././key.txt')).toBe('secrets/key.txt');
    expect(workspaceResource(ws, 'no/such/../../secrets/key.txt')).toBe('secrets/key.txt');
  });

  it('reads paths as file tools do: whitespace and one pair of quotes dropped', async () => {
    const ws = await makeWorkspace();
    expect(workspaceResource(ws, '  "secrets/key.txt" ')).toBe('secrets/key.txt');
    expect(workspaceResource(ws, "'./secrets/key.txt'")).toBe('secrets/key.txt');
  });

  it('makes absolute paths into the workspace relative', async () => {
    const ws = await makeWorkspace();
    expect(workspaceResource(ws, join(ws, 'secrets/key.txt'))).toBe('secrets/key.txt');
    expect(workspaceResource(ws, join(ws, 'data', '..', 'secrets'))).toBe('secrets');
  });

  it('keeps paths outside the workspace absolute, symlinks resolved', async () => {
    const ws = await makeWorkspace();
    const outside = join(root(), 'outside.txt');
    await writeFile(outside, 'o');
    expect(workspaceResource(ws, '../outside.txt')).toBe(outside);
    expect(workspaceResource(ws, outside)).toBe(outside);
    expect(workspaceResource(ws, '/etc/../etc/hostname-that-does-not-exist')).toBe('/etc/hostname-that-does-not-exist');
    // A sibling whose name starts with the workspace's is outside it.
    await mkdir(join(root(), 'ws-other'));
    expect(workspaceResource(ws, '../ws-other/a')).toBe(join(root(), 'ws-other/a'));
  });

  it('expands ~ against the home folder', async () => {
    const ws = await makeWorkspace();
    expect(workspaceResource(ws, '~/notes.txt', root())).toBe(join(root(), 'notes.txt'));
    expect(workspaceResource(ws, '~', root())).toBe(root());
    expect(workspaceResource(ws, '~/ws/secrets/key.txt', root())).toBe('secrets/key.txt');
  });

  it('resolves a symlinked folder to its target', async () => {
    const ws = await makeWorkspace();
    await symlink('secrets', join(ws, 'link'));
    expect(workspaceResource(ws, 'link/key.txt')).toBe('secrets/key.txt');
    expect(workspaceResource(ws, 'link')).toBe('secrets');
    expect(workspaceResource(ws, join(ws, 'link/key.txt'))).toBe('secrets/key.txt');
  });

  it('resolves a file that does not exist yet through its symlinked parent', async () => {
    const ws = await makeWorkspace();
    await symlink(join(ws, 'secrets'), join(ws, 'link'));
    expect(workspaceResource(ws, 'link/new.txt')).toBe('secrets/new.txt');
    expect(workspaceResource(ws, 'link/sub/deeper/new.txt')).toBe('secrets/sub/deeper/new.txt');
  });

  it('resolves chains of symlinks, symlinked files and dangling symlinks', async () => {
    const ws = await makeWorkspace();
    await mkdir(join(ws, 'data/nested'));
    await symlink('../../secrets', join(ws, 'data/nested/up'));
    await symlink('data/nested/up', join(ws, 'chain'));
    await symlink('secrets/key.txt', join(ws, 'key-link'));
    await symlink('secrets/not-yet.txt', join(ws, 'dangling'));
    expect(workspaceResource(ws, 'chain/key.txt')).toBe('secrets/key.txt');
    expect(workspaceResource(ws, 'key-link')).toBe('secrets/key.txt');
    expect(workspaceResource(ws, 'dangling')).toBe('secrets/not-yet.txt');
  });

  it('follows a symlink that leaves the workspace', async () => {
    const ws = await makeWorkspace();
    await mkdir(join(root(), 'elsewhere'));
    await symlink(join(root(), 'elsewhere'), join(ws, 'out'));
    expect(workspaceResource(ws, 'out/file.txt')).toBe(join(root(), 'elsewhere/file.txt'));
  });

  it('gives up on a symlink loop without throwing', async () => {
    const ws = await makeWorkspace();
    await symlink('b', join(ws, 'a'));
    await symlink('a', join(ws, 'b'));
    expect(typeof workspaceResource(ws, 'a/file.txt')).toBe('string');
  });

  it('resolves a workspace that is itself reached through a symlink', async () => {
    const ws = await makeWorkspace();
    const alias = join(root(), 'alias');
    await symlink(ws, alias);
    await symlink('secrets', join(ws, 'link'));
    expect(workspaceResource(alias, 'secrets/key.txt')).toBe('secrets/key.txt');
    expect(workspaceResource(alias, join(ws, 'secrets/key.txt'))).toBe('secrets/key.txt');
    expect(workspaceResource(ws, join(alias, 'secrets/key.txt'))).toBe('secrets/key.txt');
    expect(workspaceResource(alias, 'link/new.txt')).toBe('secrets/new.txt');
  });

  it('resolves the unresolved temp folder path too', async () => {
    // The system temp folder may itself be a symlink (macOS /tmp); the workspace is given unresolved here.
    const raw = await mkdtemp(join(tmpdir(), 'fence-raw-'));
    try {
      await mkdir(join(raw, 'secrets'));
      expect(workspaceResource(raw, join(await realpath(raw), 'secrets/x'))).toBe('secrets/x');
      expect(workspaceResource(await realpath(raw), join(raw, 'secrets/x'))).toBe('secrets/x');
    } finally {
      await rm(raw, { recursive: true, force: true });
    }
  });
});
