import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { makeOwnedTempDirNow } from './owned-temp-dir';
import { isWithin, type SandboxPolicy } from './sandbox-policy';

/**
 * The OS sandbox of a session: every process the session starts (its bash, its Python
 * kernel, command tools, stdio MCP servers) runs inside it, with the session's
 * `SandboxPolicy` enforced by the kernel rather than by reading command text. On Linux it is
 * bubblewrap (`bwrap`): new mount, PID and IPC namespaces, and a network namespace with no
 * interface but loopback when the network is off.
 *
 * Inside, `/` is mounted read-only and `/dev` and `/proc` are fresh; the workspace and the
 * other writable paths are mounted writable over it, the protected paths read-only again over
 * those, and the denied paths hidden (an empty folder, or `/dev/null` for a file), with the
 * readable exceptions mounted back. `/tmp` is the session's own temporary folder, one for all
 * its processes, removed with it. Every capability is dropped, so even root inside cannot
 * remount anything. The PID namespace hides fence and every other process, and everything in
 * it dies with the sandbox's first process (`--die-with-parent`): nothing outlives the session.
 */

/** How a session's processes are started. */
export interface OsSandbox {
  /** `bubblewrap`, or `none` when the processes run as they are (mode `off`, or no means). */
  readonly kind: 'bubblewrap' | 'none';
  readonly policy: SandboxPolicy;
  /** The session's temporary folder, mounted at `/tmp` inside (absent without a sandbox). */
  readonly tempDir?: string;
  /**
   * The command line that runs `command args` inside the sandbox, in `cwd`; `binds` are extra
   * host paths the process needs at the same place inside (its private files: a command file,
   * a kernel's folder), writable or not. Without a sandbox, the command as it is.
   */
  wrap(command: string, args: readonly string[], options: { cwd: string; binds?: readonly SandboxBind[] }): { command: string; args: string[] };
  /** Removes the temporary folder and the mount points made for paths that did not exist. Idempotent. */
  close(): void;
}

/** A host path mounted at the same place inside the sandbox. */
export interface SandboxBind {
  path: string;
  writable: boolean;
}

/** Whether this machine can sandbox, and with what. */
export type SandboxSupport = { kind: 'bubblewrap'; path: string } | { kind: 'none'; reason: string; fix: string };

let support: SandboxSupport | undefined;

/**
 * What this machine offers, found once per process: `bwrap` on the PATH that can make the
 * namespaces fence needs (tried by running `true` in them, a few milliseconds). Not Linux, no
 * `bwrap`, or user namespaces turned off: `none`, with the reason and what to do about it.
 */
export function sandboxSupport(env: NodeJS.ProcessEnv = process.env): SandboxSupport {
  support ??= findSupport(env);
  return support;
}

