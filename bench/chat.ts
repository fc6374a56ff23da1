/**
 * Figures of the interactive chat: how long fence takes from the Enter key to the request
 * leaving (the built CLI in a real pseudo-terminal, the fake server over loopback HTTP), and what
 * drawing one streamed chunk of a reply costs (the chat's view and markdown renderer, in process).
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as pty from 'node-pty';
import { ChatView } from '../src/tui/chat-view';
import { createStyle } from '../src/tui/terminal-style';
import { startFakeLlm } from '../tests/support/fake-llm';
import { median } from './ptc';

const BIN = resolve(import.meta.dirname, '../bin/fence.js');

/**
 * Enter → the request's headers at the fake server, for `prompts` prompts of one chat session:
 * the first prompt (a second after the prompt appeared, with cold code paths) and the median of
 * the later ones.
 */
export async function keystrokeToRequest(prompts = 20): Promise<{ firstMs: number; medianMs: number }> {
  const server = await startFakeLlm();
  const root = mkdtempSync(join(tmpdir(), 'fence-bench-chat-'));
  const workspace = join(root, 'work');
  mkdirSync(workspace);
  for (let i = 0; i <= prompts; i++) server.reply((r) => r.text(`Reply ${i}.`));
  const child = pty.spawn(process.execPath, [BIN, '-m', 'local/bench'], {
    cols: 100,
    rows: 30,
    cwd: workspace,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, LANG: 'C.UTF-8', TERM: 'xterm-256color', FENCE_HOME: join(root, 'home'), OPENAI_BASE_URL: server.openaiBaseURL },
  });
  let output = '';
  let notify: (() => void) | undefined;
  child.onData((data) => {
    output += data;
    notify?.();
  });
  /** Waits until the output since `from` contains `text`. */
  const waitFor = (text: string, from: number) =>
    new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`no "${text}" from the chat within 20 s`)), 20_000);
      const check = () => {
        if (!output.includes(text, from)) return;
        clearTimeout(timer);
        notify = undefined;
        done();
      };
      notify = check;
      check();
    });
  try {
    await waitFor('Ctrl-D leaves', 0);
    await waitFor('›', 0);
    // A person reads the first lines before typing; the shell warming up at start is done by then.
    await new Promise((done) => setTimeout(done, 1000));
    const times: number[] = [];
    for (let i = 0; i <= prompts; i++) {
      const mark = output.length;
      const t0 = performance.now();
      child.write(`prompt ${i}\r`);
      await server.waitForRequests(i + 1);
      times.push(server.requests[i]!.arrivedAt - t0);
      await waitFor(`Reply ${i}.`, mark);
      await waitFor('›', output.indexOf(`Reply ${i}.`, mark));
    }
    return { firstMs: times[0]!, medianMs: median(times.slice(1)) };
  } finally {
    child.kill();
    await server.close();
  }
}

/** A reply of about `bytes` with prose, lists, inline marks and highlighted code. */
function sampleReply(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const part =
      i % 4 === 3
        ? `\`\`\`ts\nexport function step${i}(input: string): number {\n  // count the words\n  return input.split(/\\s+/).length + ${i};\n}\n\`\`\`\n`
        : i % 4 === 2
          ? `- item ${i} with \`code\` and **bold** text\n- another item, *emphasised*\n`
          : `Paragraph ${i} explains the change in plain words, with a [link](https://example.com/${i}) and \`inline code\`.\n\n`;
    parts.push(part);
    size += part.length;
  }
  return parts.join('');
}

/**
 * The cost of drawing one streamed chunk: a 200 kB reply fed to the chat's view as `text`
 * events of 12 characters (a typical streamed delta), colour on, into a sink. Median of 5 runs.
 */
export function renderCostPerChunk(): { perChunkUs: number; chunks: number } {
  const reply = sampleReply(200_000);
  const chunkSize = 12;
  const chunks = Math.ceil(reply.length / chunkSize);
  const sink = { write: () => true, columns: 100, isTTY: false };
  const times: number[] = [];
  for (let run = 0; run < 5; run++) {
    const view = new ChatView(sink, createStyle(true));
    const t0 = performance.now();
    for (let at = 0; at < reply.length; at += chunkSize) view.onEvent({ type: 'text', text: reply.slice(at, at + chunkSize) });
    view.endRun();
    times.push(performance.now() - t0);
  }
  return { perChunkUs: (median(times) * 1000) / chunks, chunks };
}
