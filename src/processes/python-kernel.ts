import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import type { OsSandbox } from '../os-sandbox/os-sandbox';
import { CellOutput } from './cell-output';
import { listProcesses } from './process-tree';
import { kernelEnvironment, kernelScript, makeKernelTempDir, resolveInterpreter } from './python-launch';

/**
 * A persistent Python process that runs cells. How a cell travels:
 *
 * - `kernel.py` (standard library only) runs as `python3 -u kernel.py <config>` in its own
 *   process group. The protocol is JSON lines on extra file descriptors (fd 3 host → kernel,
 *   fd 4 kernel → host), never on stdin/stdout; stdin is /dev/null, so `input()` fails at once.
 * - Output is captured at the OS level: the kernel makes fd 2 a copy of fd 1, one pipe to the
 *   host, so prints, tracebacks and the output of child processes (`os.system`, `subprocess`)
 *   arrive in the order they were written. After a cell the kernel restores fds 1 and 2 (and
 *   sys.stdout/sys.stderr) if the cell moved them, writes a sentinel made for this cell to the
 *   pipe, and sends `done`; the cell is over when the host has both. Output written between
 *   cells (a background thread) belongs to no cell and is dropped.
 * - A timeout or an abort sends an `interrupt` message and SIGINT to the process group (Python
 *   raises KeyboardInterrupt; variables are kept; the message ends a cell that had not begun
 *   when the signal came, which the kernel ignores between cells) — in bubblewrap, to the process groups inside the sandbox, whose
 *   command runs in a session of its own (no controlling terminal). Both are repeated every
 *   250 ms (a signal can be lost; the kernel raises KeyboardInterrupt once a cell); if the cell
 *   has not ended 2 s later, the group is killed and a new kernel started (`restarted`). A kernel that dies by itself is started anew the same way.
 * - Host tools: the kernel sends `tool_call` messages (any number outstanding, matched by id)
 *   and the host answers each with `onToolCall`'s outcome.
 * - IPython syntax (magics, `!cmd`, `obj?`) is translated by IPython when it is installed; it
 *   is imported only for the first cell that needs it. All cells run through the kernel's own
 *   runner, so results, tracebacks and top-level await behave the same in both cases.
 * - If fence dies without closing the kernel, the kernel reads EOF on fd 3 and kills its own
 *   process group; its temp folder is removed by the next kernel start.
 *
 * POSIX only (process groups, signals).
 */

/** How long a cell may run when `timeoutMs` is not given: two minutes. */
export const DEFAULT_CELL_TIMEOUT_MS = 120_000;
/** Default cap on one cell's kept output: 8 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
/** After SIGINT, how long a cell has to stop before the kernel is killed. */
const INTERRUPT_GRACE_MS = 2_000;
/** Meanwhile, how often the interrupt is sent again (see `interruptUntilEnded`). */
const INTERRUPT_REPEAT_MS = 250;
const START_TIMEOUT_MS = 15_000;
/** After the kernel exits, how long its output pipe may take to drain. */
const DRAIN_WAIT_MS = 1_000;

export interface PythonKernelOptions {
  cwd: string;
  /** Extra environment variables, merged over process.env. */
  env?: Record<string, string>;
  /** Variables of process.env kept although they look like credentials (`[sandbox] pass_env`; see `childEnvironment`). */
  passEnv?: readonly string[];
  /**
   * Interpreter: this, else `FENCE_PYTHON`, else `python3` on PATH. A version-manager shim
   * (pyenv, asdf, mise) is asked once per process for the real interpreter, so that a kernel
   * start does not pay for the shim.
   */
  python?: string;
  /** Cap on one cell's kept output in bytes (default 8 MiB): head and tail kept, the middle counted. */
  maxOutputBytes?: number;
  /**
   * Called when Python code calls a host tool; resolves with the tool's value (sent as JSON) or
   * rejects with an Error whose message Python raises as `ToolError`.
   */
  onToolCall?: (name: string, args: Record<string, unknown>) => Promise<unknown>;
  /** Host tools to define in the kernel's namespace: `name(**kwargs)` and `tools.name(**kwargs)`. */
  toolNames?: readonly string[];
  /** The OS sandbox the kernel runs in, with its temp folder mounted writable (see `OsSandbox`). Absent: none. */
  sandbox?: Pick<OsSandbox, 'wrap' | 'kind'>;
}

