import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { FENCE_BIN, runFence, useCliRun } from '../support/run-cli';
import { startTerminalSession } from '../support/terminal-session';

const cli = useCliRun();

/** Runs `fence -n` against the fake server in the test's workspace. */
function fence(args: string[]) {
  return runFence(['-m', 'local/test', '-n', ...args], { cwd: cli.dirs.workspace, env: cli.env() });
}

/** Runs `fence sessions …`. */
function sessions(args: string[]) {
  return runFence(['sessions', ...args], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
}

/** Each request the fake server answers costs $0.0200 at these prices (10 tokens in, 5 out). */
const PRICES = '[models."local/test"]\ninput_per_mtok = 1000\noutput_per_mtok = 2000\n';

describe('fence sessions list', () => {
  it('has a header, then each session newest first: id, start, model, requests, cost, and its name or first prompt', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), PRICES);
    cli.trust();
    cli.server.reply((r) => r.text('Hi.')).reply((r) => r.text('Stopped.'));
    expect((await fence(['--name', 'older', 'say hi\nand  then stop', '-', 'stop'])).exitCode).toBe(0);
    cli.server.reply((r) => r.text('Sure.'));
    expect((await fence(['a'.repeat(300)])).exitCode).toBe(0);

    const list = await sessions(['list']);

    expect(list.exitCode).toBe(0);
    const lines = list.stdout.split('\n');
    expect(lines[0]).toMatch(/^session\s+started\s+model\s+requests\s+cost\s+name or first prompt$/);
    expect(lines).toHaveLength(3);
    const newest = readdirSync(join(cli.dirs.home, 'sessions')).find((id) => id !== 'older') ?? '';
    expect(lines[1]).toMatch(new RegExp(`^${newest}\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\s+local/test\\s+1\\s+\\$0\\.0200\\s+a+…$`));
    expect(lines[1]?.length).toBe(160);
    // The prompt on one line; two requests, and the column lines up with the header.
    expect(lines[2]).toMatch(/^older\s+\S+ \S+\s+local\/test\s+2\s+\$0\.0400\s+say hi and then stop$/);
    expect(lines[2]?.indexOf('say hi')).toBe(lines[0]?.indexOf('name or first prompt'));
  });

  it('counts the requests of replies taken back by /undo, shows a name given later, and marks a running session', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), PRICES);
    cli.trust();
    cli.server.reply((r) => r.text('One.')).reply((r) => r.text('Two.'));
    expect((await fence(['--name', 'undone', 'first'])).exitCode).toBe(0);
    expect((await fence(['--resume', 'undone', 'second'])).exitCode).toBe(0);
    const dir = join(cli.dirs.home, 'sessions', 'undone');
    appendFileSync(join(dir, 'conversation.jsonl'), `${JSON.stringify({ undo: 2, timestamp: new Date().toISOString() })}\n`);
    const info = join(dir, 'session.json');
    writeFileSync(info, JSON.stringify({ ...JSON.parse(readFileSync(info, 'utf8')), name: 'the renamed one' }));
    cli.server.reply((r) => r.text('Thinking').hang());
    const running = execa(process.execPath, [FENCE_BIN, '-m', 'local/test', '-n', '--name', 'busy', 'think hard'], {
      cwd: cli.dirs.workspace,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(cli.dirs.workspace), ...cli.env() },
      extendEnv: false,
      input: '',
      reject: false,
    });
    try {
      await cli.server.waitForRequests(3);
      const list = await sessions(['list']);
      const line = (id: string) => list.stdout.split('\n').find((text) => text.startsWith(`${id} `)) ?? '';
      expect(line('undone')).toMatch(/\s2\s+\$0\.0400\s+the renamed one$/);
      expect(line('busy')).toMatch(/\s0\s+\$0\.0000\s+\[running\] think hard$/);
    } finally {
      running.kill('SIGKILL');
      await running;
    }
  });

  it('cuts its lines to the width of the terminal', async () => {
    cli.server.reply((r) => r.text('Sure.'));
    expect((await fence([`please ${'really '.repeat(40)}do it`])).exitCode).toBe(0);
    const terminal = startTerminalSession({ args: ['sessions', 'list'], cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home }, cols: 90 });
    expect(await terminal.exited).toBe(0);
    const lines = terminal.lines();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/please really .*…$/);
    expect(lines[1]?.length).toBe(90);
    // No model prices for local/test: the cost is not made up.
    expect(lines[1]).toMatch(/local\/test\s+1\s+-\s+please/);
  });

  it('shows a fence run or mcp serve session by the command that made it, with no cost, and an older one by its model', { timeout: 60_000 }, async () => {
    writeFileSync(join(cli.dirs.workspace, 'count.js'), '// intent: count the files\nreturn (await glob({ pattern: "*.js" })).length;\n');
    const run = await runFence(['run', 'count.js'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(run.exitCode).toBe(0);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [FENCE_BIN, 'mcp', 'serve', '--tools'],
      cwd: cli.dirs.workspace,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(cli.dirs.workspace), FENCE_HOME: cli.dirs.home },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'Test Client', version: '1.0.0' });
    await client.connect(transport);
    try {
      await client.callTool({ name: 'glob', arguments: { pattern: '*.js' } });
    } finally {
      await client.close();
    }
    // A session of program runs made before fence recorded the command: its model says which.
    const old = join(cli.dirs.home, 'sessions', '20250101-000000-aaaaaa');
    mkdirSync(old, { recursive: true });
    writeFileSync(join(old, 'session.json'), JSON.stringify({ id: '20250101-000000-aaaaaa', model: 'none (fence run)', programsOnly: true, workspace: cli.dirs.workspace, toolFormat: 'markdown', tools: [], createdAt: '2025-01-01T00:00:00.000Z' }));

    const list = await sessions(['list']);

    expect(list.exitCode).toBe(0);
    const lines = list.stdout.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(/\snone \(fence mcp serve\)\s+0\s+—\s+fence mcp serve$/);
    expect(lines[2]).toMatch(/\snone \(fence run\)\s+0\s+—\s+fence run count\.js$/);
    expect(lines[3]).toMatch(/^20250101-000000-aaaaaa\s.*\s0\s+—\s+fence run$/);
    expect(list.stdout).not.toContain('(no prompt yet)');
    expect(list.stdout).not.toContain('$0.0000');
    const shown = await sessions(['show', '20250101']);
    expect(shown.stdout.split('\n')[1]).toBe('no model requests: the program runs of fence run (fence trace list shows them)');
    const served = lines[1]?.split(' ')[0] ?? '';
    expect((await sessions(['show', served])).stdout.split('\n')[1]).toBe('no model requests: the program runs of fence mcp serve (fence trace list shows them)');
  });

  it('says so when there are no sessions', async () => {
    const list = await sessions(['list']);
    expect(list.exitCode).toBe(0);
    expect(list.stdout).toBe('no sessions yet');
  });
});

