import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { IPty } from 'node-pty';
import { CommandCapture, stripTerminalCodes } from './command-output';
import { foregroundProcessGroup, listProcesses, sessionMembers, signalProcess } from './process-tree';

/**
 * One persistent bash in a pty. How a command travels:
 *
 * - The command text is written to a private temp file and the pty receives one short line:
 *   ` builtin . <file>; <status marker>; PS1=<prompt marker>`. Sourcing keeps `cd`, variables,
 *   functions and aliases in the shell, and nothing of the command passes through the
 *   terminal: no 4096-byte canonical line limit, no quoting, no echo of the command, and a
 *   syntax error (an unbalanced quote) is confined to the file, so bash reports it and returns.
 * - Both markers carry a random nonce made for this command (see `CommandCapture`). The status
 *   marker (with `$?`) ends the command; the command cannot print it by accident, since the
 *   nonce is only in the line read after it, and that line does not contain the marker as
 *   such (see `markerCommands`). It goes to /dev/tty, so `exec >file` does not swallow it.
 * - The prompt marker (PS1) tells that bash is back at its prompt after an interrupt, when the
 *   rest of the line was abandoned, without typing anything a still-running program could read.
 *   (A command that replaces PS1 or sends bash's stderr elsewhere and then overruns hides the
 *   prompt: bash is then killed and started anew.)
 * - bash runs `--noprofile --norc --noediting -i`: interactive, so job control gives each
 *   command its own process group and Ctrl-C reaches only that; no readline; `stty -echo`;
 *   no history.
 */

/** How long a command may run when `timeoutMs` is not given: two minutes. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Default cap on one command's kept output: 8 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
/** After Ctrl-C, how long a command has to stop before its process group is killed. */
const INTERRUPT_GRACE_MS = 2_000;
/** After a kill, how long bash has to come back to its prompt before the next escalation. */
const KILL_WAIT_MS = 1_000;
const KILL_ROUNDS = 2;
/** How many nonces of completed commands are accepted in the prompt of an interrupted one. */
const KEPT_PROMPTS = 4;
const START_TIMEOUT_MS = 15_000;
const EXIT_WAIT_MS = 5_000;

