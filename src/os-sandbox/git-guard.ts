import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  watch,
  writeFileSync,
  type FSWatcher,
} from 'node:fs';
import type { Socket } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitFolderRisk } from './git-folder-risk';
import { findGitFolders, gitdirTarget, MAX_WALKED_FOLDERS } from './git-folders';
import { processExists } from './owned-temp-dir';
import { disableNewExecSteps, rebaseTodoDigest, rebaseTodoPath } from './rebase-todo';
import { GIT_REDIRECTS, gitFoldersOf, guardedGitFolders, surveyWorkspaceGit, type WorkspaceGit } from './workspace-git';
import { isOwnFolder, isPresent } from './path-kinds';

export { GIT_REDIRECTS } from './workspace-git';

/**
 * The git guard undoes, after a sandboxed session, what the sandbox could not refuse and what
 * would make git run a program the model wrote once the person runs git on the host: a new
 * `commondir` or `config.worktree` in any git folder, a new git folder (`git init` in a
 * sub-folder, a submodule's or worktree's folder, a `.git` file pointing elsewhere) whose
 * config or hooks could run something, and a protected link (`.git/hooks -> ../githooks`,
 * `fence.toml -> …`) replaced by a file or folder of the model's.
 *
 * It records what exists when the session starts, and sweeps — compares and neutralises — when
 * it ends, on every ending: `close()` (a normal end, and the signals that close the session),
 * a guardian process outside the sandbox that sweeps once fence's process is gone (a second
 * pass after a clean close; the only one after SIGKILL or a crash), and the next session in
 * the same folder, which sweeps the records of dead ones. While the session runs, a watch on
 * each git folder removes a new `commondir` or `config.worktree` and puts a replaced link back
 * at once, and a change of the workspace's index runs the sweep.
 */

/** One git folder as it was at the start. */
export interface GuardedGitFolder {
  path: string;
  /** `commondir` and `config.worktree`, those that existed (they stay). */
  redirects: string[];
  /** Whether its `config` existed: if not, one that appears is judged as a new folder's. */
  hadConfig: boolean;
  /** A digest of its rebase todo, when a rebase was in progress (see `rebase-todo.ts`). */
  rebaseTodo?: string;
}

/** What a session started with, kept until its sweep. */
export interface GitGuardRecord {
  workspace: string;
  /** The fence process whose session this is. */
  pid: number;
  folders: GuardedGitFolder[];
  /** `.git` files that existed. */
  gitFiles: string[];
  /** Protected paths that were links, and where they led. */
  links: { path: string; target: string }[];
  /**
   * Git folders outside the workspace that the sandbox lets git write in (the repository
   * holding the workspace: a monorepo's `.git`, a worktree's or a submodule's folder): they and
   * the submodules' and worktrees' folders inside them are swept with the workspace. Absent in
   * records of earlier versions.
   */
  outside?: string[];
  /** The git folder whose index the workspace's `git add` writes, when it is not `<workspace>/.git`. */
  gitDir?: string;
  /**
   * Empty folders the sandbox made to hold the place of protected paths that did not exist
   * (`fence.toml`, `.fence`), outermost first: removed, when still empty, once the session's
   * fence is gone (its own close removes them when it ends normally).
   */
  placeholders: string[];
}

/** The suffix of what a sweep moves aside. */
const DISABLED = '.disabled-by-fence';

/** Most git folders watched during a session; the others are swept at the end only. */
const MAX_WATCHED = 256;

/**
 * What `workspace` holds now: its git folders and their redirects, its `.git` files, and which
 * of `protectedPaths` and of its `.git` entries are links; with the git folders of the
 * repository holding it that `git` says to guard. `git` is the survey the session's policy was
 * made from (one walk for both); without it the workspace is surveyed now.
 */
