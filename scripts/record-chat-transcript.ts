/**
 * Records what a person sees in a chat with fence: the built CLI in a real pseudo-terminal,
 * a scripted model (the test suite's fake server), the screen kept by xterm.js. Prints the
 * terminal's whole text at the end, for docs/chat.md; with a file name as argument, also
 * writes the first session's terminal, colours included, as an SVG picture there.
 *
 *   npm run build && npx tsx scripts/record-chat-transcript.ts [docs/chat-session.svg]
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeLlm } from '../tests/support/fake-llm';
import { KEYS, startTerminalSession } from '../tests/support/terminal-session';

/** The xterm palette's first 16 colours, as a dark terminal theme shows them. */
const PALETTE = ['#1e1e1e', '#f14c4c', '#23d18b', '#e5e510', '#3b8eea', '#d670d6', '#29b8db', '#e5e5e5', '#8a8a8a', '#f14c4c', '#23d18b', '#f5f543', '#3b8eea', '#d670d6', '#29b8db', '#ffffff'];

const server = await startFakeLlm();
const root = mkdtempSync(join(tmpdir(), 'fence-transcript-'));
const workspace = join(root, 'greeter');
mkdirSync(workspace);
writeFileSync(join(workspace, 'greet.py'), 'def greet(name):\n    print("Hello " + name)\n\ngreet("world")\n');

server
  .reply((r) =>
    r
      .text('## What `greet.py` does\n\nIt defines **one function**, `greet`, and calls it once:\n\n')
      .text('- `greet(name)` prints a greeting\n- the last line greets *the world*\n\n')
      .text('The same in TypeScript would be:\n\n```ts\nfunction greet(name: string): void {\n  console.log(`Hello ${name}`); // one line\n}\n```\n'),
  )
  .reply((r) =>
    r.text('I will add the annotations and an f-string.\n\n```patch greet.py\n<<<<<<< ORIGINAL\ndef greet(name):\n    print("Hello " + name)\n=======\ndef greet(name: str) -> None:\n    print(f"Hello, {name}!")\n>>>>>>> UPDATED\n```\n'),
  )
  .reply((r) => r.text('Done: `greet` now has type annotations and uses an f-string.'))
  .reply((r) => r.text('```shell\npython3 greet.py && rm -rf __pycache__ build\n```\n'))
  .reply((r) => r.text('Understood: I will leave the folders alone.'))
  .reply((r) => r.text('Here is a long history of greetings, from the first\n').delay(150).text('recorded "hello" in ').hang());

const env = { FENCE_HOME: join(root, 'home'), OPENAI_BASE_URL: server.openaiBaseURL, EDITOR: 'false' };
const chat = startTerminalSession({ args: ['-m', 'openai/gpt-5'], cwd: workspace, env, cols: 88, rows: 60 });
const prompt = () => chat.waitFor(/^› $/m);
const say = async (text: string) => {
  await prompt();
  chat.type(text);
  chat.type(KEYS.enter);
};

await say('what does greet.py do?');
await chat.waitFor('// one line');
await say('add the type annotations');
await chat.waitFor('Change greet.py?');
chat.type(`y${KEYS.enter}`);
await say('run it, then clean up');
await chat.waitFor('Run this command?');
chat.type(`n leave the build folder alone${KEYS.enter}`);
await chat.waitFor('leave the folders alone');
await say('tell me the history of hello');
await chat.waitFor('from the first');
chat.type(KEYS.ctrlC);
await chat.waitFor('interrupted');
await say('/undo');
await chat.waitFor('Took back the last prompt');
chat.type(KEYS.ctrlC);
await say('/tokens');
await chat.waitFor('context');
await say('/exit');
await chat.exited;
const first = chat.lines();

const again = startTerminalSession({ args: ['-r'], cwd: workspace, env, cols: 88, rows: 30 });
await again.waitFor(/^› $/m);
again.type(KEYS.ctrlD);
await again.exited;

console.log(['$ fence -m openai/gpt-5', ...first, '', '$ fence -r', ...again.lines()].join('\n'));
const picture = process.argv[2];
if (picture) writeFileSync(picture, await terminalSvg(chat.raw, 88));
await server.close();

/** Replays `raw` into a terminal emulator `cols` wide and draws every line it holds as SVG text. */
async function terminalSvg(raw: string, cols: number): Promise<string> {
  const { Terminal } = createRequire(import.meta.url)('@xterm/headless') as typeof import('@xterm/headless');
  const terminal = new Terminal({ cols, rows: 200, scrollback: 2000, allowProposedApi: true });
  await new Promise<void>((done) => terminal.write(raw, done));
  const buffer = terminal.buffer.active;
  let last = buffer.length - 1;
  while (last > 0 && !buffer.getLine(last)?.translateToString(true)) last--;
  const cellW = 8.4;
  const lineH = 18;
  const rows: string[] = [];
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  for (let y = 0; y <= last; y++) {
    const line = buffer.getLine(y);
    if (!line) continue;
    const spans: string[] = [];
    for (let x = 0; x < cols; x++) {
      const cell = line.getCell(x);
      const chars = cell?.getChars() ?? '';
      if (!cell || !chars || chars === ' ') continue;
      const colour = cell.isFgPalette() && cell.getFgColor() < 16 ? PALETTE[cell.getFgColor()] : '#d4d4d4';
      const style = [
        `fill="${cell.isDim() ? '#8a8a8a' : colour}"`,
        cell.isBold() ? 'font-weight="bold"' : '',
        cell.isItalic() ? 'font-style="italic"' : '',
        cell.isUnderline() ? 'text-decoration="underline"' : '',
      ].filter(Boolean);
      spans.push(`<text x="${(12 + x * cellW).toFixed(1)}" y="${20 + y * lineH}" ${style.join(' ')}>${escape(chars)}</text>`);
    }
    rows.push(spans.join(''));
  }
  const width = Math.ceil(24 + cols * cellW);
  const height = 24 + (last + 1) * lineH;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">`,
    `<rect width="100%" height="100%" rx="6" fill="#1e1e1e"/>`,
    ...rows,
    '</svg>',
    '',
  ].join('\n');
}
