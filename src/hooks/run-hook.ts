import { spawn } from 'node:child_process';

/** Seconds a hook may run when its entry names no `timeout`. */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 30;

/** Most of a hook's stdout (and of its stderr) that is kept; the rest is read and dropped. */
export const HOOK_OUTPUT_LIMIT_BYTES = 64 * 1024;

/** How long a hook gets between SIGTERM and SIGKILL once it is stopped. */
const KILL_GRACE_MS = 1000;

/**
 * How long, after SIGKILL, fence waits for a hook's pipes to close before it stops reading
 * them: a process that escaped the group could hold them open forever.
 */
const PIPES_GRACE_MS = 2000;

/** The longest delay `setTimeout` honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Variables every hook gets (when set); nothing else of fence's environment reaches it. */
const BASE_ENV = ['PATH', 'HOME', 'LANG', 'TMPDIR'] as const;

/** The command line of a process inside the session's OS sandbox (see `OsSandbox.wrap`). */
export type WrapInSandbox = (command: string, args: readonly string[], options: { cwd: string; terminal?: 'pty' | 'none' }) => { command: string; args: string[] };

/** One hook to run: its words, where, for how long, and whether inside the sandbox. */
export interface HookCommand {
  /** The program and its arguments, run without a shell. */
  command: readonly string[];
  /** The folder it runs in (the workspace). */
  cwd: string;
  timeoutSeconds: number;
  /** Runs `command` inside the sandbox; absent: the hook runs as it is. */
  wrap?: WrapInSandbox;
  /** Variables set for the hook besides the base ones (`FENCE_PROJECT_DIR`, …). */
  env?: Record<string, string>;
}

/**
 * How one hook run ended: `exited` with its code and what it printed (each cut to
 * `HOOK_OUTPUT_LIMIT_BYTES`, `cut` saying so), `timed-out`, `killed` by a signal, `stopped`
 * because the run it belongs to was, or `not-started` with the reason.
 */
export type HookRun =
  | { kind: 'exited'; code: number; stdout: string; stderr: string; cut?: boolean }
  | { kind: 'timed-out'; stderr: string }
  | { kind: 'killed'; signal: string; stderr: string }
  | { kind: 'stopped' }
  | { kind: 'not-started'; reason: string };

/**
 * Runs one hook: the event as `input` on its stdin, on pipes with no terminal, in a process
 * group of its own, with only `PATH`, `HOME`, `LANG`, `TMPDIR`, `TERM=dumb` and `env` in its
 * environment (so fence's keys and the person's tokens never reach it). At its time limit, or
 * when `signal` aborts, the whole group gets SIGTERM, then SIGKILL; inside the sandbox the
 * sandbox's first process takes everything in it along. When the hook exits, what it left
 * running in its group is killed. Never throws and never hangs: a hook that keeps its pipes
 * open after being killed is let go.
 */
export async function runHook(hook: HookCommand, input: string, signal?: AbortSignal): Promise<HookRun> {
  if (signal?.aborted) return { kind: 'stopped' };
  const [file = '', ...args] = hook.command;
  const groupKill = process.platform !== 'win32';
  return new Promise<HookRun>((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      const line = hook.wrap ? hook.wrap(file, args, { cwd: hook.cwd, terminal: 'none' }) : { command: file, args };
      child = spawn(line.command, line.args, { cwd: hook.cwd, env: hookEnv(hook.env), stdio: ['pipe', 'pipe', 'pipe'], detached: groupKill });
    } catch (error) {
      resolve({ kind: 'not-started', reason: error instanceof Error ? error.message : String(error) });
      return;
    }
    const stdout = new CappedText();
    const stderr = new CappedText();
    let stoppedBy: 'timeout' | 'abort' | undefined;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const finish = (run: HookRun) => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve(run);
    };
    const send = (name: NodeJS.Signals) => {
      try {
        if (groupKill && child.pid !== undefined) process.kill(-child.pid, name);
        else child.kill(name);
      } catch {
        // Already gone.
      }
    };
    const stop = (reason: 'timeout' | 'abort') => {
      stoppedBy ??= reason;
      send('SIGTERM');
      timers.push(
        setTimeout(() => {
          send('SIGKILL');
          timers.push(setTimeout(() => finish(ended()), PIPES_GRACE_MS));
        }, KILL_GRACE_MS),
      );
    };
    const onAbort = () => stop('abort');
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const ended = (): HookRun => {
      if (stoppedBy === 'abort') return { kind: 'stopped' };
      if (stoppedBy === 'timeout') return { kind: 'timed-out', stderr: stderr.text };
      if (exit?.signal) return { kind: 'killed', signal: exit.signal, stderr: stderr.text };
      const cut = stdout.cut || stderr.cut;
      return { kind: 'exited', code: exit?.code ?? 0, stdout: stdout.text, stderr: stderr.text, ...(cut ? { cut } : {}) };
    };
    child.stdout?.on('data', (chunk: Buffer) => stdout.add(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.add(chunk));
    // A hook that does not read its stdin closes it early: that is not a failure.
    child.stdin?.on('error', () => undefined);
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (exit === undefined) finish({ kind: 'not-started', reason: startProblem(file, error) });
    });
    child.on('exit', (code, exitSignal) => {
      exit = { code, signal: exitSignal };
      // The group may still hold the pipes; killing it lets them close, and the wait is bounded.
      send('SIGKILL');
      timers.push(setTimeout(() => finish(ended()), PIPES_GRACE_MS));
    });
    child.on('close', () => finish(ended()));
    // Node fires a longer timer at once: the longest it takes is ~24.8 days.
    timers.push(setTimeout(() => stop('timeout'), Math.min(hook.timeoutSeconds * 1000, MAX_TIMER_MS)));
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdin?.end(input);
  });
}

/** Text read from a stream, kept up to `HOOK_OUTPUT_LIMIT_BYTES`. */
class CappedText {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  cut = false;

  add(chunk: Buffer): void {
    const room = HOOK_OUTPUT_LIMIT_BYTES - this.size;
    if (chunk.length > room) this.cut = true;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(kept);
    this.size += kept.length;
  }

  get text(): string {
    const text = Buffer.concat(this.chunks).toString('utf8');
    return this.cut ? `${text}\n[cut: the hook printed more than ${HOOK_OUTPUT_LIMIT_BYTES / 1024} KiB]` : text;
  }
}

/** The environment of a hook: the base variables that are set, `TERM=dumb`, and `extra`. */
function hookEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of BASE_ENV) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return { ...env, TERM: 'dumb', ...extra };
}

function startProblem(program: string, error: NodeJS.ErrnoException): string {
  if (error.code === 'ENOENT') return `command "${program}" not found`;
  if (error.code === 'EACCES') return `command "${program}" cannot be run (permission denied)`;
  return `command "${program}" could not be started: ${error.message}`;
}
