import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeUnread, readRegularFile } from '../../src/config/regular-file';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync('/var/tmp/fence-regular-file-');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('readRegularFile', () => {
  it('reads a regular file within the cap, and a link to one only when links are followed', () => {
    writeFileSync(join(dir, 'CLAUDE.md'), 'be brief\n');
    symlinkSync('CLAUDE.md', join(dir, 'AGENTS.md'));
    expect(readRegularFile(join(dir, 'CLAUDE.md'), 100)).toEqual({ kind: 'read', bytes: Buffer.from('be brief\n') });
    expect(readRegularFile(join(dir, 'AGENTS.md'), 100, 'follow')).toEqual({ kind: 'read', bytes: Buffer.from('be brief\n') });
    expect(readRegularFile(join(dir, 'AGENTS.md'), 100)).toEqual({ kind: 'not-regular', what: 'a link' });
  });

  it('reads nothing from a named pipe, a device, a folder, or a file over the cap', () => {
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    symlinkSync('/dev/zero', join(dir, 'zero'));
    mkdirSync(join(dir, 'folder'));
    writeFileSync(join(dir, 'big'), Buffer.alloc(101, 'a'));
    writeFileSync(join(dir, 'exact'), Buffer.alloc(100, 'a'));
    const pipe = readRegularFile(join(dir, 'pipe'), 100, 'follow');
    expect(pipe).toEqual({ kind: 'not-regular', what: 'a named pipe' });
    expect(readRegularFile(join(dir, 'zero'), 100, 'follow')).toEqual({ kind: 'not-regular', what: 'a device' });
    expect(readRegularFile(join(dir, 'folder'), 100)).toEqual({ kind: 'not-regular', what: 'a folder' });
    expect(readRegularFile(join(dir, 'big'), 100)).toEqual({ kind: 'too-large', size: 101, limitBytes: 100 });
    expect(readRegularFile(join(dir, 'exact'), 100)).toMatchObject({ kind: 'read' });
    expect(describeUnread(pipe as Exclude<typeof pipe, { kind: 'read' }>)).toBe('it is a named pipe, not a regular file');
  });

  it('tells a missing file, and a link to nothing, from one it cannot read', () => {
    symlinkSync('gone', join(dir, 'dangling'));
    expect(readRegularFile(join(dir, 'missing'), 100)).toEqual({ kind: 'absent' });
    expect(readRegularFile(join(dir, 'missing', 'below'), 100)).toEqual({ kind: 'absent' });
    expect(readRegularFile(join(dir, 'dangling'), 100, 'follow')).toEqual({ kind: 'absent' });
  });
});