export function recordGitState(
  workspace: string,
  protectedPaths: readonly string[],
  placeholders: readonly string[] = [],
  git: WorkspaceGit = surveyWorkspaceGit(workspace),
): GitGuardRecord & { truncated: boolean } {
  const found = git.found;
  const outside = git.guarded.length > 0 ? { outside: [...git.guarded], ...(git.repository ? { gitDir: git.repository.gitDir } : {}) } : {};
  return {
    workspace,
    placeholders: [...placeholders],
    pid: process.pid,
    ...outside,
    folders: guardedGitFolders(workspace, git).map((folder) => ({
      path: folder.path,
      redirects: GIT_REDIRECTS.filter((name) => isPresent(join(folder.path, name))),
      hadConfig: isPresent(join(folder.path, 'config')),
      ...optionalDigest(rebaseTodoDigest(folder.path)),
    })),
    gitFiles: found.gitFiles.map((file) => file.path),
    // A `.git` that is a link counts as protected too: replaced by a folder, it would be a new repository.
    links: [...new Set([...protectedPaths, ...found.gitFiles.map((file) => file.path)])].flatMap((path) => {
      const target = linkTarget(path);
      return target === undefined ? [] : [{ path, target }];
    }),
    truncated: found.truncated,
  };
}

/**
 * Compares `workspace` now with `record` and neutralises what would make git run a program
 * that was not there at the start: removes new `commondir` and `config.worktree` files, puts
 * replaced links back (what replaced them moved aside), moves aside the config and hooks of
 * new git folders that could run something (a new repository with harmless config stays),
 * and renames new `.git` files pointing at a folder that could. One line per change goes to
 * `report`. Never throws.
 */
export function sweepGitState(record: GitGuardRecord, report: (line: string) => void): void {
  for (const link of record.links) restoreLink(link, report);
  const known = new Map(record.folders.map((folder) => [folder.path, folder]));
  const found = findGitFolders(record.workspace);
  const inWorkspace = new Set(found.folders.map((folder) => folder.path));
  found.folders.push(...gitFoldersOf(record.outside ?? [], record.gitDir).filter((folder) => !inWorkspace.has(folder.path)));
  const folders = new Set(found.folders.map((folder) => folder.path));
  for (const { path } of found.folders) {
    const before = known.get(path);
    for (const name of GIT_REDIRECTS) removeRedirect(join(path, name), before, known, report);
    const disabled = disableNewExecSteps(path, before?.rebaseTodo);
    if (disabled > 0) {
      report(`${rebaseTodoPath(path)}, written in the sandbox, held ${disabled === 1 ? 'a command' : `${disabled} commands`} for git rebase --continue to run (exec): turned into comments, which git skips; read the todo before going on`);
    }
    if (before?.hadConfig) continue;
    const risk = gitFolderRisk(path);
    if (risk !== undefined) disableGitFolder(path, risk, report);
  }
  const knownFiles = new Set(record.gitFiles);
  for (const file of found.gitFiles) {
    if (knownFiles.has(file.path) || (file.target !== undefined && (folders.has(file.target) || known.has(file.target)))) continue;
    const target = file.target ?? gitdirTarget(file.path);
    if (target !== undefined && isOwnFolder(target) && gitFolderRisk(target) === undefined) continue;
    moveAside(file.path, (aside) => report(`${file.path}, written in the sandbox, pointed git at a folder fence cannot vouch for: renamed to ${aside}; look at it before renaming it back`));
  }
}

function optionalDigest(digest: string | undefined): { rebaseTodo?: string } {
  return digest === undefined ? {} : { rebaseTodo: digest };
}

/**
 * Removes the redirect `path` unless it was there at the start, or it is a `commondir` that
 * leads to a git folder the guard knows (`git worktree add` writes one leading to the
 * workspace's own, whose hooks and config are read-only).
 */
function removeRedirect(path: string, before: GuardedGitFolder | undefined, known: ReadonlyMap<string, GuardedGitFolder>, report: (line: string) => void): void {
  if (before?.redirects.includes(basename(path)) || !isPresent(path)) return;
  if (basename(path) === 'commondir' && known.has(commonFolder(path) ?? '')) return;
  try {
    rmSync(path, { force: true });
    report(`removed ${path}, which a command in the sandbox wrote: it would have made git take its hooks and config from elsewhere, outside the sandbox`);
  } catch {
    // Gone already.
  }
}

