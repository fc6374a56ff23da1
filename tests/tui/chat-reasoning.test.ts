import { afterEach, describe, expect, it } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import { ChatView } from '../../src/tui/chat-view';
import { createStyle, stripAnsi } from '../../src/tui/terminal-style';
import { useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

describe('thinking in the chat view', () => {
  it('folds the thinking to one dim line before the reply, and keeps it whole for /thinking', () => {
    let screen = '';
    const view = new ChatView({ write: (text: string) => (screen += text), columns: 60 }, createStyle(true));
    const thought = 'First I look at the files.\nThen I count them, which takes a while to explain in full detail here.';
    view.onEvent({ type: 'turn', turn: 1 });
    view.onEvent({ type: 'thinking', text: thought.slice(0, 20) });
    view.onEvent({ type: 'thinking', text: thought.slice(20) });
    expect(screen).toBe('');
    view.onEvent({ type: 'text', text: 'There are 2 files.\n' });
    view.onEvent({ type: 'reply_end', message: createMessage('assistant', 'There are 2 files.') });
    view.endRun();

    const lines = screen.split('\n').filter(Boolean);
    expect(lines[0]).toContain('\x1b[2m'); // dim
    const fold = stripAnsi(lines[0] ?? '');
    expect(fold.startsWith('✻ First I look at the files. Then I')).toBe(true);
    expect(fold.endsWith('(/thinking shows it)')).toBe(true);
    expect(fold.length).toBeLessThanOrEqual(60);
    expect(stripAnsi(lines[1] ?? '')).toBe('There are 2 files.');
    expect(view.lastThinking).toBe(thought);
  });
});

const cli = useCliRun();
let running: TerminalSession | undefined;
afterEach(() => {
  running?.kill();
  running = undefined;
});

describe('/reasoning in the chat', () => {
  it("shows the level, follows the model's default until one is set, and refuses a bad one", { timeout: 60_000 }, async () => {
    running = startTerminalSession({ args: ['-m', 'openai/gpt-test'], cwd: cli.dirs.workspace, env: { ...cli.env(), EDITOR: 'false' }, cols: 100, rows: 40 });
    const chat = running;
    await chat.waitFor(/^› $/m);
    chat.type(`/reasoning${KEYS.enter}`);
    await chat.waitFor('reasoning not set (none sent: no default for openai/gpt-test)');
    chat.type(`/model openai/gpt-5${KEYS.enter}`);
    await chat.waitFor('Now using openai/gpt-5');
    chat.type(`/reasoning${KEYS.enter}`);
    await chat.waitFor('reasoning medium (the default of openai/gpt-5)');
    chat.type(`/reasoning max${KEYS.enter}`);
    await chat.waitFor('/reasoning takes one of off, low, medium, high');
    chat.type(`/reasoning high${KEYS.enter}`);
    await chat.waitFor('Reasoning high from the next request on.');
    // A level the person chose holds across models, but is not sent to one that does not reason (its API would refuse it).
    chat.type(`/model openai/gpt-4.1${KEYS.enter}`);
    await chat.waitFor('openai/gpt-4.1 does not reason, so the reasoning level high is not sent');
    chat.type(`/reasoning${KEYS.enter}`);
    await chat.waitFor('reasoning not set (high chosen, not sent: openai/gpt-4.1 does not reason)');
    // Two lines pasted at once are one input: not a model id.
    chat.type(`/model openai/gpt-5${KEYS.enter}/reasoning${KEYS.enter}`);
    await chat.waitFor('holds a space or a line break');
    // Back on a model that reasons, the chosen level is sent again.
    chat.type(`/model openai/gpt-5${KEYS.enter}`);
    await chat.waitFor(/Now using openai\/gpt-5;[\s\S]*Now using openai\/gpt-5;[\s\S]*› $/m);
    chat.type(`/reasoning${KEYS.enter}`);
    await chat.waitFor(/reasoning high \(\/reasoning/);
    chat.type(`/thinking${KEYS.enter}`);
    await chat.waitFor('No thinking shown yet in this chat.');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });
});
