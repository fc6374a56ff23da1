import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECKPOINT_MAX_BYTES, CHECKPOINTS_FILE, FileCheckpoints } from '../../src/conversation/file-checkpoints';
import { admittedRestore } from '../../src/tools/admitted-restore';
import { useTempWorkspace } from '../support/tool-context';

const root = useTempWorkspace('fence-checkpoints-');
const sessionDir = () => join(root(), 'session');
const file = (name: string) => join(root(), 'work', name);
/** The file tools' checked writes, with no sandbox and no rules: this file tests the bookkeeping. */
const files = () => admittedRestore({ workspace: join(root(), 'work') }, []);

/** Writes `text` to a workspace file the way a file tool does: keeping it first. */
function write(checkpoints: FileCheckpoints, name: string, text: string, position: number): void {
  const path = file(name);
  mkdirSync(join(root(), 'work'), { recursive: true });
  checkpoints.keep(path, existsSync(path) ? readFileSync(path) : undefined, position);
  writeFileSync(path, text);
}

describe('FileCheckpoints', async () => {
  it('puts back what the writes from a position on changed: old contents, and files they created removed', async () => {
    const checkpoints = new FileCheckpoints(sessionDir);
    write(checkpoints, 'kept.txt', 'before\n', 1);
    write(checkpoints, 'kept.txt', 'first change\n', 5);
    write(checkpoints, 'kept.txt', 'second change\n', 7);
    write(checkpoints, 'new.txt', 'made later\n', 7);
    const outcome = (await checkpoints.restore(4, files()));
    expect(outcome.failed).toEqual([]);
    expect(outcome.restored.sort()).toEqual([file('kept.txt'), file('new.txt')].sort());
    expect(readFileSync(file('kept.txt'), 'utf8')).toBe('before\n');
    expect(existsSync(file('new.txt'))).toBe(false);
  });

  it('uses a checkpoint once: after a restore, writes at the same positions count again', async () => {
    const checkpoints = new FileCheckpoints(sessionDir);
    write(checkpoints, 'a.txt', 'one\n', 2);
    expect((await checkpoints.restore(2, files())).restored).toEqual([file('a.txt')]);
    expect(existsSync(file('a.txt'))).toBe(false);
    expect((await checkpoints.restore(2, files())).restored).toEqual([]);
    write(checkpoints, 'a.txt', 'two\n', 2);
    write(checkpoints, 'a.txt', 'three\n', 3);
    await checkpoints.restore(3, files());
    expect(readFileSync(file('a.txt'), 'utf8')).toBe('two\n');
  });

  it('keeps bytes exactly, says which file it could not keep, and skips a line cut short by a crash', async () => {
    const checkpoints = new FileCheckpoints(sessionDir);
    const bytes = Buffer.from([0xff, 0x00, 0x0a, 0xe2, 0x82]);
    mkdirSync(join(root(), 'work'), { recursive: true });
    writeFileSync(file('bin'), bytes);
    checkpoints.keep(file('bin'), bytes, 1);
    writeFileSync(file('bin'), 'text');
    const big = Buffer.alloc(CHECKPOINT_MAX_BYTES + 1, 'x');
    checkpoints.keep(file('big.txt'), big, 1);
    writeFileSync(join(sessionDir(), CHECKPOINTS_FILE), `${readFileSync(join(sessionDir(), CHECKPOINTS_FILE), 'utf8')}{"position": 1, "pa`);
    const outcome = (await checkpoints.restore(0, files()));
    expect(readFileSync(file('bin')).equals(bytes)).toBe(true);
    expect(outcome.failed).toEqual([{ path: file('big.txt'), reason: `it held ${CHECKPOINT_MAX_BYTES + 1} bytes, more than a checkpoint keeps` }]);
  });

  it('follows the session folder it is given at each use', async () => {
    let dir = sessionDir();
    const checkpoints = new FileCheckpoints(() => dir);
    write(checkpoints, 'a.txt', 'one\n', 1);
    dir = join(root(), 'fork');
    write(checkpoints, 'a.txt', 'two\n', 2);
    expect(existsSync(join(root(), 'fork', CHECKPOINTS_FILE))).toBe(true);
    await checkpoints.restore(2, files());
    expect(readFileSync(file('a.txt'), 'utf8')).toBe('one\n');
  });
});