/** The folder a `commondir` file names (relative to its own folder), or undefined if it cannot be read. */
function commonFolder(file: string): string | undefined {
  try {
    const named = readFileSync(file, 'utf8').slice(0, 4096).trim();
    return named === '' ? undefined : resolve(dirname(file), named);
  } catch {
    return undefined;
  }
}

function disableGitFolder(folder: string, risk: string, report: (line: string) => void): void {
  const moved: string[] = [];
  for (const name of ['config', 'hooks']) {
    if (!isPresent(join(folder, name))) continue;
    moveAside(join(folder, name), (aside) => moved.push(aside));
  }
  if (moved.length === 0) return;
  report(`${folder} was made in the sandbox and could make git run a program (${risk}): moved to ${moved.join(' and ')}; look at it before moving it back`);
}

/** Puts the link `path` back to `target` if something else is there, moving that aside. */
function restoreLink(link: { path: string; target: string }, report: (line: string) => void): void {
  if (linkTarget(link.path) === link.target) return;
  let aside: string | undefined;
  if (isPresent(link.path)) moveAside(link.path, (path) => (aside = path));
  if (isPresent(link.path)) return;
  try {
    symlinkSync(link.target, link.path);
  } catch {
    return;
  }
  report(`${link.path} was a link to ${link.target} that a command in the sandbox replaced: the link is back${aside ? `, and what replaced it is at ${aside}` : ''}`);
}

/** Renames `path` to a free `<path>.disabled-by-fence[-n]`, and tells `done` where. */
function moveAside(path: string, done: (aside: string) => void): void {
  for (let n = 0; n < 100; n += 1) {
    const aside = `${path}${DISABLED}${n === 0 ? '' : `-${n}`}`;
    if (isPresent(aside)) continue;
    try {
      renameSync(path, aside);
      done(aside);
    } catch {
      // Moved or removed meanwhile.
    }
    return;
  }
}

/**
 * A session's guard: records the workspace at the start, watches it, and sweeps at `close`.
 * With `recordsDir` (in fence's data folder, hidden from the sandbox), the record is kept
 * there (0600) and a guardian process sweeps once more when fence's process ends, however it
 * ends; records of dead sessions in the same workspace are swept first.
 */
export interface GitGuard {
  /** Stops the watches and sweeps (the guardian sweeps once more when fence's process ends). Idempotent. */
  close(): void;
}

/** Options of `openGitGuard`. */
export interface GitGuardOptions {
  workspace: string;
  /** The placeholder folders the sandbox made (see `GitGuardRecord.placeholders`): the guard removes them. */
  placeholders?: readonly string[];
  /** The policy's protected paths: those that are links are put back if replaced. */
  protectedPaths: readonly string[];
  /** The survey the policy was made from (see `recordGitState`); without it, the workspace is surveyed again. */
  git?: WorkspaceGit;
  /** Where records are kept (made 0700 if missing); without it, no record and no guardian. */
  recordsDir?: string;
  report: (line: string) => void;
}

/** Starts the guard of a session in `workspace` (see `GitGuard`). Never throws. */
export function openGitGuard(options: GitGuardOptions): GitGuard {
  const { workspace, report } = options;
  const { truncated, ...record } = recordGitState(workspace, options.protectedPaths, options.placeholders, options.git);
  if (truncated) {
    report(`the workspace has more than ${MAX_WALKED_FOLDERS} folders: git folders past them are not looked at by the sandbox's git guard`);
  }
  const file = options.recordsDir ? writeRecord(options.recordsDir, record) : undefined;
  const guarded = file !== undefined && startGuardian(file);
  const watching = watchGitFolders(record, report);
  let closed = false;
  return {
    close() {
      if (closed) return;
      closed = true;
      watching.close();
      sweepGitState(record, report);
      removePlaceholders(record, options.recordsDir);
      // With a guardian, the record is its own to remove, after its pass.
      if (file && !guarded) rmSync(file, { force: true });
    },
  };
}