export interface CellRunOptions {
  /** Default {@link DEFAULT_CELL_TIMEOUT_MS}. On timeout: SIGINT, then a kill and restart after 2 s. */
  timeoutMs?: number;
  /** Aborting behaves like a timeout, but sets only `interrupted`. */
  signal?: AbortSignal;
  /** Called with clean output text as it arrives (overwrites not yet resolved). */
  onOutput?: (chunk: string) => void;
}

export interface CellError {
  name: string;
  message: string;
  /** Python's traceback from the cell's first frame on, without the kernel's frames. */
  traceback: string;
}

export interface CellResult {
  /** stdout and stderr in the order written; invalid UTF-8 and control bytes as U+FFFD. */
  output: string;
  /** repr() of the value of a final expression, when it is not None (as a REPL shows it). */
  value?: string;
  error?: CellError;
  /** The cell ran past its timeout (SIGINT was sent, so `interrupted` is set too). */
  timedOut: boolean;
  /** SIGINT was sent to the cell (timeout or abort), or the kernel was closed meanwhile. */
  interrupted: boolean;
  /** The kernel died (or was killed after a timeout) and was started anew: its state is lost. */
  restarted?: { reason: string };
  /** Bytes of output dropped from the middle because of maxOutputBytes. */
  droppedBytes: number;
}

type KernelMessage =
  | { type: 'ready'; pid: number }
  | { type: 'tool_call'; id: string; name: string; args: Record<string, unknown> }
  | { type: 'done'; id: string; sentinel_written: boolean; value?: string; error?: CellError };

type DoneMessage = Extract<KernelMessage, { type: 'done' }>;

/** One kernel process. `exit` is set once it has exited, `drained` once its output pipe closed. */
interface KernelProcess {
  readonly child: ChildProcess;
  readonly commands: Writable;
  exit: string | undefined;
  ready: boolean;
  readonly drained: Promise<void>;
}

/** The cell being run: its output, and the `done` message once it came. */
interface ActiveCell {
  readonly id: string;
  readonly output: CellOutput;
  done: DoneMessage | undefined;
}

type WaitOutcome = 'met' | 'timeout' | 'aborted';

/**
 * A persistent Python kernel. Cells run one at a time in one namespace, so variables, imports
 * and functions carry over. Every `run` resolves (a failing, hanging or crashing cell gives a
 * result, and a dead kernel is started anew); it rejects only once the kernel is closed or
 * Python cannot be started again. Output held in memory is bounded by `maxOutputBytes`.
 */
export class PythonKernel {
  private process!: KernelProcess;
  private cell: ActiveCell | undefined;
  private readonly listeners = new Set<() => void>();
  private queue: Promise<unknown> = Promise.resolve();
  private closing: Promise<void> | undefined;
  private cellCount = 0;

  private constructor(
    private readonly options: PythonKernelOptions,
    private readonly interpreter: string,
    /** The kernel's private temp folder (IPython's files), removed on close. */
    readonly tempDir: string,
  ) {}

