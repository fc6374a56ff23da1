import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { fenceHome } from './paths';
import { makePrivateFolder, writePrivateFile } from './private-data';
import { projectCommandFiles } from './command-files';
import { PROJECT_SKILLS_DIR, projectSkillFiles } from './project-skill-files';
import { readRegularFile } from './regular-file';

/**
 * Workspace trust: a folder's own configuration — its `fence.toml` (command tools, MCP servers,
 * policy, limits), its saved programs in `.fence/programs/`, its skills in `.fence/skills/` and
 * its `AGENTS.md` — is used only
 * once the person has trusted that folder on this machine. A cloned repository is someone
 * else's code: opening fence in it must not start its servers, run its tools or put its text
 * in the model's instructions until the person says so.
 *
 * Trust is kept in the user's data folder (`$FENCE_HOME/trusted-workspaces.json`, which the
 * sandbox hides from everything the model runs), one entry per folder (its real path) with the
 * sha256 of the files it covers when it was given: `fence.toml`, `AGENTS.md`, and the workspace
 * files that `fence.toml`'s servers and tools run (see `projectCommandFiles`), each skill's
 * `SKILL.md` (see `projectSkillFiles`), and the text of
 * `fence.toml` and `AGENTS.md` up to `TRUSTED_TEXT_LIMIT_BYTES` each, so that a change can be
 * shown as what changed. When one of them changes, is added or is
 * removed — a `git pull`, or a model that wrote `AGENTS.md` — the folder counts as changed
 * and is asked about again. `.fence/programs/` needs no hash here: a program is offered only
 * when the person approved its exact code (see the programs' approvals).
 */

/** The files whose content trust covers, by their path in the workspace. */
export const TRUSTED_FILES = ['fence.toml', 'AGENTS.md'] as const;

/** The folder of a workspace's saved programs, used only when the workspace is trusted. */
export const PROJECT_PROGRAMS_DIR = join('.fence', 'programs');

/**
 * Where a workspace stands:
 * - `plain`: it has nothing of its own to trust (no `fence.toml`, `AGENTS.md` or programs);
 * - `trusted`: trusted, and its files are as they were then;
 * - `changed`: trusted, but `changed` files differ since;
 * - `untrusted`: never trusted (or trust was revoked).
 */
export type TrustState = 'plain' | 'trusted' | 'changed' | 'untrusted';

/** A workspace's trust, as `workspaceTrust` finds it. */
export interface WorkspaceTrust {
  state: TrustState;
  /** The workspace's real path: the key trust is kept under. */
  workspace: string;
  /** What the workspace has of its own: `fence.toml`, `AGENTS.md`, `.fence/programs/`. */
  present: string[];
  /** With `changed`: which covered files differ from when trust was given. */
  changed?: string[];
  /** When trust was given, for `trusted` and `changed`. */
  trustedAt?: string;
  /**
   * With `changed`: what each changed file of `TRUSTED_FILES` held when trust was given, so the
   * change can be shown (see `EarlierText`).
   */
  earlier?: Record<string, EarlierText>;
}

/**
 * What a covered file held when trust was given: its text; nothing (it did not exist then); or
 * not kept, because the record is older than kept texts or the file was over
 * `TRUSTED_TEXT_LIMIT_BYTES`.
 */
export type EarlierText = { kind: 'text'; text: string } | { kind: 'absent' } | { kind: 'not-kept'; why: 'older-record' | 'too-large' };

/** Largest text of a file of `TRUSTED_FILES` kept in the trust record; a larger one is kept by its hash alone. */
export const TRUSTED_TEXT_LIMIT_BYTES = 64 * 1024;

/** One trusted folder, as `trustedWorkspaces` lists it. */
export interface TrustEntry {
  workspace: string;
  trustedAt: string;
  /** Where it stands now (`plain` when the folder no longer has anything, or is gone). */
  state: TrustState;
  changed?: string[];
  /** The folder no longer exists. */
  gone?: boolean;
}

interface TrustRecord {
  trustedAt: string;
  /** sha256 of each covered file that existed then, by name. */
  files: Record<string, string>;
  /**
   * The text of each file of `TRUSTED_FILES` that existed then and was at most
   * `TRUSTED_TEXT_LIMIT_BYTES`, by name. Absent in records written before texts were kept.
   */
  texts?: Record<string, string>;
}

interface TrustFile {
  version: 1;
  workspaces: Record<string, TrustRecord>;
}

/** Path of the file that keeps which folders the person trusts. */
export function trustFilePath(home: string = fenceHome()): string {
  return join(home, 'trusted-workspaces.json');
}

