import { afterEach, describe, expect, it } from 'vitest';
import { useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();
let running: TerminalSession | undefined;

afterEach(() => {
  running?.kill();
  running = undefined;
});

/**
 * The lines that hold `text` on the screen, from the line where it starts: as many as it takes
 * for their words, joined by single spaces, to be the text. Fails when the text is not there
 * whole (a word cut between two lines joins as two words).
 */
function linesHolding(lines: readonly string[], text: string): string[] {
  const first = text.split(' ').slice(0, 2).join(' ');
  const start = lines.findIndex((line) => line.includes(first));
  expect(start, `"${first}" on the screen:\n${lines.join('\n')}`).toBeGreaterThanOrEqual(0);
  const held: string[] = [];
  let joined = '';
  for (const line of lines.slice(start)) {
    held.push(line);
    const words = held.length === 1 ? line.slice(line.indexOf(first)) : line.trim();
    joined = joined ? `${joined} ${words}` : words;
    if (joined.length >= text.length) break;
  }
  expect(joined.replace(/ +/g, ' '), `the screen:\n${lines.join('\n')}`).toBe(text);
  return held;
}

/** The column where a line's text starts. */
const indentOf = (line: string) => line.length - line.trimStart().length;

describe.each([40, 60])('the chat on a terminal %i columns wide', (cols) => {
  it('wraps the header and /help at word boundaries, continuation lines under their text', { timeout: 60_000 }, async () => {
    running = startTerminalSession({ args: ['-m', 'openai/gpt-test'], cwd: cli.dirs.workspace, env: cli.env(), cols, rows: 60 });
    const chat = running;
    await chat.waitFor(/^› $/m);
    chat.type(`/help${KEYS.enter}`);
    await chat.waitFor('Confirmations');
    await chat.waitFor(/^› $/m);
    const lines = chat.lines();
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(cols);

    const header = lines.findIndex((line) => line.startsWith('fence · '));
    const id = /session\s+(\S+)/.exec(lines.slice(header, header + 3).join(' '))?.[1] ?? '';
    const head = linesHolding(lines, `fence · openai/gpt-test · session ${id} · asks before changing anything`);
    expect(head.length).toBeGreaterThan(1);
    for (const line of head.slice(1)) expect(indentOf(line)).toBe('fence '.length);
    const keys = linesHolding(lines, '/help for commands · Ctrl-C stops a reply · Ctrl-D leaves');
    if (cols === 40) expect(keys.length).toBe(2);
    for (const line of keys.slice(1)) expect(indentOf(line)).toBe(2);

    // A summary beside its command, or under it for one too wide, wraps under its own first word.
    const summaries = [
      "keep this session's last program that worked (or the trace named) as a saved program",
      'copy the session and go on in the copy (the original stays as it is)',
      'run a tool yourself, e.g. /shell ls; the model sees the result',
    ];
    for (const summary of summaries) {
      const held = linesHolding(lines, summary);
      const column = held[0]?.indexOf(summary.split(' ')[0] ?? '') ?? -1;
      for (const line of held.slice(1)) expect(indentOf(line), line).toBe(column);
    }
    const confirm = linesHolding(lines, 'y run it · n do not (n <reason> tells the model why) · e edit it in $EDITOR first · a yes to all in this session');
    expect(confirm.length).toBeGreaterThan(1);
    for (const line of confirm) expect(indentOf(line)).toBe(2);
    linesHolding(lines, 'Enter sends · a line ending with \\ , Alt-Enter or a paste adds lines · Up/Down walk the history');

    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });
});
