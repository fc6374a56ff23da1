import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/conversation/message';
import { interruptedCallNote } from '../../src/conversation/resume';
import { readSession } from '../../src/conversation/session-store';
import { checkToolCallPairing } from '../support/fake-llm';
import { FENCE_BIN, readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** Starts fence in the background (so that the test can kill it), against the fake server. */
function startFence(args: string[], more: { input?: string } = {}) {
  return execa(process.execPath, [FENCE_BIN, '-m', 'local/test', ...args], {
    cwd: cli.dirs.workspace,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(cli.dirs.workspace), LANG: 'C.UTF-8', ...cli.env() },
    extendEnv: false,
    input: more.input ?? '',
    reject: false,
  });
}

/** Resolves once `path` exists. */
async function waitForFile(path: string): Promise<void> {
  for (let i = 0; i < 1200 && !existsSync(path); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  if (!existsSync(path)) throw new Error(`${path} never appeared`);
}

/** Whether a process with this pid exists (a zombie counts as gone). */
function processAlive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
}

/** Waits until the only session's log satisfies `ready`. */
async function waitForLog(ready: (log: Message[]) => boolean): Promise<string> {
  for (let i = 0; i < 400; i++) {
    const sessions = join(cli.dirs.home, 'sessions');
    try {
      if (existsSync(sessions) && readdirSync(sessions).length === 1 && ready(readOnlySessionLog(cli.dirs.home))) return readdirSync(sessions)[0] ?? '';
    } catch {
      // A line being written right now: look again.
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the session never reached the expected state');
}

describe('kill -9, then --resume', () => {
  it.each(['markdown', 'tool'] as const)('answers the %s call that was running as interrupted, and goes on with nothing lost', async (format) => {
    const block = (r: Parameters<Parameters<typeof cli.server.reply>[0]>[0]) =>
      format === 'tool' ? r.toolCall('shell', { command: 'sleep 30' }, 'call_sleep') : r.text('```shell\nsleep 30\n```\n');
    cli.server.reply((r) => (format === 'tool' ? r.toolCall('shell', { command: 'echo first' }, 'call_first') : r.text('```shell\necho first\n```\n')));
    cli.server.reply(block);
    const first = startFence(['-n', '--tool-format', format, 'run things']);
    const id = await waitForLog((log) => log.filter((message) => message.role === 'assistant').length === 2);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the sleep is running now
    first.kill('SIGKILL');
    await first;
    const before = readOnlySessionLog(cli.dirs.home);
    expect(existsSync(join(cli.dirs.home, 'sessions', id, 'session.lock'))).toBe(true); // left by the dead process

    cli.server.reply((r) => r.text('I will not sleep again. Done.'));
    const resumed = await runFence(['-m', 'local/test', '-n', '--resume', id], { cwd: cli.dirs.workspace, env: cli.env() });

    expect(resumed.exitCode).toBe(0);
    expect(resumed.stdout).toBe('I will not sleep again. Done.');
    expect(resumed.stderr).toContain(`session ${id}`);
    const after = readOnlySessionLog(cli.dirs.home);
    expect(after.slice(0, before.length)).toEqual(before); // nothing completed is lost or changed
    const repair = after[before.length];
    expect(repair?.meta).toMatchObject({ toolResult: true, isError: true, interrupted: true });
    // A markdown block's tool is in its text only, which the repair does not parse.
    expect(repair?.content).toBe(interruptedCallNote(format === 'tool' ? 'shell' : undefined));
    if (format === 'tool') expect(repair?.callId).toBe('call_sleep');
    expect(after[before.length + 1]).toMatchObject({ role: 'user', content: 'Go on with the task where you left off.' });
    const request = cli.server.requests.at(-1)!;
    expect(checkToolCallPairing(request)).toEqual([]);
    expect(JSON.stringify(request.body.messages)).toContain('echo first');
    expect(JSON.parse(readFileSync(join(cli.dirs.home, 'sessions', id, 'session.json'), 'utf8'))).toMatchObject({ toolFormat: format });
    expect(existsSync(join(cli.dirs.home, 'sessions', id, 'session.lock'))).toBe(false);
  });

  it('loses only the reply that was streaming when killed, and goes on', async () => {
    cli.server.reply((r) => r.text('```shell\necho done-before\n```\n'));
    cli.server.reply((r) => r.text('I am halfway through writing this reply').hang());
    const first = startFence(['-n', 'work']);
    const id = await waitForLog((log) => log.some((message) => message.meta?.toolResult));
    await cli.server.waitForRequests(2);
    first.kill('SIGKILL');
    await first;
    const before = readOnlySessionLog(cli.dirs.home);
    expect(before.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'system']);

    cli.server.reply((r) => r.text('Finished.'));
    const resumed = await runFence(['-m', 'local/test', '-n', '--resume', id, 'finish the work'], { cwd: cli.dirs.workspace, env: cli.env() });

    expect(resumed.exitCode).toBe(0);
    expect(resumed.stdout).toBe('Finished.');
    const after = readOnlySessionLog(cli.dirs.home);
    expect(after.slice(0, before.length)).toEqual(before);
    // The shell that ran echo is gone with the killed process: the model is told so, once.
    expect(after.slice(before.length).map((message) => [message.role, message.meta?.notice ?? message.content])).toEqual([
      ['system', 'new_runtimes'],
      ['user', 'finish the work'],
      ['assistant', 'Finished.'],
    ]);
    expect(JSON.stringify(cli.server.requests.at(-1)?.body.messages)).toContain('done-before');
  });

  it('refuses to resume a session another fence process is running, saying which', async () => {
    cli.server.reply((r) => r.text('Thinking').hang());
    const running = startFence(['-n', '--name', 'busy', 'think']);
    await waitForLog((log) => log.some((message) => message.role === 'user'));

    const second = await runFence(['-m', 'local/test', '-n', '--resume', 'busy', 'more'], { cwd: cli.dirs.workspace, env: cli.env() });

    expect(second.exitCode).toBe(1);
    expect(second.stderr).toMatch(/session busy is in use by another fence process \(pid \d+/);
    running.kill('SIGKILL');
    await running;
  });

  it('tells a resumed session which tools came since it last ran, once', async () => {
    cli.server.reply((r) => r.text('First.')).reply((r) => r.text('Second.')).reply((r) => r.text('Third.'));
    const fence = (args: string[]) => runFence(['-m', 'local/test', '-n', ...args], { cwd: cli.dirs.workspace, env: cli.env() });
    expect((await fence(['--name', 'grows', 'hello'])).exitCode).toBe(0);
    writeFileSync(
      join(cli.dirs.workspace, 'fence.toml'),
      '[tools.lookup]\ndescription = "Look up an employee by id"\ncommand = ["true"]\nparameters = { type = "object", properties = { id = { type = "string" } } }\n',
    );
    cli.trust();
    expect((await fence(['--resume', 'grows', 'again'])).exitCode).toBe(0);
    const second = JSON.stringify(cli.server.requests[1]?.body.messages);
    expect(second).toContain('The tools changed since this session last ran.');
    expect(second).toContain('- lookup: Look up an employee by id');
    expect(second).toContain('- call: Call one tool that has no block of its own');
    expect(second).toContain('with a call block');
    // Nothing changed the next time: no second notice.
    expect((await fence(['--resume', 'grows', 'once more'])).exitCode).toBe(0);
    expect(JSON.stringify(cli.server.requests[2]?.body.messages).match(/The tools changed/g)).toHaveLength(1);
  });

  it('tells a session resumed after a run that ended well that its shell is new, and the shell is', async () => {
    cli.server.reply((r) => r.text('```shell\nmkdir -p sub && cd sub && export MARK=set\n```\n')).reply((r) => r.text('In sub.'));
    const fence = (args: string[]) => runFence(['-m', 'local/test', '-n', ...args], { cwd: cli.dirs.workspace, env: cli.env() });
    expect((await fence(['--name', 'moved', 'go to sub'])).exitCode).toBe(0);

    cli.server.reply((r) => r.text('```shell\npwd; echo "MARK=[$MARK]"\n```\n')).reply((r) => r.text('Checked.'));
    expect((await fence(['--resume', 'moved', 'where are you?'])).exitCode).toBe(0);
    const request = JSON.stringify(cli.server.requests[2]?.body.messages);
    expect(request).toContain('fence was restarted since the last tool call.');
    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.filter((message) => message.meta?.notice === 'new_runtimes')).toHaveLength(1);
    expect(log.findLast((message) => message.meta?.tool === 'shell')?.content).toBe(`${cli.dirs.workspace}\nMARK=[]\nExit code 0.`);

    // A resume with no shell call since the notice adds none.
    cli.server.reply((r) => r.text('Still here.'));
    cli.server.reply((r) => r.text('Again.'));
    expect((await fence(['--resume', 'moved', 'hello'])).exitCode).toBe(0);
    expect((await fence(['--resume', 'moved', 'hello again'])).exitCode).toBe(0);
    expect(readOnlySessionLog(cli.dirs.home).filter((message) => message.meta?.notice === 'new_runtimes')).toHaveLength(2);
  });

  describe('a prompt after -r', () => {
    const fence = (args: string[]) => runFence(['-m', 'local/test', '-n', ...args], { cwd: cli.dirs.workspace, env: cli.env() });

    it('is refused with how to write it, never taken for an id or run as a prompt; -- and --resume <id> work', async () => {
      cli.server.reply((r) => r.text('Started.'));
      expect((await fence(['--name', 'fix-login', 'fix the login'])).exitCode).toBe(0);
      const before = readOnlySessionLog(cli.dirs.home);

      const refused = await fence(['-r', 'please continue']);
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr.trim()).toBe(
        "fence: no session \"please continue\" to resume. To give the latest session a prompt, put -- before it: -r -- 'please continue' (or name the session: --resume <id> 'please continue'). fence sessions list shows the sessions.",
      );
      expect(cli.server.requests).toHaveLength(1);
      expect(readOnlySessionLog(cli.dirs.home)).toEqual(before);

      cli.server.reply((r) => r.text('Continued.'));
      const dashed = await fence(['-r', '--', 'please continue']);
      expect(dashed.exitCode).toBe(0);
      expect(dashed.stdout).toBe('Continued.');
      cli.server.reply((r) => r.text('Named.'));
      const named = await fence(['--resume', 'fix-login', 'and the logout']);
      expect(named.exitCode).toBe(0);
      const prompts = readOnlySessionLog(cli.dirs.home).filter((m) => m.role === 'user').map((m) => m.content);
      expect(prompts).toEqual(['fix the login', 'please continue', 'and the logout']);
    });

    it('that begins a session id is not taken for that session: the error names it', async () => {
      cli.server.reply((r) => r.text('Started.'));
      expect((await fence(['--name', 'fix-login', 'fix the login'])).exitCode).toBe(0);
      const before = readOnlySessionLog(cli.dirs.home);

      const refused = await fence(['-r', 'fix']);
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toContain('fence: no session "fix" to resume; it begins the id of fix-login: give the whole id.');
      expect(refused.stderr).toContain('-r -- fix');
      expect(cli.server.requests).toHaveLength(1);
      expect(readOnlySessionLog(cli.dirs.home)).toEqual(before);

      cli.server.reply((r) => r.text('Fixed.'));
      const dashed = await fence(['-r', '--', 'fix']);
      expect(dashed.exitCode).toBe(0);
      expect(readOnlySessionLog(cli.dirs.home).filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['fix the login', 'fix']);
    });
  });

  it('goes on with the last conversation, not a later session of program runs, and will not resume one of those', async () => {
    cli.server.reply((r) => r.text('First answer.'));
    expect((await runFence(['-m', 'local/test', '-n', 'the task'], { cwd: cli.dirs.workspace, env: cli.env() })).exitCode).toBe(0);
    writeFileSync(join(cli.dirs.workspace, 'count.js'), 'return 1 + 1;');
    const run = await runFence(['run', 'count.js'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(run.exitCode).toBe(0);
    const programs = readdirSync(join(cli.dirs.home, 'sessions')).find((id) => readSession(cli.dirs.home, id)?.info.programsOnly);
    expect(programs).toBeDefined();

    cli.server.reply((r) => r.text('Second answer.'));
    const resumed = await runFence(['-m', 'local/test', '-n', '-r', '--', 'go on'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(resumed.exitCode).toBe(0);
    expect(resumed.stdout).toBe('Second answer.');
    const asked = JSON.stringify(cli.server.requests.at(-1)?.body);
    expect(asked).toContain('the task');

    const refused = await runFence(['-m', 'local/test', '-n', '--resume', String(programs), 'go on'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(`session ${programs} holds program runs (none (fence run)), not a conversation`);
  });

  it('says plainly when there is no such session', async () => {
    const result = await runFence(['-m', 'local/test', '-n', '--resume', 'nope'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('fence: no session "nope" to resume');
  });
});

describe('a run stopped during a shell command, then --resume', () => {
  const stops = [
    { how: 'SIGTERM', args: [], exitCode: 130 },
    { how: '--timeout', args: ['--timeout', '6'], exitCode: 6 },
    { how: 'kill -9', args: [], exitCode: undefined },
  ] as const;

  it.each(stops)('after $how, the model reads one true account: maybe done, the shell and kernel new', async ({ how, args, exitCode }) => {
    const sub = join(cli.dirs.workspace, 'sub');
    cli.server.reply((r) => r.text('```shell\nsleep 300 & echo $! > bg.pid\n```\n'));
    cli.server.reply((r) => r.text('```shell\nmkdir -p sub && cd sub && export MARK=set\n```\n'));
    cli.server.reply((r) => r.text('```python\nkept = 41\n```\n'));
    cli.server.reply((r) => r.text('```shell\ntouch started; sleep 30; echo done > slept.txt\n```\n'));
    // Outside the sandbox, `$!` is a pid this test can look up (a sandbox's dies with its namespace, see tests/cli/sandbox.test.ts).
    const first = startFence(['-n', '--name', 'stopped', '--sandbox', 'off', ...args, 'work in sub']);
    await waitForFile(join(sub, 'started'));
    const background = Number(readFileSync(join(cli.dirs.workspace, 'bg.pid'), 'utf8'));
    if (how === 'SIGTERM') first.kill('SIGTERM');
    if (how === 'kill -9') first.kill('SIGKILL');
    const stopped = await first;
    try {
      if (exitCode !== undefined) {
        expect(stopped.exitCode).toBe(exitCode);
        // A clean stop sweeps what the shell left running, as the note says.
        expect(processAlive(background)).toBe(false);
      }
      const before = readOnlySessionLog(cli.dirs.home);

      cli.server.reply((r) => r.text('```shell\npwd; echo "MARK=[$MARK]"\n```\n'));
      cli.server.reply((r) => r.text("```python\nprint('kept' in globals())\n```\n"));
      cli.server.reply((r) => r.text('Checked.'));
      const resumed = await runFence(['-m', 'local/test', '-n', '--resume', 'stopped'], { cwd: cli.dirs.workspace, env: cli.env() });
      expect(resumed.exitCode).toBe(0);
      expect(resumed.stdout).toBe('Checked.');

      const log = readOnlySessionLog(cli.dirs.home);
      const sleep = log.findIndex((message) => message.role === 'assistant' && message.content.includes('sleep 30;'));
      const result = log[sleep + 1];
      expect(result?.meta).toMatchObject({ toolResult: true, isError: true, interrupted: true });
      // The same note whatever stopped fence; a clean stop adds what the shell said before it closed.
      const note = interruptedCallNote(how === 'kill -9' ? undefined : 'shell');
      if (how === 'kill -9') {
        expect(before).toHaveLength(sleep + 1);
        expect(result?.content).toBe(note);
      } else {
        expect(before).toHaveLength(sleep + 2);
        expect(result?.content).toBe(`${note}\n\nWhat the call reported before it stopped:\nInterrupted before it finished.`);
      }
      expect(note).toContain('may or may not have taken effect');
      expect(note).not.toMatch(/still running|kept its variables/);
      expect(JSON.stringify(cli.server.requests[4]?.body.messages)).toContain(JSON.stringify(note).slice(1, -1));
      expect(existsSync(join(sub, 'slept.txt'))).toBe(false);

      // What the note says is gone is gone: the working folder, the variable, the kernel's names.
      const shell = log.find((message, i) => i > sleep + 1 && message.meta?.tool === 'shell');
      expect(shell?.content).toBe(`${cli.dirs.workspace}\nMARK=[]\nExit code 0.`);
      const python = log.find((message, i) => i > sleep + 1 && message.meta?.tool === 'python');
      expect(python?.content).toBe('False');
      expect(checkToolCallPairing(cli.server.requests.at(-1)!)).toEqual([]);
    } finally {
      if (processAlive(background)) process.kill(background, 'SIGKILL');
    }
  });
});
