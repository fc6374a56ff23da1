import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();
let running: TerminalSession | undefined;

afterEach(() => {
  running?.kill();
  running = undefined;
});

describe('images in the chat', () => {
  it('sends an image the model read again from a fork, and again after a resume', { timeout: 60_000 }, async () => {
    const png = await sharp({ create: { width: 24, height: 12, channels: 3, background: '#30a050' } }).png().toBuffer();
    writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
    const data = `data:image/png;base64,${png.toString('base64')}`;
    cli.server
      .reply((r) => r.text('```read shot.png\n```\n'))
      .reply((r) => r.text('A green strip.'))
      .reply((r) => r.text('Still green in the fork.'))
      .reply((r) => r.text('Green after the resume.'));

    const start = (args: string[] = []) => {
      running = startTerminalSession({ args: ['-m', 'openai/gpt-test', ...args], cwd: cli.dirs.workspace, env: { ...cli.env(), EDITOR: 'false' }, cols: 100, rows: 40 });
      return running;
    };
    const chat = start();
    await chat.waitFor('/help for commands');
    chat.type(`what is in shot.png?${KEYS.enter}`);
    await chat.waitFor('A green strip.');
    expect(chat.screen().join('\n')).toContain('shot.png: PNG 24×12.');
    expect(JSON.stringify(cli.server.requests[1]?.body)).toContain(data);
    chat.type(`/fork${KEYS.enter}`);
    await chat.waitFor('Forked: now in session');
    chat.type(`and now?${KEYS.enter}`);
    await chat.waitFor('Still green in the fork.');
    expect(JSON.stringify(cli.server.requests[2]?.body)).toContain(data);
    chat.type(KEYS.ctrlD);
    expect(await chat.exited).toBe(0);

    const resumed = start(['-r']);
    await resumed.waitFor('/help for commands');
    resumed.type(`once more${KEYS.enter}`);
    await resumed.waitFor('Green after the resume.');
    expect(JSON.stringify(cli.server.requests[3]?.body)).toContain(data);
    resumed.type(KEYS.ctrlD);
    expect(await resumed.exited).toBe(0);
  });
});
