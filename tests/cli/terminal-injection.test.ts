import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'smol-toml';
import { afterEach, describe, expect, it } from 'vitest';
import { FENCE_BIN } from '../support/run-cli';
import { block, bubblewrapMissing, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';
import { startTerminalSession } from '../support/terminal-session';

/**
 * No process fence starts can type into the person's terminal (ioctl TIOCSTI): fence runs in a
 * real terminal here, and an MCP server, a command tool, a Python cell and a shell block each
 * try to type on /dev/tty and on each of their standard descriptors. Then the attack as it was
 * found: a stdio MCP server types a command into the terminal of a person who ran fence from
 * their shell, as it starts or as the chat closes it, to be run by that shell once fence
 * exits — tried in tmux, with the sandbox and without it (where it works, so the test can tell).
 */

const rig = useSandboxRig();

/** The probe: see its header. */
const PROBE = resolve(import.meta.dirname, '../support/terminal-probe.py');
/** What the probe types when it is not told otherwise. */
const TYPED = 'fence-typed-4e1c';

const hasTmux = spawnSync('tmux', ['-V']).error === undefined;

/**
 * The user's config.toml: the probe as a stdio MCP server (`term`) and as a command tool
 * (`typer`). As a server of the user's own whose script lies outside the workspace, the probe
 * runs outside the sandbox unless `inside` keeps it in (`sandbox = true`).
 */
function configureProbes(rig: SandboxRig, serverArgs: string[] = [], inside?: 'inside'): void {
  const config = {
    mcp: { servers: { term: { command: 'python3', args: [PROBE, '--mcp', ...serverArgs], ...(inside ? { sandbox: true } : {}) } } },
    tools: { typer: { command: ['python3', PROBE, '--json'], description: 'Tries to type into a terminal.' } },
  };
  writeFileSync(rig.userConfig, stringify(config));
}

describe.skipIf(bubblewrapMissing)('the terminal of a person running fence', () => {
  it('cannot be typed into by an MCP server in the sandbox, a command tool, a Python cell or a shell block', async () => {
    configureProbes(rig(), [], 'inside');
    script(rig(), [
      block('call term_probe', '{}'),
      block('call typer', '{}'),
      block('python', `import runpy\nrunpy.run_path(${JSON.stringify(PROBE)}, run_name="probe");`),
      block('shell', `python3 ${PROBE}`),
      'Tried them all.',
    ]);
    const session = startTerminalSession({ args: ['-n', '-m', 'local/test', 'type into the terminal'], cwd: rig().workspace, env: rig().env });
    const exitCode = await session.exited;

    expect(exitCode, session.lines().join('\n')).toBe(0);
    const results = toolResults(rig()).map((message) => message.content);
    expect(results).toHaveLength(4);
    const [server, tool, python, shell] = results;
    // Started on pipes in a session of their own: no controlling terminal to open, and the
    // filter refuses the ioctl on any descriptor before the kernel looks at what it is.
    for (const result of [server, tool, python]) expect(result).toContain('/dev/tty: ENXIO; fd 0: EPERM; fd 1: EPERM; fd 2: EPERM');
    // The shell keeps its own pty, a terminal on every descriptor: refused by the filter.
    expect(shell).toContain('/dev/tty: EPERM; fd 0: EPERM; fd 1: EPERM; fd 2: EPERM');
    for (const result of results) expect(result).not.toContain('typed');
    // Nothing arrived: the terminal would have echoed what was typed.
    expect(session.raw).not.toContain(TYPED);
  }, 120_000);

  it('cannot be typed into by an MCP server of the user\'s own outside the sandbox: it has no terminal to type into', async () => {
    configureProbes(rig());
    script(rig(), [block('call term_probe', '{}'), 'Tried.']);
    const session = startTerminalSession({ args: ['-n', '-m', 'local/test', 'type into the terminal'], cwd: rig().workspace, env: rig().env });
    const exitCode = await session.exited;

    expect(exitCode, session.lines().join('\n')).toBe(0);
    // No filter outside the sandbox: it is on pipes, in a session of its own, so it has no terminal at all.
    expect(toolResults(rig())[0]?.content).toContain('/dev/tty: ENXIO; fd 0: ENOTTY; fd 1: ENOTTY; fd 2: ENOTTY');
    expect(session.raw).not.toContain(TYPED);
  }, 120_000);

  it('still runs each of them: the server, the tool, Python and the shell answer', async () => {
    configureProbes(rig());
    script(rig(), [block('call term_probe', '{}'), block('call typer', '{}'), block('python', '6 * 7'), block('shell', 'tty; echo "$((6 * 7))"'), 'Done.']);
    const session = startTerminalSession({ args: ['-n', '-m', 'local/test', 'work'], cwd: rig().workspace, env: rig().env });

    const exitCode = await session.exited;
    expect(exitCode, session.lines().join('\n')).toBe(0);
    const results = toolResults(rig());
    expect(results.map((message) => message.meta?.isError ?? false)).toEqual([false, false, false, false]);
    expect(results[2]?.content).toContain('42');
    // The shell keeps a terminal of its own (its pty, which bwrap shows as /dev/console).
    expect(results[3]?.content).toMatch(/^\/dev\/\S+\n42\n/);
  }, 120_000);

  it('is not the controlling terminal of an MCP server, the Python kernel or a command tool even without a sandbox', async () => {
    configureProbes(rig());
    script(rig(), [
      block('call term_probe', '{}'),
      block('call typer', '{}'),
      block('python', `import runpy\nrunpy.run_path(${JSON.stringify(PROBE)}, run_name="probe");`),
      'Tried.',
    ]);
    const session = startTerminalSession({ args: ['-n', '-m', 'local/test', '--sandbox', 'off', 'type into the terminal'], cwd: rig().workspace, env: rig().env });
    const exitCode = await session.exited;

    expect(exitCode, session.lines().join('\n')).toBe(0);
    // No filter here: the server, the kernel and the tool are on pipes, in a session of their own.
    const results = toolResults(rig()).map((message) => message.content);
    for (const result of results) expect(result).toContain('/dev/tty: ENXIO; fd 0: ENOTTY; fd 1: ENOTTY; fd 2: ENOTTY');
    expect(results).toHaveLength(3);
    expect(session.raw).not.toContain(TYPED);
  }, 120_000);
});

/** A tmux server of the test's own, with one window running bash as a person's shell would. */
interface Tmux {
  /** Types `text` and Enter into the window, as a person would. */
  typeLine(text: string): void;
  /** What the window shows, with its scrollback. */
  pane(): string;
  /** Presses one key (tmux's name for it: `C-d`). */
  press(key: string): void;
  /** Resolves once the window shows `text` on a line of its own, or anywhere with `anywhere`. */
  waitForLine(text: string, anywhere?: 'anywhere'): Promise<void>;
}

let tmuxSocket: string | undefined;

/** Stops the test's tmux server, if one runs. */
function tmuxStop(): void {
  if (tmuxSocket) spawnSync('tmux', ['-S', tmuxSocket, 'kill-server']);
  tmuxSocket = undefined;
}

afterEach(tmuxStop);

function startTmux(rig: SandboxRig): Tmux {
  const socket = join(rig.root, 'tmux.sock');
  tmuxSocket = socket;
  const env = Object.entries({ ...rig.env, PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' }).flatMap(([name, value]) => ['-e', `${name}=${value}`]);
  const start = () => execFileSync('tmux', ['-S', socket, '-f', '/dev/null', 'new-session', '-d', '-x', '200', '-y', '50', '-c', rig.workspace, ...env, 'bash --norc --noprofile']);
  try {
    start();
  } catch {
    // On a loaded machine tmux's new server has been seen to exit as it started ("server
    // exited unexpectedly"): that is tmux, not fence, so it gets one more try.
    spawnSync('tmux', ['-S', socket, 'kill-server']);
    start();
  }
  const pane = () => execFileSync('tmux', ['-S', socket, 'capture-pane', '-p', '-J', '-S', '-1000'], { encoding: 'utf8' });
  return {
    typeLine(text) {
      execFileSync('tmux', ['-S', socket, 'send-keys', '-l', text]);
      execFileSync('tmux', ['-S', socket, 'send-keys', 'Enter']);
    },
    pane,
    press(key) {
      execFileSync('tmux', ['-S', socket, 'send-keys', key]);
    },
    async waitForLine(text, anywhere) {
      for (let tries = 0; tries < 300; tries++) {
        const shown = pane();
        if (anywhere ? shown.includes(text) : shown.split('\n').some((line) => line.trim() === text)) return;
        await new Promise((done) => setTimeout(done, 100));
      }
      throw new Error(`tmux never showed ${text}:\n${pane()}`);
    },
  };
}

/**
 * Runs `fence -n` from a shell in tmux, with an MCP server that types `touch <marker>` into
 * the terminal as it starts (in the sandbox with `inside`, else outside it, as a server of the
 * user's own); then lets the shell read whatever is left in its input.
 */
async function runInShell(rig: SandboxRig, fenceArgs: string[], replies: string[], inside?: 'inside'): Promise<{ marker: string; pane: string }> {
  const marker = join(rig.root, 'typed-by-server');
  // What the probe call types, should it get through, is a comment line: the shell goes on to the next.
  configureProbes(rig, ['--at-start', `touch ${marker}\n`, '--text', '# typed by the probe\n'], inside);
  script(rig, replies);
  const tmux = startTmux(rig);
  tmux.typeLine('echo "shell""-ready"');
  await tmux.waitForLine('shell-ready');
  tmux.typeLine(`${process.execPath} ${FENCE_BIN} -n -m local/test ${fenceArgs.join(' ')} hello; echo "fence exited: $?"`);
  await tmux.waitForLine('fence exited: 0');
  // Typed after fence exited: the shell reads it only after anything typed into its input before.
  tmux.typeLine('echo "shell""-settled"');
  await tmux.waitForLine('shell-settled');
  return { marker, pane: tmux.pane() };
}

describe.skipIf(bubblewrapMissing || !hasTmux)('an MCP server typing a command for the shell that ran fence', () => {
  it('types nothing from inside the sandbox: the shell runs no command once fence exits', async () => {
    // The model calls the server once, to show it ran inside the sandbox and could not reach the terminal.
    const { marker, pane } = await runInShell(rig(), [], [block('call term_probe', '{}'), 'Hello.'], 'inside');
    expect(existsSync(marker)).toBe(false);
    expect(pane).not.toContain(`touch ${marker}`);
    expect(toolResults(rig())[0]?.content).toContain('/dev/tty: ENXIO; fd 0: EPERM');
  }, 120_000);

  it('types nothing from outside the sandbox, as a server of the user\'s own, nor with the sandbox off', async () => {
    const outside = await runInShell(rig(), [], [block('call term_probe', '{}'), 'Hello.']);
    expect(existsSync(outside.marker)).toBe(false);
    expect(outside.pane).not.toContain(`touch ${outside.marker}`);
    expect(toolResults(rig())[0]?.content).toContain('/dev/tty: ENXIO; fd 0: ENOTTY');
    tmuxStop();

    const off = await runInShell(rig(), ['--sandbox', 'off'], ['Hello.']);
    expect(existsSync(off.marker)).toBe(false);
    expect(off.pane).not.toContain(`touch ${off.marker}`);
  }, 180_000);

  it('types nothing as the chat closes, for the shell to run after it', async () => {
    const marker = join(rig().root, 'typed-at-exit');
    configureProbes(rig(), ['--at-exit', `touch ${marker}\n`]);
    script(rig(), [block('call term_probe', '{}'), 'Probed.']);
    const tmux = startTmux(rig());
    tmux.typeLine('echo "shell""-ready"');
    await tmux.waitForLine('shell-ready');
    tmux.typeLine(`${process.execPath} ${FENCE_BIN} -m local/test; echo "fence exited: $?"`);
    await tmux.waitForLine('/help for commands', 'anywhere');
    tmux.typeLine('probe the terminal');
    await tmux.waitForLine('Probed.', 'anywhere');
    tmux.press('C-d');
    await tmux.waitForLine('fence exited: 0');
    tmux.typeLine('echo "shell""-settled"');
    await tmux.waitForLine('shell-settled');

    expect(existsSync(marker)).toBe(false);
    expect(tmux.pane()).not.toContain(`touch ${marker}`);
    expect(toolResults(rig())[0]?.content).toContain('/dev/tty: ENXIO');
  }, 120_000);

  it('does, when the probe has the terminal: the attack is real on this machine', async () => {
    // The probe started by the shell itself, as a server started in the person's session would be.
    const marker = join(rig().root, 'typed-by-probe');
    const tmux = startTmux(rig());
    tmux.typeLine('echo "shell""-ready"');
    await tmux.waitForLine('shell-ready');
    tmux.typeLine(`python3 ${PROBE} --mcp --at-start $'touch ${marker}\\n' < /dev/null; echo "probe exited: $?"`);
    await tmux.waitForLine('probe exited: 0');
    tmux.typeLine('echo "shell""-settled"');
    await tmux.waitForLine('shell-settled');
    expect(existsSync(marker)).toBe(true);
  }, 120_000);
});
