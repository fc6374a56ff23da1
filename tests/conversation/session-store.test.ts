import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMessage, type Message } from '../../src/conversation/message';
import type { SessionLockHolder } from '../../src/conversation/session-lock';
import { findSession, listSessions, newSessionId, newSessionNameProblem, readMessages, readSession, SessionStore, type SessionInfo } from '../../src/conversation/session-store';
import { makeTempWorkspace } from '../support/tool-context';

let home: string;
const opened: SessionStore[] = [];
const children: ChildProcess[] = [];

beforeEach(async () => {
  home = await makeTempWorkspace('fence-sessions-');
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
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
const lockPath = (id: string) => join(home, 'sessions', id, 'session.lock');
const lockHolder = (id: string) => JSON.parse(readFileSync(lockPath(id), 'utf8')) as SessionLockHolder;

/** A real process that lives until killed. */
function startSleeper(): ChildProcess & { pid: number } {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  children.push(child);
  if (child.pid === undefined) throw new Error('the sleeper did not start');
  return child as ChildProcess & { pid: number };
}

/** Kills a child with SIGKILL and waits until it has been reaped. */
async function killAndReap(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGKILL');
  await exited;
}

/**
 * Runs `body` (ES module code with `SessionStore` and `createMessage` in scope) in a fresh
 * node process, and resolves with that process once it has written `line` on stdout. The
 * process then stays alive until killed.
 */
async function runUntil(body: string, line: string): Promise<ChildProcess> {
  const source = (file: string) => JSON.stringify(new URL(`../../src/conversation/${file}`, import.meta.url).href);
  const script = [
    `import { SessionStore } from ${source('session-store.ts')};`,
    `import { createMessage } from ${source('message.ts')};`,
    body,
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: resolve(import.meta.dirname, '../..'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  await new Promise<void>((done, fail) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.split('\n').includes(line)) done();
    });
    child.once('exit', () => fail(new Error(`the child ended before saying ${line}: ${err}`)));
  });
  return child;
}

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

  it('refuses to append after close, and closing twice is harmless', () => {
    const store = create('closed');
    store.close();
    store.close();
    expect(() => store.append(sample[1]!)).toThrow(new Error('session closed is closed'));
    expect(readFileSync(logPath('closed'), 'utf8')).toBe('');
  });

  it('refuses to create a session whose id exists, leaving it untouched', () => {
    const store = create('taken');
    store.append(sample[1]!);
    store.close();
    expect(() => SessionStore.create(home, { ...info('taken'), model: 'other/model' })).toThrow('a session named "taken" exists already');
    const reopened = open('taken');
    expect(reopened.log).toEqual([sample[1]]);
    expect(reopened.info.model).toBe('local/test');
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
  it('says before creating anything why a name cannot be a new session: not valid, or taken', () => {
    expect(newSessionNameProblem(home, 'bad name/')).toBe(`invalid session name "bad name/": use letters, digits, '.', '_' and '-'`);
    expect(newSessionNameProblem(home, 'nightly')).toBeUndefined();
    expect(existsSync(join(home, 'sessions'))).toBe(false);
    create('nightly').close();
    expect(newSessionNameProblem(home, 'nightly')).toBe('a session named "nightly" exists already');
    expect(newSessionNameProblem(home, 'nightly-2')).toBeUndefined();
  });
});