function findSupport(env: NodeJS.ProcessEnv): SandboxSupport {
  if (process.platform !== 'linux') {
    return { kind: 'none', reason: `no OS sandbox for ${process.platform} yet`, fix: 'run with --sandbox off to go on without one' };
  }
  const path = findOnPath('bwrap', env.PATH ?? '');
  if (!path) {
    return { kind: 'none', reason: 'bubblewrap (bwrap) is not installed', fix: 'install it (Debian and Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)' };
  }
  const probe = spawnSync(path, [...namespaceArgs(false), '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--', 'true'], {
    encoding: 'utf8',
    timeout: 10_000,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (probe.status !== 0) {
    const said = (probe.stderr ?? '').trim().split('\n')[0] ?? '';
    return {
      kind: 'none',
      reason: `bubblewrap cannot make its namespaces here${said ? ` (${said})` : probe.error ? ` (${probe.error.message})` : ''}`,
      fix: 'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0)',
    };
  }
  return { kind: 'bubblewrap', path };
}

function findOnPath(name: string, path: string): string | undefined {
  for (const folder of path.split(delimiter)) {
    if (!folder) continue;
    const candidate = join(folder, name);
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not in this folder.
    }
  }
  return undefined;
}

/** The namespaces: PID, IPC and mount always; network unless it is allowed; capabilities dropped. */
function namespaceArgs(network: boolean): string[] {
  return ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-cgroup-try', ...(network ? [] : ['--unshare-net']), '--cap-drop', 'ALL'];
}

/** The rules of a sandbox that is off: everything may be touched. */
export function offPolicy(workspace: string): SandboxPolicy {
  return { mode: 'off', workspace, writable: [workspace], denied: [], readable: [], protected: [], network: true };
}

/** A session without a sandbox: commands run as they are, and `policy` binds only the file tools. */
export function noSandbox(policy: SandboxPolicy): OsSandbox {
  return { kind: 'none', policy, wrap: (command, args) => ({ command, args: [...args] }), close: () => undefined };
}

/**
 * The sandbox of a session with `policy` (mode `workspace-write` or `read-only`), on
 * bubblewrap at `bwrap`. Makes the session's temporary folder (and removes those of fence
 * processes that died without closing theirs), and an empty folder on the host for each
 * protected path that does not exist yet, to mount read-only there (git lists no empty
 * folder; each is removed on `close` if still empty).
 */
export function bubblewrapSandbox(policy: SandboxPolicy, bwrap: string): OsSandbox {
  // Named for this process: a later fence takes back the folder of one that was killed (kill -9, a crash).
  const tempDir = makeOwnedTempDirNow('fence-sandbox-');
  const empty = join(tempDir, '.empty');
  mkdirSync(join(tempDir, 'tmp'), { mode: 0o700 });
  mkdirSync(empty, { mode: 0o500 });
  const placeholders: string[] = [];
  const mounts = sandboxMounts(policy, { tmp: join(tempDir, 'tmp'), empty, placeholders });
  let closed = false;
  return {
    kind: 'bubblewrap',
    policy,
    tempDir: join(tempDir, 'tmp'),
    wrap(command, args, options) {
      const binds = (options.binds ?? []).flatMap((bind) => [bind.writable ? '--bind' : '--ro-bind', bind.path, bind.path]);
      const network = policy.network === true;
      return {
        command: bwrap,
        args: [...namespaceArgs(network), ...mounts, ...binds, '--setenv', 'TMPDIR', '/tmp', '--chdir', options.cwd, '--', command, ...args],
      };
    },
    close() {
      if (closed) return;
      closed = true;
      for (const path of placeholders.reverse()) removeIfEmptyFolder(path);
      rmSync(tempDir, { recursive: true, force: true });
    },
  };
}

/**
 * bubblewrap's mount arguments for `policy`, in the order they must apply: the root read-only,
 * fresh `/dev` and `/proc`, `/tmp`, the writable paths, the protected paths, the denied paths,
 * the readable exceptions. Protected paths that do not exist get a folder made on the host
 * (recorded in `placeholders`) with the empty folder mounted read-only over it; the folders
 * that hold a protected path inside a writable one (`.git`) are mounted on themselves, so
 * that they cannot be moved away; denied paths that do not exist are left alone (outside the
 * writable paths nothing can create them).
 */
export function sandboxMounts(policy: SandboxPolicy, folders: { tmp: string; empty: string; placeholders: string[] }): string[] {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--bind', folders.tmp, '/tmp'];
  const writable = policy.mode === 'workspace-write' ? policy.writable : [];
  for (const path of writable) if (existsSync(path)) args.push('--bind', path, path);
  const pinned = new Set<string>();
  for (const path of policy.protected) {
    const root = writable.find((root) => isWithin(path, root));
    if (root === undefined) continue;
    let source = path;
    if (!existsSync(path)) {
      const made = makeFolder(path);
      if (!made) continue;
      folders.placeholders.push(...made);
      source = folders.empty;
    }
    // The folders between the writable root and the protected path are mounted on themselves
    // first: a mount point cannot be renamed or removed, so the protected path cannot be moved
    // aside with its folder (`mv .git old && git init`, and the new .git's hooks are the model's).
    for (const folder of foldersBetween(root, path)) {
      if (pinned.has(folder)) continue;
      pinned.add(folder);
      args.push('--bind', folder, folder);
    }
    args.push('--ro-bind', source, path);
  }
  const hidden: string[] = [];
  for (const path of policy.denied) {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      continue;
    }
    if (stat.isDirectory()) {
      args.push('--tmpfs', path);
      hidden.push(path);
    } else args.push('--ro-bind', '/dev/null', path);
  }
  // The exceptions' mount points are made in the empty folders, which become read-only after.
  for (const path of policy.readable) if (existsSync(path)) args.push('--ro-bind', path, path);
  for (const path of hidden) args.push('--remount-ro', path);
  return args;
}

/** The folders strictly between `root` and `path` (inside it), outermost first. */
function foldersBetween(root: string, path: string): string[] {
  const folders: string[] = [];
  for (let folder = dirname(path); folder !== root && isWithin(folder, root); folder = dirname(folder)) folders.unshift(folder);
  return folders;
}

/** Makes `path` and its missing parents; returns those it made, outermost first, or undefined if it could not. */
function makeFolder(path: string): string[] | undefined {
  const missing: string[] = [];
  let current = path;
  while (!existsSync(current)) {
    missing.unshift(current);
    const parent = join(current, '..');
    if (parent === current) break;
    current = parent;
  }
  try {
    mkdirSync(path, { recursive: true });
    return missing;
  } catch {
    return undefined;
  }
}

function removeIfEmptyFolder(path: string): void {
  try {
    if (readdirSync(path).length === 0) rmdirSync(path);
  } catch {
    // Gone already, or no longer empty: left as it is.
  }
}
