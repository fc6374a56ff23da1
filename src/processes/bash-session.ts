import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { IPty } from 'node-pty';
import type { OsSandbox } from '../os-sandbox/os-sandbox';
import { CommandCapture } from './command-output';
import { findTerminalReader, terminalOf } from './input-wait';
import { foregroundProcessGroup, killForegroundJob, killSession, killSessionNow, signalProcess } from './process-tree';
import { awaitJob, pressCtrlC, stopOrphanedJob, type JobTerminal } from './job-interrupt';
import { ShellStartError, startOutputReason } from './shell-start-error';
import {
  BASH_ARGS,
  RISKY_SYNTAX,
  SHELL_SETUP,
  checkSyntax,
  commandLine,
  makeTempDir,
  makeTempDirNow,
  markerCommands,
  newNonce,
  ptyOptions,
  SESSION_VARIABLE,
  shellEnvironment,
  writeCommandFile,
} from './shell-setup';

/**
 * One persistent bash in a pty. How a command travels:
 *
 * - The command text is written to a private temp file and the pty receives one short line that
 *   prints the command's start marker, sources the file, then prints the status marker and sets
 *   the prompt marker (see `commandLine`): nothing of the command passes through the terminal.
 * - The start marker shows that bash runs the line: only then does an interrupt type Ctrl-C
 *   (see `job-interrupt.ts`). The status marker ends the command. The prompt marker tells that bash is
 *   back at its prompt after an interrupt. (A command that replaces PS1 or sends bash's stderr
 *   elsewhere and then overruns hides the prompt: bash is then killed and started anew.)
 * - bash is interactive (`BASH_ARGS`): each command is a job in its own process group, which
 *   Ctrl-C and kills reach alone; the job notices this prints are filtered out (`JobNoticeFilter`).
 * - A command that falls quiet while a process of its job is blocked reading the terminal
 *   (`findTerminalReader`) is left running, waiting for input: `sendInput` types into it, the
 *   next `run` stops it first.
 */

/** How long a command may run when `timeoutMs` is not given (two minutes), and the default output cap (8 MiB). */
export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
/**
 * How long a command must print nothing before the shell looks whether it is blocked reading the
 * terminal: 1.5 s, long enough not to look at every pause, short enough to answer a prompt soon.
 */
export const DEFAULT_INPUT_WAIT_MS = 1_500;
/** The output of `sendInput` when no command waits for input. */
export const NOTHING_WAITING = 'nothing is waiting for input';
/** After Ctrl-C, how long a command has to stop before its process group is killed. */
const INTERRUPT_GRACE_MS = 2_000;
/** After a kill, how long bash has to come back to its prompt before the next escalation. */
const KILL_WAIT_MS = 1_000;
const KILL_ROUNDS = 2;
/** Before typing into a waiting command, how long its pending output may take to come in. */
const TYPE_SETTLE_MS = 50;
/** How many nonces of completed commands are accepted in the prompt of an interrupted one. */
const KEPT_PROMPTS = 4;
const START_TIMEOUT_MS = 15_000;
const EXIT_WAIT_MS = 5_000;

export interface BashSessionOptions {
  cwd: string;
  /** Extra environment variables (merged over process.env and the non-interactive defaults). */
  env?: Record<string, string>;
  /** Variables of process.env kept although they look like credentials (`[sandbox] pass_env`; see `childEnvironment`). */
  passEnv?: readonly string[];
  /**
   * Memory cap for one command's captured output, in bytes (default {@link DEFAULT_MAX_OUTPUT_BYTES}):
   * beyond it the head and the tail are kept and the dropped middle is counted.
   */
  maxOutputBytes?: number;
  /**
   * The OS sandbox bash runs in (see `OsSandbox`): bash and everything it starts are inside
   * it, and a bash started anew is too. Absent: bash runs as fence does.
   */
  sandbox?: Pick<OsSandbox, 'wrap'>;
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
  /**
   * How long the command must be silent, in milliseconds, before the shell checks whether it
   * waits for terminal input (default {@link DEFAULT_INPUT_WAIT_MS}); `Infinity` turns the check
   * off, so such a command runs into its timeout. The check works on Linux only.
   */
  inputWaitMs?: number;
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
  /**
   * The command is still running, blocked reading the terminal after `inputWaitMs` of silence.
   * `output` is what it printed so far (the question, usually), `exitCode` is null. Answer with
   * `sendInput`; the next `run` stops it.
   */
  waitingForInput?: true;
  /**
   * A command that waited for input was stopped before this one ran (Ctrl-C, then a kill of
   * its job): `exitCode` as for a timeout, or the code it ended with by itself meanwhile.
   */
  stoppedWaiting?: { command: string; exitCode: number | null };
  /**
   * Only from `sendInput`: no command was waiting, so nothing was typed. Either none was left
   * waiting (`output` is {@link NOTHING_WAITING}), or it had ended on its own in the meantime:
   * then the result is that command's end (its remaining output and exit code).
   */
  nothingWaiting?: true;
}