/**
 * A new record file for `pid`'s session in `workspace`: named by a hash of the workspace's real
 * path, the pid, and a random part (one process may open several sandboxes in one folder).
 */
export function recordFileOf(recordsDir: string, workspace: string, pid: number): string {
  return join(recordsDir, `${workspaceKey(workspace)}-${pid}-${randomBytes(4).toString('hex')}.json`);
}

function workspaceKey(workspace: string): string {
  let real = workspace;
  try {
    real = realpathSync(workspace);
  } catch {
    // Gone: its path as given.
  }
  return createHash('sha256').update(real).digest('hex').slice(0, 24);
}

function writeRecord(recordsDir: string, record: GitGuardRecord): string | undefined {
  try {
    mkdirSync(recordsDir, { recursive: true, mode: 0o700 });
    const file = recordFileOf(recordsDir, record.workspace, record.pid);
    writeFileSync(file, JSON.stringify(record), { mode: 0o600 });
    return file;
  } catch {
    return undefined;
  }
}

/** Reads a record file; undefined if it is not one. */
export function readRecord(file: string): GitGuardRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as GitGuardRecord;
    const valid = typeof record.workspace === 'string' && Array.isArray(record.folders) && Array.isArray(record.gitFiles) && Array.isArray(record.links);
    record.placeholders = Array.isArray(record.placeholders) ? record.placeholders.filter((path) => typeof path === 'string') : [];
    if (record.outside !== undefined) record.outside = Array.isArray(record.outside) ? record.outside.filter((path) => typeof path === 'string') : [];
    if (typeof record.gitDir !== 'string') delete record.gitDir;
    return valid ? record : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sweeps and removes the records of sessions in `workspace` whose fence is gone (see
 * `sweepAfterFence`). Run before a new sandbox plans its mounts: a placeholder it removes is
 * made again, and recorded, by that sandbox. Returns how many records it swept: after one, git
 * folders may have changed since the workspace was last surveyed.
 */
export function sweepLeftBehind(recordsDir: string, workspace: string, report: (line: string) => void): number {
  let swept = 0;
  for (const { file, pid } of recordsOf(recordsDir, workspace)) {
    if (pid === process.pid || processExists(pid)) continue;
    const record = readRecord(file);
    if (record) sweepAfterFence(record, report, recordsDir);
    rmSync(file, { force: true });
    swept += 1;
  }
  return swept;
}

/**
 * The sweep once a session's fence is gone (killed, crashed, or closed and checked again):
 * `sweepGitState`, then the placeholder folders it left that are still empty, innermost
 * first. Never during a session: removing a folder that a live sandbox has mounted over would
 * take the mount away with it.
 */
export function sweepAfterFence(record: GitGuardRecord, report: (line: string) => void, recordsDir?: string): void {
  sweepGitState(record, report);
  removePlaceholders(record, recordsDir);
}

/**
 * Removes the record's placeholder folders that are still empty, innermost first, unless
 * another live fence has a record for the same workspace: its sandbox may have mounted over
 * them, and a folder removed from outside takes the mounts of other namespaces with it.
 */
function removePlaceholders(record: GitGuardRecord, recordsDir: string | undefined): void {
  if (record.placeholders.length === 0) return;
  if (recordsDir !== undefined && liveSessionsIn(recordsDir, record.workspace).some((pid) => pid !== record.pid)) return;
  for (const path of [...record.placeholders].reverse()) {
    try {
      if (readdirSync(path).length === 0) rmdirSync(path);
    } catch {
      // Gone already, or no longer empty: left as it is.
    }
  }
}

/** The pids of the fence processes alive now with a record for `workspace` in `recordsDir`. */
function liveSessionsIn(recordsDir: string, workspace: string): number[] {
  return recordsOf(recordsDir, workspace)
    .map((record) => record.pid)
    .filter((pid) => pid === process.pid || processExists(pid));
}

