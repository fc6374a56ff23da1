import { readFileSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMessage, type Message } from '../../src/conversation/message';
import { latestSession, readMessages, readSession, SessionStore, type SessionInfo } from '../../src/conversation/session-store';
import { useTempWorkspace } from '../support/tool-context';

const home = useTempWorkspace('fence-undo-home-');
const opened: SessionStore[] = [];

afterEach(() => {
  // Close whatever a test left open, so its lock is released before the folder goes.
  for (const store of opened.splice(0)) store.close();
});

function infoFor(id: string, workspace = '/projects/app'): Omit<SessionInfo, 'createdAt'> {
  return { id, model: 'local/test', workspace, toolFormat: 'xml', tools: ['shell', 'save'] };
}

function create(id: string, workspace?: string): SessionStore {
  const store = SessionStore.create(home(), infoFor(id, workspace));
  opened.push(store);
  return store;
}

function reopen(id: string): SessionStore {
  const store = SessionStore.open(home(), id);
  opened.push(store);
  return store;
}

/** A session `id` holding one user message per text, in order. */
function sessionWith(id: string, texts: string[]): SessionStore {
  const store = create(id);
  for (const text of texts) store.append(createMessage('user', text));
  return store;
}

const contents = (messages: readonly Message[]) => messages.map((message) => message.content);
const logPath = (store: SessionStore) => join(store.dir, 'conversation.jsonl');

describe('SessionStore.undo', () => {
  it('removes the last n messages from the log and returns them, oldest first', () => {
    const store = sessionWith('s', ['one', 'two', 'three', 'four']);
    const undone = store.undo(2);
    expect(contents(undone)).toEqual(['three', 'four']);
    expect(contents(store.log)).toEqual(['one', 'two']);
  });

  it('returns the messages as they were appended (roles and meta included)', () => {
    const store = create('s');
    const reply = createMessage('assistant', 'done', { meta: { model: 'local/test', usage: { inputTokens: 5, outputTokens: 2 } } });
    store.append(createMessage('user', 'do it'));
    store.append(reply);
    expect(store.undo(1)).toEqual([reply]);
  });

  it('only appends to the log file: the bytes before the undo are unchanged', () => {
    const store = sessionWith('s', ['one', 'two', 'three']);
    const before = readFileSync(logPath(store));
    store.undo(1);
    const after = readFileSync(logPath(store));
    expect(after.length).toBeGreaterThan(before.length);
    expect(after.subarray(0, before.length).equals(before)).toBe(true);
  });

  it('is seen by a reopened store, readSession and readMessages', () => {
    const store = sessionWith('s', ['one', 'two', 'three']);
    store.undo(2);
    store.close();
    expect(contents(reopen('s').log)).toEqual(['one']);
    expect(contents(readSession(home(), 's')?.log ?? [])).toEqual(['one']);
    expect(contents(readMessages(store.dir))).toEqual(['one']);
  });

  it('is seen by readers while the store is still open', () => {
    const store = sessionWith('s', ['one', 'two']);
    store.undo(1);
    expect(contents(readMessages(store.dir))).toEqual(['one']);
  });

  it('takes back everything when asked for more messages than there are', () => {
    const store = sessionWith('s', ['one', 'two']);
    expect(contents(store.undo(5))).toEqual(['one', 'two']);
    expect(store.log).toEqual([]);
    store.close();
    expect(reopen('s').log).toEqual([]);
  });

  it('does nothing for 0, and nothing on an empty log', () => {
    const store = sessionWith('s', ['one', 'two']);
    const before = readFileSync(logPath(store));
    expect(store.undo(0)).toEqual([]);
    expect(contents(store.log)).toEqual(['one', 'two']);
    expect(readFileSync(logPath(store)).equals(before)).toBe(true);

    const empty = create('empty');
    expect(empty.undo(3)).toEqual([]);
    expect(readFileSync(logPath(empty), 'utf8')).toBe('');
  });

  it('keeps messages appended after an undo, after a reopen', () => {
    const store = sessionWith('s', ['one', 'two', 'three']);
    store.undo(2);
    store.append(createMessage('user', 'two again'));
    store.append(createMessage('assistant', 'reply'));
    expect(contents(store.log)).toEqual(['one', 'two again', 'reply']);
    store.close();
    expect(contents(reopen('s').log)).toEqual(['one', 'two again', 'reply']);
  });

  it('applies two undos in a row one after the other', () => {
    const store = sessionWith('s', ['one', 'two', 'three', 'four']);
    expect(contents(store.undo(1))).toEqual(['four']);
    expect(contents(store.undo(2))).toEqual(['two', 'three']);
    expect(contents(store.log)).toEqual(['one']);
    store.close();
    expect(contents(reopen('s').log)).toEqual(['one']);
  });

  it('reads the same after several sessions of undo and append', () => {
    const first = sessionWith('s', ['a', 'b', 'c']);
    first.undo(1);
    first.close();
    const second = reopen('s');
    second.append(createMessage('user', 'd'));
    second.undo(1);
    second.append(createMessage('user', 'e'));
    expect(contents(second.log)).toEqual(['a', 'b', 'e']);
    second.close();
    expect(contents(reopen('s').log)).toEqual(['a', 'b', 'e']);
  });

  it('throws once the store is closed', () => {
    const store = sessionWith('s', ['one']);
    store.close();
    expect(() => store.undo(1)).toThrow(/closed/);
  });
});