type PtySpawn = typeof import('node-pty').spawn;

/** One bash process. `exit` is set once it has exited and its output is drained. */
interface Shell {
  readonly pty: IPty;
  exit: { code: number | null } | undefined;
  readonly exited: Promise<void>;
  /** The pty device, as bash's stdin shows it; unknown outside Linux. */
  terminal: string | undefined;
  /** bash's own process group: the terminal's foreground group while bash waits at its prompt. */
  group: number | undefined;
}

/** A command sent to bash whose end has not been taken yet. */
interface Running {
  readonly command: string;
  readonly shell: Shell;
  readonly nonce: string;
  readonly capture: CommandCapture;
}

type WaitOutcome = 'met' | 'timeout' | 'aborted' | 'quiet';
type RunOutcome = Exclude<WaitOutcome, 'quiet'> | 'input';
type ResultContext = Pick<BashRunResult, 'shellExited' | 'stoppedWaiting'>;

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
  /** A command left running because it waits for input; its capture stays `capture`. */
  private waiting: Running | undefined;
  /** Counts pty events, to tell whether output came while /proc was being read. */
  private events = 0;
  /**
   * Whether a command was sent (`run`, `sendInput`). Until then bash has started nothing that
   * could outlive it, so closing kills bash alone, without sweeping /proc for its session.
   */
  private used = false;

  /** The file each command is written to, in the session's private temp dir. */
  private commandFile = '';

  private constructor(
    private readonly spawn: PtySpawn,
    private readonly options: BashSessionOptions,
    private readonly env: Record<string, string>,
  ) {}

  /**
   * Starts bash in `options.cwd`; resolves when it is ready for a command. bash is spawned
   * before this first awaits (node-pty is loaded synchronously), so that it starts up while
   * the caller goes on with its own work; the private temp dir is made meanwhile.
   */
  static async start(options: BashSessionOptions): Promise<BashSession> {
    // node-pty is a native addon kept out of the bundle: loaded only when a shell is needed.
    const { spawn } = loadNodePty();
    const session = new BashSession(spawn, options, shellEnvironment(options.env, options.passEnv));
    // In a sandbox the command file's folder is mounted into it, so it must exist before bash does.
    const early = options.sandbox ? makeTempDirNow() : undefined;
    if (early) session.commandFile = join(early, 'command.sh');
    const started = session.startShell();
    // Awaited below, after the temp dir: a failure that comes first must not count as unhandled.
    started.catch(() => undefined);
    let dir: string;
    try {
      dir = early ?? (await makeTempDir());
    } catch (error) {
      await started.then((shell) => session.killShell(shell)).catch(() => undefined);
      throw error;
    }
    session.commandFile = join(dir, 'command.sh');
    try {
      session.shell = await started;
      await session.enqueue(() => session.execute('true', {}));
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

  /** The command that waits for input, if one does (see {@link BashRunResult.waitingForInput}). */
  get waitingCommand(): string | undefined {
    return this.waiting?.command;
  }

  /**
   * Runs `command` (any bash text: several lines, heredocs, even broken syntax) in the shell.
   * Calls are serialised: a second `run` starts when the first has finished. A command still
   * waiting for input is stopped first (`stoppedWaiting`).
   */
  run(command: string, options: BashRunOptions = {}): Promise<BashRunResult> {
    this.used = true;
    return this.enqueue(() => this.execute(command, options));
  }

  /**
   * Types `text` into the command that waits for input, as keys: each line ends with Enter (one
   * is added when `text` does not end with a newline). Then waits as `run` does: for the end,
   * another wait for input, or the timeout. A line longer than 4095 characters is cut by the
   * terminal for a program that reads whole lines. Does not type anything when no command
   * waits (`nothingWaiting`).
   */
  sendInput(text: string, options: BashRunOptions = {}): Promise<BashRunResult> {
    this.used = true;
    return this.enqueue(() => this.answer(text, options));
  }

  /**
   * Kills bash and every process of its terminal session, and removes the temp files; resolves
   * once bash is gone, or, with `waitForExit: false` (a process about to exit), once every
   * kill is sent. Idempotent: a second call gets the first one's promise.
   */
  close(options: { waitForExit?: boolean } = {}): Promise<void> {
    this.closing ??= (async () => {
      this.waiting = undefined;
      await this.killShell(this.shell, options.waitForExit ?? true);
      rmSync(dirname(this.commandFile), { recursive: true, force: true });
    })();
    return this.closing;
  }

  private enqueue(task: () => Promise<BashRunResult>): Promise<BashRunResult> {
    const result = this.queue.then(task);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async execute(command: string, options: BashRunOptions): Promise<BashRunResult> {
    if (this.closing) throw new Error('BashSession is closed');
    const context: ResultContext = {};
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = undefined;
      // Stopped as a timeout would stop it, unless it ended on its own meanwhile. Its capture is still `capture`.
      const over = waiting.capture.done || waiting.shell.exit !== undefined;
      const stopped = await this.settle(waiting, !over && (await this.interrupt(waiting.shell, waiting.capture)), {});
      context.stoppedWaiting = { command: waiting.command, exitCode: stopped.exitCode };
      if (stopped.shellExited) context.shellExited = stopped.shellExited;
    }
    if (this.shell.exit) {
      context.shellExited = this.shell.exit;
      await this.restartUnlessClosed(this.shell);
    }
    const early = (output: string, exitCode: number | null, interrupted: boolean): BashRunResult =>
      ({ output, exitCode, timedOut: false, interrupted, droppedBytes: 0, ...context });
    if (options.signal?.aborted) return early('', null, true);
    writeCommandFile(this.commandFile, command);
    const syntaxError = RISKY_SYNTAX.test(command) ? await checkSyntax(this.commandFile, this.env) : undefined;
    if (syntaxError !== undefined) {
      options.onOutput?.(syntaxError);
      return early(syntaxError, 2, false);
    }

    const shell = this.shell;
    const nonce = newNonce();
    const line = commandLine(this.commandFile, nonce);
    const capture = new CommandCapture({
      nonce,
      prompts: this.prompts,
      echo: line,
      maxBytes: this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    });
    const running: Running = { command, shell, nonce, capture };
    this.capture = capture;
    write(shell, `${line}\n`);
    return this.follow(running, options, context);
  }

  private async answer(text: string, options: BashRunOptions): Promise<BashRunResult> {
    if (this.closing) throw new Error('BashSession is closed');
    const running = this.waiting;
    this.waiting = undefined;
    if (!running) return { output: NOTHING_WAITING, exitCode: null, timedOut: false, interrupted: false, droppedBytes: 0, nothingWaiting: true };
    // Output on its way comes in first: text typed after the command ended would reach bash as a command line.
    const ended = (): boolean => running.capture.done || running.shell.exit !== undefined;
    if ((await this.waitFor(ended, TYPE_SETTLE_MS)) === 'met') return { ...(await this.settle(running, false, {})), nothingWaiting: true };
    // Keys as typed: Enter is CR, which the terminal turns into a newline for line-reading programs.
    if (!options.signal?.aborted) write(running.shell, text.replace(/\n?$/, '\n').replace(/\r?\n/g, '\r'));
    return this.follow(running, options, {});
  }

  /**
   * Waits for a sent command: to its end (or its timeout, abort or input wait), and returns its
   * result. A command that waits for input is kept in `waiting`, its capture still receiving.
   */
  private async follow(running: Running, options: BashRunOptions, context: ResultContext): Promise<BashRunResult> {
    const { shell, capture } = running;
    capture.listen(options.onOutput);
    try {
      const outcome = await this.awaitCommand(running, options);
      if (outcome === 'input') {
        this.waiting = running;
        const { output, droppedBytes } = capture.drain();
        return { output, exitCode: null, timedOut: false, interrupted: false, droppedBytes, waitingForInput: true, ...context };
      }
      const killed = outcome === 'met' ? false : await this.interrupt(shell, capture);
      const result = await this.settle(running, killed, context);
      return { ...result, timedOut: outcome === 'timeout', interrupted: outcome === 'aborted' || this.closing !== undefined };
    } finally {
      capture.listen(undefined);
      if (this.waiting !== running && this.capture === capture) this.capture = undefined;
    }
  }

  /** Takes the end of a command that is over (or was stopped): its output and exit code. */
  private async settle(running: Running, killed: boolean, context: ResultContext): Promise<BashRunResult> {
    const { shell, capture, nonce } = running;
    if (this.capture === capture) this.capture = undefined;
    const { output, droppedBytes } = capture.finish();
    // The status marker and the PS1 assignment come together: with the one, bash ran the other.
    if (capture.status !== undefined) this.prompts = [nonce, ...this.prompts].slice(0, KEPT_PROMPTS);
    const exited = shell.exit;
    if (exited && shell === this.shell) await this.restartUnlessClosed(shell);
    const exitCode = exited || killed || capture.status === undefined ? null : capture.status;
    const interrupted = this.closing !== undefined;
    return { output, exitCode, timedOut: false, interrupted, droppedBytes, ...context, ...(exited ? { shellExited: exited } : {}) };
  }

  /**
   * Waits until the command ends, times out or is aborted, or falls quiet for `inputWaitMs`
   * while a process of its job is blocked reading the terminal (`input`).
   */
  private async awaitCommand({ shell, capture }: Running, options: BashRunOptions): Promise<RunOutcome> {
    const ended = (): boolean => capture.done || shell.exit !== undefined;
    const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const inputWaitMs = options.inputWaitMs ?? DEFAULT_INPUT_WAIT_MS;
    const terminal = shell.terminal;
    const quietMs = terminal !== undefined && Number.isFinite(inputWaitMs) ? Math.max(0, inputWaitMs) : undefined;
    for (;;) {
      const outcome = await this.waitFor(ended, deadline - Date.now(), options.signal, quietMs);
      if (outcome !== 'quiet') return outcome;
      const events = this.events;
      const reader = terminal === undefined ? undefined : await findTerminalReader(shell.pty.pid, terminal);
      // Output that came while /proc was read may mean the program moved on: look again later.
      if (reader && events === this.events && !ended()) return 'input';
    }
  }

  /**
   * Stops a command that overran: Ctrl-C (typed when it reaches the command alone, see
   * `job-interrupt.ts`), and the command is over once bash is back at its prompt. While it is not, the terminal's foreground job is killed; if bash itself is what
   * does not stop (a builtin loop with SIGINT ignored), bash is killed. Returns whether
   * anything was killed.
   */
  private async interrupt(shell: Shell, capture: CommandCapture): Promise<boolean> {
    if (shell.exit) return false;
    const settled = (): boolean => capture.done || shell.exit !== undefined;
    const terminal: JobTerminal = {
      ptyPid: shell.pty.pid,
      shellGroup: shell.group,
      ctrlC: () => write(shell, '\x03'),
      shellExited: () => shell.exit !== undefined,
      wait: (check, ms) => this.waitFor(check, ms),
    };
    if (await awaitJob(terminal, () => capture.started, settled)) return false;
    capture.interrupted();
    if (await pressCtrlC(terminal, settled, INTERRUPT_GRACE_MS)) return stopOrphanedJob(terminal);
    let killed = false;
    for (let round = 0; round < KILL_ROUNDS; round++) {
      if (!(await killForegroundJob(shell.pty.pid))) break;
      killed = true;
      if ((await this.waitFor(settled, KILL_WAIT_MS)) === 'met') return killed;
    }
    await this.killShell(shell);
    return true;
  }

  /**
   * Kills bash, every process left in its terminal session and every process marked with this
   * session's {@link SESSION_VARIABLE} (unless no command was ever sent: see `used`); resolves
   * once bash is gone, or at once after the kills without `waitForExit`.
   */
  private async killShell(shell: Shell, waitForExit = true): Promise<void> {
    const leader = shell.pty.pid;
    // bash first, so that it starts nothing new while its session is being swept.
    if (!shell.exit) signalProcess(leader, 'SIGKILL');
    if (this.used) {
      const marker = `${SESSION_VARIABLE}=${this.env[SESSION_VARIABLE] ?? ''}`;
      await (waitForExit ? killSession(leader, marker) : killSessionNow(leader, marker));
    }
    if (waitForExit) await Promise.race([shell.exited, delay(EXIT_WAIT_MS)]);
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
    const { cwd, sandbox } = this.options;
    // bash reads each command from the command file, which only fence writes: mounted read-only.
    const binds = this.commandFile ? [{ path: dirname(this.commandFile), writable: false }] : [];
    const line = sandbox ? sandbox.wrap('bash', BASH_ARGS, { cwd, binds, terminal: 'pty' }) : { command: 'bash', args: [...BASH_ARGS] };
    const pty = this.spawn(line.command, line.args, ptyOptions(cwd, this.env));
    let markExited!: () => void;
    const exited = new Promise<void>((resolve) => (markExited = resolve));
    const shell: Shell = { pty, exit: undefined, exited, terminal: undefined, group: undefined };
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
        throw new ShellStartError(this.options.cwd, startOutputReason(output, nonce) || (shell.exit ? `it exited${shell.exit.code === null ? ' on a signal' : ` with code ${shell.exit.code}`}` : 'it did not answer in time'));
      }
      if (this.closing) {
        // close() came while bash was starting and may have swept the session before it existed.
        await this.killShell(shell);
        throw new Error('BashSession is closed');
      }
    } finally {
      this.capture = undefined;
    }
    shell.terminal = terminalOf(pty.pid);
    shell.group = await foregroundProcessGroup(pty.pid);
    return shell;
  }

  private notify(): void {
    this.events++;
    for (const listener of [...this.listeners]) listener();
  }

  /**
   * Resolves when `check` holds (re-checked on every pty event), on timeout, on abort, or, with
   * `quietMs`, once no pty event came for that long (`quiet`).
   */
  private waitFor(check: () => boolean, timeoutMs: number, signal?: AbortSignal, quietMs?: number): Promise<WaitOutcome> {
    if (check()) return Promise.resolve('met');
    if (signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      let lastEvent = Date.now();
      let quietTimer: NodeJS.Timeout | undefined;
      const finish = (outcome: WaitOutcome): void => {
        clearTimeout(timer);
        clearTimeout(quietTimer);
        this.listeners.delete(onEvent);
        signal?.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      const onEvent = (): void => {
        lastEvent = Date.now();
        if (check()) finish('met');
      };
      const onAbort = (): void => finish('aborted');
      // One timer for the quiet period, moved on when it fires rather than reset on every chunk.
      const onQuietTimer = (): void => {
        const quiet = Date.now() - lastEvent;
        if (quietMs === undefined || quiet >= quietMs) finish('quiet');
        else quietTimer = setTimeout(onQuietTimer, quietMs - quiet);
      };
      // setTimeout fires at once for delays beyond 2^31-1 ms: treat those as no timeout.
      const timer = timeoutMs <= 0x7fffffff ? setTimeout(() => finish('timeout'), Math.max(0, timeoutMs)) : undefined;
      if (quietMs !== undefined) quietTimer = setTimeout(onQuietTimer, quietMs);
      this.listeners.add(onEvent);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** node-pty, from node_modules (a CommonJS package, so it loads without awaiting). */
function loadNodePty(): typeof import('node-pty') {
  return createRequire(import.meta.url)('node-pty') as typeof import('node-pty');
}

/** Writes to the pty unless bash is gone (a write to a closed pty would throw). */
function write(shell: Shell, data: string): void {
  if (shell.exit) return;
  try {
    shell.pty.write(data);
  } catch {
    // bash died between the check and the write: its exit event reports it.
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