/** Whether a workspace's own configuration may be used (trusted, or nothing to use). */
export function isUsable(trust: WorkspaceTrust): boolean {
  return trust.state === 'trusted' || trust.state === 'plain';
}

/**
 * Where `workspace` stands with the person's trust, kept under `home`. Never throws: an
 * unreadable trust file counts as trusting nothing.
 */
export function workspaceTrust(workspace: string, home: string = fenceHome()): WorkspaceTrust {
  const key = realPath(workspace);
  return trustAgainst(key, () => readTrustFile(home).workspaces[key]);
}

/**
 * Where the folder `key` (a real path) stands against its record, which `recordOf` gives: read
 * only when the folder has something of its own to trust, so a plain folder costs no read of
 * the trust file.
 */
function trustAgainst(key: string, recordOf: () => TrustRecord | undefined): WorkspaceTrust {
  const current = fingerprint(key).hashes;
  const present = presentParts(key, current);
  const base = { workspace: key, present };
  if (present.length === 0) return { state: 'plain', ...base };
  const record = recordOf();
  if (!record) return { state: 'untrusted', ...base };
  const changed = changedFiles(record.files, current);
  if (changed.length > 0) return { state: 'changed', ...base, changed, trustedAt: record.trustedAt, earlier: earlierTexts(record, changed) };
  return { state: 'trusted', ...base, trustedAt: record.trustedAt };
}

/** What each changed file of `TRUSTED_FILES` among `changed` held when `record` was made. */
function earlierTexts(record: TrustRecord, changed: readonly string[]): Record<string, EarlierText> {
  const earlier: Record<string, EarlierText> = {};
  for (const name of changed) {
    if (!(TRUSTED_FILES as readonly string[]).includes(name)) continue;
    const text = record.texts?.[name];
    if (!(name in record.files)) earlier[name] = { kind: 'absent' };
    else if (text !== undefined) earlier[name] = { kind: 'text', text };
    else earlier[name] = { kind: 'not-kept', why: record.texts === undefined ? 'older-record' : 'too-large' };
  }
  return earlier;
}

/**
 * Trusts `workspace` as its files are now: records its real path and the sha256 of each
 * covered file. Gives its trust afterwards. Throws when the trust file cannot be written (the
 * caller says so).
 */
export function trustWorkspace(workspace: string, home: string = fenceHome()): WorkspaceTrust {
  const key = realPath(workspace);
  const file = readTrustFile(home);
  const { hashes, texts } = fingerprint(key);
  file.workspaces[key] = { trustedAt: new Date().toISOString(), files: hashes, texts };
  writeTrustFile(home, file);
  return workspaceTrust(key, home);
}

/**
 * Withdraws trust from `workspace` (given by its path, or by the path it was trusted under
 * when the folder is gone). Gives false when it was not trusted.
 */
export function revokeTrust(workspace: string, home: string = fenceHome()): boolean {
  const file = readTrustFile(home);
  const key = [realPath(workspace), workspace].find((candidate) => candidate in file.workspaces);
  if (key === undefined) return false;
  delete file.workspaces[key];
  writeTrustFile(home, file);
  return true;
}

/** Every trusted folder, by path, with where it stands now. */
export function trustedWorkspaces(home: string = fenceHome()): TrustEntry[] {
  const file = readTrustFile(home);
  return Object.entries(file.workspaces)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([workspace, record]) => {
      if (!isFolder(workspace)) return { workspace, trustedAt: record.trustedAt, state: 'plain' as const, gone: true };
      const now = trustAgainst(workspace, () => record);
      return { workspace, trustedAt: record.trustedAt, state: now.state, ...(now.changed ? { changed: now.changed } : {}) };
    });
}

/** Largest file hashed (more than fence reads of `fence.toml` or `AGENTS.md`); a larger file named by a command is recorded by its size alone. */
const HASHED_FILE_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * The sha256 of each covered file the workspace has, by name: `fence.toml`, `AGENTS.md`, and
 * the workspace files that `fence.toml`'s servers and tools name on their command lines (see
 * `projectCommandFiles`), by their path in the workspace. A file that cannot be read has none;
 * a named file over the size cap is recorded by its size alone. Beside them, the text of each
 * file of `TRUSTED_FILES` of at most `TRUSTED_TEXT_LIMIT_BYTES`.
 */