describe('SessionStore.undone', () => {
  it('holds what each undo took back, in the order the messages were appended', () => {
    const store = sessionWith('s', ['one', 'two', 'three', 'four']);
    expect(store.undone).toEqual([]);
    store.undo(1);
    store.undo(2);
    expect(contents(store.undone)).toEqual(['four', 'two', 'three']);
  });

  it('is read back from the log by a reopened store and by readSession', () => {
    const store = sessionWith('s', ['one', 'two', 'three']);
    store.undo(1);
    store.append(createMessage('user', 'three again'));
    store.undo(2);
    store.close();
    expect(contents(reopen('s').undone)).toEqual(['three', 'two', 'three again']);
    expect(contents(readSession(home(), 's')?.undone ?? [])).toEqual(['three', 'two', 'three again']);
    expect(contents(readSession(home(), 's')?.log ?? [])).toEqual(['one']);
  });
});

describe('SessionStore.fork', () => {
  it('copies the messages into a new session with the same model, workspace, tool format and tools', () => {
    const original = sessionWith('orig', ['one', 'two']);
    original.append(createMessage('assistant', 'three'));
    const forked = original.fork(home(), 'copy', 'experiment');
    opened.push(forked);

    expect(forked.id).toBe('copy');
    expect(forked.info).toMatchObject({
      id: 'copy',
      name: 'experiment',
      model: 'local/test',
      workspace: '/projects/app',
      toolFormat: 'xml',
      tools: ['shell', 'save'],
      forkedFrom: 'orig',
    });
    expect(forked.log).toEqual(original.log);

    const onDisk = readSession(home(), 'copy');
    expect(onDisk?.info).toMatchObject({ id: 'copy', name: 'experiment', forkedFrom: 'orig', model: 'local/test' });
    expect(onDisk?.log).toEqual(original.log);
  });

  it('carries what was taken back, so the copy reads the same conversation and knows what was spent', () => {
    const original = sessionWith('orig', ['one', 'two', 'three']);
    original.undo(1);
    const forked = original.fork(home(), 'copy');
    opened.push(forked);
    expect(contents(forked.log)).toEqual(['one', 'two']);
    expect(contents(forked.undone)).toEqual(['three']);
    forked.close();
    expect(contents(reopen('copy').log)).toEqual(['one', 'two']);
    expect(contents(readSession(home(), 'copy')?.undone ?? [])).toEqual(['three']);
  });

  it('leaves the original as it was and still appendable, and the two go on apart', () => {
    const original = sessionWith('orig', ['one']);
    const originalInfo = { ...original.info };
    const forked = original.fork(home(), 'copy');
    opened.push(forked);

    forked.append(createMessage('user', 'only in the fork'));
    original.append(createMessage('user', 'only in the original'));

    expect(original.info).toEqual(originalInfo);
    expect(original.info.forkedFrom).toBeUndefined();
    expect(contents(original.log)).toEqual(['one', 'only in the original']);
    expect(contents(forked.log)).toEqual(['one', 'only in the fork']);
    original.close();
    forked.close();
    expect(contents(reopen('orig').log)).toEqual(['one', 'only in the original']);
    expect(contents(reopen('copy').log)).toEqual(['one', 'only in the fork']);
  });

  it('copies the conversation as it reads after an undo', () => {
    const original = sessionWith('orig', ['one', 'two', 'three']);
    original.undo(1);
    const forked = original.fork(home(), 'copy');
    opened.push(forked);
    expect(contents(forked.log)).toEqual(['one', 'two']);
    expect(contents(readMessages(forked.dir))).toEqual(['one', 'two']);
  });

  it('returns the fork open and locked', () => {
    const forked = sessionWith('orig', ['one']).fork(home(), 'copy');
    opened.push(forked);
    expect(() => SessionStore.open(home(), 'copy')).toThrow();
    forked.close();
    expect(contents(reopen('copy').log)).toEqual(['one']);
  });

  it('throws for an id that exists, leaving both sessions untouched', () => {
    const original = sessionWith('orig', ['one']);
    const other = sessionWith('other', ['not to be overwritten']);
    const otherLog = readFileSync(logPath(other));
    expect(() => original.fork(home(), 'other')).toThrow(/exists/);
    expect(readFileSync(logPath(other)).equals(otherLog)).toBe(true);
    expect(readSession(home(), 'other')?.info.forkedFrom).toBeUndefined();
    original.append(createMessage('user', 'still fine'));
    expect(contents(original.log)).toEqual(['one', 'still fine']);
  });
});

