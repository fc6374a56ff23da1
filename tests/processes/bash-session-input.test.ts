import { stat, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NOTHING_WAITING, type BashRunOptions } from '../../src/processes/bash-session';
import { findTerminalReader, terminalOf } from '../../src/processes/input-wait';
import { useBashSessions } from '../support/bash-sessions';

// Waiting for input is told from /proc: Linux only.
const linux = process.platform === 'linux';

const bash = useBashSessions('fence-bash-input-test-');
const open = bash.open;

/** A short quiet threshold; a timeout far longer than any of these commands should take. */
const quick: BashRunOptions = { inputWaitMs: 300, timeoutMs: 30_000 };

/** The terminal's reader, looking again for up to 5 s while none is found. */
async function readerWithin(shellPid: number, terminal: string): ReturnType<typeof findTerminalReader> {
  for (let tries = 0; tries < 100; tries++) {
    const reader = await findTerminalReader(shellPid, terminal);
    if (reader) return reader;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return findTerminalReader(shellPid, terminal);
}

describe.runIf(linux)('BashSession waiting for input', () => {
  it('reports a read builtin that waits, and takes the answer', async () => {
    const session = await open();
    const asked = await session.run('read -p "name? " NAME; echo "hi $NAME"', quick);
    expect(asked).toEqual({
      output: 'name? ',
      exitCode: null,
      timedOut: false,
      interrupted: false,
      droppedBytes: 0,
      waitingForInput: true,
    });
    expect(session.waitingCommand).toBe('read -p "name? " NAME; echo "hi $NAME"');
    const answered = await session.sendInput('bob', quick);
    expect(answered).toEqual({ output: 'hi bob\n', exitCode: 0, timedOut: false, interrupted: false, droppedBytes: 0 });
    expect(session.waitingCommand).toBeUndefined();
    expect((await session.run('echo "$NAME"', quick)).output).toBe('bob\n');
  });

  it('answers a y/N prompt of rm -i', async () => {
    const session = await open();
    await writeFile(join(bash.dir(), 'doomed.txt'), 'x');
    const asked = await session.run('rm -i doomed.txt', quick);
    expect(asked).toMatchObject({ waitingForInput: true, exitCode: null });
    expect(asked.output).toMatch(/^rm: remove .*doomed\.txt'?\? $/);
    expect(await session.sendInput('y\n', quick)).toMatchObject({ output: '', exitCode: 0 });
    await expect(stat(join(bash.dir(), 'doomed.txt'))).rejects.toThrow();
  });

  it('holds a conversation with the python REPL, one prompt at a time', async () => {
    const session = await open();
    const started = await session.run('python3 -q', quick);
    expect(started).toMatchObject({ output: '>>> ', waitingForInput: true });
    const chunks: string[] = [];
    const answer = await session.sendInput('print(6 * 7)', { ...quick, onOutput: (chunk) => chunks.push(chunk) });
    expect(answer).toMatchObject({ output: '42\n>>> ', waitingForInput: true, exitCode: null });
    expect(chunks.join('')).toBe('42\n>>> ');
    expect(await session.sendInput('exit(3)', quick)).toMatchObject({ output: '', exitCode: 3 });
  });

  it('sees a REPL that waits in epoll (node) and a password prompt on /dev/tty', async () => {
    const session = await open();
    const node = await session.run('node', quick);
    expect(node).toMatchObject({ waitingForInput: true });
    expect(node.output.endsWith('> ')).toBe(true);
    expect((await session.sendInput('40 + 2', quick)).output).toMatch(/^(40 \+ 2\n)?42\n> $/);

    const password = await session.run('python3 -c "import getpass; print(len(getpass.getpass()))"', quick);
    expect(password).toMatchObject({ output: 'Password: ', waitingForInput: true, stoppedWaiting: { command: 'node' } });
    expect(await session.sendInput('secret', quick)).toMatchObject({ output: '\n6\n', exitCode: 0 });
  });

  it('stops a waiting command before the next one, and says so', async () => {
    const session = await open();
    const pid = session.pid;
    expect(await session.run('cat', quick)).toMatchObject({ output: '', waitingForInput: true });
    const next = await session.run('echo next', quick);
    expect(next).toEqual({
      output: 'next\n',
      exitCode: 0,
      timedOut: false,
      interrupted: false,
      droppedBytes: 0,
      stoppedWaiting: { command: 'cat', exitCode: null },
    });
    // The python REPL shrugs off Ctrl-C: it is killed, and bash lives on.
    expect(await session.run('python3 -q', quick)).toMatchObject({ waitingForInput: true });
    expect(await session.run('echo after', quick)).toMatchObject({
      output: 'after\n',
      stoppedWaiting: { command: 'python3 -q', exitCode: null },
    });
    expect(session.pid).toBe(pid);
  });

  it('does not take sleeping, waiting for a child or polling a socket for waiting for input', async () => {
    const session = await open();
    const quiet = [
      'sleep 1; echo slept',
      'sleep 1 & wait; echo waited',
      'sleep 1 | cat; echo piped',
      'python3 -c "import time; time.sleep(1); print(\'python slept\')"',
      `python3 -c "import socket, select; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); select.select([s], [], [], 1); print('selected')"`,
      `python3 -c "import socket, select; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); p = select.poll(); p.register(s); p.poll(1000); print('polled')"`,
    ];
    for (const command of quiet) {
      const result = await session.run(command, quick);
      expect(result.waitingForInput).toBeUndefined();
      expect(result.exitCode).toBe(0);
    }
  });

  it('finds the reader of each kind: bash itself in read, a REPL in pselect6 or epoll', async () => {
    const session = await open();
    const terminal = terminalOf(session.pid);
    expect(terminal).toMatch(/^\/dev\//);
    const cases: [string, string, number | 'bash'][] = [
      ['read X', 'read', 'bash'],
      ['echo $$ > pid; exec python3 -q', 'select', 0],
      ['echo $$ > pid; exec node', 'epoll', 0],
      ['echo $$ > pid; exec cat', 'read', 0],
    ];
    for (const [command, call, who] of cases) {
      expect(await session.run(command, quick)).toMatchObject({ waitingForInput: true });
      const pid = who === 'bash' ? session.pid : Number(readFileSync(join(bash.dir(), 'pid'), 'utf8'));
      // Stopping the previous case may have started bash anew, on another terminal: ask again.
      const current = (terminalOf(session.pid)) ?? '';
      // A REPL wakes now and then (timers, history): look again for a moment if it is busy.
      expect(await readerWithin(session.pid, current)).toEqual({ pid, call });
    }
    // Idle at its prompt, bash reads the terminal too: the check is only made while a command runs.
    await session.run('true', quick);
    expect(await readerWithin(session.pid, (terminalOf(session.pid)) ?? '')).toEqual({ pid: session.pid, call: 'read' });
  });

  it('answers sendInput with nothing waiting without typing anything', async () => {
    const session = await open();
    const result = await session.sendInput('touch typed.txt');
    expect(result).toEqual({
      output: NOTHING_WAITING,
      exitCode: null,
      timedOut: false,
      interrupted: false,
      droppedBytes: 0,
      nothingWaiting: true,
    });
    expect(existsSync(join(bash.dir(), 'typed.txt'))).toBe(false);
    expect((await session.run('echo fine', quick)).output).toBe('fine\n');
  });

  it('does not type into bash when the waiting command ended on its own', async () => {
    const session = await open();
    const asked = await session.run('read -t 1 LATE; echo gone; touch ended', quick);
    expect(asked).toMatchObject({ waitingForInput: true });
    // Once the file is there, the next time bash reads the terminal it is at its prompt again.
    const terminal = (terminalOf(session.pid)) ?? '';
    const deadline = Date.now() + 10_000;
    const bashAtPrompt = async (): Promise<boolean> =>
      existsSync(join(bash.dir(), 'ended')) && (await findTerminalReader(session.pid, terminal))?.pid === session.pid;
    while (!(await bashAtPrompt()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const late = await session.sendInput('touch typed.txt', quick);
    expect(late).toMatchObject({ output: 'gone\n', exitCode: 0, nothingWaiting: true });
    expect(await session.run('echo ok', quick)).toMatchObject({ output: 'ok\n', exitCode: 0 });
    expect(existsSync(join(bash.dir(), 'typed.txt'))).toBe(false);
  });

  it('times out an answered command that then runs too long', async () => {
    const session = await open();
    expect(await session.run('read X; echo "got $X"; sleep 100', quick)).toMatchObject({ waitingForInput: true });
    const result = await session.sendInput('it', { inputWaitMs: 300, timeoutMs: 500 });
    expect(result).toMatchObject({ timedOut: true, exitCode: null });
    expect(result.output).toMatch(/^got it\n/);
    expect((await session.run('echo alive', quick)).output).toBe('alive\n');
  });

  it('leaves the check off with an infinite quiet threshold: the command times out', async () => {
    const session = await open();
    const result = await session.run('read X', { inputWaitMs: Infinity, timeoutMs: 500 });
    expect(result).toMatchObject({ timedOut: true });
    expect(result.waitingForInput).toBeUndefined();
  });

  it('kills a waiting command on close', async () => {
    const session = await open();
    expect(await session.run('echo $$ > cat.pid; exec cat', quick)).toMatchObject({ waitingForInput: true });
    await session.close();
    await expect(session.sendInput('late')).rejects.toThrow(/closed/);
  });
});
