import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSession } from '../../src/conversation/session-store';
import { inputItems } from '../support/fake-llm-wire';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();
let running: TerminalSession | undefined;

afterEach(() => {
  running?.kill();
  running = undefined;
});

/** Resolves once the prompt waits for input on the last line of the screen. */
function promptShown(chat: TerminalSession): Promise<void> {
  return chat.waitFor(/^› $/m);
}

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

/** The text of a request's last input item (openai/ models get Responses API requests), as the fake server received it. */
function lastMessageOf(index: number): string {
  const request = cli.server.requests[index];
  const last = request ? inputItems(request.body).at(-1) : undefined;
  return JSON.stringify(last?.content ?? last?.output ?? '');
}

/** Signs of a messy screen: spinner frames left behind, escape sequences shown as text, raw fences. */
function messes(lines: readonly string[]): string[] {
  return lines.filter((line) => /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]|\[\?25|\[\?2004|\x1b/.test(line));
}

/** A reply whose program counts the lines of notes.txt. */
const COUNT_NOTES_BLOCK = '```ptc\n// intent: count the lines of the notes\nconst text = await read({ path: "notes.txt" });\nprint(text.split("\\n").filter(Boolean).length);\n```\n';

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
    // The line still being written shows at the end of the status line until it is rendered.
    await chat.waitFor(/writing \d+\.\ds · there was a\s*$/m);
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

  it("shows an SDK's own warning as one line of the chat, once, with the screen left clean", { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    server.reply((r) => r.text('First answer.')).reply((r) => r.text('Second answer.'));
    // A model the Anthropic SDK (at the version fence pins) warns about as deprecated.
    running = startTerminalSession({
      args: ['-m', 'anthropic/claude-sonnet-4-5'],
      cwd: dirs.workspace,
      env: { FENCE_HOME: dirs.home, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'test-key', EDITOR: 'false' },
    });
    const chat = running;
    await chat.waitFor('/help for commands');
    chat.type(`hello${KEYS.enter}`);
    await chat.waitFor(/^First answer\.$/m);
    await promptShown(chat);
    chat.type(`again${KEYS.enter}`);
    await chat.waitFor(/^Second answer\.$/m);
    await promptShown(chat);
    const lines = chat.lines();
    expect(lines.filter((line) => line.includes('deprecated'))).toEqual([expect.stringMatching(/^⚠ Anthropic SDK: The model 'claude-sonnet-4-5' is deprecated/)]);
    expect(lines.join('\n')).not.toContain('Please migrate');
    expect(messes(lines)).toEqual([]);
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it('stops a running tool with Ctrl-C and keeps the shell; -y runs tools unasked', { timeout: 60_000 }, async () => {
    const { server } = cli;
    server
      .reply((r) => r.text('```shell\necho started; sleep 30\n```\n'))
      .reply((r) => r.text('```shell\necho still here\n```\n'))
      .reply((r) => r.text('The shell survived.'));
    const chat = startChat(['-y']);
    await chat.waitFor('tools run without asking (-y)');
    chat.type(`wait a while${KEYS.enter}`);
    await chat.waitFor(/running shell \d/);
    chat.type(KEYS.ctrlC);
    await chat.waitFor('■ interrupted');
    expect(chat.screen().join('\n')).not.toContain('Run this command?');
    const firstPrompt = lastMessageOf(0);
    expect(server.requests).toHaveLength(1);

    chat.type(`go on${KEYS.enter}`);
    await chat.waitFor('The shell survived.');
    expect(chat.screen().join('\n')).toContain('│ still here');
    // The interrupted call got its result, and the conversation went on from it.
    expect(JSON.stringify(server.requests[1]?.body.input)).toContain('Interrupted before it finished.');
    // Only the run stopped: nothing tells the model that its shell is gone.
    expect(JSON.stringify(server.requests[1]?.body.input)).not.toContain('new shell');
    expect(firstPrompt).toContain('wait a while');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it('runs slash commands: help, tools, a tool of its own, tokens, rename, fork, export, unknown ones', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    server.reply((r) => r.text('Hello there.').usage({ input: 1200, output: 30 })).reply((r) => r.text('From the other model.'));
    const chat = startChat();
    await promptShown(chat);
    chat.type(`/undo${KEYS.enter}`);
    await chat.waitFor('Nothing to undo yet.');
    chat.type(`hi${KEYS.enter}`);
    await chat.waitFor('Hello there.');
    chat.type(`/compact${KEYS.enter}`);
    await chat.waitFor('No summary: the conversation is too short to compact.');
    chat.type(`/model openai/gpt-other${KEYS.enter}`);
    await chat.waitFor('Now using openai/gpt-other');
    chat.type(`and you?${KEYS.enter}`);
    await chat.waitFor('From the other model.');
    expect(server.requests.map((request) => request.body.model)).toEqual(['gpt-test', 'gpt-other']);
    chat.type(`/log${KEYS.enter}`);
    await chat.waitFor(/you › and you\?/);

    chat.type(`/help${KEYS.enter}`);
    await chat.waitFor('/undo [n]');
    chat.type(`/tools${KEYS.enter}`);
    await chat.waitFor(/shell \(also bash, sh\)/);
    chat.type(`/shell echo made by hand > by-hand.txt; echo done${KEYS.enter}`);
    await chat.waitFor('│ done');
    expect(readFileSync(join(dirs.workspace, 'by-hand.txt'), 'utf8')).toBe('made by hand\n');
    chat.type(`/tokens${KEYS.enter}`);
    await chat.waitFor(/tokens 1\.2k in · 35 out · 2 requests/);
    chat.type(`/frobnicate${KEYS.enter}`);
    await chat.waitFor('Unknown command /frobnicate.');
    chat.type(`/rename greeting${KEYS.enter}`);
    await chat.waitFor('is now named "greeting"');
    chat.type(`/export notes.md${KEYS.enter}`);
    await chat.waitFor('Wrote the conversation to');
    const exported = readFileSync(join(dirs.workspace, 'notes.md'), 'utf8');
    expect(exported).toContain('# fence session greeting');
    expect(exported).toContain('Hello there.');
    expect(exported).toContain('The user ran `shell` themselves');
    chat.type(`/fork${KEYS.enter}`);
    await chat.waitFor('Forked: now in session');
    // A program run after the fork leaves its trace with the fork.
    chat.type(`/ptc print(40 + 2)${KEYS.enter}`);
    await chat.waitFor('│ 42');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);

    const ids = readdirSync(join(dirs.home, 'sessions'));
    expect(ids).toHaveLength(2);
    const sessions = ids.map((id) => readSession(dirs.home, id));
    const fork = sessions.find((session) => session?.info.forkedFrom !== undefined);
    expect(fork?.log.map((m) => m.content)).toContain('hi');
    expect(fork?.info.model).toBe('openai/gpt-other');
    // The model sees what the person ran by hand.
    expect(fork?.log.some((m) => m.meta?.notice === 'user_tool' && m.content.includes('done'))).toBe(true);
    const forkTraces = readdirSync(join(dirs.home, 'sessions', fork?.info.id ?? '', 'traces'));
    expect(forkTraces).toHaveLength(1);
    expect(JSON.parse(readFileSync(join(dirs.home, 'sessions', fork?.info.id ?? '', 'traces', forkTraces[0] ?? ''), 'utf8')).sessionId).toBe(fork?.info.id);
  });

  it('sends a pasted text of several lines as one prompt, keeps history across sessions, leaves on Ctrl-C twice', { timeout: 60_000 }, async () => {
    const { server } = cli;
    server.reply((r) => r.text('Got three lines.')).reply((r) => r.text('Again.'));
    const first = startChat();
    await promptShown(first);
    first.type('\x1b[200~line one\nline two\nline three\x1b[201~');
    await first.waitFor('line three');
    first.type(KEYS.enter);
    await first.waitFor('Got three lines.');
    expect(lastMessageOf(0)).toContain('line one\\nline two\\nline three');
    // Pressed while the run is still ending, Ctrl-C would stop that run instead.
    await promptShown(first);
    first.type(KEYS.ctrlC);
    await first.waitFor('Ctrl-C again or Ctrl-D to leave');
    first.type(KEYS.ctrlC);
    expect(await first.exited).toBe(0);

    const second = startChat();
    await second.waitFor('/help for commands');
    second.type(KEYS.up);
    await second.waitFor(/› line one/);
    second.type(KEYS.enter);
    await second.waitFor('Again.');
    expect(lastMessageOf(1)).toContain('line one\\nline two\\nline three');
    second.type(KEYS.ctrlD);
    expect(await second.exited).toBe(0);
  });

  it('honours NO_COLOR and a narrow terminal', { timeout: 60_000 }, async () => {
    const { server } = cli;
    server.reply((r) => r.text('# Title\n\n- one **bold** item\n- a long item that is certainly wider than the narrow terminal of this test\n'));
    running = startTerminalSession({ args: ['-m', 'openai/gpt-test'], cwd: cli.dirs.workspace, env: { ...cli.env(), NO_COLOR: '1' }, cols: 40, rows: 30 });
    const chat = running;
    await chat.waitFor('Ctrl-D leaves');
    chat.type(`hi${KEYS.enter}`);
    await chat.waitFor('• one bold item');
    chat.type(KEYS.ctrlD);
    expect(await chat.exited).toBe(0);
    // No colours at all: only cursor and screen control sequences.
    expect(chat.raw).not.toMatch(/\x1b\[[0-9;]*m/);
    expect(messes(chat.lines())).toEqual([]);
  });

  it("asks about a program's call that a policy rule marks ask, and runs the program on yes, however long the answer takes", { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    writeFileSync(
      join(dirs.workspace, 'fence.toml'),
      '[ptc]\nwall_time_s = 1\n\n[[policy]]\ntool = "read"\nprincipal = "program:*"\naction = "ask"\nreason = "programs read files only with a yes"\n',
    );
    cli.trust();
    writeFileSync(join(dirs.workspace, 'notes.txt'), 'alpha\nbeta\n');
    server
      .reply((r) => r.text(COUNT_NOTES_BLOCK))
      .reply((r) => r.text('The notes have two lines.'));
    const chat = startChat();
    await promptShown(chat);
    chat.type(`count the lines of notes.txt${KEYS.enter}`);
    await chat.waitFor('Call read?');
    const screen = chat.screen().join('\n');
    expect(screen).toContain('policy asks for a yes: programs read files only with a yes');
    expect(screen).toMatch(/called by program:[0-9a-f]{12}/);
    // Longer than the program's 1 s of wall time: a person's time to answer is not counted.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    chat.type(`y${KEYS.enter}`);
    await chat.waitFor('The notes have two lines.');
    expect(lastMessageOf(1)).toContain('2');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it("keeps the session's last program that worked with /save-program", { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    writeFileSync(join(dirs.workspace, 'notes.txt'), 'alpha\nbeta\n');
    server
      .reply((r) => r.text(COUNT_NOTES_BLOCK))
      .reply((r) => r.text('The notes have two lines.'));
    const chat = startChat();
    await promptShown(chat);
    chat.type(`/save-program count_notes${KEYS.enter}`);
    await chat.waitFor('nothing to save');
    chat.type(`count the lines of notes.txt${KEYS.enter}`);
    await chat.waitFor('The notes have two lines.');
    chat.type(`/save-program count_notes${KEYS.enter}`);
    // The report arrives in pieces through the terminal: wait for its last line before reading it.
    await chat.waitFor('next: fence programs approve count_notes@1');
    const screen = chat.screen().join('\n');
    expect(screen).toContain('saved count_notes@1');
    expect(screen).toContain('1 recorded test (1 tool call), replayed: passed');
    expect(screen).toContain('next: fence programs approve count_notes@1');
    expect(readFileSync(join(dirs.home, 'programs', 'count_notes', 'v1.js'), 'utf8')).toContain('// intent: count the lines of the notes');
    chat.type(`/save-program count_notes${KEYS.enter}`);
    await chat.waitFor('count_notes@1 has this code already');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);

    // Approved, it is named when the next chat opens.
    expect((await runFence(['programs', 'approve', 'count_notes@1'], { cwd: dirs.workspace, env: cli.env() })).exitCode).toBe(0);
    const next = startChat();
    await next.waitFor('saved programs offered as tools: count_notes');
    next.type(`/exit${KEYS.enter}`);
    expect(await next.exited).toBe(0);
  });

  it('puts back the files a prompt changed when /undo takes it back, and says what it cannot', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    writeFileSync(join(dirs.workspace, 'keep.txt'), 'original\n');
    server
      .reply((r) => r.text('```save keep.txt\nchanged\n```\n'))
      .reply((r) => r.text('```save made.txt\nnew file\n```\n'))
      .reply((r) => r.text('```shell\necho by shell > shell.txt\n```\n'))
      .reply((r) => r.text('Changed three files.'));
    const chat = startChat(['-y']);
    await promptShown(chat);
    chat.type(`change the files${KEYS.enter}`);
    await chat.waitFor('Changed three files.');
    expect(readFileSync(join(dirs.workspace, 'keep.txt'), 'utf8')).toBe('changed\n');
    chat.type(`/undo${KEYS.enter}`);
    await chat.waitFor('Took back the last prompt');
    await chat.waitFor(/Put back (keep\.txt, made\.txt|made\.txt, keep\.txt) as they were before\./);
    await chat.waitFor('What its shell commands and Python cells changed stays as it is.');
    expect(readFileSync(join(dirs.workspace, 'keep.txt'), 'utf8')).toBe('original\n');
    expect(existsSync(join(dirs.workspace, 'made.txt'))).toBe(false);
    expect(readFileSync(join(dirs.workspace, 'shell.txt'), 'utf8')).toBe('by shell\n');
    chat.type(KEYS.ctrlC);
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it('keeps counting what /undo took back in the cost line and /tokens: it was paid for', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    // $0.10 for 1,000 tokens in and $0.10 for 100 out: each reply costs $0.2000.
    writeFileSync(join(dirs.workspace, 'fence.toml'), '[models."openai/gpt-test"]\ninput_per_mtok = 100\noutput_per_mtok = 1000\n');
    cli.trust();
    for (const answer of ['First.', 'Second.', 'Third.']) server.reply((r) => r.text(answer).usage({ input: 1000, output: 100 }));
    const chat = startChat();
    await promptShown(chat);
    chat.type(`one${KEYS.enter}`);
    await chat.waitFor('1.0k in · 100 out · $0.2000');
    chat.type(`two${KEYS.enter}`);
    await chat.waitFor('2.0k in · 200 out · $0.4000');
    chat.type(`/undo${KEYS.enter}`);
    await chat.waitFor('Took back the last prompt');
    chat.type(KEYS.ctrlC);
    chat.type(`/tokens${KEYS.enter}`);
    await chat.waitFor('tokens 2.0k in · 200 out · 2 requests (1 taken back by /undo, still paid for)');
    await chat.waitFor('cost $0.4000');
    // The context holds only what is left: the first exchange.
    await chat.waitFor(/context 1\.0k tokens in the last request/);
    chat.type(`three${KEYS.enter}`);
    await chat.waitFor('3.0k in · 300 out · $0.6000');
    chat.type(`/fork${KEYS.enter}`);
    await chat.waitFor('Forked: now in session');
    chat.type(`/tokens${KEYS.enter}`);
    await chat.waitFor('tokens 3.0k in · 300 out · 3 requests (1 taken back by /undo, still paid for)');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);

    // A reader of the logs finds the same: the taken-back reply is out of the conversation, not out of the bill.
    for (const id of readdirSync(join(dirs.home, 'sessions'))) {
      const session = readSession(dirs.home, id);
      expect(session?.log.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['First.', 'Third.']);
      expect(session?.undone.map((m) => m.content)).toEqual(['two', 'Second.']);
    }
  });

  it('shows the XML calls of --tool-format xml as code blocks, as markdown ones are', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    server
      .reply((r) => r.text('I will write it.\n\n<tool-use><save args="hello.txt">\nhello from xml\n</save></tool-use>\n'))
      .reply((r) => r.text('Saved.'));
    const chat = startChat(['--tool-format', 'xml']);
    await promptShown(chat);
    chat.type(`write hello.txt${KEYS.enter}`);
    await chat.waitFor('Create hello.txt?');
    const screen = chat.screen().join('\n');
    expect(screen).toContain('┌ save hello.txt');
    expect(screen).toContain('  hello from xml');
    expect(screen).not.toContain('<tool-use>');
    chat.type(`y${KEYS.enter}`);
    await chat.waitFor('Saved.');
    expect(readFileSync(join(dirs.workspace, 'hello.txt'), 'utf8')).toBe('hello from xml\n');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it('edits a command in $EDITOR before it runs, and tells the model what ran', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    writeFileSync(join(dirs.workspace, 'hello.txt'), 'hello\n');
    // An "editor" that changes the command in the file it is given, as a person would.
    const editor = join(dirs.workspace, '..', 'edit.sh');
    writeFileSync(editor, '#!/bin/sh\nsed -i "s/rm hello.txt/cat hello.txt/" "$1"\n', { mode: 0o755 });
    server.reply((r) => r.text('```shell\nrm hello.txt\n```\n')).reply((r) => r.text('It printed hello.'));
    const chat = startChat([], { EDITOR: editor });
    await promptShown(chat);
    chat.type(`tidy up${KEYS.enter}`);
    await chat.waitFor('Run this command?');
    chat.type(`e${KEYS.enter}`);
    await chat.waitFor('edited:');
    expect(chat.screen().join('\n')).toContain('┃ cat hello.txt');
    chat.type(`y${KEYS.enter}`);
    await chat.waitFor('It printed hello.');
    expect(existsSync(join(dirs.workspace, 'hello.txt'))).toBe(true);
    const result = lastMessageOf(1);
    expect(result).toContain('The user edited `command` of this shell call before it ran');
    expect(result).toContain('cat hello.txt');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it('sends a prompt typed, Enter included, while the reply was still streaming, once the reply is done', { timeout: 60_000 }, async () => {
    const { server } = cli;
    server.reply((r) => r.text('Working on it,\n').delay(400).text('done.\n')).reply((r) => r.text('Second answer.'));
    const chat = startChat();
    await promptShown(chat);
    chat.type(`first${KEYS.enter}`);
    await chat.waitFor('Working on it,');
    chat.type(`second${KEYS.enter}`);
    await chat.waitFor('Second answer.');
    expect(lastMessageOf(1)).toContain('second');
    expect(server.requests).toHaveLength(2);
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it('declines the call and stops the run on Ctrl-C at a confirmation; the next prompt goes on', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    server.reply((r) => r.text('```save notes.txt\ndraft\n```\n')).reply((r) => r.text('Fine, no file.'));
    const chat = startChat();
    await promptShown(chat);
    chat.type(`write notes${KEYS.enter}`);
    await chat.waitFor('Create notes.txt?');
    chat.type(KEYS.ctrlC);
    await chat.waitFor('■ interrupted');
    expect(existsSync(join(dirs.workspace, 'notes.txt'))).toBe(false);
    expect(server.requests).toHaveLength(1);
    await promptShown(chat);
    chat.type(`never mind${KEYS.enter}`);
    await chat.waitFor('Fine, no file.');
    // The cut call has its result in the next request: declined, because the run was stopped.
    expect(JSON.stringify(server.requests[1]?.body.input)).toContain('The user declined this save call');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });
});