describe('SessionStore locking', () => {
  it('holds the lock from create to close', () => {
    const store = create('locked');
    expect(lockHolder('locked')).toMatchObject({ pid: process.pid, host: hostname() });
    store.close();
    expect(existsSync(lockPath('locked'))).toBe(false);
    expect(readdirSync(join(home, 'sessions', 'locked')).sort()).toEqual(['conversation.jsonl', 'session.json', 'tool-outputs']);
  });

  it('holds the lock from open to close', () => {
    create('reopen').close();
    const store = open('reopen');
    expect(lockHolder('reopen').pid).toBe(process.pid);
    store.close();
    expect(existsSync(lockPath('reopen'))).toBe(false);
  });

  it('refuses a second store of one session in the same process until the first is closed', () => {
    const store = create('twice');
    store.append(sample[1]!);
    expect(() => SessionStore.open(home, 'twice')).toThrow(new Error('session twice is open already in this fence process'));
    store.close();
    expect(open('twice').log).toEqual([sample[1]]);
  });

  it('refuses to open a session another live process holds, without touching its log', () => {
    const store = create('busy');
    store.append(sample[1]!);
    store.close();
    appendFileSync(logPath('busy'), '{"role":"assistant","content":"half wr');
    const before = readFileSync(logPath('busy'), 'utf8');
    const child = startSleeper();
    writeFileSync(lockPath('busy'), JSON.stringify({ pid: child.pid, host: hostname(), startedAt: '2026-05-03T10:00:00.000Z' }));

    expect(() => SessionStore.open(home, 'busy')).toThrow(
      new Error(`session busy is in use by another fence process (pid ${child.pid}, since 2026-05-03T10:00:00.000Z); wait for it to end or stop it`),
    );
    expect(readFileSync(logPath('busy'), 'utf8')).toBe(before);
  });

  it('opens, with every message written, a session whose process was killed with SIGKILL', async () => {
    const messages = JSON.stringify(sample);
    const child = await runUntil(
      [
        `const store = SessionStore.create(${JSON.stringify(home)}, ${JSON.stringify(info('killed'))});`,
        `for (const message of ${messages}) store.append(message);`,
        "process.stdout.write('appended\\n');",
      ].join('\n'),
      'appended',
    );
    expect(lockHolder('killed').pid).toBe(child.pid);
    expect(() => SessionStore.open(home, 'killed')).toThrow(/is in use by another fence process/);

    await killAndReap(child);
    const resumed = open('killed');
    expect(resumed.log).toEqual(sample);
    expect(resumed.info).toMatchObject(info('killed'));
    expect(lockHolder('killed').pid).toBe(process.pid);
    const more = createMessage('user', 'go on');
    resumed.append(more);
    resumed.close();
    expect(readMessages(join(home, 'sessions', 'killed'))).toEqual([...sample, more]);
  });

  it('rejects an id that is not a session name when opening', () => {
    expect(() => SessionStore.open(home, '../escape')).toThrow(/invalid session name "\.\.\/escape"/);
  });
});

describe('SessionStore.updateInfo', () => {
  it('rewrites session.json whole, keeping the id and creation time', () => {
    const store = create('change');
    const createdAt = store.info.createdAt;
    store.updateInfo({ model: 'other/model', toolFormat: 'tool' });

    const expected = { ...info('change'), model: 'other/model', toolFormat: 'tool', createdAt };
    expect(store.info).toEqual(expected);
    expect(JSON.parse(readFileSync(join(store.dir, 'session.json'), 'utf8'))).toEqual(expected);
    expect(readdirSync(store.dir).sort()).toEqual(['conversation.jsonl', 'session.json', 'session.lock', 'tool-outputs']);
    store.close();
    expect(open('change').info).toEqual(expected);
  });

  it('cannot change the id or the creation time, even when forced', () => {
    const store = create('fixed');
    const before = store.info;
    store.updateInfo({ id: 'other', createdAt: '2000-01-01T00:00:00.000Z' } as unknown as Partial<SessionInfo>);
    expect(store.info).toEqual(before);
  });

  it('refuses once the store is closed', () => {
    const store = create('shut');
    store.close();
    expect(() => store.updateInfo({ model: 'x/y' })).toThrow(new Error('session shut is closed'));
    expect(readSession(home, 'shut')?.info.model).toBe('local/test');
  });
});

