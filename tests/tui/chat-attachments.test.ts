import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { readOnlySessionLog, useCliRun } from '../support/run-cli';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();
let running: TerminalSession | undefined;

afterEach(() => {
  running?.kill();
  running = undefined;
});

function startChat(model = 'openai/gpt-test', args: string[] = []): TerminalSession {
  running = startTerminalSession({ args: ['-m', model, ...args], cwd: cli.dirs.workspace, env: { ...cli.env(), EDITOR: 'false' }, cols: 120, rows: 40 });
  return running;
}

/** Text a terminal sends for a bracketed paste of `text` (what dragging a file onto it does). */
function pasted(text: string): string {
  return `\x1b[200~${text}\x1b[201~`;
}

describe('attachments in the chat', () => {
  it('attaches an image dragged onto the terminal, shows it with its size, and sends it', { timeout: 60_000 }, async () => {
    const home = dirname(cli.dirs.workspace);
    mkdirSync(join(home, 'Pictures'));
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#c03030' } }).png().toBuffer();
    writeFileSync(join(home, 'Pictures', 'Shot 1.png'), png);
    cli.server.reply((r) => r.text('A red square.'));
    const chat = startChat();
    await chat.waitFor('/help for commands');
    // A terminal pastes a dragged file's path quoted when it holds a space.
    chat.type(pasted(`'${join(home, 'Pictures', 'Shot 1.png')}' `));
    chat.type(`what is this?${KEYS.enter}`);
    await chat.waitFor('A red square.');
    expect(chat.screen().join('\n')).toContain('[image: ~/Pictures/Shot 1.png 40×30]');
    const prompt = readOnlySessionLog(cli.dirs.home).find((message) => message.role === 'user');
    expect(prompt?.content).toBe('[image: ~/Pictures/Shot 1.png] what is this?');
    expect(prompt?.meta?.images).toEqual([expect.objectContaining({ width: 40, height: 30 })]);
    expect(JSON.stringify(cli.server.requests[0]?.body)).toContain(png.toString('base64'));
    chat.type(KEYS.ctrlD);
    expect(await chat.exited).toBe(0);
  });

  it("shows a text file put into the prompt, and an escaped pasted path that is not an image stays text", { timeout: 60_000 }, async () => {
    writeFileSync(join(cli.dirs.workspace, 'notes.md'), '- ship it\n');
    cli.server.reply((r) => r.text('Shipped.'));
    const chat = startChat();
    await chat.waitFor('/help for commands');
    chat.type(`sum up @notes.md and ${join(cli.dirs.workspace, 'notes.md')}${KEYS.enter}`);
    await chat.waitFor('Shipped.');
    expect(chat.screen().join('\n')).toContain('[file: notes.md · 10 B]');
    const prompt = readOnlySessionLog(cli.dirs.home).find((message) => message.role === 'user');
    expect(prompt?.content).toBe(`sum up notes.md and ${join(cli.dirs.workspace, 'notes.md')}\n\n\`\`\`notes.md\n- ship it\n\`\`\``);
    chat.type(KEYS.ctrlD);
    expect(await chat.exited).toBe(0);
  });

  it('refuses a denied path with one line, sends nothing, and gives the prompt back to edit', { timeout: 60_000 }, async () => {
    const home = dirname(cli.dirs.workspace);
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh', 'id_rsa'), 'SECRET-KEY-MATERIAL\n');
    writeFileSync(join(cli.dirs.workspace, 'todo.txt'), 'water the plants\n');
    cli.server.reply((r) => r.text('The plants.'));
    const chat = startChat();
    await chat.waitFor('/help for commands');
    chat.type(`check @~/.ssh/id_rsa${KEYS.enter}`);
    await chat.waitFor(/^✗ ~\/\.ssh\/id_rsa cannot be attached: the sandbox denies it \(keys, credentials and fence's own data stay out of the\n  model's reach\)$/m);
    // Given back: the prompt after the refusal holds the line as typed.
    await chat.waitFor(/^✗ [^]*\n› check @~\/\.ssh\/id_rsa$/m);
    expect(cli.server.requests).toHaveLength(0);
    // The prompt given back is edited: the denied mention replaced by a file the sandbox allows.
    chat.type('\x7f'.repeat('~/.ssh/id_rsa'.length));
    chat.type(`todo.txt${KEYS.enter}`);
    await chat.waitFor('The plants.');
    expect(cli.server.requests).toHaveLength(1);
    const body = JSON.stringify(cli.server.requests[0]?.body);
    expect(body).toContain('water the plants');
    expect(body).not.toContain('SECRET-KEY-MATERIAL');
    chat.type(KEYS.ctrlD);
    expect(await chat.exited).toBe(0);
  });

  it('gives the prompt back when the model reads text only, having sent and kept nothing', { timeout: 60_000 }, async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000000' } }).png().toBuffer();
    writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
    const chat = startChat('openai/o3-mini');
    await chat.waitFor('/help for commands');
    chat.type(`what is @shot.png${KEYS.enter}`);
    await chat.waitFor(/^✗ .*o3-mini/m, 10_000);
    await chat.waitFor(/^✗ [^]*\n› what is @shot\.png$/m);
    expect(cli.server.requests).toHaveLength(0);
    expect(readOnlySessionLog(cli.dirs.home).filter((message) => message.role !== 'system')).toEqual([]);
    // Ctrl-C drops the prompt given back; Ctrl-D at the empty prompt leaves.
    chat.type(KEYS.ctrlC);
    await chat.waitFor(/^› $/m);
    chat.type(KEYS.ctrlD);
    expect(await chat.exited).toBe(0);
  });

  it('gives --image to the first prompt sent, and only to it', { timeout: 60_000 }, async () => {
    const png = await sharp({ create: { width: 12, height: 10, channels: 3, background: '#00aa00' } }).png().toBuffer();
    writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
    cli.server.reply((r) => r.text('Green.')).reply((r) => r.text('Nothing new.'));
    const chat = startChat('openai/gpt-test', ['--image', 'shot.png']);
    await chat.waitFor('/help for commands');
    chat.type(`what colour?${KEYS.enter}`);
    await chat.waitFor('Green.');
    expect(chat.screen().join('\n')).toContain('[image: shot.png 12×10]');
    chat.type(`and now?${KEYS.enter}`);
    await chat.waitFor('Nothing new.');
    const prompts = readOnlySessionLog(cli.dirs.home).filter((message) => message.role === 'user');
    expect(prompts.map((message) => message.meta?.images?.length ?? 0)).toEqual([1, 0]);
    chat.type(KEYS.ctrlD);
    expect(await chat.exited).toBe(0);
  });
});
