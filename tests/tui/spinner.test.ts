import { describe, expect, it } from 'vitest';
import { Spinner } from '../../src/tui/spinner';
import { createStyle, visibleWidth } from '../../src/tui/terminal-style';

/** A terminal stream that keeps what is written to it. */
function terminal(columns: number) {
  const writes: string[] = [];
  return { writes, out: { columns, write: (text: string) => writes.push(text) }, last: () => writes.at(-1) ?? '' };
}

describe('Spinner', () => {
  it('shows a detail after the time, keeping its end when the line is narrow, and drops it on the next label', () => {
    const screen = terminal(40);
    const spinner = new Spinner(screen.out, createStyle(false), true);
    spinner.start('thinking');
    spinner.relabel('writing', 'there was a quiet village by the sea where nobody hurried');
    const line = screen.last().replace('\r\x1b[2K', '');
    expect(line).toMatch(/^. writing \d\.\ds · …/);
    expect(line.endsWith('nobody hurried')).toBe(true);
    expect(visibleWidth(line)).toBeLessThanOrEqual(39);
    spinner.relabel('running shell');
    expect(screen.last()).not.toContain('·');
    spinner.stop();
  });

  it('leaves the detail out when there is no room for it', () => {
    const screen = terminal(24);
    const spinner = new Spinner(screen.out, createStyle(false), true);
    spinner.start('writing');
    spinner.relabel('writing', 'a long line of the reply');
    expect(screen.last()).not.toContain('·');
    spinner.stop();
  });
});
