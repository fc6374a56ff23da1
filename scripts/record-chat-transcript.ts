/**
 * Records what a person sees in a chat with fence: the built CLI in a real pseudo-terminal,
 * a scripted model (the test suite's fake server), the screen kept by xterm.js. Prints the
 * terminal's whole text at the end, for docs/chat.md.
 *
 *   npm run build && npx tsx scripts/record-chat-transcript.ts
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeLlm } from '../tests/support/fake-llm';
import { KEYS, startTerminalSession } from '../tests/support/terminal-session';

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
await server.close();
