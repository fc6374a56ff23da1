import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Message } from './message';
import { copyImages } from './session-images';
import { acquireSessionLock, sessionLockHolder, type SessionLock } from './session-lock';

/** What `session.json` holds: the facts needed to show, list and later resume a session. */
export interface SessionInfo {
  id: string;
  name?: string;
  model: string;
  workspace: string;
  toolFormat: 'markdown' | 'xml' | 'tool';
  tools: string[];
  createdAt: string;
  /** The session this one was forked from. */
  forkedFrom?: string;
  /** The session whose `agent` call started this one (a subagent's). */
  parent?: string;
  /** The OS sandbox its commands ran in, as the user was told (`workspace-write (bubblewrap)`, `off`, …). */
  sandbox?: string;
  /**
   * Made by `fence run` or `fence mcp serve` to hold the traces of program runs: no model
   * spoke in it, so there is no conversation to go on with (`-r` passes it by).
   */
  programsOnly?: true;
  /**
   * The command that made a session no prompt started, as typed: `fence run lint.js`,
   * `fence mcp serve`. Absent in sessions made before it was recorded.
   */
  startedAs?: string;
}

/** A log line that takes back the `undo` messages before it (see `SessionStore.undo`). */
interface UndoRecord {
  undo: number;
  timestamp: string;
}

const SESSION_FILE = 'session.json';
/**
 * Modes of what fence keeps of a session: readable by the user alone. Logs, outputs and
 * traces hold what the model saw and did, which may be anything the user's files hold.
 */
export const PRIVATE_FOLDER = 0o700;
export const PRIVATE_FILE = 0o600;
const LOG_FILE = 'conversation.jsonl';
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * The folder of a session's full tool outputs. It may be made before the session (an OS
 * sandbox mounts it readable at spawn); a session exists once its `session.json` does.
 */
export function sessionOutputsDir(home: string, id: string): string {
  return join(home, 'sessions', id, 'tool-outputs');
}