describe('readSession', () => {
  it('reads a session another store holds open, and writes nothing', () => {
    const store = create('shown');
    for (const message of sample) store.append(message);
    appendFileSync(logPath('shown'), '{"role":"user","content":"tor');
    const before = readFileSync(logPath('shown'), 'utf8');

    expect(readSession(home, 'shown')).toEqual({ info: store.info, log: sample, undone: [] });
    expect(readFileSync(logPath('shown'), 'utf8')).toBe(before);
    expect(lockHolder('shown').pid).toBe(process.pid);
  });

  it('is undefined for a missing session or an id that is not a session name', () => {
    expect(readSession(home, 'missing')).toBeUndefined();
    expect(readSession(home, '../x')).toBeUndefined();
  });
});

describe('readMessages', () => {
  it('skips lines that are JSON but not messages', () => {
    const store = create('odd');
    store.append(sample[1]!);
    appendFileSync(logPath('odd'), '123\nnull\n{"role":"user"}\n{"role":"robot","content":"x","timestamp":"t"}\n"text"\n');
    store.append(sample[2]!);
    expect(readMessages(store.dir)).toEqual([sample[1], sample[2]]);
  });
});

describe('listSessions', () => {
  it('marks the sessions a live process holds as running', async () => {
    create('open-here');
    create('closed-here').close();
    create('stale').close();
    const gone = startSleeper();
    await killAndReap(gone);
    writeFileSync(lockPath('stale'), JSON.stringify({ pid: gone.pid, host: hostname(), startedAt: '2026-05-03T10:00:00.000Z' }));
    create('garbage').close();
    writeFileSync(lockPath('garbage'), 'not a lock');

    const running = Object.fromEntries(listSessions(home).map((s) => [s.id, s.running]));
    expect(running).toEqual({ 'open-here': true, 'closed-here': undefined, stale: undefined, garbage: undefined });
    expect(listSessions(home).find((s) => s.id === 'closed-here')).not.toHaveProperty('running');
  });

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

  it('gives the first prompt left after undos, and every paid-for message, those taken back too', () => {
    const store = create('s');
    const reply = (text: string) => createMessage('assistant', text, { meta: { model: 'local/test', usage: { inputTokens: 1, outputTokens: 1 } } });
    store.append(createMessage('system', 'You are fence.', { pinned: true }));
    store.append(createMessage('user', 'first try'));
    store.append(reply('one'));
    store.undo(2);
    store.append(createMessage('user', 'second try'));
    store.append(reply('two'));

    const [summary] = listSessions(home);

    expect(summary?.firstPrompt).toBe('second try');
    expect(summary?.paid.map((m) => m.content)).toEqual(['one', 'two']);
    expect(summary?.messages).toBe(3);
    create('empty');
    expect(listSessions(home).find((s) => s.id === 'empty')).not.toHaveProperty('firstPrompt');
  });
});

describe('findSession', () => {
  it('finds a session by its id, or by the start of one id', () => {
    create('fix-login').append(createMessage('user', 'log in'));
    create('fix-logout');
    expect(findSession(home, 'fix-login')).toMatchObject({ info: { id: 'fix-login' }, log: [{ content: 'log in' }] });
    expect(findSession(home, 'fix-logo')).toMatchObject({ info: { id: 'fix-logout' } });
  });

  it('names the sessions a start is shared by, newest first, and says when it begins none', () => {
    for (const id of ['job-a', 'job-b', 'job-c']) create(id);
    const path = (id: string) => join(home, 'sessions', id, 'session.json');
    for (const [id, createdAt] of [['job-a', '2026-05-01'], ['job-b', '2026-05-03'], ['job-c', '2026-05-02']] as const) {
      writeFileSync(path(id), JSON.stringify({ ...JSON.parse(readFileSync(path(id), 'utf8')), createdAt: `${createdAt}T00:00:00.000Z` }));
    }
    expect(findSession(home, 'job')).toEqual({ error: '"job" begins 3 session ids: job-b, job-c, job-a; give more of the id' });
    expect(findSession(home, 'nothing')).toEqual({ error: `no session "nothing" in ${join(home, 'sessions')} (fence sessions list shows them)` });
    expect(findSession(home, '')).toMatchObject({ error: expect.stringContaining('no session ""') });
    expect(findSession(home, '../job-a')).toMatchObject({ error: expect.stringContaining('no session') });
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