describe('latestSession', () => {
  /** Sets the log file's modification time to `seconds` after an arbitrary fixed moment. */
  function touchLog(store: SessionStore, seconds: number): void {
    const when = new Date(Date.UTC(2030, 0, 1) + seconds * 1000);
    utimesSync(logPath(store), when, when);
  }

  it('picks the session of the workspace whose log changed last', () => {
    const older = sessionWith('older', ['a']);
    const newer = sessionWith('newer', ['b']);
    older.close();
    newer.close();
    touchLog(older, 10);
    touchLog(newer, 20);
    expect(latestSession(home(), '/projects/app')?.id).toBe('newer');
    touchLog(older, 30);
    expect(latestSession(home(), '/projects/app')?.id).toBe('older');
  });

  it('returns the session info as session.json holds it', () => {
    const store = sessionWith('only', ['a']);
    store.updateInfo({ name: 'the one' });
    store.close();
    expect(latestSession(home(), '/projects/app')).toEqual(readSession(home(), 'only')?.info);
  });

  it('ignores sessions of other workspaces', () => {
    const mine = create('mine', '/projects/app');
    const theirs = create('theirs', '/projects/other');
    mine.close();
    theirs.close();
    touchLog(mine, 10);
    touchLog(theirs, 99);
    expect(latestSession(home(), '/projects/app')?.id).toBe('mine');
    expect(latestSession(home(), '/projects/other')?.id).toBe('theirs');
  });

  it('passes by a session of program runs only (fence run, fence mcp serve), however new', () => {
    const chat = create('chat');
    const served = SessionStore.create(home(), { ...infoFor('served'), model: 'none (fence mcp serve)', programsOnly: true });
    chat.close();
    served.close();
    touchLog(chat, 10);
    expect(readSession(home(), 'served')?.info.programsOnly).toBe(true);
    expect(latestSession(home(), '/projects/app')?.id).toBe('chat');
  });

  it('ignores a session a live store in this process holds open', () => {
    const older = create('older');
    const newer = create('newer');
    older.close();
    touchLog(older, 10);
    touchLog(newer, 20);
    expect(latestSession(home(), '/projects/app')?.id).toBe('older');
    newer.close();
    expect(latestSession(home(), '/projects/app')?.id).toBe('newer');
  });

  it('returns undefined when there is no session of the workspace', () => {
    expect(latestSession(home(), '/projects/app')).toBeUndefined();
    create('elsewhere', '/projects/other').close();
    expect(latestSession(home(), '/projects/app')).toBeUndefined();
  });

  it('returns undefined when the only session of the workspace is held open', () => {
    create('busy');
    expect(latestSession(home(), '/projects/app')).toBeUndefined();
  });
});
