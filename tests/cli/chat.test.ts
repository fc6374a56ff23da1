import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSession } from '../../src/conversation/session-store';
import { readOnlySessionLog, useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();
let running: TerminalSession | undefined;

afterEach(() => {
  running?.kill();
  running = undefined;
});

function startChat(args: string[] = [], env: Record<string, string> = {}): TerminalSession {
  running = startTerminalSession({
    args: ['-m', 'openai/gpt-test', ...args],
    cwd: cli.dirs.workspace,
    env: { ...cli.env(), EDITOR: 'false', ...env },
    cols: 100,
    rows: 40,
  });
  return running;
}

/** The text of every request's last message, as the fake server received it. */
function lastMessageOf(index: number): string {
  const messages = cli.server.requests[index]?.body.messages ?? [];
  return JSON.stringify(messages[messages.length - 1]?.content ?? '');
}

/** Signs of a messy screen: spinner frames left behind, escape sequences shown as text, raw fences. */
function messes(lines: readonly string[]): string[] {
  return lines.filter((line) => /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]|\[\?25|\[\?2004|\x1b/.test(line));
}

describe('the chat in a terminal', () => {
  it('renders an answer, confirms a save with a diff, declines a shell, stops a stream, undoes, exits and resumes', { timeout: 90_000 }, async () => {
    const { server, dirs } = cli;
    writeFileSync(join(dirs.workspace, 'hello.txt'), 'hello\n');
    server
      .reply((r) => r.text('# Greeting\n\nA *tiny* program, in **JavaScript**:\n\n').text('```js\nconsole.log("hi");\n```\n\nRun it with `node`.\n'))
      .reply((r) => r.text('I will update it.\n\n```save hello.txt\nhello world\n```\n'))
      .reply((r) => r.text('Updated hello.txt.'))
      .reply((r) => r.text('```shell\nrm hello.txt\n```\n'))
      .reply((r) => r.text('Understood, I kept the file.'))
      .reply((r) => r.text('Once upon a time,\n').delay(100).text('there was a ').hang());

    const chat = startChat();
    await chat.waitFor('/help for commands');

    chat.type(`show me a tiny program${KEYS.enter}`);
    await chat.waitFor('Run it with node.');
    let screen = chat.screen().join('\n');
    expect(screen).toContain('Greeting');
    expect(screen).not.toContain('# Greeting');
    expect(screen).toContain('console.log("hi");');
    expect(screen).not.toMatch(/```/);
    expect(screen).not.toContain('**JavaScript**');

    chat.type(`make it say hello world${KEYS.enter}`);
    await chat.waitFor('Change hello.txt?');
    screen = chat.screen().join('\n');
    expect(screen).toMatch(/^\s*-hello$/m);
    expect(screen).toMatch(/^\s*\+hello world$/m);
    chat.type(`y${KEYS.enter}`);
    await chat.waitFor('Updated hello.txt.');
    expect(readFileSync(join(dirs.workspace, 'hello.txt'), 'utf8')).toBe('hello world\n');

    chat.type(`clean up${KEYS.enter}`);
    await chat.waitFor('Run this command?');
    expect(chat.screen().join('\n')).toContain('rm hello.txt');
    chat.type(`n keep the file${KEYS.enter}`);
    await chat.waitFor('Understood, I kept the file.');
    expect(existsSync(join(dirs.workspace, 'hello.txt'))).toBe(true);
    const declinedAt = server.requests.length - 1;
    expect(lastMessageOf(declinedAt)).toContain('declined');
    expect(lastMessageOf(declinedAt)).toContain('keep the file');

    chat.type(`tell me a long story${KEYS.enter}`);
    await chat.waitFor('Once upon a time,');
    chat.type(KEYS.ctrlC);
    await chat.waitFor('interrupted');
    await server.responseClosed(server.requests.length - 1);

    chat.type(`/undo${KEYS.enter}`);
    await chat.waitFor('Took back the last prompt');
    await chat.waitFor(/› tell me a long story\s*$/m);
    chat.type(KEYS.ctrlC); // clears the line given back
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
    expect(messes(chat.lines())).toEqual([]);

    // The log file keeps everything; read through the store, the undone prompt and reply are gone.
    expect(readOnlySessionLog(dirs.home).some((m) => m.content === 'tell me a long story')).toBe(true);
    const sessionId = readdirSync(join(dirs.home, 'sessions'))[0] ?? '';
    const log = readSession(dirs.home, sessionId)?.log ?? [];
    expect(log.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['show me a tiny program', 'make it say hello world', 'clean up']);
    expect(log.some((m) => m.content.includes('Once upon a time'))).toBe(false);

    // fence -r opens the latest session of the workspace and shows its end.
    const resumed = startChat(['-r']);
    await resumed.waitFor('/help for commands');
    const shown = resumed.screen().join('\n');
    expect(shown).toContain(`Resuming ${sessionId}`);
    expect(shown).toContain('Understood, I kept the file.');
    resumed.type(KEYS.ctrlD);
    expect(await resumed.exited).toBe(0);
  });
});
