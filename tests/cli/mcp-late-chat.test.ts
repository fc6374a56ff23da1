import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession } from '../support/terminal-session';

const cli = useCliRun();

/** The plain-script MCP server whose start is slow, endless or failing (see the file). */
const LATE_SERVER = resolve(import.meta.dirname, '../support/mcp-late-server.mjs');

/** A trusted fence.toml naming the late server as `calc` with `env`; its marks go to `marks/` in the workspace. */
function configureLate(env: Record<string, string>): { marks: string; tag: string } {
  const marks = join(cli.dirs.workspace, 'marks');
  mkdirSync(marks, { recursive: true });
  const tag = `late-${randomUUID()}`;
  const calc = { command: process.execPath, args: [LATE_SERVER, tag], env: { MARKS: marks, ...env }, timeout: 2 };
  writeFileSync(join(cli.dirs.workspace, 'fence.toml'), stringify({ mcp: { servers: { calc } } }));
  cli.trust();
  return { marks, tag };
}

/** The processes whose command line holds `tag`. */
function processesTagged(tag: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(tag);
      } catch {
        return false;
      }
    })
    .map(Number);
}

function chat() {
  return startTerminalSession({ args: ['-m', 'openai/gpt-test', '-y'], cwd: cli.dirs.workspace, env: cli.env() });
}

describe('the chat with an MCP server that starts late', () => {
  it('answers the first prompt before the server has answered, then tells the model of its tools and calls one', { timeout: 90_000 }, async () => {
    const { marks } = configureLate({ ANSWER_AFTER_MS: '3000' });
    const answered: boolean[] = [];
    cli.server.route(() => {
      answered.push(existsSync(join(marks, 'answered')));
      return false;
    }, (r) => r.text('unused'));
    cli.server
      .reply((r) => r.text(`\`\`\`shell\nuntil [ -e ${join(marks, 'listed-1')} ]; do sleep 0.1; done; echo listed\n\`\`\``))
      .reply((r) => r.text('```call calc_get_sum\n{"a": 4, "b": 5}\n```'))
      .reply((r) => r.text('The sum is nine.'));
    const session = chat();
    try {
      await session.waitFor('tools run without asking (-y)', 30_000);
      session.type(`add 4 and 5${KEYS.enter}`);
      await session.waitFor('The sum is nine.', 60_000);
      session.type(KEYS.ctrlD);
      expect(await session.exited).toBe(0);
    } finally {
      session.kill();
    }
    expect(answered[0]).toBe(false);
    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.some((m) => m.role === 'system' && !m.meta?.toolResult && m.content.startsWith('MCP server calc finished starting'))).toBe(true);
    expect(log.filter((m) => m.meta?.toolResult).map((m) => m.content)).toContain('The sum is 9');
  });

  it('leaves without waiting for a server that never answers, with one line, and the server does not outlive it', { timeout: 90_000 }, async () => {
    const { tag } = configureLate({ NEVER_ANSWER: '1' });
    cli.server.reply((r) => r.text('Hello there.'));
    const session = chat();
    try {
      await session.waitFor('tools run without asking (-y)', 30_000);
      session.type(`hello${KEYS.enter}`);
      await session.waitFor('Hello there.', 30_000);
      // A server still starting: its process runs until the chat ends.
      expect(processesTagged(tag).length).toBeGreaterThan(0);
      session.type(KEYS.ctrlD);
      expect(await session.exited).toBe(0);
    } finally {
      session.kill();
    }
    const said = session.lines().filter((line) => line.includes('MCP server calc'));
    expect(said).toEqual(['fence: MCP server calc did not start: it was still starting when the session ended']);
    for (let i = 0; i < 100 && processesTagged(tag).length > 0; i++) await new Promise((done) => setTimeout(done, 50));
    expect(processesTagged(tag)).toEqual([]);
  });
});
