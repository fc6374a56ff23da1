import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { realPathOf, withRealPaths } from '../../src/os-sandbox/policy';
import { machinePolicy, useSandboxMachine } from '../support/sandbox-machine';

/**
 * The real paths of many denied paths, most absent, resolved folder by folder: the same
 * answers as `realPathOf` one path at a time.
 */

const machine = useSandboxMachine();

describe('withRealPaths over many absent paths', () => {
  it('resolves each as realPathOf does: under a linked folder, through a dangling link, and as written when nothing is linked', async () => {
    const { root, home } = machine();
    await mkdir(join(root, 'real-config'));
    await symlink(join(root, 'real-config'), join(home, 'config-link'));
    await symlink(join(root, 'nowhere', 'token'), join(home, 'dangling-token'));
    const denied = [
      join(home, 'config-link', 'gh'),
      join(home, 'config-link', 'deeper', 'hub'),
      join(home, 'dangling-token'),
      join(home, 'absent', 'file'),
      join(home, '.ssh'),
    ];
    const resolved = withRealPaths({ ...machinePolicy(machine()), denied }).denied;
    for (const path of denied) expect(resolved, path).toContain(realPathOf(path));
    expect(resolved).toContain(join(root, 'real-config', 'gh'));
    expect(resolved).toContain(join(root, 'real-config', 'deeper', 'hub'));
    expect(resolved).toContain(join(root, 'nowhere', 'token'));
  });
});