function fingerprint(workspace: string): { hashes: Record<string, string>; texts: Record<string, string> } {
  const hashes: Record<string, string> = {};
  const texts: Record<string, string> = {};
  let config: Buffer | undefined;
  for (const name of TRUSTED_FILES) {
    // Absent, a folder (the sandbox's placeholder), a pipe or device, too large or unreadable: nothing to trust there.
    const read = readRegularFile(join(workspace, name), HASHED_FILE_LIMIT_BYTES, 'follow');
    if (read.kind !== 'read') continue;
    hashes[name] = createHash('sha256').update(read.bytes).digest('hex');
    if (read.bytes.length <= TRUSTED_TEXT_LIMIT_BYTES) texts[name] = read.bytes.toString('utf8');
    if (name === 'fence.toml') config = read.bytes;
  }
  // A project's skills put their names and descriptions in the model's instructions: a new or changed SKILL.md asks again.
  for (const path of projectSkillFiles(workspace)) {
    const read = readRegularFile(join(workspace, path), HASHED_FILE_LIMIT_BYTES, 'follow');
    if (read.kind === 'read') hashes[path] = createHash('sha256').update(read.bytes).digest('hex');
  }
  if (!config) return { hashes, texts };
  for (const path of projectCommandFiles(config.toString('utf8'), workspace)) {
    if (path in hashes) continue;
    const read = readRegularFile(join(workspace, path), HASHED_FILE_LIMIT_BYTES, 'follow');
    if (read.kind === 'read') hashes[path] = createHash('sha256').update(read.bytes).digest('hex');
    else if (read.kind === 'too-large') hashes[path] = `larger than ${HASHED_FILE_LIMIT_BYTES} bytes: ${read.size}`;
  }
  return { hashes, texts };
}

/** What the workspace has of its own, in the order people read it. */
function presentParts(workspace: string, hashes: Record<string, string>): string[] {
  const parts = TRUSTED_FILES.filter((name) => name in hashes) as string[];
  if (listFolder(join(workspace, PROJECT_PROGRAMS_DIR)).length > 0) parts.push(`${PROJECT_PROGRAMS_DIR}/`);
  if (Object.keys(hashes).some((path) => path.startsWith(`${PROJECT_SKILLS_DIR}/`))) parts.push(`${PROJECT_SKILLS_DIR}/`);
  return parts;
}

/** The covered files whose hash differs, was added or was removed. */
function changedFiles(then: Record<string, string>, now: Record<string, string>): string[] {
  const scripts = [...new Set([...Object.keys(then), ...Object.keys(now)])].filter((name) => !(TRUSTED_FILES as readonly string[]).includes(name)).sort();
  return [...TRUSTED_FILES, ...scripts].filter((name) => then[name] !== now[name]);
}

function readTrustFile(home: string): TrustFile {
  try {
    const parsed = JSON.parse(readFileSync(trustFilePath(home), 'utf8')) as Partial<TrustFile>;
    if (parsed && parsed.version === 1 && typeof parsed.workspaces === 'object' && parsed.workspaces !== null) {
      const workspaces: Record<string, TrustRecord> = {};
      for (const [path, record] of Object.entries(parsed.workspaces)) {
        if (!record || typeof record.trustedAt !== 'string' || typeof record.files !== 'object' || record.files === null) continue;
        const { texts, ...rest } = record;
        workspaces[path] = isTextTable(texts) ? { ...rest, texts } : rest;
      }
      return { version: 1, workspaces };
    }
  } catch {
    // No file yet, or not ours to read: nothing is trusted.
  }
  return { version: 1, workspaces: {} };
}

/** Whether a record's `texts` is what fence writes: an object of strings. */
function isTextTable(value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((text) => typeof text === 'string');
}

/** Writes the trust file through a temporary file, readable by the person alone. */
function writeTrustFile(home: string, file: TrustFile): void {
  makePrivateFolder(home);
  const path = trustFilePath(home);
  const temp = `${path}.${process.pid}.tmp`;
  writePrivateFile(temp, `${JSON.stringify(file, null, 2)}\n`);
  renameSync(temp, path);
}

function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function listFolder(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

function isFolder(path: string): boolean {
  try {
    readdirSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The line said on stderr when a workspace's own configuration was left out (none when it was
 * used): what was left out, why, and the command that trusts it (`fence trust`, with the folder
 * when it is not `cwd`).
 */
export function trustNotice(trust: WorkspaceTrust, cwd: string = process.cwd()): string | undefined {
  if (isUsable(trust)) return undefined;
  const parts = listed(trust.present);
  const command = realPath(cwd) === trust.workspace ? 'fence trust' : `fence trust ${shellWord(trust.workspace)}`;
  const why =
    trust.state === 'changed'
      ? `${(trust.changed ?? []).join(' and ')} changed since you trusted this folder`
      : 'this folder is not trusted on this machine';
  return `fence: ${why}, so its ${parts} ${trust.present.length === 1 ? 'is' : 'are'} not used (no tools, servers, rules or instructions of its own). To use them: ${command}`;
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** A path as one shell word. */
function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}