/** Makes a sortable, unique session id: `20261129-201500-a1b2c3`. */
export function newSessionId(now: Date = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const date = `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}`;
  const time = `${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
  return `${date}-${time}-${randomBytes(3).toString('hex')}`;
}

/**
 * One session's folder: `<home>/sessions/<id>/` with `conversation.jsonl` (one message per
 * line), `session.json`, `session.lock`, `tool-outputs/` and (later) `traces/`.
 *
 * Messages are appended one line at a time with a synchronous write as each completes, so a
 * crash (even `kill -9`) loses at most the message being written; the log is never rewritten.
 * While a store is open it holds the session's lock (see `acquireSessionLock`), so no other
 * fence process, and no second store in this one, can append to the same log; `close()`
 * releases it, and a lock left by a killed process is taken over by the next `open`.
 */
export class SessionStore {
  private readonly fd: number;
  private readonly messages: Message[];
  private readonly undoneMessages: Message[];
  private current: SessionInfo;
  private closed = false;

  private constructor(
    readonly dir: string,
    info: SessionInfo,
    log: ParsedLog,
    private readonly lock: SessionLock,
    tornLastLine = false,
  ) {
    this.current = info;
    this.messages = log.messages;
    this.undoneMessages = log.undone;
    this.fd = openSync(join(dir, LOG_FILE), 'a', PRIVATE_FILE);
    // End a line torn by a crash, so the next message starts a line of its own.
    if (tornLastLine) writeSync(this.fd, '\n');
  }

  /**
   * Creates the folder of a new session, locked by this process, with its `session.json` and
   * an empty log. Fails if a session with that id exists, leaving it untouched.
   */
  static create(home: string, info: Omit<SessionInfo, 'createdAt'>): SessionStore {
    checkId(info.id);
    const dir = join(home, 'sessions', info.id);
    mkdirSync(join(home, 'sessions'), { recursive: true, mode: PRIVATE_FOLDER });
    try {
      mkdirSync(dir, { mode: PRIVATE_FOLDER });
    } catch (error) {
      // A folder without session.json is no session yet: the sandbox made its outputs folder ahead (see `sessionOutputsDir`).
      if (errorCode(error) !== 'EEXIST' || existsSync(join(dir, SESSION_FILE))) throw errorCode(error) === 'EEXIST' ? new Error(takenName(info.id)) : error;
    }
    const lock = acquireSessionLock(dir);
    try {
      if (existsSync(join(dir, SESSION_FILE))) throw new Error(takenName(info.id));
      mkdirSync(join(dir, 'tool-outputs'), { recursive: true, mode: PRIVATE_FOLDER });
      const full: SessionInfo = { ...info, createdAt: new Date().toISOString() };
      writeInfo(dir, full);
      return new SessionStore(dir, full, { messages: [], undone: [] }, lock);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  /**
   * Opens an existing session to continue it: takes its lock (throwing the lock's one-line
   * error when another live fence process has it), then reads `session.json` and the whole
   * log. A last line torn by a crash is skipped, and the next message starts a new line.
   */
  static open(home: string, id: string): SessionStore {
    checkId(id);
    const dir = join(home, 'sessions', id);
    if (!readSessionInfo(dir)) throw new Error(`no session "${id}" in ${join(home, 'sessions')}`);
    const lock = acquireSessionLock(dir);
    try {
      // Read again under the lock: what the previous holder wrote last counts.
      const info = readSessionInfo(dir);
      if (!info) throw new Error(`no session "${id}" in ${join(home, 'sessions')}`);
      const text = readLog(dir);
      return new SessionStore(dir, info, parseLog(text), lock, text.length > 0 && !text.endsWith('\n'));
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  get id(): string {
    return this.current.id;
  }

  /** What `session.json` holds now. */
  get info(): SessionInfo {
    return this.current;
  }

  /** Folder for full tool outputs that messages hold only the head and tail of. */
  get outputsDir(): string {
    return join(this.dir, 'tool-outputs');
  }

  /** The messages so far, in order. The array is the store's own: do not change it. */
  get log(): readonly Message[] {
    return this.messages;
  }

  /**
   * The messages `undo` took back, in the order they were appended: no longer part of the
   * conversation, but what their requests cost was spent. The array is the store's own.
   */
  get undone(): readonly Message[] {
    return this.undoneMessages;
  }

  /**
   * Takes the last `count` messages back (the chat's `/undo`) and returns them. The log file is
   * still only appended to: an undo record says how many messages before it no longer count,
   * and every reader of the log applies it, so the session reads the same after a resume.
   */
  undo(count: number): Message[] {
    if (this.closed) throw new Error(`session ${this.id} is closed`);
    const n = Math.min(Math.max(0, Math.floor(count)), this.messages.length);
    if (n === 0) return [];
    writeSync(this.fd, `${JSON.stringify({ undo: n, timestamp: new Date().toISOString() } satisfies UndoRecord)}\n`);
    const removed = this.messages.splice(this.messages.length - n, n);
    this.undoneMessages.push(...removed);
    return removed;
  }

  /**
   * Copies this session's conversation into a new session `id` (the chat's `/fork`), with the
   * same model, workspace, tool format and tools, and returns it open and locked. The messages
   * taken back so far go first, with one undo record after them, so the copy reads the same
   * conversation and its `undone` still holds what was spent. The images its messages refer
   * to are copied too (see `copyImages`). This session is left as it is, still open.
   */
  fork(home: string, id: string, name?: string): SessionStore {
    const { id: _old, name: _name, createdAt: _created, ...rest } = this.current;
    const forked = SessionStore.create(home, { ...rest, id, ...(name ? { name } : {}), forkedFrom: this.id });
    copyImages(this.dir, forked.dir);
    for (const message of this.undoneMessages) forked.append(message);
    forked.undo(this.undoneMessages.length);
    for (const message of this.messages) forked.append(message);
    return forked;
  }

  /** Appends a message to the log file and to memory. Throws once the store is closed. */
  append(message: Message): void {
    if (this.closed) throw new Error(`session ${this.id} is closed`);
    writeSync(this.fd, `${JSON.stringify(message)}\n`);
    this.messages.push(message);
  }

  /**
   * Changes fields of `session.json` (say, the model when a resumed session is given another).
   * The id and creation time never change. The file is replaced whole (temp file, then
   * rename), so a crash leaves the old or the new version, never a mix. Throws once closed.
   */
  updateInfo(patch: Partial<Omit<SessionInfo, 'id' | 'createdAt'>>): void {
    if (this.closed) throw new Error(`session ${this.id} is closed`);
    const next: SessionInfo = { ...this.current, ...patch, id: this.current.id, createdAt: this.current.createdAt };
    writeInfo(this.dir, next);
    this.current = next;
  }

  /** Closes the log file and releases the session's lock. Safe to call more than once; appending afterwards throws. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      closeSync(this.fd);
    } finally {
      this.lock.release();
    }
  }
}

/**
 * Why `name` cannot be the id of a new session under `home`, in one line: it is not a valid id,
 * or a session of that name exists. Undefined when it can. `SessionStore.create` checks again
 * (another process may take the name in between): this lets a command refuse a name before it
 * starts anything.
 */
export function newSessionNameProblem(home: string, name: string): string | undefined {
  if (!ID_PATTERN.test(name)) return invalidName(name);
  return existsSync(join(home, 'sessions', name, SESSION_FILE)) ? takenName(name) : undefined;
}

function checkId(id: string): void {
  if (!ID_PATTERN.test(id)) throw new Error(invalidName(id));
}

function invalidName(id: string): string {
  return `invalid session name "${id}": use letters, digits, '.', '_' and '-'`;
}

function takenName(id: string): string {
  return `a session named "${id}" exists already`;
}

/** Replaces `session.json` whole: written to a temp file, then renamed over it. */
function writeInfo(dir: string, info: SessionInfo): void {
  const temp = join(dir, `${SESSION_FILE}.${process.pid}.${randomBytes(4).toString('hex')}.new`);
  writeFileSync(temp, `${JSON.stringify(info, null, 2)}\n`, { mode: PRIVATE_FILE });
  renameSync(temp, join(dir, SESSION_FILE));
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** A session folder's `session.json`, or undefined when it cannot be read. Never throws. */
export function readSessionInfo(dir: string): SessionInfo | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, SESSION_FILE), 'utf8')) as SessionInfo;
  } catch {
    return undefined;
  }
}

/**
 * Reads a session's messages. A last line cut short by a crash is skipped, never fatal, as is
 * any line that is not a message. Only reads: no lock is taken, nothing is written.
 */
export function readMessages(dir: string): Message[] {
  return parseLog(readLog(dir)).messages;
}

/** A session as it is on disk: its info, its conversation, and the messages undo took back. */
export interface StoredSession {
  info: SessionInfo;
  log: Message[];
  /** The messages taken back by undo records, in the order they were written (see `SessionStore.undone`). */
  undone: Message[];
}

/**
 * Reads a session as it is on disk, for showing it, whether or not a fence process has it
 * open: no lock is taken and nothing is written. Undefined when there is no such session.
 */
export function readSession(home: string, id: string): StoredSession | undefined {
  if (!ID_PATTERN.test(id)) return undefined;
  const dir = join(home, 'sessions', id);
  const info = readSessionInfo(dir);
  if (!info) return undefined;
  const { messages, undone } = parseLog(readLog(dir));
  return { info, log: messages, undone };
}

/**
 * The session `text` names: the one whose id it is, else the only one whose id starts with it
 * (as `fence sessions show 2026` finds `20260503-…`). An error names the candidates when
 * several ids start with it, newest first (at most 10). Only reads.
 */
export function findSession(home: string, text: string): StoredSession | { error: string } {
  const exact = readSession(home, text);
  if (exact) return exact;
  const matches = sessionsStartingWith(home, text);
  const [only] = matches;
  if (matches.length === 1 && only) {
    const found = readSession(home, only.id);
    if (found) return found;
  }
  if (matches.length > 1) {
    const shown = matches.slice(0, 10).map((info) => info.id);
    const more = matches.length > shown.length ? ` and ${matches.length - shown.length} more` : '';
    return { error: `"${text}" begins ${matches.length} session ids: ${shown.join(', ')}${more}; give more of the id` };
  }
  return { error: `no session "${text}" in ${join(home, 'sessions')} (fence sessions list shows them)` };
}

/** The sessions whose id starts with `prefix` (and is not just it), newest first. Only reads. */
export function sessionsStartingWith(home: string, prefix: string): SessionInfo[] {
  if (prefix === '') return [];
  const root = join(home, 'sessions');
  const names = sessionFolders(root);
  return names
    .filter((name) => name.startsWith(prefix) && name !== prefix)
    .flatMap((name) => readSessionInfo(join(root, name)) ?? [])
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}

/** The names in the sessions folder `root`; none when it does not exist yet. */
function sessionFolders(root: string): string[] {
  try {
    return readdirSync(root);
  } catch {
    return [];
  }
}

function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, LOG_FILE), 'utf8');
  } catch {
    return '';
  }
}

/** A log as read: the conversation with every undo applied, and what the undos took back. */
interface ParsedLog {
  messages: Message[];
  undone: Message[];
}

function parseLog(text: string): ParsedLog {
  const messages: Message[] = [];
  const undone: Message[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue; // a line torn by an interrupted write: what came before is intact
    }
    if (isMessage(value)) messages.push(value);
    else if (isUndoRecord(value)) undone.push(...messages.splice(Math.max(0, messages.length - value.undo)));
  }
  return { messages, undone };
}

function isMessage(value: unknown): value is Message {
  if (typeof value !== 'object' || value === null) return false;
  const { role, content, timestamp } = value as Record<string, unknown>;
  return (role === 'system' || role === 'user' || role === 'assistant') && typeof content === 'string' && typeof timestamp === 'string';
}

function isUndoRecord(value: unknown): value is UndoRecord {
  if (typeof value !== 'object' || value === null) return false;
  const { undo } = value as Record<string, unknown>;
  return typeof undo === 'number' && Number.isInteger(undo) && undo > 0;
}

/**
 * The session of `workspace` whose log changed last, leaving out those a live fence process
 * holds and those that hold program runs only (`fence -r` without an id). Undefined when there
 * is none. Only reads.
 */
export function latestSession(home: string, workspace: string): SessionInfo | undefined {
  const root = join(home, 'sessions');
  const names = sessionFolders(root);
  let best: { info: SessionInfo; changed: number } | undefined;
  for (const name of names) {
    const dir = join(root, name);
    const info = readSessionInfo(dir);
    if (!info || info.workspace !== workspace || info.programsOnly || sessionLockHolder(dir)) continue;
    let changed: number;
    try {
      changed = statSync(join(dir, LOG_FILE)).mtimeMs;
    } catch {
      changed = Date.parse(info.createdAt) || 0;
    }
    if (!best || changed > best.changed) best = { info, changed };
  }
  return best?.info;
}

/** A session as `fence sessions list` shows it. */
export interface SessionSummary extends SessionInfo {
  /** Messages of the conversation, undos applied. */
  messages: number;
  /** The conversation's first prompt, when it has one. */
  firstPrompt?: string;
  /** Every message whose request was paid for (it has `meta.usage`), those taken back by undo included. */
  paid: Message[];
  /** Set when a fence process that may still be running holds the session's lock. */
  running?: boolean;
}

/** Lists the sessions under `home`, newest first. Only reads. */
export function listSessions(home: string): SessionSummary[] {
  const root = join(home, 'sessions');
  const names = sessionFolders(root);
  const sessions: SessionSummary[] = [];
  for (const name of names) {
    const dir = join(root, name);
    const info = readSessionInfo(dir);
    if (!info) continue;
    const { messages, undone } = parseLog(readLog(dir));
    const firstPrompt = messages.find((message) => message.role === 'user')?.content;
    sessions.push({
      ...info,
      messages: messages.length,
      ...(firstPrompt !== undefined ? { firstPrompt } : {}),
      paid: [...undone, ...messages].filter((message) => message.meta?.usage !== undefined),
      ...(sessionLockHolder(dir) ? { running: true } : {}),
    });
  }
  return sessions.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}
