import { describe, expect, it } from 'vitest';
import { inSandboxTmp, lexicalAccess, pathAccess, readRefusal, writeRefusal, type SandboxPolicy } from '../../src/os-sandbox/policy';

/**
 * The host's /tmp, /run and /proc, which bubblewrap replaces with the sandbox's own: the file
 * tools, run in fence's process, refuse them too, but for the policy's own paths inside them.
 */

/** A session whose workspace and an extra writable folder live in the host's /tmp. */
const policy: SandboxPolicy = {
  mode: 'workspace-write',
  workspace: '/tmp/project',
  writable: ['/tmp/project', '/tmp/cache'],
  denied: ['/home/someone/.ssh', '/tmp/fence-home'],
  readable: ['/tmp/fence-home/sessions/s1/tool-outputs'],
  protected: ['/tmp/project/fence.toml'],
  network: false,
  replaced: ['/tmp', '/run', '/proc'],
};

describe('the replaced host folders', () => {
  it('are refused to the file tools, but for the workspace, the writable and the readable paths in them', () => {
    for (const path of ['/tmp/other/notes.txt', '/tmp', '/run/user/0/bus', '/proc/self/environ', '/proc/1/root/etc/shadow']) {
      expect(lexicalAccess(policy, path), path).toBe('none');
    }
    expect(lexicalAccess(policy, '/tmp/project/src/a.ts')).toBe('write');
    expect(lexicalAccess(policy, '/tmp/project/fence.toml')).toBe('read');
    expect(lexicalAccess(policy, '/tmp/cache/x')).toBe('write');
    expect(lexicalAccess(policy, '/tmp/fence-home/sessions/s1/tool-outputs/out.txt')).toBe('read');
    expect(lexicalAccess(policy, '/tmp/fence-home/sessions/s1/conversation.jsonl')).toBe('none');
    expect(lexicalAccess(policy, '/etc/hostname')).toBe('read');
    expect(lexicalAccess(policy, '/tmpfile')).toBe('read');
  });

  it('are left alone without the field, and with the sandbox off', () => {
    const { replaced: _none, ...plain } = policy;
    expect(lexicalAccess(plain, '/tmp/other/notes.txt')).toBe('read');
    expect(lexicalAccess(plain, '/proc/self/environ')).toBe('read');
    expect(lexicalAccess({ ...policy, mode: 'off' }, '/proc/self/environ')).toBe('write');
  });

  it('are judged where a link leads: /proc/self is fence itself', () => {
    expect(pathAccess(policy, '/proc/self/environ')).toBe('none');
  });

  it('are refused with a reason that says the sandbox has its own, not that they hold credentials', () => {
    expect(readRefusal(policy, '/proc/self/environ', '/proc/self/environ')).toMatch(
      /^\/proc\/self\/environ \(it leads to \/proc\/\d+\/environ\) cannot be read: commands in the sandbox have their own private \/tmp, \/run and \/proc/,
    );
    expect(readRefusal(policy, '/tmp/other/notes.txt', '/tmp/other/notes.txt')).toMatch(/^\/tmp\/other\/notes\.txt cannot be read: commands in the sandbox have their own private/);
    expect(writeRefusal(policy, '/tmp/other/out.txt', '/tmp/other/out.txt')).toMatch(/^\/tmp\/other\/out\.txt cannot be written: commands in the sandbox have their own private/);
    expect(readRefusal(policy, '/tmp/fence-home/sessions/s1/conversation.jsonl', 'log')).toMatch(/^log cannot be read: the sandbox denies it/);
    expect(readRefusal(policy, '/home/someone/.ssh/id_rsa', 'key')).toMatch(/^key cannot be read: the sandbox denies it/);
  });

  it("map a path under /tmp to the sandbox's own /tmp, which the file tools may write in any mode", () => {
    const withTmp: SandboxPolicy = { ...policy, privateTmp: '/tmp/fence-sandbox-1-abc/tmp' };
    expect(inSandboxTmp(withTmp, '/tmp/out.txt')).toBe('/tmp/fence-sandbox-1-abc/tmp/out.txt');
    expect(inSandboxTmp(withTmp, '/tmp')).toBe('/tmp/fence-sandbox-1-abc/tmp');
    expect(inSandboxTmp(withTmp, '/tmp/project/src/a.ts')).toBe('/tmp/project/src/a.ts');
    expect(inSandboxTmp(withTmp, '/tmp/fence-sandbox-1-abc/tmp/x')).toBe('/tmp/fence-sandbox-1-abc/tmp/x');
    expect(inSandboxTmp(withTmp, '/tmpfile')).toBe('/tmpfile');
    expect(inSandboxTmp(policy, '/tmp/out.txt')).toBe('/tmp/out.txt');
    expect(lexicalAccess(withTmp, '/tmp/fence-sandbox-1-abc/tmp/out.txt')).toBe('write');
    expect(lexicalAccess({ ...withTmp, mode: 'read-only' }, '/tmp/fence-sandbox-1-abc/tmp/out.txt')).toBe('write');
    expect(lexicalAccess(withTmp, '/tmp/fence-sandbox-1-abc/other')).toBe('none');
  });
});
