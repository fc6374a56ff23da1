import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAlive, waitUntilDead, useBashSessions } from '../support/bash-sessions';

const bash = useBashSessions('fence-bash-test-');
const open = bash.open;



/** An `onOutput` that watches the output for `word`; `seen` resolves once it has appeared. */
function watchOutput(word: string): { onOutput: (chunk: string) => void; seen: Promise<void> } {
  let text = '';
  let markSeen!: () => void;
  const seen = new Promise<void>((resolve) => (markSeen = resolve));
  const onOutput = (chunk: string): void => {
    text += chunk;
    if (text.includes(word)) markSeen();
  };
  return { onOutput, seen };
}

/** Run options that abort the run once `word` has appeared in its output. */
function abortOn(word: string): { signal: AbortSignal; onOutput: (chunk: string) => void } {
  const controller = new AbortController();
  const watch = watchOutput(word);
  void watch.seen.then(() => controller.abort());
  return { signal: controller.signal, onOutput: watch.onOutput };
}

describe('BashSession', () => {
  it('runs a command and returns its output without echo or sentinel', async () => {
    const session = await open();
    const result = await session.run('echo hello');
    expect(result).toEqual({ output: 'hello\n', exitCode: 0, timedOut: false, interrupted: false, droppedBytes: 0 });
  });

  it('reports exit codes', async () => {
    const session = await open();
    expect((await session.run('true')).exitCode).toBe(0);
    expect((await session.run('false')).exitCode).toBe(1);
    expect((await session.run('(exit 42)')).exitCode).toBe(42);
    expect((await session.run('echo no newline; printf tail')).output).toBe('no newline\ntail');
  });

  it('keeps cwd, variables, functions and aliases between runs', async () => {
    const session = await open();
    await mkdir(join(bash.dir(), 'sub'));
    await session.run('cd sub; GREETING=hi; greet() { echo "$GREETING $1"; }; alias ll="echo aliased"');
    const result = await session.run('pwd; greet there; ll');
    expect(result.output).toBe(`${join(bash.dir(), 'sub')}\nhi there\naliased\n`);
  });

  it('runs multi-line scripts and heredocs', async () => {
    const session = await open();
    const script = [
      'for i in 1 2 3; do',
      '  if [ "$i" -eq 2 ]; then echo two; else echo "n=$i"; fi',
      'done',
      "cat <<'EOF'",
      'literal $HOME and `backticks` and \'quotes"',
      'EOF',
      'cat <<EOF > out.txt',
      'expanded $((6 * 7))',
      'EOF',
      'cat out.txt',
    ].join('\n');
    const result = await session.run(script);
    expect(result.output).toBe('n=1\ntwo\nn=3\nliteral $HOME and `backticks` and \'quotes"\nexpanded 42\n');
    expect(result.exitCode).toBe(0);
  });

  it('is not ended early by output that looks like a sentinel', async () => {
    const session = await open();
    const fake = '\x1e0123456789abcdef0123456789abcdef:0\x1e';
    const script = [
      "printf '\\036%s:%d\\036' 0123456789abcdef0123456789abcdef 0",
      'cat <<EOF',
      "builtin printf '\\036%s%s:%d\\036' 01234567 89abcdef \"\\$?\" >/dev/tty",
      'EOF',
      'sleep 0.2',
      'echo still running',
      "printf 'cut\\036'",
      'printf %s "${PS1@P}"',
      '(exit 7)',
    ].join('\n');
    const result = await session.run(script);
    expect(result.exitCode).toBe(7);
    expect(result.output).toBe(
      `${fake}builtin printf '\\036%s%s:%d\\036' 01234567 89abcdef "$?" >/dev/tty\nstill running\ncut\x1e`,
    );
  });

  it('runs commands far longer than the terminal line limit', async () => {
    const session = await open();
    const value = 'x'.repeat(10_000);
    const lines = Array.from({ length: 400 }, (_, i) => `echo line${i}`);
    const result = await session.run(`v='${value}'\necho "\${#v}"\n${lines.join('\n')}`);
    expect(result.output.split('\n')[0]).toBe('10000');
    expect(result.output.split('\n')).toHaveLength(402);
    expect(result.output.endsWith('line399\n')).toBe(true);
  });

  it('comes back from unbalanced quotes and unfinished syntax', async () => {
    const session = await open();
    for (const broken of ["echo 'oops", 'echo "oops', 'echo $(oops', 'if true; then echo x']) {
      const result = await session.run(broken, { timeoutMs: 10_000 });
      expect(result.timedOut).toBe(false);
      expect(result.exitCode).toBe(2);
      expect(result.output).toMatch(/unexpected end of file|unexpected EOF|syntax error/);
    }
    expect(await session.run('echo fine')).toMatchObject({ output: 'fine\n', exitCode: 0 });
    const partial = await session.run('touch ran.txt\necho $(oops');
    expect(partial).toMatchObject({ exitCode: 2, timedOut: false });
    expect(partial.output).toMatch(/^bash: .*unexpected EOF/);
    await expect(stat(join(bash.dir(), 'ran.txt'))).rejects.toThrow();
    const pid = session.pid;
    for (let i = 0; i < 5; i++) {
      await session.run('echo $(oops');
      expect(await session.run('echo "$((1 + 1))" \'ok\'')).toMatchObject({ output: '2 ok\n', exitCode: 0 });
    }
    expect(session.pid).toBe(pid);
  });

  it('times out a long command with Ctrl-C and keeps the shell and its state', async () => {
    const session = await open();
    await session.run('KEPT=yes; cd /');
    const pid = session.pid;
    const result = await session.run('sleep 100; echo never', { timeoutMs: 200 });
    expect(result).toMatchObject({ timedOut: true, interrupted: false, exitCode: null });
    expect(result.output).not.toContain('never');
    expect(result.shellExited).toBeUndefined();
    expect(session.pid).toBe(pid);
    expect((await session.run('echo $KEPT; pwd')).output).toBe('yes\n/\n');
  });

  it('stops a command interrupted as it is sent, and the next one runs at once with the state kept', async () => {
    // A Ctrl-C that reaches bash before it runs the line, or as it starts the program, used to
    // leave the program running unseen: the next command then hung behind it, or bash exited.
    const session = await open();
    await session.run('KEPT=yes');
    const pid = session.pid;
    for (let round = 0; round < 12; round++) {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), round % 3);
      const stopped = await session.run('sleep 100; echo never', { signal: controller.signal });
      expect(stopped).toMatchObject({ interrupted: true, exitCode: null });
      expect(stopped.output).not.toContain('never');
      expect(await session.run('echo $KEPT', { timeoutMs: 5_000 })).toMatchObject({ output: 'yes\n', exitCode: 0, timedOut: false });
    }
    expect(session.pid).toBe(pid);
  });

  it('times out programs that wait for terminal input', async () => {
    const session = await open();
    expect(await session.run('read answer', { timeoutMs: 200 })).toMatchObject({ timedOut: true });
    expect(await session.run('cat', { timeoutMs: 200 })).toMatchObject({ timedOut: true });
    expect((await session.run('echo next')).output).toBe('next\n');
  });

  it('kills a foreground process that ignores SIGINT after the grace', async () => {
    const session = await open();
    const pid = session.pid;
    const result = await session.run(
      `trap '' INT; sh -c 'echo $$ > fg.pid; echo ready; exec sleep 100'`,
      abortOn('ready'),
    );
    expect(result).toMatchObject({ interrupted: true, exitCode: null });
    const sleeper = Number(await readFile(join(bash.dir(), 'fg.pid'), 'utf8'));
    expect(isAlive(sleeper)).toBe(false);
    expect(session.pid).toBe(pid);
    expect((await session.run('trap - INT; echo alive')).output).toBe('alive\n');
  });

  it('feeds nothing to a program that keeps reading the terminal while it is stopped', async () => {
    const session = await open();
    const result = await session.run("trap '' INT; echo ready; cat > sink.txt", abortOn('ready'));
    expect(result).toMatchObject({ interrupted: true, exitCode: null });
    expect(await readFile(join(bash.dir(), 'sink.txt'), 'utf8')).toBe('');
    expect((await session.run('trap - INT; echo alive')).output).toBe('alive\n');
  });

  it('stays usable through many interrupted commands in a row', async () => {
    const session = await open();
    const pid = session.pid;
    for (const command of ['sleep 100', 'read x', 'python3 -c "input()" 2>/dev/null || sleep 100', 'cat', 'sleep 100', 'sleep 100']) {
      const result = await session.run(command, { timeoutMs: 100 });
      expect(result).toMatchObject({ timedOut: true });
      expect(result.shellExited).toBeUndefined();
    }
    expect(session.pid).toBe(pid);
    expect((await session.run('echo still here')).output).toBe('still here\n');
  });

  it('kills and restarts bash when bash itself will not stop', async () => {
    const session = await open();
    const pid = session.pid;
    const result = await session.run("trap '' INT; echo ready; while :; do :; done", abortOn('ready'));
    expect(result).toMatchObject({ interrupted: true, exitCode: null, shellExited: { code: null } });
    expect(isAlive(pid)).toBe(false);
    expect((await session.run('echo back')).output).toBe('back\n');
  });

  it('restarts bash in the first cwd when a command exits the shell, and says so', async () => {
    const session = await open();
    await mkdir(join(bash.dir(), 'elsewhere'));
    const pid = session.pid;
    const result = await session.run('cd elsewhere; LOST=1; echo bye; exit 3');
    expect(result).toMatchObject({ output: 'bye\n', exitCode: null, shellExited: { code: 3 } });
    expect(session.pid).not.toBe(pid);
    expect((await session.run('pwd; echo "lost=$LOST"')).output).toBe(`${bash.dir()}\nlost=\n`);

    const strict = await session.run('set -e; false; echo unreachable');
    expect(strict).toMatchObject({ output: '', exitCode: null, shellExited: { code: 1 } });
    const killed = await session.run('kill -9 $$');
    expect(killed.shellExited).toEqual({ code: null });
    expect(await session.run('echo ok')).toMatchObject({ output: 'ok\n', exitCode: 0 });
  });

  it('strips colours and other escape sequences and resolves carriage returns', async () => {
    const session = await open();
    const result = await session.run(
      "printf '\\033[1;31mred\\033[0m \\033]0;title\\007\\033]8;;http://x\\033\\\\link\\033]8;;\\033\\\\\\033[K plain\\r\\n'; printf 'progress 10%%\\rprogress 100%%\\ndone\\n'",
    );
    expect(result.output).toBe('red link plain\nprogress 100%\ndone\n');
  });

  it('bounds the output, keeping the head and the tail', async () => {
    const session = await open({ maxOutputBytes: 100_000 });
    const result = await session.run('seq 1 300000');
    const total = Array.from({ length: 300000 }, (_, i) => `${i + 1}\n`).join('');
    expect(result.exitCode).toBe(0);
    expect(result.droppedBytes).toBeGreaterThan(0);
    expect(result.output.startsWith('1\n2\n3\n')).toBe(true);
    expect(result.output.endsWith('299999\n300000\n')).toBe(true);
    const marker = `\n[... ${result.droppedBytes} bytes of output dropped ...]\n`;
    expect(result.output).toContain(marker);
    const kept = result.output.replace(marker, '');
    expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(100_000);
    expect(Buffer.byteLength(kept) + result.droppedBytes).toBe(Buffer.byteLength(total));
  });

  it('bounds very large output with the default cap', async () => {
    const session = await open();
    const result = await session.run('seq 1 2000000');
    expect(result.droppedBytes).toBeGreaterThan(0);
    expect(result.output.endsWith('1999999\n2000000\n')).toBe(true);
    expect(Buffer.byteLength(result.output)).toBeLessThan(8 * 1024 * 1024 + 100);
  });

  it('serialises concurrent runs', async () => {
    const session = await open();
    const finished: string[] = [];
    const first = session.run('sleep 0.3; echo one > order.txt; echo first').then((r) => (finished.push('first'), r));
    const second = session.run('cat order.txt').then((r) => (finished.push('second'), r));
    const [a, b] = await Promise.all([first, second]);
    expect(a).toMatchObject({ output: 'first\n', exitCode: 0 });
    expect(b).toMatchObject({ output: 'one\n', exitCode: 0 });
    expect(finished).toEqual(['first', 'second']);
  });

  it('interrupts on abort, and does not start a command whose signal is already aborted', async () => {
    const session = await open();
    const abort = abortOn('started');
    const result = await session.run('echo started; sleep 100', abort);
    expect(result).toMatchObject({ interrupted: true, timedOut: false, exitCode: null });
    expect(result.output).toMatch(/^started\n/);

    const skipped = await session.run('touch marker', { signal: abort.signal });
    expect(skipped.interrupted).toBe(true);
    await expect(stat(join(bash.dir(), 'marker'))).rejects.toThrow();
    expect((await session.run('echo after')).output).toBe('after\n');
  });

  it('streams clean output as it arrives', async () => {
    const session = await open();
    const chunks: string[] = [];
    const watch = watchOutput('first');
    // The command goes on only once the test has seen its first line and created `go`.
    const running = session.run(
      "printf '\\033[32mfirst\\033[0m\\r\\n'; while [ ! -e go ]; do sleep 0.01; done; echo second",
      {
        onOutput: (chunk) => {
          chunks.push(chunk);
          watch.onOutput(chunk);
        },
      },
    );
    await watch.seen;
    expect(chunks.join('')).toBe('first\n');
    await writeFile(join(bash.dir(), 'go'), '');
    const result = await running;
    expect(result.output).toBe('first\nsecond\n');
    expect(chunks.join('')).toBe(result.output);
  });

  it('sets a non-interactive environment and the extra variables', async () => {
    const session = await open({ env: { FENCE_TEST_VAR: 'hello', PAGER: 'more-overridden' } });
    const result = await session.run(
      'echo "$PAGER|$GIT_PAGER|$EDITOR|$VISUAL|$GIT_TERMINAL_PROMPT|$TERM|$NO_COLOR|$FENCE_TEST_VAR"; echo "${LC_ALL:-$LANG}"',
    );
    const [vars, locale] = result.output.split('\n');
    expect(vars).toBe('more-overridden|cat|true|true|0|dumb|1|hello');
    expect(locale).toMatch(/utf-?8/i);
    expect((await session.run("echo 'héllo ✓'")).output).toBe('héllo ✓\n');
  });

  it('survives a command that turns terminal echo back on or redirects its stdout', async () => {
    const session = await open();
    await session.run('stty echo');
    expect(await session.run('echo visible')).toMatchObject({ output: 'visible\n', exitCode: 0 });
    await session.run('exec 3>&1 >/dev/null');
    expect(await session.run('echo hidden; (exit 4)')).toMatchObject({ output: '', exitCode: 4 });
    expect((await session.run('exec >&3; echo shown')).output).toBe('shown\n');
  });

  it('keeps working when a command removes the temp directory of the session', async () => {
    const session = await open();
    await session.run('rm -rf "$(dirname "$BASH_SOURCE")"');
    expect(await session.run('echo still')).toMatchObject({ output: 'still\n', exitCode: 0 });
  });

  it('answers many quick commands in a row', async () => {
    const session = await open();
    for (let i = 0; i < 100; i++) {
      expect((await session.run('true')).exitCode).toBe(0);
    }
  });

  it('answers awkward output clearly and stays alive: no newline, a 1 MB line, binary, 50 MB', { timeout: 180_000 }, async () => {
    const session = await open();
    expect(await session.run('printf "no newline at all"')).toMatchObject({ output: 'no newline at all', exitCode: 0 });
    const long = await session.run("head -c 1000000 /dev/zero | tr '\\0' x");
    expect(long).toMatchObject({ exitCode: 0, droppedBytes: 0 });
    expect(long.output).toBe('x'.repeat(1_000_000));
    // Stray bytes that open an escape string (OSC, APC) and never close it swallow no later line.
    const stray = await session.run("printf 'bin\\033]\\204junk\\033_x'; echo; echo after-stray");
    expect(stray.exitCode).toBe(0);
    expect(stray.output).toMatch(/^bin[^\n]*\nafter-stray\n$/);
    const binary = await session.run('head -c 10000 /dev/urandom; echo; echo after-binary', { timeoutMs: 30_000 });
    expect(binary).toMatchObject({ exitCode: 0, timedOut: false });
    expect(binary.output.endsWith('after-binary\n')).toBe(true);
    const huge = await session.run('yes | head -c 50000000', { timeoutMs: 120_000 });
    expect(huge).toMatchObject({ exitCode: 0, timedOut: false });
    expect(huge.droppedBytes).toBeGreaterThan(40_000_000);
    expect(huge.output.slice(0, 8)).toBe('y\ny\ny\ny\n');
    expect(huge.output.slice(-8)).toBe('y\ny\ny\ny\n');
    expect(await session.run('echo still fine')).toMatchObject({ output: 'still fine\n', exitCode: 0 });
  });

  it('removes its temp bash.dir() on close, and those of dead processes at the next start', async () => {
    const gone = spawn('true');
    await once(gone, 'exit');
    const stale = join(tmpdir(), `fence-bash-${gone.pid}-AbC123`);
    const live = join(tmpdir(), `fence-bash-${process.pid}-XyZ789`);
    const unrelated = join(tmpdir(), 'fence-bash-notapid-000000');
    for (const path of [stale, live, unrelated]) await mkdir(path, { recursive: true });
    await writeFile(join(stale, 'command.sh'), 'echo left behind');
    try {
      const session = await open();
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(live)).toBe(true);
      expect(existsSync(unrelated)).toBe(true);
      const own = (await session.run('dirname "$BASH_SOURCE"')).output.trim();
      expect(own.startsWith(join(tmpdir(), `fence-bash-${process.pid}-`))).toBe(true);
      expect(existsSync(own)).toBe(true);
      await session.close();
      expect(existsSync(own)).toBe(false);
    } finally {
      await Promise.all([stale, live, unrelated].map((path) => rm(path, { recursive: true, force: true })));
    }
  });

  it('kills bash and all its children on close, and is idempotent', async () => {
    const session = await open();
    const bash = session.pid;
    const started = await session.run(
      'sleep 1001 & echo $!; (sleep 1002 & echo $!); nohup sleep 1003 >/dev/null 2>&1 & echo $!; disown',
    );
    const children = started.output.trim().split('\n').map(Number);
    expect(children).toHaveLength(3);
    expect(children.every(isAlive)).toBe(true);
    const watch = watchOutput('go');
    const running = session.run('echo go; sleep 1004', { onOutput: watch.onOutput });
    await watch.seen;
    await session.close();
    await session.close();
    expect(await running).toMatchObject({ exitCode: null, interrupted: true });
    expect(await waitUntilDead([bash, ...children])).toEqual([]);
    await expect(session.run('echo no')).rejects.toThrow(/closed/);
  });
});