  /** Starts Python in `options.cwd`; resolves when the kernel is ready for a cell. */
  static async start(options: PythonKernelOptions): Promise<PythonKernel> {
    const [interpreter, dir] = await Promise.all([
      resolveInterpreter(options.python ?? process.env.FENCE_PYTHON ?? 'python3'),
      makeKernelTempDir(),
    ]);
    const kernel = new PythonKernel(options, interpreter, dir);
    try {
      kernel.process = await kernel.startProcess();
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    return kernel;
  }

  /** Process id of the current Python process (it changes when the kernel is started anew). */
  get pid(): number {
    return this.process.child.pid ?? -1;
  }

  /** Runs `code` as one cell. Calls are serialised: a second `run` starts when the first has finished. */
  run(code: string, options: CellRunOptions = {}): Promise<CellResult> {
    const result = this.queue.then(() => this.execute(code, options));
    this.queue = result.catch(() => undefined);
    return result;
  }

  /**
   * Kills the kernel and everything it started, and removes its temp folder; resolves once the
   * kernel is gone, or, with `waitForExit: false` (a process about to exit), once the kill is
   * sent. Idempotent.
   */
  close(options: { waitForExit?: boolean } = {}): Promise<void> {
    this.closing ??= (async () => {
      await this.kill(this.process, options.waitForExit ?? true);
      await rm(this.tempDir, { recursive: true, force: true });
    })();
    return this.closing;
  }

  private async execute(code: string, options: CellRunOptions): Promise<CellResult> {
    if (this.closing) throw new Error('PythonKernel is closed');
    let restarted = this.process.exit === undefined ? undefined : { reason: `${this.process.exit} while idle` };
    if (restarted) await this.restart(this.process);
    if (options.signal?.aborted) return { output: '', timedOut: false, interrupted: true, droppedBytes: 0, ...(restarted ? { restarted } : {}) };

    const kernel = this.process;
    const sentinel = `\x1e${randomBytes(16).toString('hex')}\x1e`;
    const maxBytes = this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const cell: ActiveCell = {
      id: `cell-${++this.cellCount}`,
      output: new CellOutput({ sentinel, maxBytes, ...(options.onOutput ? { onOutput: options.onOutput } : {}) }),
      done: undefined,
    };
    const ended = (): boolean =>
      kernel.exit !== undefined || (cell.done !== undefined && (cell.output.done || !cell.done.sentinel_written));
    this.cell = cell;
    let outcome: WaitOutcome;
    let killedReason: string | undefined;
    try {
      sendLine(kernel, JSON.stringify({ type: 'run', id: cell.id, code, sentinel, limit: maxBytes }));
      outcome = await this.waitFor(ended, options.timeoutMs ?? DEFAULT_CELL_TIMEOUT_MS, options.signal);
      if (outcome !== 'met' && kernel.exit === undefined) {
        if (!(await this.interruptUntilEnded(kernel, cell.id, ended))) {
          killedReason = `the cell did not stop within ${INTERRUPT_GRACE_MS / 1000} s of an interrupt, so the kernel was killed`;
          await this.kill(kernel);
        }
      }
      if (kernel.exit !== undefined) await Promise.race([kernel.drained, delay(DRAIN_WAIT_MS)]);
    } finally {
      this.cell = undefined;
    }
    const { output, droppedBytes } = cell.output.finish();
    if (kernel.exit !== undefined && !this.closing) {
      restarted = { reason: killedReason ?? kernel.exit };
      await this.restart(kernel);
    }
    const { done } = cell;
    return {
      output,
      ...(done?.value !== undefined ? { value: done.value } : {}),
      ...(done?.error ? { error: done.error } : {}),
      timedOut: outcome === 'timeout',
      interrupted: outcome !== 'met' || this.closing !== undefined,
      ...(restarted ? { restarted } : {}),
      droppedBytes,
    };
  }

  /**
   * Interrupts cell `cellId` until it ends (`ended`), for {@link INTERRUPT_GRACE_MS} at most;
   * resolves whether it ended. Each round sends the `interrupt` message, which reaches a cell
   * not begun yet (the kernel ignores SIGINT between cells), and SIGINT to the cell's process
   * groups. The round is repeated because a signal can be lost: one that comes as `os.system`
   * starts its shell, which ignores SIGINT until then. The kernel raises KeyboardInterrupt once
   * a cell, so the repeats reach only what has not stopped.
   */
  private async interruptUntilEnded(kernel: KernelProcess, cellId: string, ended: () => boolean): Promise<boolean> {
    const deadline = Date.now() + INTERRUPT_GRACE_MS;
    for (;;) {
      sendLine(kernel, JSON.stringify({ type: 'interrupt', id: cellId }));
      await interruptCell(kernel.child, this.options.sandbox?.kind === 'bubblewrap');
      const left = deadline - Date.now();
      if (left <= 0) return ended();
      if ((await this.waitFor(ended, Math.min(INTERRUPT_REPEAT_MS, left))) === 'met') return true;
    }
  }

  /** Replaces a dead kernel (sweeping its process group) unless the kernel is being closed. */
  private async restart(old: KernelProcess): Promise<void> {
    await this.kill(old);
    if (this.closing) return;
    try {
      this.process = await this.startProcess();
    } catch (error) {
      if (!this.closing) throw error;
    }
  }

  private async startProcess(): Promise<KernelProcess> {
    if (this.closing) throw new Error('PythonKernel is closed');
    const config = JSON.stringify({ tools: this.options.toolNames ?? [] });
    const args = ['-u', kernelScript(), config];
    const { cwd, sandbox } = this.options;
    const line = sandbox ? sandbox.wrap(this.interpreter, args, { cwd, binds: [{ path: this.tempDir, writable: true }], terminal: 'none' }) : { command: this.interpreter, args };
    const child = spawn(line.command, line.args, {
      cwd,
      env: kernelEnvironment(this.options.env, this.tempDir, this.options.passEnv),
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
      // A process group of its own: SIGINT and the final kill reach the cell's child processes too.
      detached: true,
    });
    const [, stdout, stderr, commands, messages] = child.stdio as [unknown, Readable, Readable, Writable, Readable];
    let markDrained!: () => void;
    const kernel: KernelProcess = {
      child,
      commands,
      exit: undefined,
      ready: false,
      drained: new Promise((resolve) => (markDrained = resolve)),
    };
    let startupOutput = '';
    const decoder = new TextDecoder('utf-8');
    stdout.on('data', (chunk: Buffer) => {
      const text = decoder.decode(chunk, { stream: true });
      if (!kernel.ready) startupOutput = (startupOutput + text).slice(-4096);
      if (kernel === this.process) this.cell?.output.push(text);
      this.notify();
    });
    stdout.on('close', () => markDrained());
    stderr.on('data', (chunk: Buffer) => {
      startupOutput = (startupOutput + chunk.toString()).slice(-4096);
    });
    commands.on('error', () => undefined); // EPIPE once the kernel is gone; its exit reports it
    readLines(messages, (line) => this.receive(kernel, line));
    const exited = (reason: string): void => {
      kernel.exit ??= reason;
      // Whatever the dead kernel left running in its group must not keep the pipe open.
      if (child.pid !== undefined) signalGroup(child, 'SIGKILL');
      this.notify();
    };
    child.on('exit', (code, signal) => exited(signal ? `the kernel was killed by ${signal}` : `the kernel exited with code ${code}`));
    child.on('error', (error) => {
      exited(`the kernel could not run: ${error.message}`);
      markDrained();
    });

    this.process = kernel;
    const outcome = await this.waitFor(() => kernel.ready || kernel.exit !== undefined, START_TIMEOUT_MS);
    if (kernel.ready && kernel.exit === undefined && !this.closing) return kernel;
    await this.kill(kernel);
    if (this.closing) throw new Error('PythonKernel is closed');
    const why = outcome === 'timeout' ? 'it did not answer in time' : kernel.exit;
    throw new Error(`Python (${this.interpreter}) did not start in ${this.options.cwd}: ${why}\n${startupOutput.trim()}`.trim());
  }

  private receive(kernel: KernelProcess, line: string): void {
    const message = parseMessage(line);
    if (!message) return;
    if (message.type === 'ready') kernel.ready = true;
    else if (message.type === 'done') {
      if (kernel === this.process && this.cell?.id === message.id) this.cell.done = message;
    } else void this.answerToolCall(kernel, message);
    this.notify();
  }

  private async answerToolCall(kernel: KernelProcess, call: Extract<KernelMessage, { type: 'tool_call' }>): Promise<void> {
    let line: string;
    try {
      if (!this.options.onToolCall) throw new Error(`no host tools are available (called ${call.name})`);
      const value = await this.options.onToolCall(call.name, call.args);
      line = JSON.stringify({ type: 'tool_result', id: call.id, ok: true, value: value ?? null });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      line = JSON.stringify({ type: 'tool_result', id: call.id, ok: false, error: message });
    }
    sendLine(kernel, line);
  }

  /** Kills the kernel's whole process group; resolves once the kernel has exited. */
  private async kill(kernel: KernelProcess, waitForExit = true): Promise<void> {
    if (kernel.child.pid !== undefined) signalGroup(kernel.child, 'SIGKILL');
    if (waitForExit) await this.waitFor(() => kernel.exit !== undefined, DRAIN_WAIT_MS * 5);
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Resolves when `check` holds (re-checked on every kernel event), on timeout, or on abort. */
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

/**
 * Sends SIGINT to the running cell: to the kernel's process group, or, when the kernel runs in
 * bubblewrap (`inBubblewrap`), to every process group among its descendants but bwrap's own.
 * There the kernel is started in a new session inside the sandbox, out of reach of the group
 * signal, and bwrap itself would end at a SIGINT, taking the kernel with it. Never throws.
 */
async function interruptCell(child: ChildProcess, inBubblewrap: boolean): Promise<void> {
  if (child.pid === undefined) return;
  if (!inBubblewrap) return signalGroup(child, 'SIGINT');
  const processes = await listProcesses();
  const inside = new Set<number>([child.pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const info of processes) {
      if (inside.has(info.pid) || !inside.has(info.ppid)) continue;
      inside.add(info.pid);
      grew = true;
    }
  }
  const groups = new Set(processes.filter((info) => inside.has(info.pid) && info.pgid !== child.pid).map((info) => info.pgid));
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGINT');
    } catch {
      // the group is already gone
    }
  }
}

/** Signals the kernel's process group (the kernel and what it started). Never throws. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

/** Writes one protocol line to the kernel, unless it is gone. */
function sendLine(kernel: KernelProcess, line: string): void {
  if (kernel.exit !== undefined || kernel.commands.destroyed) return;
  kernel.commands.write(`${line}\n`);
}

function readLines(stream: Readable, onLine: (line: string) => void): void {
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line) onLine(line);
  });
  stream.on('error', () => undefined);
}

/** A kernel message, or undefined for anything that does not have the expected shape. */
function parseMessage(line: string): KernelMessage | undefined {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isRecord(data)) return undefined;
  if (data.type === 'ready' && typeof data.pid === 'number') return { type: 'ready', pid: data.pid };
  if (data.type === 'tool_call' && typeof data.id === 'string' && typeof data.name === 'string') {
    return { type: 'tool_call', id: data.id, name: data.name, args: isRecord(data.args) ? data.args : {} };
  }
  if (data.type !== 'done' || typeof data.id !== 'string') return undefined;
  const error = isRecord(data.error) ? data.error : undefined;
  return {
    type: 'done',
    id: data.id,
    sentinel_written: data.sentinel_written === true,
    ...(typeof data.value === 'string' ? { value: data.value } : {}),
    ...(error
      ? { error: { name: String(error.name ?? 'Error'), message: String(error.message ?? ''), traceback: String(error.traceback ?? '') } }
      : {}),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
