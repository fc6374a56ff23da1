import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { release } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROXY_PORT, proxyEnvironment, startNetworkProxy } from './network-proxy';
import { networkRules } from './network-rules';
import { limitedCommand, sandboxResourceLimits, type SandboxResourceLimits } from './resource-limits';
import { openGitGuard, sweepLeftBehind } from './git-guard';
import { surveyWorkspaceGit } from './workspace-git';
import { makeOwnedTempDirNow } from './owned-temp-dir';
import { makePrivateFolder, writePrivateFile } from '../config/private-data';
import { isWithin, realPathOf, type SandboxPolicy } from './policy';
import { seatbeltCommand, seatbeltProfile } from './seatbelt';
import { writeTerminalFilter } from './seccomp';
import { isEmptyFolder, isLink } from './path-kinds';

/**
 * The OS sandbox of a session: every process the session starts (its bash, its Python
 * kernel, command tools, stdio MCP servers) runs inside it, with the session's
 * `SandboxPolicy` enforced by the kernel rather than by reading command text. On Linux it is
 * bubblewrap (`bwrap`): new mount, PID, IPC and network namespaces (no interface but
 * loopback; with the network on, fence's proxy is the way out).
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
  /** `bubblewrap` (Linux), `seatbelt` (macOS), or `none` when the processes run as they are (mode `off`, or no means). */
  readonly kind: 'bubblewrap' | 'seatbelt' | 'none';
  readonly policy: SandboxPolicy;
  /** The session's temporary folder, mounted at `/tmp` inside (absent without a sandbox). */
  readonly tempDir?: string;
  /**
   * The command line that runs `command args` inside the sandbox, in `cwd`; `binds` are extra
   * host paths the process needs at the same place inside (its private files: a command file,
   * a kernel's folder), writable or not. `terminal` says what the process needs: `none`
   * (the default) starts it in a new session with no controlling terminal, so it cannot open
   * `/dev/tty`, for processes on pipes; `pty` keeps the session of the pty it was spawned on
   * (the shell's own pty, never the person's terminal). On Linux no process inside may type
   * into a terminal either way (see `seccomp.ts`). Without a sandbox, the command as it is.
   * Throws when the sandbox cannot be had as promised (the filter cannot be made here).
   */
  wrap(command: string, args: readonly string[], options: WrapOptions): { command: string; args: string[] };
  /** Removes the temporary folder and the mount points made for paths that did not exist. Idempotent. */
  close(): void;
}

/** How `OsSandbox.wrap` starts one process. */
export interface WrapOptions {
  cwd: string;
  binds?: readonly SandboxBind[];
  /** `pty`: the process runs on a pty of its own and keeps it; `none` (default): no controlling terminal. */
  terminal?: 'pty' | 'none';
}

/** A host path mounted at the same place inside the sandbox. */

export interface SandboxBind {
  path: string;
  writable: boolean;
}

/** Whether this machine can sandbox, and with what. */
export type SandboxSupport = { kind: 'bubblewrap' | 'seatbelt'; path: string } | { kind: 'none'; reason: string; fix: string };

let support: SandboxSupport | undefined;

/** macOS's Seatbelt front end. */
const SANDBOX_EXEC = '/usr/bin/sandbox-exec';

/**
 * The sandbox of a session on macOS: `sandbox-exec` with a profile made from `policy` (see
 * `seatbeltProfile`), `TMPDIR` the session's own folder. No network proxy there yet: a list of
 * hosts means no network. Untested on a Mac.
 */
export function seatbeltSandbox(policy: SandboxPolicy, environment: Readonly<Record<string, string>> = {}): OsSandbox {
  const tempDir = makeOwnedTempDirNow('fence-sandbox-');
  const profiles = { pty: seatbeltProfile(policy, { tempDir, terminal: 'pty' }), none: seatbeltProfile(policy, { tempDir, terminal: 'none' }) };
  return {
    kind: 'seatbelt',
    policy,
    tempDir,
    wrap: (command, args, options) => seatbeltCommand(profiles[options.terminal ?? 'none'], tempDir, command, args, environment),
    close: () => rmSync(tempDir, { recursive: true, force: true }),
  };
}

