import { readlinkSync } from 'node:fs';
import { open, readFile, readlink } from 'node:fs/promises';
import { endianness } from 'node:os';
import { listProcesses } from './process-tree';

/**
 * Tells whether a command in a pty is blocked reading its terminal (a `read` builtin, a
 * `[y/N]` prompt, a REPL, a password prompt), from what Linux shows in /proc. A process counts
 * when it is sleeping (state `S`) in one of these system calls, as `/proc/<pid>/syscall` shows
 * it, and the call waits on the terminal:
 *
 * - `read`, `readv`, `pread64` on an fd that is the pty or `/dev/tty` (`cat`, `rm -i`, python's
 *   `input()`, bash's own `read`, `getpass` on `/dev/tty`);
 * - `select`, `pselect6` with the terminal in the read set, and `poll`, `ppoll` with the
 *   terminal polled for reading (the python REPL waits in `pselect6` on fd 0): the sets are
 *   read from `/proc/<pid>/mem`, since a server polling its socket looks the same otherwise;
 * - `epoll_wait`, `epoll_pwait`, `epoll_pwait2` on an epoll fd that watches the terminal for
 *   reading, as `/proc/<pid>/fdinfo/<epfd>` lists it (node's REPL).
 *
 * A process in `nanosleep`, `wait4` or any other call never counts. Reading another process's
 * syscall and memory needs ptrace-read rights: the shell's commands are children of this
 * process and run as the same user, which suffices (also under Yama's default scope). Only the
 * terminal's foreground process group is looked at: a background job that reads the terminal is
 * stopped by SIGTTIN instead. Elsewhere than Linux nothing is ever found.
 */

/** The system call a terminal reader sleeps in, by kind. */
export type TerminalReadCall = 'read' | 'select' | 'poll' | 'epoll';

/** A process of the foreground job that is blocked reading the terminal. */
export interface TerminalReader {
  pid: number;
  call: TerminalReadCall;
}

/** System call numbers of the calls above, for the two architectures Node runs on in practice. */
const SYSCALLS: Readonly<Record<string, Readonly<Record<number, TerminalReadCall>>>> = {
  x64: { 0: 'read', 17: 'read', 19: 'read', 23: 'select', 270: 'select', 7: 'poll', 271: 'poll', 232: 'epoll', 281: 'epoll', 441: 'epoll' },
  arm64: { 63: 'read', 65: 'read', 67: 'read', 72: 'select', 73: 'poll', 22: 'epoll', 441: 'epoll' },
};

/** POLLIN | POLLPRI | POLLRDNORM: the poll events that mean "waiting to read". */
const POLL_READ = 0x1 | 0x2 | 0x40;
/** EPOLLIN | EPOLLPRI | EPOLLRDNORM. */
const EPOLL_READ = 0x1 | 0x2 | 0x40;
/** More fds than this in one poll or select is not an interactive program waiting: stop reading. */
const MAX_WATCHED_FDS = 4096;

/**
 * The terminal device a process has on stdin (e.g. `/dev/pts/3`), or undefined when it is not
 * known (not Linux, the process is gone). Never throws. Synchronous: one readlink in /proc,
 * quicker than the trip through the thread pool an asynchronous one takes while bash starts.
 */
export function terminalOf(pid: number): string | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const link = readlinkSync(`/proc/${pid}/fd/0`);
    return link.startsWith('/dev/') ? link : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Finds a process of the foreground job of `shellPid`'s terminal (bash itself, when the job is
 * a builtin such as `read`) that is blocked reading `terminal`. Undefined when none is, or when
 * it cannot be told. Never throws.
 */
export async function findTerminalReader(shellPid: number, terminal: string): Promise<TerminalReader | undefined> {
  const calls = SYSCALLS[process.arch];
  if (process.platform !== 'linux' || !calls) return undefined;
  const foreground = Number((await readStat(shellPid))?.[5]);
  if (!Number.isInteger(foreground) || foreground <= 0) return undefined;
  const members = (await listProcesses()).filter((p) => p.pgid === foreground && p.sid === shellPid);
  const found = await Promise.all(members.map((p) => readerCall(p.pid, terminal, calls)));
  const index = found.findIndex((call) => call !== undefined);
  const call = found[index];
  const member = members[index];
  return call && member ? { pid: member.pid, call } : undefined;
}

