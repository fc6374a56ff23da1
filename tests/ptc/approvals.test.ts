import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  approvalFile,
  approvalsDir,
  approvalsMigrated,
  markApprovalsMigrated,
  readApproval,
  realWorkspace,
  removeApproval,
  writeApproval,
  type Approval,
} from '../../src/ptc/approvals';

let base = '';
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'fence-approvals-')));
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

const home = () => join(base, 'home');
const SHA = 'a'.repeat(64);
const user = (name: string, version = 1): Approval => ({ scope: 'user', name, version, sha256: SHA, tools: ['read'], approvedAt: '2026-03-01T12:00:00.000Z' });

describe('the approval store', () => {
  it('writes one private file per approval, and reads it back for that target only', () => {
    expect(writeApproval(home(), user('over_limit', 2))).toBeUndefined();
    expect(statSync(approvalsDir(home())).mode & 0o777).toBe(0o700);
    const file = approvalFile(home(), { scope: 'user', name: 'over_limit', version: 2 });
    expect(file).toBe(join(home(), 'approvals', 'user.over_limit@2.json'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(approvalsDir(home()))).toEqual(['user.over_limit@2.json']);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(user('over_limit', 2));
    expect(readApproval(home(), { scope: 'user', name: 'over_limit', version: 2 })).toEqual(user('over_limit', 2));
    expect(readApproval(home(), { scope: 'user', name: 'over_limit', version: 1 })).toBeUndefined();
    expect(readApproval(home(), { scope: 'project', workspace: base, name: 'over_limit', version: 2 })).toBeUndefined();
  });

  it('keeps the approvals of other programs when several are written, and replaces only the same target', () => {
    for (const name of ['a', 'b', 'c']) expect(writeApproval(home(), user(name))).toBeUndefined();
    expect(writeApproval(home(), { ...user('b'), sha256: 'b'.repeat(64) })).toBeUndefined();
    expect(['a', 'b', 'c'].map((name) => readApproval(home(), { scope: 'user', name, version: 1 })?.sha256)).toEqual([SHA, 'b'.repeat(64), SHA]);
    expect(readdirSync(approvalsDir(home())).filter((file) => file.endsWith('.tmp'))).toEqual([]);
  });

  it('names a project approval by its workspace, and holds the workspace in it', () => {
    const one = realWorkspace(base);
    const other = join(base, 'other');
    mkdirSync(other);
    const approval: Approval = { ...user('deploy'), scope: 'project', workspace: one };
    expect(writeApproval(home(), approval)).toBeUndefined();
    expect(readApproval(home(), { scope: 'project', workspace: one, name: 'deploy', version: 1 })).toEqual(approval);
    expect(readApproval(home(), { scope: 'project', workspace: other, name: 'deploy', version: 1 })).toBeUndefined();
    expect(readApproval(home(), { scope: 'user', name: 'deploy', version: 1 })).toBeUndefined();
    // A file in the place of one workspace's approval that names another workspace is not its approval.
    const file = approvalFile(home(), { scope: 'project', workspace: other, name: 'deploy', version: 1 });
    writeFileSync(file, JSON.stringify(approval));
    expect(readApproval(home(), { scope: 'project', workspace: other, name: 'deploy', version: 1 })).toBeUndefined();
  });

  it('reads a file that is not an approval as none, without throwing', () => {
    const target = { scope: 'user' as const, name: 'x', version: 1 };
    mkdirSync(approvalsDir(home()), { recursive: true });
    const bad = [
      '{ not json',
      'null',
      '[]',
      JSON.stringify({ ...user('x'), sha256: 'short' }),
      JSON.stringify({ ...user('x'), sha256: 'A'.repeat(64) }),
      JSON.stringify({ ...user('x'), tools: 'read' }),
      JSON.stringify({ ...user('x'), tools: [1] }),
      JSON.stringify({ ...user('x'), version: 2 }),
      JSON.stringify({ ...user('y') }),
    ];
    for (const text of bad) {
      writeFileSync(approvalFile(home(), target), text);
      expect(readApproval(home(), target), text).toBeUndefined();
    }
    expect(readApproval(join(base, 'no-home'), target)).toBeUndefined();
  });

  it('removes an approval, says nothing when there is none, and the reason when it cannot write', () => {
    expect(writeApproval(home(), user('x'))).toBeUndefined();
    expect(removeApproval(home(), { scope: 'user', name: 'x', version: 1 })).toBeUndefined();
    expect(readApproval(home(), { scope: 'user', name: 'x', version: 1 })).toBeUndefined();
    expect(removeApproval(home(), { scope: 'user', name: 'x', version: 1 })).toBeUndefined();
    const blocked = join(base, 'a-file');
    writeFileSync(blocked, 'not a folder');
    expect(writeApproval(blocked, user('x'))).toMatch(/^cannot write the approval in .*a-file\/approvals: (ENOTDIR|EEXIST)$/);
  });

  it('notes once that older approvals were taken over', () => {
    expect(approvalsMigrated(home())).toBe(false);
    expect(markApprovalsMigrated(home())).toBe(true);
    expect(approvalsMigrated(home())).toBe(true);
    expect(statSync(join(approvalsDir(home()), 'migrated')).mode & 0o777).toBe(0o600);
  });
});