/** How long a successful probe of bubblewrap is trusted (see `sandboxSupport`). */
const PROBE_TRUSTED_MS = 24 * 60 * 60 * 1000;

/**
 * What this machine offers, found once per process: `bwrap` on the PATH that can make the
 * namespaces fence needs, tried by running `true` in them (about 10 ms, most of it making a
 * network namespace). A success is remembered for a day in `cacheFile`, for this `bwrap`
 * (path, size, time), this kernel and this user, so most sessions skip the probe. Not Linux,
 * no `bwrap`, or user namespaces turned off: `none`, with the reason and what to do about it.
 */
export function sandboxSupport(env: NodeJS.ProcessEnv = process.env, cacheFile?: string): SandboxSupport {
  support ??= findSupport(env, cacheFile);
  return support;
}

function findSupport(env: NodeJS.ProcessEnv, cacheFile: string | undefined): SandboxSupport {
  if (process.platform === 'darwin' && existsSync(SANDBOX_EXEC)) return { kind: 'seatbelt', path: SANDBOX_EXEC };
  if (process.platform !== 'linux') {
    return { kind: 'none', reason: `no OS sandbox for ${process.platform} yet`, fix: 'run with --sandbox off to go on without one' };
  }
  const path = findOnPath('bwrap', env.PATH ?? '');
  if (!path) {
    return { kind: 'none', reason: 'bubblewrap (bwrap) is not installed', fix: 'install it (Debian and Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)' };
  }
  const stamp = probeStamp(path);
  if (cacheFile && stamp && readProbe(cacheFile) === stamp) return { kind: 'bubblewrap', path };
  const probe = spawnSync(path, [...namespaceArgs(), '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--', 'true'], {
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
  if (cacheFile && stamp) writeProbe(cacheFile, stamp);
  return { kind: 'bubblewrap', path };
}

/** What a probe's success holds for: this bwrap, this kernel, this user. */
function probeStamp(bwrap: string): string | undefined {
  try {
    const { size, mtimeMs } = statSync(bwrap);
    return JSON.stringify([bwrap, size, mtimeMs, release(), process.getuid?.()]);
  } catch {
    return undefined;
  }
}

function readProbe(file: string): string | undefined {
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { stamp?: unknown; at?: unknown };
    const fresh = typeof saved.at === 'number' && Date.now() - saved.at < PROBE_TRUSTED_MS && saved.at <= Date.now();
    return fresh && typeof saved.stamp === 'string' ? saved.stamp : undefined;
  } catch {
    return undefined;
  }
}

function writeProbe(file: string, stamp: string): void {
  try {
    makePrivateFolder(dirname(file));
    const temp = `${file}.${process.pid}.tmp`;
    writePrivateFile(temp, JSON.stringify({ stamp, at: Date.now() }));
    renameSync(temp, file);
  } catch {
    // Only a shortcut: the next session probes again.
  }
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

/**
 * The namespaces: PID, IPC, mount and network always (with the network on, the sandbox
 * reaches out through fence's proxy only: sharing the host's network namespace would open its
 * abstract Unix sockets — X11's, D-Bus's, containerd's — which no mount can hide);
 * capabilities dropped; and a new session (no controlling terminal) unless the process keeps
 * its pty.
 */
function namespaceArgs(terminal: 'pty' | 'none' = 'none'): string[] {
  const session = terminal === 'none' ? ['--new-session'] : [];
  return ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-cgroup-try', '--unshare-net', '--cap-drop', 'ALL', ...session];
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
export function bubblewrapSandbox(
  policy: SandboxPolicy,
  bwrap: string,
  options: { report?: (line: string) => void; gitGuardRecords?: string; limits?: SandboxResourceLimits; environment?: Readonly<Record<string, string>> } = {},
): OsSandbox {
  // Named for this process: a later fence takes back the folder of one that was killed (kill -9, a crash).
  const tempDir = makeOwnedTempDirNow('fence-sandbox-');
  const empty = join(tempDir, '.empty');
  mkdirSync(join(tempDir, 'tmp'), { mode: 0o700 });
  mkdirSync(empty, { mode: 0o500 });
  const report = options.report ?? (() => undefined);
  const records = guardsGit(policy) ? options.gitGuardRecords : undefined;
  // Before the mounts are planned: a dead session's placeholders go, and are made again below.
  // A dead session's records swept may have changed the git folders since the policy's survey: the guard then surveys again.
  const swept = records ? sweepLeftBehind(records, policy.workspace, report) : 0;
  const placeholders: string[] = [];
  const mounts = sandboxMounts(policy, { tmp: join(tempDir, 'tmp'), empty, placeholders });
  const gitGuard = guardsGit(policy)
    ? openGitGuard({ workspace: policy.workspace, protectedPaths: policy.protected, placeholders, report, ...(records ? { recordsDir: records } : {}), git: policy.git && swept === 0 ? policy.git : surveyWorkspaceGit(policy.workspace, { writable: policy.writable }) })
    : undefined;
  const proxy = policy.network === false ? undefined : startNetworkProxy(makeFolder700(join(tempDir, 'proxy')), networkRules(policy.network));
  const limits = options.limits ?? sandboxResourceLimits({});
  // Variables every process inside gets (the package managers' caches and offline settings: `package-caches.ts`).
  const setenv = Object.entries(options.environment ?? {}).flatMap(([name, value]) => ['--setenv', name, value]);
  let started = 0;
  let closed = false;
  let terminalFilter: string | undefined;
  return {
    kind: 'bubblewrap',
    // The placeholders are all made by now: the file tools leave them out.
    policy: { ...policy, placeholders: [...placeholders] },
    tempDir: join(tempDir, 'tmp'),
    wrap(command, args, options) {
      // Made once per sandbox, on first use; bwrap reads it from descriptor 9 (see `withFilter`).
      terminalFilter ??= writeTerminalFilter(tempDir);
      const binds = (options.binds ?? []).flatMap((bind) => [bind.writable ? '--bind' : '--ro-bind', bind.path, bind.path]);
      const limited = limitedCommand(limits, command, args);
      const head = [...namespaceArgs(options.terminal), '--seccomp', String(FILTER_FD), ...mounts, ...binds, ...setenv, '--setenv', 'TMPDIR', '/tmp', '--chdir', options.cwd];
      if (!proxy) return withFilter(terminalFilter, bwrap, [...head, '--', ...limited]);
      // The forwarder to the proxy starts first, and the command once it listens.
      const ready = `/tmp/.fence-proxy-ready-${process.pid}-${++started}`;
      const env = Object.entries(proxyEnvironment()).flatMap(([name, value]) => ['--setenv', name, value]);
      return withFilter(terminalFilter, bwrap, [
        ...head,
        '--ro-bind',
        proxy.dir,
        proxy.dir,
        ...env,
        '--',
        'sh',
        '-c',
        WITH_FORWARDER,
        'sh',
        process.execPath,
        proxy.forwarder,
        proxy.socket,
        String(PROXY_PORT),
        ready,
        ...limited,
      ]);
    },

    close() {
      if (closed) return;
      closed = true;
      proxy?.close();
      if (!gitGuard) for (const path of placeholders.reverse()) removeIfEmptyFolder(path);
      rmSync(tempDir, { recursive: true, force: true });
      gitGuard?.close();
    },
  };
}

/** The descriptor bwrap reads its seccomp filter from. */
const FILTER_FD = 9;

/**
 * `bwrap args` started through `/bin/sh`, which opens the filter file on descriptor 9 and
 * becomes bwrap: node-pty and `child_process` pass no descriptor beyond the standard ones, and
 * a shell redirection works the same under both. bwrap closes the descriptor once read.
 */
function withFilter(filter: string, bwrap: string, args: readonly string[]): { command: string; args: string[] } {
  return { command: '/bin/sh', args: ['-c', `filter=$1; shift; exec "$@" ${FILTER_FD}< "$filter"`, 'sh', filter, bwrap, ...args] };
}

/**
 * Whether the sandbox needs the git guard (`git-guard.ts`): in `workspace-write`, with the
 * workspace writable, a command could leave git folders, redirects and replaced links there
 * that no mount can refuse, and they are undone when the session ends.
 */
function guardsGit(policy: SandboxPolicy): boolean {
  return policy.mode === 'workspace-write' && policy.writable.some((root) => isWithin(policy.workspace, root));
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
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--bind', folders.tmp, '/tmp', ...hostTmpNeeded(), ...runFolder()];
  const writable = policy.mode === 'workspace-write' ? policy.writable : [];
  for (const path of writable) if (existsSync(path)) args.push('--bind', path, path);
  // Read-only, the workspace is not mounted writable at its place: under the host's /tmp, the
  // sandbox's own /tmp would hide it, so it is mounted back read-only.
  if (policy.mode !== 'workspace-write') {
    for (const path of new Set([policy.workspace, ...policy.writable])) if (isWithin(path, '/tmp') && existsSync(path)) args.push('--ro-bind', path, path);
  }
  const pinned = new Set<string>();
  const writableBoth = writable.flatMap((root) => [root, realPathOf(root)]);
  for (const written of policy.protected) {
    // A protected path that is a link is guarded where it leads (bwrap would mount there anyway,
    // and cannot mount on a link to a device): a link out of the writable paths needs no mount,
    // and one replaced during the session is put back by the git guard.
    const path = isLink(written) ? realPathOf(written) : written;
    const root = writableBoth.find((root) => isWithin(path, root));
    if (root === undefined) continue;
    let source = path;
    if (!existsSync(path)) {
      const made = makeFolder(path);
      if (!made) continue;
      folders.placeholders.push(...made);
      source = folders.empty;
    } else if (isEmptyFolder(path)) {
      // Maybe another session's placeholder (a repository's `.git/hooks` that two workspaces in
      // it share), which that session removes when it ends: mounted from fence's own empty
      // folder, bwrap makes the mount point again for each command instead of failing.
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

/**
 * The script that starts the forwarder to the network proxy (`$1 $2 $3 $4 $5`: node, the
 * forwarder, the socket, the port, the file it writes once it listens), waits up to 3 s for it,
 * then becomes the command (the rest of the arguments).
 */
const WITH_FORWARDER =
  '"$1" "$2" "$3" "$4" "$5" </dev/null >/dev/null 2>&1 & ready="$5"; shift 5; i=0; ' +
  'while [ ! -e "$ready" ] && [ "$i" -lt 300 ]; do sleep 0.01; i=$((i + 1)); done; rm -f "$ready"; exec "$@"';

function makeFolder700(path: string): string {
  mkdirSync(path, { mode: 0o700 });
  return path;
}

/**
 * fence's own folder and Node's, mounted back read-only when they live in the host's `/tmp`
 * (a fresh clone there, a Node unpacked there), which the sandbox's own `/tmp` hides: the
 * Python kernel's script, fence's forwarder and the servers a project runs from fence's folder
 * must stay where they are.
 */
function hostTmpNeeded(): string[] {
  const paths = [fenceFolder(), dirname(process.execPath)].filter((path): path is string => path !== undefined && isWithin(path, '/tmp') && existsSync(path));
  return [...new Set(paths)].flatMap((path) => ['--ro-bind', path, path]);
}

/** The folder of the fence package this code runs from (the nearest one up with fence's package.json). */
function fenceFolder(): string | undefined {
  let folder = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      if ((JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { name?: unknown }).name === 'fence') return folder;
    } catch {
      // Not here: one folder up.
    }
    const parent = dirname(folder);
    if (parent === folder) return undefined;
    folder = parent;
  }
}

/**
 * `/run` replaced by an empty folder: it holds the host's Unix sockets — Docker's, D-Bus's, a
 * database's, the user's runtime folder with its agents — which a read-only mount would not
 * stop a process from connecting to, and some of which are a way out of any sandbox. No
 * resolver is needed inside: the proxy finds the addresses of names, outside. `/run/shm`
 * stays a link to `/dev/shm`.
 */
function runFolder(): string[] {
  if (!existsSync('/run')) return [];
  return ['--tmpfs', '/run', '--symlink', '/dev/shm', '/run/shm'];
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
