import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Message } from './message';

/** What `session.json` holds: the facts needed to show, list and later resume a session. */
export interface SessionInfo {
  id: string;
  name?: string;
  model: string;
  workspace: string;
  toolFormat: 'markdown' | 'xml' | 'tool';
  tools: string[];
  createdAt: string;
}

const SESSION_FILE = 'session.json';
const LOG_FILE = 'conversation.jsonl';
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Makes a sortable, unique session id: `20261129-201500-a1b2c3`. */
export function newSessionId(now: Date = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const date = `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}`;
  const time = `${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
  return `${date}-${time}-${randomBytes(3).toString('hex')}`;
}

/**
 * One session's folder: `<home>/sessions/<id>/` with `conversation.jsonl` (one message per
 * line), `session.json`, `tool-outputs/` and (later) `traces/`.
 *
 * Messages are appended one line at a time with a synchronous write as each completes, so a
 * crash loses at most the message being written; the log is never rewritten whole.
 */
export class SessionStore {
  private readonly fd: number;
  private readonly messages: Message[];

  private constructor(
    readonly dir: string,
    readonly info: SessionInfo,
    messages: Message[],
    tornLastLine = false,
  ) {
    this.messages = messages;
    this.fd = openSync(join(dir, LOG_FILE), 'a');
    // End a line torn by a crash, so the next message starts a line of its own.
    if (tornLastLine) writeSync(this.fd, '\n');
  }

  /** Creates the folder of a new session. Fails if a session with that id exists. */
  static create(home: string, info: Omit<SessionInfo, 'createdAt'>): SessionStore {
    if (!ID_PATTERN.test(info.id)) {
      throw new Error(`invalid session name "${info.id}": use letters, digits, '.', '_' and '-'`);
    }
    const dir = join(home, 'sessions', info.id);
    if (existsSync(dir)) throw new Error(`a session named "${info.id}" exists already`);
    mkdirSync(join(dir, 'tool-outputs'), { recursive: true });
    const full: SessionInfo = { ...info, createdAt: new Date().toISOString() };
    writeFileSync(join(dir, SESSION_FILE), `${JSON.stringify(full, null, 2)}\n`);
    return new SessionStore(dir, full, []);
  }

  /** Opens an existing session and reads its log. */
  static open(home: string, id: string): SessionStore {
    const dir = join(home, 'sessions', id);
    const info = readSessionInfo(dir);
    if (!info) throw new Error(`no session "${id}" in ${join(home, 'sessions')}`);
    const text = readLog(dir);
    return new SessionStore(dir, info, parseLog(text), text.length > 0 && !text.endsWith('\n'));
  }

  get id(): string {
    return this.info.id;
  }

  /** Folder for full tool outputs that messages hold only the head and tail of. */
  get outputsDir(): string {
    return join(this.dir, 'tool-outputs');
  }

  /** The messages so far, in order. The array is the store's own: do not change it. */
  get log(): readonly Message[] {
    return this.messages;
  }

  /** Appends a message to the log file and to memory. */
  append(message: Message): void {
    writeSync(this.fd, `${JSON.stringify(message)}\n`);
    this.messages.push(message);
  }

  /** Closes the log file. Appending afterwards throws. */
  close(): void {
    closeSync(this.fd);
  }
}

function readSessionInfo(dir: string): SessionInfo | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, SESSION_FILE), 'utf8')) as SessionInfo;
  } catch {
    return undefined;
  }
}

/**
 * Reads a session's messages. A last line cut short by a crash is skipped, never fatal.
 */
export function readMessages(dir: string): Message[] {
  return parseLog(readLog(dir));
}

function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, LOG_FILE), 'utf8');
  } catch {
    return '';
  }
}

function parseLog(text: string): Message[] {
  const messages: Message[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      messages.push(JSON.parse(line) as Message);
    } catch {
      // A line torn by an interrupted write: what came before is intact.
    }
  }
  return messages;
}

/** A session as `fence sessions list` shows it. */
export interface SessionSummary extends SessionInfo {
  messages: number;
}

/** Lists the sessions under `home`, newest first. */
export function listSessions(home: string): SessionSummary[] {
  const root = join(home, 'sessions');
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  const sessions: SessionSummary[] = [];
  for (const name of names) {
    const dir = join(root, name);
    const info = readSessionInfo(dir);
    if (!info) continue;
    sessions.push({ ...info, messages: readMessages(dir).length });
  }
  return sessions.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}
