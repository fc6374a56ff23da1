import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';

/**
 * The few facts about other processes that a pty shell needs to interrupt and clean up after
 * its commands. On Linux they come from /proc (no process is spawned); elsewhere from `ps`.
 */

/** One process as seen at one moment. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** Process group id. */
  pgid: number;
  /** Session id; unknown where `ps` cannot report it portably. */
  sid: number | undefined;
}

/**
 * The foreground process group of the terminal that `pid` is attached to, i.e. the job that
 * receives Ctrl-C. Undefined when the process is gone or has no terminal. Never throws.
 */
export async function foregroundProcessGroup(pid: number): Promise<number | undefined> {
  if (process.platform === 'linux') {
    const stat = await readStat(pid);
    return stat === undefined ? undefined : positive(stat[5]);
  }
  const out = await ps(['-o', 'tpgid=', '-p', String(pid)]);
  return positive(out?.trim());
}

/** A snapshot of all processes of the machine that can be seen. Never throws (empty on failure). */
export async function listProcesses(): Promise<ProcessInfo[]> {
  if (process.platform === 'linux') {
    const names = await readdir('/proc').catch(() => [] as string[]);
    const pids = names.filter((name) => /^\d+$/.test(name)).map(Number);
    const infos = await Promise.all(pids.map(async (pid) => toInfo(pid, await readStat(pid))));
    return infos.filter((info): info is ProcessInfo => info !== undefined);
  }
  const out = await ps(['-A', '-o', 'pid=,ppid=,pgid=']);
  return (out ?? '').split('\n').flatMap((line) => {
    const [pid, ppid, pgid] = line.trim().split(/\s+/).map(Number);
    if (!pid || ppid === undefined || pgid === undefined) return [];
    return [{ pid, ppid, pgid, sid: undefined }];
  });
}

/**
 * The processes of the session led by `leader` (a pty child is a session leader): every process
 * with that session id, which also finds children that were disowned or reparented after a
 * double fork. Where session ids are unknown, falls back to the leader's descendants. The leader
 * itself is not included.
 */
export function sessionMembers(processes: readonly ProcessInfo[], leader: number): number[] {
  if (processes.some((p) => p.sid !== undefined)) {
    return processes.filter((p) => p.sid === leader && p.pid !== leader).map((p) => p.pid);
  }
  const members = new Set<number>([leader]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of processes) {
      if (!members.has(p.pid) && members.has(p.ppid)) {
        members.add(p.pid);
        grew = true;
      }
    }
  }
  members.delete(leader);
  return [...members];
}

/**
 * Kills (SIGKILL) the job in the foreground of the terminal of `shellPid`. When that is the
 * shell's own group (job control off, or a command substitution), kills the other members of
 * the group instead, never the shell. Returns false when there was nothing but the shell to kill.
 */
export async function killForegroundJob(shellPid: number): Promise<boolean> {
  const group = await foregroundProcessGroup(shellPid);
  if (group === undefined) return false;
  if (group !== shellPid) return signalProcess(-group, 'SIGKILL');
  const members = (await listProcesses()).filter((p) => p.pgid === group && p.pid !== shellPid);
  return members.map((p) => signalProcess(p.pid, 'SIGKILL')).some(Boolean);
}

/**
 * Kills (SIGKILL) every member of the session led by `leader` (see {@link sessionMembers}) and,
 * given `marker` (`NAME=value`), every process whose environment holds it (see
 * {@link processesWithEnvironment}), twice over, so that a process forked while the first sweep
 * ran is caught by the second. Never this process; the leader itself is left to the caller.
 */
export async function killSession(leader: number, marker?: string): Promise<void> {
  for (let sweep = 0; sweep < 2; sweep++) {
    const [processes, marked] = await Promise.all([listProcesses(), marker ? processesWithEnvironment(marker) : []]);
    for (const pid of new Set([...sessionMembers(processes, leader), ...marked])) {
      if (pid !== process.pid) signalProcess(pid, 'SIGKILL');
    }
  }
}

/**
 * The processes whose initial environment holds the entry `NAME=value` exactly, as
 * /proc/<pid>/environ shows it (readable for the processes of the same user). Linux only:
 * elsewhere empty. Never throws.
 */
export async function processesWithEnvironment(entry: string): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  const names = await readdir('/proc').catch(() => [] as string[]);
  const pids = names.filter((name) => /^\d+$/.test(name)).map(Number);
  const marked = await Promise.all(
    pids.map(async (pid) => {
      const environ = await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '');
      return environ.split('\0').includes(entry);
    }),
  );
  return pids.filter((_, i) => marked[i]);
}

/** Sends a signal, ignoring a process that is already gone. Returns whether it was delivered. */
export function signalProcess(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Fields of /proc/<pid>/stat after the command name: [0] state, [1] ppid, [2] pgrp, [3] session, [4] tty, [5] tpgid. */
async function readStat(pid: number): Promise<string[] | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may itself contain spaces and parentheses.
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

function toInfo(pid: number, stat: string[] | undefined): ProcessInfo | undefined {
  if (stat === undefined || stat[0] === 'Z') return undefined;
  const ppid = Number(stat[1]);
  const pgid = Number(stat[2]);
  const sid = Number(stat[3]);
  if (![ppid, pgid, sid].every(Number.isInteger)) return undefined;
  return { pid, ppid, pgid, sid };
}

function positive(text: string | undefined): number | undefined {
  const value = Number(text);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

function ps(args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('ps', args, (error, stdout) => resolve(error ? undefined : stdout));
  });
}

/**
 * `killSession` for a process about to exit: the same sweep, done at once. /proc is read
 * synchronously, in one pass per sweep (each file is a few hundred bytes the kernel writes on
 * demand; one read of each in turn takes a fraction of a round through the thread pool per
 * file), environments only of processes started since this one (an entry this process made
 * cannot be in an older one's), and a second sweep is made only when the first killed
 * something. Linux; elsewhere it is `killSession`.
 */
export async function killSessionNow(leader: number, marker?: string): Promise<void> {
  if (process.platform !== 'linux') return killSession(leader, marker);
  const since = startTime(readStatNow(process.pid)) ?? 0;
  for (let sweep = 0; sweep < 2; sweep++) {
    const targets = new Set<number>();
    for (const pid of procIdsNow()) {
      const stat = readStatNow(pid);
      const info = toInfo(pid, stat);
      if (!info) continue;
      if (info.sid === leader && pid !== leader) targets.add(pid);
      else if (marker && (startTime(stat) ?? 0) >= since && environmentHolds(pid, marker)) targets.add(pid);
    }
    targets.delete(process.pid);
    for (const pid of targets) signalProcess(pid, 'SIGKILL');
    if (targets.size === 0) return;
  }
}

function procIdsNow(): number[] {
  try {
    return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number);
  } catch {
    return [];
  }
}

/** `readStat`, read synchronously; field [19] is the start time (clock ticks since boot). */
function readStatNow(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

function startTime(stat: string[] | undefined): number | undefined {
  const ticks = Number(stat?.[19]);
  return Number.isInteger(ticks) ? ticks : undefined;
}

function environmentHolds(pid: number, entry: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(entry);
  } catch {
    return false;
  }
}
