import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireSessionLock, LOCK_FILE, sessionLockHolder, type SessionLockHolder } from '../../src/conversation/session-lock';
import { useTempSession } from '../support/temp-session';

const session = useTempSession('locked-1');
const lockPath = () => join(session().dir, LOCK_FILE);
const readHolder = () => JSON.parse(readFileSync(lockPath(), 'utf8')) as SessionLockHolder;
const writeLock = (content: string) => writeFileSync(lockPath(), content);
const bootId = existsSync('/proc/sys/kernel/random/boot_id') ? readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() : undefined;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** A real process that lives until killed. */
function startSleeper(): ChildProcess & { pid: number } {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  children.push(child);
  if (child.pid === undefined) throw new Error('the sleeper did not start');
  return child as ChildProcess & { pid: number };
}

/** Kills a child with SIGKILL and waits until it has been reaped, so its pid is gone. */
async function killAndReap(child: ChildProcess): Promise<void> {
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGKILL');
  await exited;
}

/** The pid of a process that has ended. */
async function deadPid(): Promise<number> {
  const child = startSleeper();
  await killAndReap(child);
  return child.pid;
}

describe('acquireSessionLock', () => {
  it('writes { pid, host, startedAt } of this process and removes it on release', () => {
    const lock = acquireSessionLock(session().dir);
    const holder = readHolder();
    expect(holder).toEqual({ pid: process.pid, host: hostname(), startedAt: holder.startedAt, ...(bootId ? { boot: bootId } : {}) });
    expect(new Date(holder.startedAt).toISOString()).toBe(holder.startedAt);
    expect(readdirSync(session().dir)).toEqual([LOCK_FILE]);

    lock.release();
    expect(readdirSync(session().dir)).toEqual([]);
    lock.release();
    expect(readdirSync(session().dir)).toEqual([]);
  });

  it('refuses a lock held by another live process, leaving it untouched', () => {
    const child = startSleeper();
    const content = JSON.stringify({ pid: child.pid, host: hostname(), startedAt: '2026-05-03T10:00:00.000Z' });
    writeLock(content);

    expect(() => acquireSessionLock(session().dir)).toThrow(
      new Error(`session locked-1 is in use by another fence process (pid ${child.pid}, since 2026-05-03T10:00:00.000Z); wait for it to end or stop it`),
    );
    expect(readFileSync(lockPath(), 'utf8')).toBe(content);
    expect(readdirSync(session().dir)).toEqual([LOCK_FILE]);
  });

  it('takes the lock over once its holder has been killed', async () => {
    const child = startSleeper();
    writeLock(JSON.stringify({ pid: child.pid, host: hostname(), startedAt: '2026-05-03T10:00:00.000Z' }));
    expect(() => acquireSessionLock(session().dir)).toThrow(/is in use by another fence process/);

    await killAndReap(child);
    const lock = acquireSessionLock(session().dir);
    expect(readHolder().pid).toBe(process.pid);
    expect(readdirSync(session().dir)).toEqual([LOCK_FILE]);
    lock.release();
    expect(existsSync(lockPath())).toBe(false);
  });

  it('refuses a lock whose pid exists even when signalling it is not allowed (pid 1)', () => {
    writeLock(JSON.stringify({ pid: 1, host: hostname(), startedAt: '2026-05-03T10:00:00.000Z' }));
    expect(() => acquireSessionLock(session().dir)).toThrow(
      new Error('session locked-1 is in use by another fence process (pid 1, since 2026-05-03T10:00:00.000Z); wait for it to end or stop it'),
    );
  });

  it.each([
    ['empty', ''],
    ['not JSON', 'garbage\u0000\u0001'],
    ['a torn write', '{"pid":12'],
    ['null', 'null'],
    ['an array', '[1,2]'],
    ['pid 0 (would signal a process group)', JSON.stringify({ pid: 0, host: hostname(), startedAt: 'x' })],
    ['a negative pid', JSON.stringify({ pid: -1, host: hostname(), startedAt: 'x' })],
    ['a pid that is text', JSON.stringify({ pid: '1', host: hostname(), startedAt: 'x' })],
    ['a fractional pid', JSON.stringify({ pid: 1.5, host: hostname(), startedAt: 'x' })],
    ['no host', JSON.stringify({ pid: 1, startedAt: 'x' })],
    ['no startedAt', JSON.stringify({ pid: 1, host: hostname() })],
  ])('takes over a lock file that is %s', (_name, content) => {
    writeLock(content);
    const lock = acquireSessionLock(session().dir);
    expect(readHolder().pid).toBe(process.pid);
    expect(readdirSync(session().dir)).toEqual([LOCK_FILE]);
    lock.release();
    expect(existsSync(lockPath())).toBe(false);
  });

  it('takes over a lock whose pid has ended', async () => {
    writeLock(JSON.stringify({ pid: await deadPid(), host: hostname(), startedAt: '2026-05-03T10:00:00.000Z' }));
    acquireSessionLock(session().dir);
    expect(readHolder().pid).toBe(process.pid);
  });

  it.skipIf(bootId === undefined)('takes over a lock from an earlier boot even when its pid is in use now', () => {
    const child = startSleeper();
    writeLock(JSON.stringify({ pid: child.pid, host: hostname(), startedAt: '2026-05-03T10:00:00.000Z', boot: 'an-earlier-boot' }));
    acquireSessionLock(session().dir);
    expect(readHolder().pid).toBe(process.pid);
  });

  it('refuses a lock taken on another host, whose processes cannot be seen, and says which file to delete', async () => {
    writeLock(JSON.stringify({ pid: await deadPid(), host: 'elsewhere.example', startedAt: '2026-05-03T10:00:00.000Z' }));
    const pid = readHolder().pid;
    expect(() => acquireSessionLock(session().dir)).toThrow(
      new Error(`session locked-1 is in use by a fence process on elsewhere.example (pid ${pid}, since 2026-05-03T10:00:00.000Z); if it has ended, delete ${lockPath()}`),
    );
  });

  it('refuses a second lock in the same process until the first is released', () => {
    const first = acquireSessionLock(session().dir);
    expect(() => acquireSessionLock(session().dir)).toThrow(new Error('session locked-1 is open already in this fence process'));
    first.release();
    const second = acquireSessionLock(session().dir);
    expect(readHolder().pid).toBe(process.pid);
    first.release();
    expect(existsSync(lockPath())).toBe(true);
    second.release();
    expect(existsSync(lockPath())).toBe(false);
  });

  it('leaves alone on release a lock that another process has taken over', () => {
    const lock = acquireSessionLock(session().dir);
    const theirs = JSON.stringify({ pid: 1, host: hostname(), startedAt: '2026-05-03T11:00:00.000Z' });
    writeLock(theirs);
    lock.release();
    expect(readFileSync(lockPath(), 'utf8')).toBe(theirs);
  });

  it('fails plainly when the session folder does not exist', () => {
    expect(() => acquireSessionLock(join(session().dir, 'missing'))).toThrow(/ENOENT/);
  });

  it('lets exactly one of several processes take over the same stale lock', async () => {
    writeLock('stale garbage');
    const moduleUrl = new URL('../../src/conversation/session-lock.ts', import.meta.url).href;
    // Each racer loads the module, says `ready`, and tries for the lock on the first input it
    // gets; it answers, then holds what it won until its input ends.
    const script = [
      `import { acquireSessionLock } from ${JSON.stringify(moduleUrl)};`,
      'let lock;',
      "process.stdin.once('data', () => {",
      `  try { lock = acquireSessionLock(${JSON.stringify(session().dir)}); process.stdout.write('won\\n'); }`,
      "  catch (error) { process.stdout.write(error.message.includes('in use by another fence process') ? 'refused\\n' : `error ${error.message}\\n`); }",
      '});',
      "process.stdin.on('end', () => lock?.release());",
      "process.stdout.write('ready\\n');",
    ].join('\n');
    const racers = Array.from({ length: 6 }, () => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: resolve(import.meta.dirname, '../..'),
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      children.push(child);
      const lines: string[] = [];
      const waiters: (() => void)[] = [];
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const parts = out.split('\n');
        out = parts.pop() ?? '';
        lines.push(...parts);
        for (const wake of waiters.splice(0)) wake();
      });
      child.once('exit', () => {
        for (const wake of waiters.splice(0)) wake();
      });
      const line = async (n: number): Promise<string | undefined> => {
        while (lines.length <= n && child.exitCode === null && child.signalCode === null) await new Promise<void>((wake) => waiters.push(wake));
        return lines[n];
      };
      return { child, line };
    });

    expect(await Promise.all(racers.map((racer) => racer.line(0)))).toEqual(Array(6).fill('ready'));
    for (const { child } of racers) child.stdin?.write('go\n');
    const answers = await Promise.all(racers.map((racer) => racer.line(1)));

    expect(answers.filter((answer) => answer === 'won')).toHaveLength(1);
    expect(answers.filter((answer) => answer === 'refused')).toHaveLength(5);
    const winner = racers[answers.indexOf('won')]!.child;
    expect(readHolder().pid).toBe(winner.pid);
    expect(readdirSync(session().dir)).toEqual([LOCK_FILE]);

    await Promise.all(
      racers.map(({ child }) => {
        const exited = new Promise((done) => child.once('exit', done));
        child.stdin?.end();
        return exited;
      }),
    );
    expect(readdirSync(session().dir)).toEqual([]);
  });
});

describe('sessionLockHolder', () => {
  it('is undefined without a lock, for garbage and for an ended holder', async () => {
    expect(sessionLockHolder(session().dir)).toBeUndefined();
    writeLock('{"pid":');
    expect(sessionLockHolder(session().dir)).toBeUndefined();
    writeLock(JSON.stringify({ pid: await deadPid(), host: hostname(), startedAt: '2026-05-03T10:00:00.000Z' }));
    expect(sessionLockHolder(session().dir)).toBeUndefined();
  });

  it('is the holder while it runs, and only reads', () => {
    const child = startSleeper();
    const holder = { pid: child.pid, host: hostname(), startedAt: '2026-05-03T10:00:00.000Z' };
    writeLock(JSON.stringify(holder));
    expect(sessionLockHolder(session().dir)).toEqual(holder);
    expect(readFileSync(lockPath(), 'utf8')).toBe(JSON.stringify(holder));
  });
});
