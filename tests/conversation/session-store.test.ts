import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMessage, type Message } from '../../src/conversation/message';
import { listSessions, newSessionId, readMessages, SessionStore, type SessionInfo } from '../../src/conversation/session-store';
import { makeTempWorkspace } from '../support/tool-context';

let home: string;
const opened: SessionStore[] = [];

beforeEach(async () => {
  home = await makeTempWorkspace('fence-sessions-');
});
afterEach(async () => {
  for (const store of opened.splice(0)) {
    try {
      store.close();
    } catch {
      // Closed by the test already.
    }
  }
  await rm(home, { recursive: true, force: true });
});

const info = (id: string): Omit<SessionInfo, 'createdAt'> => ({
  id,
  model: 'local/test',
  workspace: '/w',
  toolFormat: 'markdown',
  tools: ['shell', 'read'],
});

function create(id: string): SessionStore {
  const store = SessionStore.create(home, info(id));
  opened.push(store);
  return store;
}

function open(id: string): SessionStore {
  const store = SessionStore.open(home, id);
  opened.push(store);
  return store;
}

const logPath = (id: string) => join(home, 'sessions', id, 'conversation.jsonl');

const sample: Message[] = [
  createMessage('system', 'You are fence.', { pinned: true }),
  createMessage('user', 'Line one\nline "two" ✓'),
  createMessage('assistant', '```shell\nls\n```', { meta: { model: 'local/test', usage: { inputTokens: 3, outputTokens: 2 }, stopReason: 'tool_use' } }),
  createMessage('system', 'a.txt\n', { meta: { toolResult: true, tool: 'shell' } }),
];

describe('SessionStore', () => {
  it('creates session.json, an empty log and the tool-outputs folder', () => {
    const store = create('first');
    const dir = join(home, 'sessions', 'first');
    expect(store.dir).toBe(dir);
    expect(store.id).toBe('first');
    const saved = JSON.parse(readFileSync(join(dir, 'session.json'), 'utf8')) as SessionInfo;
    expect(saved).toEqual({ ...info('first'), createdAt: saved.createdAt });
    expect(new Date(saved.createdAt).toISOString()).toBe(saved.createdAt);
    expect(store.info).toEqual(saved);
    expect(readFileSync(logPath('first'), 'utf8')).toBe('');
    expect(store.log).toEqual([]);
    expect(store.outputsDir).toBe(join(dir, 'tool-outputs'));
    expect(statSync(store.outputsDir).isDirectory()).toBe(true);
  });

  it('appends one JSON line per message, and log reflects them', () => {
    const store = create('lines');
    store.append(sample[0]!);
    expect(readFileSync(logPath('lines'), 'utf8')).toBe(`${JSON.stringify(sample[0])}\n`);
    for (const message of sample.slice(1)) store.append(message);

    const lines = readFileSync(logPath('lines'), 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((line) => JSON.parse(line) as Message)).toEqual(sample);
    expect(store.log).toEqual(sample);
  });

  it('reads back the same messages when opened again', () => {
    const store = create('again');
    for (const message of sample) store.append(message);
    store.close();

    const reopened = open('again');
    expect(reopened.log).toEqual(sample);
    expect(reopened.info).toEqual(store.info);
  });

  it('skips a last line torn by a crash', () => {
    const store = create('torn');
    for (const message of sample) store.append(message);
    store.close();
    appendFileSync(logPath('torn'), '{"role":"assistant","content":"half wr');

    expect(open('torn').log).toEqual(sample);
    expect(readMessages(join(home, 'sessions', 'torn'))).toEqual(sample);
  });

  it('keeps messages appended after reopening a log with a torn last line', () => {
    const store = create('resumed');
    store.append(sample[1]!);
    store.close();
    appendFileSync(logPath('resumed'), '{"role":"assistant","content":"half wr');

    const reopened = open('resumed');
    reopened.append(sample[2]!);
    reopened.close();

    expect(open('resumed').log).toEqual([sample[1], sample[2]]);
  });

  it('refuses to append after close', () => {
    const store = create('closed');
    store.close();
    expect(() => store.append(sample[1]!)).toThrow();
  });

  it('refuses to create a session whose id exists, leaving it untouched', () => {
    const store = create('taken');
    store.append(sample[1]!);
    expect(() => SessionStore.create(home, { ...info('taken'), model: 'other/model' })).toThrow('a session named "taken" exists already');
    expect(open('taken').log).toEqual([sample[1]]);
    expect(open('taken').info.model).toBe('local/test');
  });

  it.each(['', '../escape', 'a/b', '.hidden', '-dash', 'with space', 'x'.repeat(129)])('rejects the invalid id %j', (id) => {
    expect(() => SessionStore.create(home, info(id))).toThrow(/invalid session name/);
    expect(existsSync(join(home, 'sessions'))).toBe(false);
  });

  it.each(['a', 'my-session_2.v1', 'x'.repeat(128)])('accepts the id %j', (id) => {
    expect(create(id).id).toBe(id);
  });

  it('fails to open a session that does not exist', () => {
    expect(() => SessionStore.open(home, 'nothing')).toThrow(/no session "nothing"/);
  });
});

describe('listSessions', () => {
  function setCreatedAt(id: string, createdAt: string): void {
    const path = join(home, 'sessions', id, 'session.json');
    const saved = JSON.parse(readFileSync(path, 'utf8')) as SessionInfo;
    writeFileSync(path, JSON.stringify({ ...saved, createdAt }));
  }

  it('lists sessions newest first with their message counts', () => {
    for (const id of ['a-newest', 'b-oldest', 'c-middle']) create(id);
    opened[0]!.append(sample[1]!);
    opened[0]!.append(sample[2]!);
    opened[2]!.append(sample[1]!);
    setCreatedAt('a-newest', '2026-05-03T00:00:00.000Z');
    setCreatedAt('b-oldest', '2026-05-01T00:00:00.000Z');
    setCreatedAt('c-middle', '2026-05-02T00:00:00.000Z');
    mkdirSync(join(home, 'sessions', 'not-a-session'));

    const sessions = listSessions(home);

    expect(sessions.map((s) => [s.id, s.messages])).toEqual([
      ['a-newest', 2],
      ['c-middle', 1],
      ['b-oldest', 0],
    ]);
    expect(sessions[0]).toMatchObject({ model: 'local/test', workspace: '/w', tools: ['shell', 'read'] });
  });

  it('returns nothing when there are no sessions yet', () => {
    expect(listSessions(join(home, 'never-created'))).toEqual([]);
  });
});

describe('newSessionId', () => {
  it('is the local date and time followed by six hex digits', () => {
    const id = newSessionId(new Date(2026, 10, 29, 20, 15, 7));
    expect(id).toMatch(/^20261129-201507-[0-9a-f]{6}$/);
  });

  it('pads single-digit fields and differs between calls', () => {
    const at = new Date(2026, 0, 2, 3, 4, 5);
    const ids = new Set(Array.from({ length: 5 }, () => newSessionId(at)));
    expect([...ids].every((id) => id.startsWith('20260102-030405-'))).toBe(true);
    expect(ids.size).toBe(5);
  });

  it('is a valid session id', () => {
    expect(create(newSessionId()).log).toEqual([]);
  });
});
