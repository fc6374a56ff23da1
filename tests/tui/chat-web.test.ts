import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../support/page-server';
import { readOnlySessionLog, useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();
let running: TerminalSession | undefined;
let unlisted: PageServer;
let listed: PageServer;

beforeEach(async () => {
  unlisted = await startPageServer();
  listed = await startPageServer();
});
afterEach(async () => {
  running?.kill();
  running = undefined;
  await unlisted.close();
  await listed.close();
});

describe('fetch in the chat', () => {
  it('asks about a host [web] allow does not list (a yes never opens a private address), and reads a listed one unasked', { timeout: 60_000 }, async () => {
    unlisted.page('/admin', { headers: { 'content-type': 'text/plain' }, body: 'admin panel' });
    listed.page('/notes.txt', { headers: { 'content-type': 'text/plain' }, body: 'release notes: 2.0 drops Node 18' });
    const xdg = join(dirname(cli.dirs.workspace), 'xdg');
    mkdirSync(join(xdg, 'fence'), { recursive: true });
    writeFileSync(join(xdg, 'fence', 'config.toml'), `[web]\nallow = ["127.0.0.1:${listed.port}"]\n`);
    cli.server
      .reply((r) => r.text(`\`\`\`fetch\n${unlisted.url}/admin\n\`\`\`\n`))
      .reply((r) => r.text('That address is refused.'))
      .reply((r) => r.text(`\`\`\`fetch\n${listed.url}/notes.txt\n\`\`\`\n`))
      .reply((r) => r.text('Version 2.0 drops Node 18.'))
      .reply((r) => r.text(`\`\`\`fetch\n${unlisted.url}/admin\n\`\`\`\n`))
      .reply((r) => r.text('I left it.'));
    running = startTerminalSession({ args: ['-m', 'openai/gpt-test'], cwd: cli.dirs.workspace, env: { ...cli.env(), XDG_CONFIG_HOME: xdg, EDITOR: 'false' }, cols: 200, rows: 50 });
    const chat = running;
    await chat.waitFor('/help for commands');

    chat.type(`open the admin page${KEYS.enter}`);
    await chat.waitFor('Call fetch?');
    const asked = chat.screen().join('\n');
    expect(asked).toContain('policy asks for a yes: 127.0.0.1 is not in [web] allow');
    expect(asked).toContain(`${unlisted.url}/admin`);
    chat.type(`y${KEYS.enter}`);
    await chat.waitFor('That address is refused.');
    // The person's yes admits the host, not an address of this machine.
    expect(chat.screen().join('\n')).toContain('127.0.0.1 resolves to 127.0.0.1, an address of this machine or of a private network');
    expect(unlisted.requests).toEqual([]);

    chat.type(`what changed in 2.0?${KEYS.enter}`);
    await chat.waitFor('Version 2.0 drops Node 18.');
    expect(listed.requests.map((request) => request.path)).toEqual(['/notes.txt']);

    chat.type(`try the admin page again${KEYS.enter}`);
    await chat.waitFor(/try the admin page again[^]*Call fetch\?/);
    chat.type(`n${KEYS.enter}`);
    await chat.waitFor('I left it.');
    expect(unlisted.requests).toEqual([]);

    const results = readOnlySessionLog(cli.dirs.home).filter((m) => m.meta?.tool === 'fetch');
    expect(results.map((m) => m.content.split('\n')[0])).toEqual([
      '127.0.0.1 resolves to 127.0.0.1, an address of this machine or of a private network; fence reaches one only when [web] allow lists it as "private:127.0.0.1" or by its address',
      `<untrusted-content source="${listed.url}/notes.txt">`,
      'The user declined this fetch call; it was not run.',
    ]);
    // Only two questions were asked: the listed host was read unasked.
    expect(chat.lines().join('\n').match(/Call fetch\?/g)).toHaveLength(2);
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });

  it('shows the searches of the hosted web search as they run, and their answer', { timeout: 60_000 }, async () => {
    cli.server.reply((r) => r.webSearch('bun 1.2 release notes').text('Bun 1.2 added a Postgres client.'));
    running = startTerminalSession({
      args: ['-m', 'anthropic/claude-test', '--web-search'],
      cwd: cli.dirs.workspace,
      env: { FENCE_HOME: cli.dirs.home, ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key', EDITOR: 'false' },
      cols: 120,
      rows: 30,
    });
    const chat = running;
    await chat.waitFor('/help for commands');
    chat.type(`what is new in bun 1.2?${KEYS.enter}`);
    await chat.waitFor(/^Bun 1\.2 added a Postgres client\.$/m);
    expect(chat.screen().join('\n')).toMatch(/⌕ web search: bun 1\.2 release notes\n(.*\n)*Bun 1\.2 added a Postgres client\./);
    expect(cli.server.requests[0]?.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
  });
});
