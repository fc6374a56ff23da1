import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { snapshot } from '../support/sandbox-machine';
import {
  block,
  bubblewrapMissing,
  everythingSent,
  fenceIn,
  fetchFromShell,
  HOST_REPLY,
  KEY_MARKER,
  OLD_LOG_MARKER,
  script,
  sessionId,
  sessionInfo,
  toolResults,
  useSandboxRig,
} from '../support/sandbox-rig';

/**
 * Work inside the sandbox, through the built CLI: the shell keeps its state and answers
 * prompts, background jobs end with the session, read-only mode, the file tools' boundary,
 * the session's own saved outputs, and what the run says about its sandbox.
 */

const rig = useSandboxRig();

/** The host's processes whose command line holds `argument` (zombies count as gone). */
function hostProcessesWith(argument: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      const state = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.[0];
      if (args.includes(argument) && state !== 'Z') found.push(Number(name));
    } catch {
      // Gone while looked at.
    }
  }
  return found;
}

describe.skipIf(bubblewrapMissing)('work inside the sandbox, end to end', () => {
  it('keeps the folder and variables across blocks, answers a prompt, and ends background jobs with the session', async () => {
    // Arguments no other process has: `sleep 300.<random>`. The third job leaves fence's own
    // sweep nothing to find it by (another session, and not the shell's environment): only the
    // sandbox's PID namespace ends it.
    const sleeps = [0, 1, 2].map(() => `300.${String(Math.random()).slice(2, 10)}`);
    const [setsid, nohup, hidden] = sleeps as [string, string, string];
    const started = [
      `setsid sleep ${setsid} >/dev/null 2>&1 &`,
      `nohup sleep ${nohup} >/dev/null 2>&1 &`,
      `env -u FENCE_SHELL_SESSION setsid sleep ${hidden} >/dev/null 2>&1 &`,
      `for i in $(seq 200); do ${sleeps.map((s) => `pgrep -fx 'sleep ${s}' >/dev/null`).join(' && ')} && break; sleep 0.1; done`,
      'echo jobs started',
    ].join('\n');
    const running = () => sleeps.flatMap((argument) => hostProcessesWith(argument));
    let whileRunning: number[] | undefined;
    // Looks at the host's processes when the model is asked what comes after the jobs started.
    rig().server.route((body) => {
      if (whileRunning === undefined && JSON.stringify(body.messages?.at(-1)).includes('jobs started')) whileRunning = running();
      return false;
    }, (r) => r);
    script(rig(), [
      block('shell', 'mkdir -p sub && cd sub && GREETING=hello'),
      block('shell', 'echo "$GREETING from $(basename "$PWD")"'),
      block('shell', 'read -p "name? " NAME; echo "hi $NAME"'),
      block('shell input', 'fence'),
      block('shell', started),
      'Done.',
    ]);
    try {
      const result = await fenceIn(rig(), ['-n', 'work']);

      expect(result.exitCode).toBe(0);
      const [, moved, prompt, answered, jobs] = toolResults(rig()).map((message) => message.content);
      expect(moved).toBe('hello from sub\nExit code 0.');
      expect(prompt).toMatch(/^name\? \nThe command is waiting for input/);
      expect(answered).toBe('hi fence\nExit code 0.');
      expect(jobs).toBe('jobs started\nExit code 0.');
      expect(whileRunning).toHaveLength(3);
      // The jobs die with the sandbox's PID namespace: the kernel is given time to reap them (no deadline is asserted).
      for (let i = 0; i < 400 && running().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(running()).toEqual([]);
    } finally {
      for (const pid of running()) process.kill(pid, 'SIGKILL');
    }
  }, 120_000);

  it('refuses every write in the workspace in read-only mode, and still lets commands use /tmp', async () => {
    const scratch = `fence-scratch-${String(Math.random()).slice(2, 10)}.txt`;
    script(rig(), [
      block('shell', 'echo draft > notes.txt'),
      block('shell', `echo scratch > /tmp/${scratch} && cat /tmp/${scratch}`),
      block('save notes.txt', 'draft'),
      'Described the change instead.',
    ]);
    const before = await snapshot(rig().workspace);
    const result = await fenceIn(rig(), ['-n', '--sandbox', 'read-only', 'write notes']);

    expect(result.exitCode).toBe(0);
    const [shell, tmp, save] = toolResults(rig()).map((message) => message.content);
    expect(shell).toMatch(/notes\.txt: Read-only file system/);
    expect(shell).toContain('Note: this session runs in a read-only sandbox');
    expect(tmp).toBe('scratch\nExit code 0.');
    expect(save).toBe('notes.txt cannot be written: the sandbox is read-only in this session, so no file can be changed. Describe the change to the user instead.');
    expect(await snapshot(rig().workspace)).toEqual(before);
    // The sandbox's /tmp is its own, not the host's.
    expect(existsSync(join('/tmp', scratch))).toBe(false);
    expect(sessionInfo(rig()).sandbox).toBe('read-only (bubblewrap)');
  }, 120_000);

  it('keeps the file tools to the same boundary: outside the workspace, fence.toml, the key, a link to it', async () => {
    const key = join(rig().home, '.ssh', 'id_ed25519');
    script(rig(), [
      block(`save ${rig().outside}/saved.txt`, 'escaped'),
      block('save fence.toml', '[sandbox]\nmode = "off"'),
      block('read ~/.ssh/id_ed25519', ''),
      block('shell', 'ln -s ~/.ssh/id_ed25519 key.txt && echo linked'),
      block('read key.txt', ''),
      block(`read ${rig().otherLog}`, ''),
      'Could not.',
    ]);
    const result = await fenceIn(rig(), ['-n', 'look around']);

    expect(result.exitCode).toBe(0);
    const results = toolResults(rig());
    const [outside, config, secret, link, linked, other] = results.map((message) => message.content);
    expect(outside).toBe(`${rig().outside}/saved.txt cannot be written: the sandbox lets this session write only in the workspace. Write there instead.`);
    expect(config).toMatch(/^fence\.toml is protected by the sandbox: fence\.toml, \.fence\/ and git's hooks and config stay read-only\./);
    expect(secret).toContain(`${key} cannot be read: the sandbox denies it`);
    expect(link).toBe('linked\nExit code 0.');
    expect(linked).toContain(`key.txt (it leads to ${key}) cannot be read: the sandbox denies it`);
    expect(other).toMatch(/cannot be read: the sandbox denies it/);
    for (const i of [0, 1, 2, 4, 5]) expect(results[i]?.meta?.isError).toBe(true);
    expect(existsSync(join(rig().outside, 'saved.txt'))).toBe(false);
    expect(existsSync(join(rig().workspace, 'fence.toml'))).toBe(false);
    expect(everythingSent(rig())).not.toContain(KEY_MARKER);
    expect(everythingSent(rig())).not.toContain(OLD_LOG_MARKER);
  }, 120_000);

  it("lets the shell read the output fence saved when it cut one, and no other session's", async () => {
    let saved: string | undefined;
    // The model reads the path its cut result names, as a model would.
    rig().server.route(
      (body) => {
        const named = /The full output is in (\/[^\s"]+\.txt)\./.exec(JSON.stringify(body.messages?.at(-1)));
        if (saved !== undefined || !named) return false;
        saved = named[1];
        return true;
      },
      (r) => r.text(block('shell', `sed -n '77777p' ${saved}; wc -l < ${saved}`)),
    );
    script(rig(), [block('shell', 'seq 1 100000'), block('shell', `cat ${rig().otherOutputs}/old-output.txt`), 'Read it.']);
    const result = await fenceIn(rig(), ['-n', 'count']);

    expect(result.exitCode).toBe(0);
    expect(saved?.startsWith(join(rig().fenceHome, 'sessions', sessionId(rig()), 'tool-outputs') + '/')).toBe(true);
    const [cut, read, other] = toolResults(rig()).map((message) => message.content);
    expect(cut).toContain(`The full output is in ${saved}.`);
    expect(cut).not.toContain('\n77777\n');
    expect(read).toBe('77777\n100000\nExit code 0.');
    expect(other).toMatch(/old-output\.txt: No such file or directory/);
    expect(everythingSent(rig())).not.toContain(OLD_LOG_MARKER);
  }, 120_000);

  it('names its sandbox in the stream-json init line and the session, and opens the network only when the user allows it', async () => {
    const init = (stdout: string) => JSON.parse(stdout.split('\n')[0] ?? '') as { type: string; session_id: string; sandbox: string };
    script(rig(), ['Hi.', 'Hi again.']);
    const sandboxed = await fenceIn(rig(), ['--output-format', 'stream-json', 'hello']);
    const off = await fenceIn(rig(), ['--output-format', 'stream-json', '--sandbox', 'off', 'hello']);
    expect(init(sandboxed.stdout)).toMatchObject({ type: 'init', sandbox: 'workspace-write (bubblewrap)' });
    expect(init(off.stdout)).toMatchObject({ type: 'init', sandbox: 'off' });
    expect(sessionInfo(rig(), init(sandboxed.stdout).session_id).sandbox).toBe('workspace-write (bubblewrap)');
    expect(sessionInfo(rig(), init(off.stdout).session_id).sandbox).toBe('off');

    // The network on reaches public addresses through the proxy: the host's loopback is not among them.
    writeFileSync(join(rig().root, 'config', 'fence', 'config.toml'), '[sandbox]\nnetwork = true\n');
    script(rig(), [block('shell', fetchFromShell(rig().host.url)), 'Not reached.']);
    const networked = await fenceIn(rig(), ['--output-format', 'stream-json', 'fetch']);
    expect(init(networked.stdout)).toMatchObject({ sandbox: 'workspace-write (bubblewrap)' });
    expect(JSON.stringify(rig().server.requests.at(-1)?.body.messages)).not.toContain(HOST_REPLY);
    expect(rig().host.hits).toBe(0);

    // Listed by its address, the host's loopback server is reached through the proxy.
    writeFileSync(join(rig().root, 'config', 'fence', 'config.toml'), '[sandbox]\nnetwork = ["127.0.0.1"]\n');
    script(rig(), [block('shell', `curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" ${rig().host.url}`), 'Reached.']);
    await fenceIn(rig(), ['--output-format', 'stream-json', 'fetch']);
    expect(JSON.stringify(rig().server.requests.at(-1)?.body.messages)).toContain(HOST_REPLY);
    expect(rig().host.hits).toBe(1);
  }, 120_000);
});

describe('where there is no sandbox', () => {
  it('refuses an --auto run unless the sandbox is turned off on purpose, and warns a run that is not --auto', async () => {
    const noBwrap = { PATH: join(rig().root, 'no-programs') };
    const refused = await fenceIn(rig(), ['--auto', 'work'], noBwrap);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('fence: no OS sandbox: bubblewrap (bwrap) is not installed.');
    expect(refused.stderr).toContain('An --auto run needs one; give --sandbox off to run it without');
    expect(rig().server.requests).toHaveLength(0);
    expect(readdirSync(join(rig().fenceHome, 'sessions'))).toEqual(['older-session']);

    script(rig(), [block('complete', 'Done.'), 'Hi.']);
    const off = await fenceIn(rig(), ['--auto', '--sandbox', 'off', 'work'], noBwrap);
    expect(off.exitCode).toBe(0);
    expect(off.stdout).toBe('Done.');
    const watched = await fenceIn(rig(), ['-n', 'hello'], noBwrap);
    expect(watched.exitCode).toBe(0);
    expect(watched.stderr).toContain('fence: no OS sandbox (bubblewrap (bwrap) is not installed): commands run with your full access.');
  }, 120_000);
});