/** The record files for `workspace` in `recordsDir`, with the pid each names. */
function recordsOf(recordsDir: string, workspace: string): { file: string; pid: number }[] {
  const prefix = `${workspaceKey(workspace)}-`;
  let names: string[];
  try {
    names = readdirSync(recordsDir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    if (!name.startsWith(prefix) || !name.endsWith('.json')) return [];
    const pid = Number(name.slice(prefix.length).split('-')[0]);
    return Number.isInteger(pid) ? [{ file: join(recordsDir, name), pid }] : [];
  });
}

/**
 * The script the guardian runs once fence is gone (built beside fence's bundle); undefined
 * when fence runs from its sources, where no guardian starts.
 */
function guardianScript(): string | undefined {
  const script = join(dirname(fileURLToPath(import.meta.url)), 'git-guard-sweep.cjs');
  return existsSync(script) ? script : undefined;
}

/**
 * A process outside the sandbox, in a session of its own (a closed terminal's SIGHUP does not
 * reach it), that waits on a pipe from fence and sweeps with `file` once the pipe ends, that
 * is once fence's process is gone, however it went: after a clean close a second pass, which
 * catches what a process of the sandbox still being torn down wrote after fence's own sweep;
 * after SIGKILL or a crash, the only one. It removes the record after. While waiting it is a
 * `sh` (about 1 MB); Node starts only to sweep. Whether one started.
 */
function startGuardian(file: string): boolean {
  const script = guardianScript();
  if (!script) return false;
  try {
    const child = spawn('/bin/sh', ['-c', 'while read -r _; do :; done; exec "$0" "$1" "$2"', process.execPath, script, file], {
      cwd: '/',
      detached: true,
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    child.on('error', () => undefined);
    child.stdin?.on('error', () => undefined);
    (child.stdin as Socket | null)?.unref();
    child.unref();
    return true;
  } catch {
    return false;
  }
}

/** How long after a change of the root's index the sweep runs: one sweep for a burst of git commands. */
const SWEEP_AFTER_INDEX_MS = 200;

/**
 * Watches each git folder of `record` (not recursively) and the folders holding its links:
 * a new `commondir` or `config.worktree` is removed, a replaced link put back, as they appear.
 * When the workspace's own index changes (`git add` of a nested repository makes it a
 * submodule, which a `git status` at the root enters), the whole sweep runs, shortly after.
 */
function watchGitFolders(record: GitGuardRecord, report: (line: string) => void): { close(): void } {
  const watchers: FSWatcher[] = [];
  let sweep: NodeJS.Timeout | undefined;
  const add = (folder: string, changed: (name: string) => void) => {
    if (watchers.length >= MAX_WATCHED) return;
    try {
      const watcher = watch(folder, { persistent: false }, (_event, name) => {
        if (typeof name === 'string') changed(name);
      });
      watcher.on('error', () => undefined);
      watchers.push(watcher);
    } catch {
      // Too many watches on this machine, or the folder is gone: swept at the end only.
    }
  };
  const rootGit = record.gitDir ?? join(record.workspace, '.git');
  const known = new Map(record.folders.map((folder) => [folder.path, folder]));
  for (const folder of record.folders) {
    add(folder.path, (name) => {
      if (GIT_REDIRECTS.includes(name)) removeRedirect(join(folder.path, name), folder, known, report);
      if (folder.path === rootGit && name === 'index' && sweep === undefined) {
        sweep = setTimeout(() => {
          sweep = undefined;
          sweepGitState(record, report);
        }, SWEEP_AFTER_INDEX_MS);
        sweep.unref();
      }
    });
  }
  for (const link of record.links) {
    add(dirname(link.path), (name) => {
      if (name === basename(link.path)) restoreLink(link, report);
    });
  }
  return {
    close() {
      if (sweep) clearTimeout(sweep);
      for (const watcher of watchers) watcher.close();
    },
  };
}

function linkTarget(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

