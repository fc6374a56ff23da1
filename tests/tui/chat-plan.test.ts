import { afterEach, describe, expect, it } from 'vitest';
import { planLines } from '../../src/tui/plan-view';
import { createStyle } from '../../src/tui/terminal-style';
import { useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();
let running: TerminalSession | undefined;

afterEach(() => {
  running?.kill();
  running = undefined;
});

function startChat(args: string[] = []): TerminalSession {
  running = startTerminalSession({ args: ['-m', 'openai/gpt-test', ...args], cwd: cli.dirs.workspace, env: { ...cli.env(), EDITOR: 'false' }, cols: 100, rows: 40 });
  return running;
}

const PLAN = '[x] Read the parser\n[~] Fix the date bug\n[ ] Add a test';

describe('the plan in the chat', () => {
  it('shows the checklist as it changes, keeps it in a fork, and shows it again when the session is resumed', { timeout: 60_000 }, async () => {
    cli.server
      .reply((r) => r.text(`First a plan.\n\n\`\`\`plan\n${PLAN}\n\`\`\`\n`))
      .reply((r) => r.text('```plan\n[x] Read the parser\n[x] Fix the date bug\n[~] Add a test\n```\n'))
      .reply((r) => r.text('Planned and half done.'))
      .reply((r) => r.text('Going on in the fork.'));

    const chat = startChat();
    await chat.waitFor('/help for commands');
    chat.type(`fix the date bug${KEYS.enter}`);
    await chat.waitFor('Planned and half done.');
    const screen = chat.screen().join('\n');
    expect(screen).toMatch(/│ ✓ Read the parser\n.*│ ▸ Fix the date bug\n.*│ ○ Add a test/);
    expect(screen).toMatch(/│ ✓ Fix the date bug\n.*│ ▸ Add a test/);
    // The checklist is drawn, not the text the model reads back.
    expect(screen).not.toContain('Plan (1 of 3 done)');
    chat.type(`/fork${KEYS.enter}`);
    await chat.waitFor('Forked: now in session');
    chat.type(`go on${KEYS.enter}`);
    await chat.waitFor('Going on in the fork.');
    // The fork's request still shows the model its plan.
    expect(JSON.stringify(cli.server.requests.at(-1)?.body)).toContain('[~] Add a test');
    chat.type(KEYS.ctrlD);
    expect(await chat.exited).toBe(0);

    const resumed = startChat(['-r']);
    await resumed.waitFor('/help for commands');
    const shown = resumed.screen().join('\n');
    expect(shown).toMatch(/Plan:\n.*│ ✓ Read the parser\n.*│ ✓ Fix the date bug\n.*│ ▸ Add a test/);
    resumed.type(KEYS.ctrlD);
    expect(await resumed.exited).toBe(0);
  });

  it('dims done items, makes the one in progress bold, and shows nothing of a text that would drive the terminal', () => {
    const lines = planLines(
      [
        { text: 'Read the parser', status: 'done' },
        { text: 'Fix \u001b[2Jthe bug', status: 'in_progress' },
        { text: 'Add a test', status: 'pending' },
      ],
      createStyle(true),
      80,
    );
    expect(lines[0]).toContain('\u001b[2m✓ Read the parser');
    expect(lines[1]).toContain('\u001b[1m');
    expect(lines[1]).not.toContain('\u001b[2J');
    expect(lines[2]).toMatch(/○ Add a test$/);
    expect(planLines([], createStyle(false), 80)).toEqual(['  │ (plan cleared)']);
  });
});