/** Command and process substitutions: text with one is syntax-checked apart first (see {@link checkSyntax}). */
const RISKY_SYNTAX = /\$\(|[<>]\(/;

/** Set for every command; they keep programs from waiting on a pager, an editor or a prompt. */
const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = {
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  MANPAGER: 'cat',
  EDITOR: 'true',
  VISUAL: 'true',
  GIT_EDITOR: 'true',
  GIT_TERMINAL_PROMPT: '0',
  // A dumb terminal: programs keep colours and cursor tricks to themselves (escape sequences
  // that still arrive are stripped), and line editing stays out of the way.
  TERM: 'dumb',
  NO_COLOR: '1',
  HISTFILE: '/dev/null',
};

/** Typed once when bash starts, before the first markers. */
const SHELL_SETUP = "stty -echo 2>/dev/null; PS2=''; PS0=''; PROMPT_COMMAND=''; unset TMOUT; set +o history;";

export interface BashSessionOptions {
  cwd: string;
  /** Extra environment variables (merged over process.env and the non-interactive defaults). */
  env?: Record<string, string>;
  /**
   * Memory cap for one command's captured output, in bytes (default {@link DEFAULT_MAX_OUTPUT_BYTES}):
   * beyond it the head and the tail are kept and the dropped middle is counted.
   */
  maxOutputBytes?: number;
}

export interface BashRunOptions {
  /**
   * Per-command timeout in milliseconds (default {@link DEFAULT_TIMEOUT_MS}, two minutes). On
   * timeout: Ctrl-C first; if bash is not back at its prompt 2 s later, the terminal's
   * foreground process group is killed (SIGKILL), and the shell survives with its state. Only
   * when bash itself does not stop (a builtin loop with SIGINT ignored) is bash killed and
   * started anew (`shellExited`).
   */
  timeoutMs?: number;
  /** Aborting behaves like a timeout (interrupt, then kill); the result has `interrupted: true`. */
  signal?: AbortSignal;
  /**
   * Called with output as it arrives, for a live display: escape sequences stripped, LF line
   * endings, but a bare CR or a backspace passed on (progress bars redraw their line).
   */
  onOutput?: (chunk: string) => void;
}

export interface BashRunResult {
  /**
   * Output of the command (stdout and stderr interleaved, as a terminal shows them), escape
   * sequences stripped, CRLF → LF, a bare CR resolved to the text written after it, without the
   * command and without the markers. When output was dropped, one line in the middle says how
   * many bytes.
   */
  output: string;
  /**
   * Exit code, or null when the command was killed or the shell died. After a timeout or an
   * abort it is the status the command ended with on Ctrl-C if bash went on to its end (e.g. a
   * program that handles SIGINT), and null when bash abandoned the line or a kill was needed.
   */
  exitCode: number | null;
  timedOut: boolean;
  interrupted: boolean;
  /**
   * Bash itself exited (e.g. `exit 3`, `set -e` + a failure, a kill) during the command, or
   * while idle before it, and was started anew in the session's first cwd: state (cwd,
   * variables, functions, background jobs) was lost. `code` is bash's exit code, null when it
   * was killed by a signal.
   */
  shellExited?: { code: number | null };
  /** Bytes of output dropped from the middle because of maxOutputBytes. */
  droppedBytes: number;
}

type PtySpawn = typeof import('node-pty').spawn;

/** One bash process. `exit` is set once it has exited and its output is drained. */
interface Shell {
  readonly pty: IPty;
  exit: { code: number | null } | undefined;
  readonly exited: Promise<void>;
}

type WaitOutcome = 'met' | 'timeout' | 'aborted';

/**
 * A persistent bash shell in a pty. Commands run one at a time in the same shell, so `cd`,
 * variables and functions carry over. Every `run` resolves (it does not throw for a failing,
 * hanging or shell-killing command); it rejects only once the session is closed or bash cannot
 * be started again. Output held in memory is bounded by `maxOutputBytes`.
 */
export class BashSession {
  private shell!: Shell;
  private capture: CommandCapture | undefined;
  /** Nonces of the latest commands that bash ran to their end, newest first: PS1 holds the first. */
  private prompts: string[] = [];
  private readonly listeners = new Set<() => void>();
  private queue: Promise<unknown> = Promise.resolve();
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly spawn: PtySpawn,
    private readonly options: BashSessionOptions,
    private readonly env: Record<string, string>,
    private readonly commandFile: string,
  ) {}

  /** Starts bash in `options.cwd`; resolves when it is ready for a command. */
  static async start(options: BashSessionOptions): Promise<BashSession> {
    // node-pty is a native addon kept out of the bundle: load it only when a shell is needed.
    const { spawn } = await import('node-pty');
    const dir = await mkdtemp(join(tmpdir(), 'fence-bash-'));
    const session = new BashSession(spawn, options, shellEnvironment(options.env), join(dir, 'command.sh'));
    try {
      session.shell = await session.startShell();
      await session.run('true');
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    return session;
  }

  /** Process id of the current bash (it changes when bash is started anew). */
  get pid(): number {
    return this.shell.pty.pid;
  }

  /**
   * Runs `command` (any bash text: several lines, heredocs, even broken syntax) in the shell.
   * Calls are serialised: a second `run` starts when the first has finished.
   */
  run(command: string, options: BashRunOptions = {}): Promise<BashRunResult> {
    const result = this.queue.then(() => this.execute(command, options));
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Kills bash and every process of its terminal session, and removes the temp files. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.killShell(this.shell);
      await rm(dirname(this.commandFile), { recursive: true, force: true });
    })();
    return this.closing;
  }

  private async execute(command: string, options: BashRunOptions): Promise<BashRunResult> {
    if (this.closing) throw new Error('BashSession is closed');
    let shellExited = this.shell.exit;
    if (shellExited) await this.restartUnlessClosed(this.shell);
    const early = (output: string, exitCode: number | null, interrupted: boolean): BashRunResult => ({
      output,
      exitCode,
      timedOut: false,
      interrupted,
      droppedBytes: 0,
      ...(shellExited ? { shellExited } : {}),
    });
    if (options.signal?.aborted) return early('', null, true);
    await this.writeCommand(command);
    const syntaxError = RISKY_SYNTAX.test(command) ? await checkSyntax(this.commandFile, this.env) : undefined;
    if (syntaxError !== undefined) {
      options.onOutput?.(syntaxError);
      return early(syntaxError, 2, false);
    }

    const shell = this.shell;
    const nonce = newNonce();
    const line = ` builtin . ${escapePath(this.commandFile)}; ${markerCommands(nonce)}`;
    const capture = new CommandCapture({
      nonce,
      prompts: this.prompts,
      echo: line,
      maxBytes: this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    });
    this.capture = capture;
    let outcome: WaitOutcome;
    let killed = false;
    try {
      write(shell, `${line}\n`);
      const ended = (): boolean => capture.done || shell.exit !== undefined;
      outcome = await this.waitFor(ended, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, options.signal);
      if (outcome !== 'met') killed = await this.interrupt(shell, capture);
    } finally {
      this.capture = undefined;
    }
    const { output, droppedBytes } = capture.finish();
    // The status marker and the PS1 assignment come together: with the one, bash ran the other.
    if (capture.status !== undefined) this.prompts = [nonce, ...this.prompts].slice(0, KEPT_PROMPTS);
    if (shell.exit) {
      shellExited = shell.exit;
      await this.restartUnlessClosed(shell);
    }
    const status = capture.status;
    return {
      output,
      exitCode: shell.exit || killed || status === undefined ? null : status,
      timedOut: outcome === 'timeout',
      interrupted: outcome === 'aborted' || this.closing !== undefined,
      droppedBytes,
      ...(shellExited ? { shellExited } : {}),
    };
  }

  /** Writes the command file, making its directory again if a command removed it. */
  private async writeCommand(command: string): Promise<void> {
    try {
      await writeFile(this.commandFile, command, { mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(dirname(this.commandFile), { recursive: true, mode: 0o700 });
      await writeFile(this.commandFile, command, { mode: 0o600 });
    }
  }

  /**
   * Stops a command that overran: Ctrl-C, and the command is over once bash is back at its
   * prompt. While it is not, the terminal's foreground job is killed; if bash itself is what
   * does not stop (a builtin loop with SIGINT ignored), bash is killed. Returns whether
   * anything was killed.
   */
  private async interrupt(shell: Shell, capture: CommandCapture): Promise<boolean> {
    if (shell.exit) return false;
    const settled = (): boolean => capture.done || shell.exit !== undefined;
    capture.interrupted();
    write(shell, '\x03');
    if ((await this.waitFor(settled, INTERRUPT_GRACE_MS)) === 'met') return false;
    let killed = false;
    for (let round = 0; round < KILL_ROUNDS; round++) {
      if (!(await this.killForegroundJob(shell.pty.pid))) break;
      killed = true;
      if ((await this.waitFor(settled, KILL_WAIT_MS)) === 'met') return killed;
    }
    await this.killShell(shell);
    return true;
  }

  /**
   * Kills the job in the foreground of bash's terminal. When that is bash's own group (job
   * control off, or a command substitution), kills the other members of the group instead.
   * Returns false when there was nothing but bash to kill.
   */
  private async killForegroundJob(bashPid: number): Promise<boolean> {
    const group = await foregroundProcessGroup(bashPid);
    if (group === undefined) return false;
    if (group !== bashPid) return signalProcess(-group, 'SIGKILL');
    const members = (await listProcesses()).filter((p) => p.pgid === group && p.pid !== bashPid);
    return members.map((p) => signalProcess(p.pid, 'SIGKILL')).some(Boolean);
  }

  /** Kills bash and every process left in its terminal session; resolves once bash is gone. */
  private async killShell(shell: Shell): Promise<void> {
    const leader = shell.pty.pid;
    // bash first, so that it starts nothing new while its session is being swept.
    if (!shell.exit) signalProcess(leader, 'SIGKILL');
    for (let sweep = 0; sweep < 2; sweep++) {
      for (const pid of sessionMembers(await listProcesses(), leader)) signalProcess(pid, 'SIGKILL');
    }
    await Promise.race([shell.exited, delay(EXIT_WAIT_MS)]);
  }

  /** Replaces a dead bash (sweeping what is left of its session) unless the session is closing. */
  private async restartUnlessClosed(old: Shell): Promise<void> {
    await this.killShell(old);
    try {
      this.shell = await this.startShell();
    } catch (error) {
      if (!this.closing) throw error;
    }
  }

  private async startShell(): Promise<Shell> {
    if (this.closing) throw new Error('BashSession is closed');
    const pty = this.spawn('bash', ['--noprofile', '--norc', '--noediting', '-i'], {
      name: 'dumb',
      // Wide, so that programs which fit their output to the terminal (ps, ls) cut little.
      cols: 200,
      rows: 50,
      cwd: this.options.cwd,
      env: this.env,
      encoding: 'utf8',
    });
    let markExited!: () => void;
    const shell: Shell = { pty, exit: undefined, exited: new Promise((resolve) => (markExited = resolve)) };
    pty.onData((data) => {
      if (shell === this.shell) this.capture?.push(data);
      this.notify();
    });
    pty.onExit(({ exitCode, signal }) => {
      shell.exit = { code: signal ? null : exitCode };
      markExited();
      this.notify();
    });
    const nonce = newNonce();
    const capture = new CommandCapture({ nonce, maxBytes: 64 * 1024 });
    this.shell = shell;
    this.capture = capture;
    this.prompts = [nonce];
    try {
      write(shell, `${SHELL_SETUP} ${markerCommands(nonce)}\n`);
      const ready = (): boolean => capture.done || shell.exit !== undefined;
      const outcome = await this.waitFor(ready, START_TIMEOUT_MS);
      if (outcome !== 'met' || shell.exit) {
        const { output } = capture.finish();
        await this.killShell(shell);
        throw new Error(`bash did not start in ${this.options.cwd}: ${output.trim() || outcome}`);
      }
      if (this.closing) {
        // close() came while bash was starting and may have swept the session before it existed.
        await this.killShell(shell);
        throw new Error('BashSession is closed');
      }
    } finally {
      this.capture = undefined;
    }
    return shell;
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Resolves when `check` holds (re-checked on every pty event), on timeout, or on abort. */
  private waitFor(check: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<WaitOutcome> {
    if (check()) return Promise.resolve('met');
    if (signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const finish = (outcome: WaitOutcome): void => {
        clearTimeout(timer);
        this.listeners.delete(onEvent);
        signal?.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      const onEvent = (): void => {
        if (check()) finish('met');
      };
      const onAbort = (): void => finish('aborted');
      // setTimeout fires at once for delays beyond 2^31-1 ms: treat those as no timeout.
      const timer = timeoutMs <= 0x7fffffff ? setTimeout(() => finish('timeout'), timeoutMs) : undefined;
      this.listeners.add(onEvent);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** process.env, then the non-interactive defaults, a UTF-8 locale if none is set, then `extra`. */
function shellEnvironment(extra: Record<string, string> | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined) env[key] = value;
  }
  Object.assign(env, NON_INTERACTIVE_ENV);
  const locale = env.LC_ALL || env.LC_CTYPE || env.LANG || '';
  if (!/utf-?8/i.test(locale)) {
    // C.UTF-8 is built into glibc >= 2.35 and shipped by the common distributions; macOS lacks it.
    const utf8 = process.platform === 'darwin' ? 'en_US.UTF-8' : 'C.UTF-8';
    env.LANG = utf8;
    env.LC_ALL = utf8;
  }
  return Object.assign(env, extra);
}

/**
 * bash 5.2 corrupts its own memory after a syntax error inside `$(…)`, `<(…)` or `>(…)` in a
 * sourced file, and crashes a few commands later. So text with one of these is parsed first by
 * a separate `bash -n` (extglob on, to be permissive; the session's aliases are unknown to it);
 * on a syntax error the command does not run at all. Returns the error message, or undefined
 * when the syntax is fine or the check itself could not run.
 */
function checkSyntax(file: string, env: Record<string, string>): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('bash', ['--noprofile', '--norc', '-O', 'extglob', '-n', file], { env }, (error, _stdout, stderr) => {
      // Prefixed like the messages of the shell itself.
      resolve(error?.code === 2 ? `bash: ${stripTerminalCodes(stderr) || 'syntax error\n'}` : undefined);
    });
  });
}

/**
 * Typed after a command: prints its status marker `RS nonce:$? RS` to the terminal, then sets
 * the prompt marker `RS nonce RS` as PS1. The typed text spells RS as `\\036`, which only
 * printf and prompt expansion turn into the character, so the line itself (echoed, or PS1 as
 * listed by `set`) never contains a marker. The line holds no quotes: quoted words after a
 * failed `$(` parse are what trips the bash 5.2 bug described at {@link checkSyntax}.
 */
function markerCommands(nonce: string): string {
  return `builtin printf \\\\036${nonce}:%d\\\\036 $? >/dev/tty; PS1=\\\\036${nonce}\\\\036`;
}

function newNonce(): string {
  return randomBytes(16).toString('hex');
}

/** Escapes a path for the typed line with backslashes, not quotes (see {@link markerCommands}). */
function escapePath(path: string): string {
  if (path.includes('\n')) return `'${path.replaceAll("'", `'\\''`)}'`;
  return path.replace(/[^\w./-]/g, '\\$&');
}

/** Writes to the pty unless bash is gone (a write to a closed pty would throw). */
function write(shell: Shell, data: string): void {
  if (shell.exit) return;
  try {
    shell.pty.write(data);
  } catch {
    // bash died between the check and the write; its exit event reports it.
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