describe('fence sessions show', () => {
  it('finds a session by the start of its id, folds the system prompt to one line, and --system-prompt shows it whole', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), PRICES);
    cli.trust();
    cli.server.reply((r) => r.text('Hello back.'));
    expect((await fence(['--name', 'greeting-2026', 'hello'])).exitCode).toBe(0);

    const shown = await sessions(['show', 'greet']);

    expect(shown.exitCode).toBe(0);
    const lines = shown.stdout.split('\n');
    expect(lines[0]).toBe(`session greeting-2026 · model local/test · workspace ${cli.dirs.workspace}`);
    expect(lines[1]).toBe('1 request · 10 in · 5 out · $0.0200');
    expect(shown.stdout).toMatch(/\n── system prompt · \S+ · \d+ lines, not shown \(--system-prompt shows it\)\n\n── user · /);
    expect(shown.stdout).not.toContain('You are fence');
    expect(shown.stdout).toContain('\nhello\n');
    expect(shown.stdout).toContain('\nHello back.');

    const whole = await sessions(['show', 'greeting-2026', '--system-prompt']);
    expect(whole.exitCode).toBe(0);
    expect(whole.stdout).toMatch(/\n── system · \S+\nYou are fence/);
    expect(whole.stdout.split('\n').length).toBeGreaterThan(lines.length + 20);
  });

  it('refuses a start shared by several ids, naming them, and one that begins none', async () => {
    cli.server.reply((r) => r.text('A.')).reply((r) => r.text('B.')).reply((r) => r.text('C.'));
    for (const name of ['fix-login', 'fix-logout', 'feature']) expect((await fence(['--name', name, 'go'])).exitCode).toBe(0);

    const ambiguous = await sessions(['show', 'fix-log']);
    expect(ambiguous.exitCode).toBe(1);
    expect(ambiguous.stdout).toBe('');
    expect(ambiguous.stderr).toMatch(/^fence: "fix-log" begins 2 session ids: (fix-login, fix-logout|fix-logout, fix-login); give more of the id$/);

    const exact = await sessions(['show', 'fix-login']);
    expect(exact.exitCode).toBe(0);
    expect(exact.stdout).toContain('session fix-login ·');

    const none = await sessions(['show', 'nope']);
    expect(none.exitCode).toBe(1);
    expect(none.stderr).toBe(`fence: no session "nope" in ${join(cli.dirs.home, 'sessions')} (fence sessions list shows them)`);
  });

  it('says what /undo took back and counts its requests, without showing those messages', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), PRICES);
    cli.trust();
    cli.server.reply((r) => r.text('One.')).reply((r) => r.text('Two.'));
    expect((await fence(['--name', 'undone', 'first'])).exitCode).toBe(0);
    expect((await fence(['--resume', 'undone', 'second'])).exitCode).toBe(0);
    appendFileSync(join(cli.dirs.home, 'sessions', 'undone', 'conversation.jsonl'), `${JSON.stringify({ undo: 2, timestamp: new Date().toISOString() })}\n`);

    const shown = await sessions(['show', 'undone']);

    expect(shown.stdout.split('\n')[1]).toBe('2 requests · 20 in · 10 out · $0.0400 · 2 messages taken back by /undo, not shown (their 1 request counted)');
    expect(shown.stdout).toContain('One.');
    expect(shown.stdout).not.toContain('Two.');
  });
});
