import { foregroundProcessGroup, signalProcess } from './process-tree';

/**
 * How an interrupt types Ctrl-C into an interactive bash so that it stops the command and
 * nothing else. A Ctrl-C that reaches bash itself at the wrong moment does not stop the command:
 *
 * - Before bash has read and parsed the typed line, bash prints a new prompt and then runs the
 *   line it holds (or the terminal drops the unread line).
 * - Between forking a program and that program taking the terminal, bash gives up waiting for
 *   it: the program runs on as a foreground job nobody waits for, and bash then hangs on it in
 *   the next command, or exits when it cannot read its next line.
 * - A new program that gets the key before it has reset bash's signal handlers loses it, and
 *   runs on.
 *
 * So the key waits for the line's start marker and for a job of the command to hold the
 * terminal ({@link awaitJob}), is typed again when it was lost ({@link pressCtrlC}), and a job
 * still holding the terminal once bash is back at its prompt is stopped ({@link stopOrphanedJob}).
 */

/** What these functions need of one bash in a pty. */
export interface JobTerminal {
  /** The pty's child: the terminal's foreground group is read through it. */
  readonly ptyPid: number;
  /** bash's own process group (the foreground group while bash waits at its prompt), if known. */
  readonly shellGroup: number | undefined;
  /** Types Ctrl-C. */
  ctrlC(): void;
  shellExited(): boolean;
  /** Resolves 'met' once `check` holds (looked at on every pty event), or after `ms`. */
  wait(check: () => boolean, ms: number): Promise<string>;
}

/** How long bash has to start running the typed line. */
const START_WAIT_MS = 2_000;
/** How long bash has to give the terminal to a job of the command, and how often that is looked at. */
const JOB_WAIT_MS = 50;
const JOB_POLL_MS = 5;
/** After Ctrl-C: when to look whether a new job took the terminal, when to type it again for the same job, and how many times at most. */
const CTRL_C_LOOK_MS = 100;
const CTRL_C_AGAIN_MS = 1_000;
const CTRL_C_PRESSES = 3;
/** After bash's prompt: when to look for a job left holding the terminal (each wait after the last), and how long it has to stop on SIGINT. */
const ORPHAN_LOOKS_MS = [0, 20, 80];
const ORPHAN_GRACE_MS = 100;

/**
 * Waits until a Ctrl-C can stop the command cleanly: until `started` (the line's start marker
 * came), then, for up to {@link JOB_WAIT_MS}, until one job other than bash holds the terminal,
 * seen twice {@link JOB_POLL_MS} apart so that it is not one about to end while bash forks the
 * next. A command that runs bash builtins only (a `while` loop of them) never gives the
 * terminal away: bash gets the key after that wait. Returns true when the command ended meanwhile.
 */
export async function awaitJob(terminal: JobTerminal, started: () => boolean, settled: () => boolean): Promise<boolean> {
  if (!started()) await terminal.wait(() => started() || settled(), START_WAIT_MS);
  const group = terminal.shellGroup;
  if (group === undefined) return settled();
  const deadline = Date.now() + JOB_WAIT_MS;
  let job: number | undefined;
  while (!settled() && Date.now() < deadline) {
    const holder = await foregroundProcessGroup(terminal.ptyPid);
    if (holder === undefined || (holder !== group && holder === job)) break;
    job = holder === group ? undefined : holder;
    await terminal.wait(settled, JOB_POLL_MS);
  }
  return settled();
}

/**
 * Types Ctrl-C and waits up to `graceMs` for `settled`. The key is typed again when another job
 * than the one that had it holds the terminal a moment later, and once more after
 * {@link CTRL_C_AGAIN_MS} if the same job still runs (on a busy machine the moment a new program
 * loses the key lasts): gentler than the kill that would come next, which lets bash go on to
 * the rest of the line. At most {@link CTRL_C_PRESSES} keys in all. Returns whether it settled.
 */
export async function pressCtrlC(terminal: JobTerminal, settled: () => boolean, graceMs: number): Promise<boolean> {
  const deadline = Date.now() + graceMs;
  let target = await foregroundProcessGroup(terminal.ptyPid);
  let pressedAt = Date.now();
  terminal.ctrlC();
  let presses = 1;
  while (Date.now() < deadline) {
    if ((await terminal.wait(settled, Math.min(CTRL_C_LOOK_MS, deadline - Date.now()))) === 'met') return true;
    if (presses >= CTRL_C_PRESSES) continue;
    const holder = await foregroundProcessGroup(terminal.ptyPid);
    const newJob = holder !== undefined && holder !== target && holder !== terminal.shellGroup;
    if (newJob || (holder === target && Date.now() - pressedAt >= CTRL_C_AGAIN_MS)) {
      target = holder;
      pressedAt = Date.now();
      terminal.ctrlC();
      presses++;
    }
  }
  return settled();
}

/**
 * Once bash is back at its prompt after an interrupt, bash holds the terminal. A job that still
 * holds it was orphaned by a key that came as it started: bash would wait for it in the next
 * command, or fail to read its next line. It gets SIGINT, as the key meant, and SIGKILL if it is
 * still there a moment later (SIGINT, unlike a kill, makes bash print no notice). Looked at a
 * few times, since the job may take the terminal just after bash printed its prompt. Returns
 * whether a job was found.
 */
export async function stopOrphanedJob(terminal: JobTerminal): Promise<boolean> {
  const group = terminal.shellGroup;
  if (group === undefined) return false;
  for (const wait of ORPHAN_LOOKS_MS) {
    await delay(wait);
    if (terminal.shellExited()) return false;
    const holder = await foregroundProcessGroup(terminal.ptyPid);
    if (holder === undefined || holder === group) continue;
    if (signalProcess(-holder, 'SIGINT')) {
      await delay(ORPHAN_GRACE_MS);
      signalProcess(-holder, 'SIGKILL');
    }
    return true;
  }
  return false;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
