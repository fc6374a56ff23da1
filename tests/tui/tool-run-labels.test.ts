import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { FENCE_BIN, runFence, useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();
let running: TerminalSession | undefined;

afterEach(() => {
  running?.kill();
  running = undefined;
});

/** The user's own config.toml with a command tool `over_limit`, which has no block of its own; its folder is XDG_CONFIG_HOME. */
function userTool(): Record<string, string> {
  const xdg = join(dirname(cli.dirs.workspace), 'xdg');
  mkdirSync(join(xdg, 'fence'), { recursive: true });
  writeFileSync(join(xdg, 'fence', 'config.toml'), '[tools.over_limit]\ndescription = "Says which budgets are over their limit"\ncommand = ["echo", \'{"over": ["travel"]}\']\n');
  return { ...cli.env(), XDG_CONFIG_HOME: xdg };
}

/** Resolves once `path` exists (the command that makes it has started), polling. */
async function until(path: string): Promise<void> {
  while (!existsSync(path)) await new Promise((resolve) => setTimeout(resolve, 50));
}

const SLOW_SHELL = '```shell\ntouch started.txt; sleep 30\n```\n';

describe('the -n progress on stderr', () => {
  it('names a call block by the tool it calls, where it starts and where it ends', async () => {
    cli.server.reply((r) => r.text('```call over_limit\n{}\n```\n')).reply((r) => r.text('Travel is over.'));
    const run = await runFence(['-n', '-m', 'local/test', 'which budgets are over?'], { cwd: cli.dirs.workspace, env: userTool() });
    expect(run.exitCode).toBe(0);
    const lines = run.stderr.split('\n');
    const start = lines.indexOf('[running over_limit]');
    const end = lines.indexOf('[over_limit done]');
    expect(start).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    expect(lines.slice(start + 1, end).join('\n')).toContain('travel');
    expect(run.stderr).not.toContain('[running call');
  });

  it('labels a command stopped by Ctrl-C interrupted, not failed', { timeout: 60_000 }, async () => {
    cli.server.reply((r) => r.text(SLOW_SHELL));
    const fence = execa(process.execPath, [FENCE_BIN, '-n', '-m', 'local/test', 'wait a while'], {
      cwd: cli.dirs.workspace,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(cli.dirs.workspace), LANG: 'C.UTF-8', ...cli.env() },
      extendEnv: false,
      input: '',
      reject: false,
    });
    await until(join(cli.dirs.workspace, 'started.txt'));
    fence.kill('SIGINT');
    const run = await fence;
    expect(run.stderr).toContain('[running shell]');
    expect(run.stderr).toContain('[shell interrupted]');
    expect(run.stderr).not.toContain('[shell failed]');
  });

  it('still labels a command that failed on its own failed', async () => {
    cli.server.reply((r) => r.text('```shell\nfalse\n```\n')).reply((r) => r.text('It failed.'));
    const run = await runFence(['-n', '-m', 'local/test', 'run false'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toContain('[shell failed]');
  });
});

describe('the chat', () => {
  function startChat(env: Record<string, string> = cli.env()): TerminalSession {
    running = startTerminalSession({ args: ['-m', 'openai/gpt-test', '-y'], cwd: cli.dirs.workspace, env, cols: 100, rows: 40 });
    return running;
  }

  it('labels a command stopped by Ctrl-C interrupted, not failed', { timeout: 60_000 }, async () => {
    cli.server.reply((r) => r.text(SLOW_SHELL));
    const chat = startChat();
    await chat.waitFor('/help for commands');
    chat.type(`wait a while${KEYS.enter}`);
    await until(join(cli.dirs.workspace, 'started.txt'));
    chat.type(KEYS.ctrlC);
    await chat.waitFor(/✗ shell interrupted \d/);
    expect(chat.screen().join('\n')).not.toMatch(/✗ shell failed/);
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it('names a call block by the tool it calls, once', { timeout: 60_000 }, async () => {
    cli.server.reply((r) => r.text('```call over_limit\n{}\n```\n')).reply((r) => r.text('Travel is over.'));
    const chat = startChat(userTool());
    await chat.waitFor('/help for commands');
    chat.type(`which budgets are over?${KEYS.enter}`);
    await chat.waitFor('Travel is over.');
    const line = chat.screen().find((text) => text.startsWith('✓ over_limit'));
    expect(line).toMatch(/^✓ over_limit \d+ ms$|^✓ over_limit \d+\.\d s$/);
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });
});