/** The kind of terminal read `pid` is blocked in, if any. */
async function readerCall(
  pid: number,
  terminal: string,
  calls: Readonly<Record<number, TerminalReadCall>>,
): Promise<TerminalReadCall | undefined> {
  if ((await readStat(pid))?.[0] !== 'S') return undefined;
  const fields = (await readFile(`/proc/${pid}/syscall`, 'utf8').catch(() => '')).trim().split(' ');
  const call = calls[Number(fields[0])];
  if (call === undefined || fields.length < 4) return undefined;
  const args = fields.slice(1, 4).map((field) => parseArg(field));
  const [first = -1, second = -1] = args;
  const isTerminal = (fd: number): Promise<boolean> => fdIsTerminal(pid, fd, terminal);
  switch (call) {
    case 'read':
      return (await isTerminal(first)) ? call : undefined;
    case 'select':
      return (await anyOf(await selectReadFds(pid, first, second), isTerminal)) ? call : undefined;
    case 'poll':
      return (await anyOf(await pollReadFds(pid, first, second), isTerminal)) ? call : undefined;
    case 'epoll':
      return (await anyOf(await epollReadFds(pid, first), isTerminal)) ? call : undefined;
  }
}

/** The fds in the read set of a `select(nfds, readfds, …)` (or `pselect6`), read from the caller's memory. */
async function selectReadFds(pid: number, nfds: number, address: number): Promise<number[]> {
  if (nfds <= 0 || nfds > MAX_WATCHED_FDS || address <= 0) return [];
  const bytes = await readMemory(pid, address, Math.ceil(nfds / 64) * 8);
  if (!bytes) return [];
  const fds: number[] = [];
  for (let fd = 0; fd < nfds; fd++) {
    // fd_set is an array of longs; on a little-endian machine bit n of the set is bit n%8 of byte n/8.
    const byte = endianness() === 'LE' ? fd >> 3 : (fd >> 6) * 8 + (7 - ((fd & 63) >> 3));
    if (((bytes[byte] ?? 0) >> (fd & 7)) & 1) fds.push(fd);
  }
  return fds;
}

/** The fds polled for reading by a `poll(fds, nfds, …)` (or `ppoll`): `struct pollfd` is { int fd; short events; short revents }. */
async function pollReadFds(pid: number, address: number, nfds: number): Promise<number[]> {
  if (nfds <= 0 || nfds > MAX_WATCHED_FDS || address <= 0) return [];
  const bytes = await readMemory(pid, address, nfds * 8);
  if (!bytes) return [];
  const le = endianness() === 'LE';
  const fds: number[] = [];
  for (let i = 0; i < nfds; i++) {
    const fd = le ? bytes.readInt32LE(i * 8) : bytes.readInt32BE(i * 8);
    const events = le ? bytes.readInt16LE(i * 8 + 4) : bytes.readInt16BE(i * 8 + 4);
    if (fd >= 0 && events & POLL_READ) fds.push(fd);
  }
  return fds;
}

/** The fds an epoll instance watches for reading, from lines `tfd: <fd> events: <hex> …` of its fdinfo. */
async function epollReadFds(pid: number, epfd: number): Promise<number[]> {
  const info = await readFile(`/proc/${pid}/fdinfo/${epfd}`, 'utf8').catch(() => '');
  return [...info.matchAll(/^tfd:\s*(\d+)\s+events:\s*([0-9a-f]+)/gm)]
    .filter((match) => Number.parseInt(match[2] ?? '0', 16) & EPOLL_READ)
    .map((match) => Number(match[1]));
}

async function fdIsTerminal(pid: number, fd: number, terminal: string): Promise<boolean> {
  if (!Number.isInteger(fd) || fd < 0) return false;
  const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => undefined);
  // /dev/tty is the controlling terminal, and a member of the shell's session has the pty as its own.
  return link === terminal || link === '/dev/tty';
}

async function anyOf(fds: readonly number[], test: (fd: number) => Promise<boolean>): Promise<boolean> {
  return (await Promise.all(fds.map(test))).some(Boolean);
}

async function readMemory(pid: number, address: number, length: number): Promise<Buffer | undefined> {
  const file = await open(`/proc/${pid}/mem`, 'r').catch(() => undefined);
  if (!file) return undefined;
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await file.read(buffer, 0, length, address);
    return bytesRead === length ? buffer : undefined;
  } catch {
    return undefined;
  } finally {
    await file.close();
  }
}

/** A syscall argument as /proc prints it (hex); -1 when it does not fit a safe integer. */
function parseArg(field: string): number {
  try {
    const value = BigInt(field);
    return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : -1;
  } catch {
    return -1;
  }
}

/** Fields of /proc/<pid>/stat after the command name: [0] state, … [5] tpgid. */
async function readStat(pid: number): Promise<string[] | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return text?.slice(text.lastIndexOf(')') + 2).split(' ');
}
