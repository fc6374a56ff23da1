import { DEFAULT_VM_LIMITS, type SandboxConfig } from '../config/config-schema';

/**
 * Limits on what a sandboxed process tree may take from the machine, set as resource limits
 * (`setrlimit`) on its first process, soft and hard alike, so nothing inside can raise them
 * (every capability is dropped). Each process started in the sandbox (the shell, the Python
 * kernel, each command tool call) starts a tree of its own with these limits.
 *
 * - `maxProcesses` (`RLIMIT_NPROC`): tasks, threads included. The kernel counts them per user
 *   *within a user namespace*, and bubblewrap run by a user makes one for each sandbox, so the
 *   count is the sandbox's own: a fork bomb stops there, and the user's other processes
 *   neither count nor suffer. Not applied to root (the kernel exempts it) nor where bubblewrap
 *   is installed setuid and makes no user namespace (then all the user's processes count).
 * - `maxMemoryMb` (`RLIMIT_DATA`): each process's heap and private writable mappings. Address
 *   space that is only reserved (V8, Go, the JVM reserve large ranges they never touch) does
 *   not count, unlike `RLIMIT_AS`, which would break them. It is per process, not a total.
 * - `maxFileMb` (`RLIMIT_FSIZE`): the largest file a process may write, anywhere it may write;
 *   past it the write fails (`SIGXFSZ`, "File size limit exceeded"). Many files can still
 *   fill a disk: without privileges there is no cap on a folder's total.
 */
export interface SandboxResourceLimits {
  maxProcesses: number;
  maxMemoryMb: number;
  maxFileMb: number;
}

/** The limits of `config` (`[sandbox]`, merged), with the defaults where it sets none. */
export function sandboxResourceLimits(config: Pick<SandboxConfig, 'maxProcesses' | 'maxMemoryMb' | 'maxFileMb'>): SandboxResourceLimits {
  return {
    maxProcesses: config.maxProcesses ?? DEFAULT_VM_LIMITS.maxProcesses,
    maxMemoryMb: config.maxMemoryMb ?? DEFAULT_VM_LIMITS.maxMemoryMb,
    maxFileMb: config.maxFileMb ?? DEFAULT_VM_LIMITS.maxFileMb,
  };
}

/**
 * `sh` sets the limits (`$1` processes, `$2` KiB of data, `$3` blocks of 512 bytes per file),
 * then becomes the command. bash calls the process limit `-u`, dash `-p`. A limit above the
 * hard limit the process already has cannot be set, and needs not be: the lower one holds.
 */
const SET_LIMITS = '{ ulimit -u "$1" || ulimit -p "$1"; ulimit -d "$2"; ulimit -f "$3"; } 2>/dev/null; shift 3; exec "$@"';

/** The command line (inside the sandbox) that runs `command args` under `limits`. */
export function limitedCommand(limits: SandboxResourceLimits, command: string, args: readonly string[]): string[] {
  const data = limits.maxMemoryMb * 1024;
  const blocks = limits.maxFileMb * 2048;
  return ['sh', '-c', SET_LIMITS, 'sh', String(limits.maxProcesses), String(data), String(blocks), command, ...args];
}
