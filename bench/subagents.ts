/**
 * What subagents cost: a child's start up to its first request (against a new `fence -n`
 * process's), eight children at once against one, and what a program fanning out to twenty
 * children that each read a file adds to the parent's context. The built CLI against the fake
 * model server, which answers each child's task on its own.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { startFakeLlm, type FakeLlm, type WireBody } from '../tests/support/fake-llm';
import { median } from './ptc';

/** The figures of `subagentFigures`, in milliseconds unless named otherwise. */
export interface SubagentFigures {
  /** Spawn of `fence -n` → its first request (median). */
  processStartMs: number;
  /** The parent's `agent` call sent → the child's first request (median, one child). */
  childStartMs: number;
  /** The program's block sent → the parent's next request, with 1 and with 8 children answering at once (medians). */
  oneChildMs: number;
  eightChildrenMs: number;
  /** Twenty children each reading a 2 kB file: characters the program's result adds to the parent, and those the twenty files hold. */
  fanOutAddedChars: number;
  filesChars: number;
}

const block = (tag: string, body: string) => `\`\`\`${tag}\n${body.trimEnd()}\n\`\`\`\n`;

function firstUser(body: WireBody): string {
  const content = body.messages?.find((message) => message.role === 'user')?.content;
  return typeof content === 'string' ? content : '';
}

const replies = (body: WireBody) => body.messages?.filter((message) => message.role === 'assistant').length ?? 0;

interface Run {
  server: FakeLlm;
  spawnedAt: number;
}

/** Runs `fence -n` in a fresh workspace whose user config offers subagents, until it exits. */
async function fenceRun(root: string, bin: string, env: Record<string, string>, script: (server: FakeLlm, workspace: string) => void): Promise<Run> {
  const server = await startFakeLlm();
  const workspace = mkdtempSync(join(root, 'ws-'));
  const config = join(root, 'config', 'fence');
  mkdirSync(config, { recursive: true });
  writeFileSync(join(config, 'config.toml'), '[agents]\nmax_parallel = 8\n');
  script(server, workspace);
  const spawnedAt = performance.now();
  try {
    await execa(process.execPath, [bin, '-n', '-m', 'local/bench', 'fan out'], {
      cwd: workspace,
      env: { ...env, XDG_CONFIG_HOME: join(root, 'config'), OPENAI_BASE_URL: server.openaiBaseURL },
      extendEnv: false,
      input: '',
      timeout: 120_000,
    });
    return { server, spawnedAt };
  } finally {
    await server.close();
  }
}

/** A parent whose program hands `count` tasks to children; each child reads its file first when `read`. */
function fanOut(count: number, read: boolean) {
  return (server: FakeLlm, workspace: string) => {
    for (let i = 0; i < count; i++) {
      const task = `task ${i}`;
      if (read) {
        writeFileSync(join(workspace, `f${i}.txt`), `line of file ${i} `.repeat(2048 / 16));
        server.route((body) => firstUser(body) === task && replies(body) === 0, (r) => r.text(block('read', `f${i}.txt`)));
      }
      server.route((body) => firstUser(body) === task && replies(body) === (read ? 1 : 0), (r) => r.text(block('complete', `f${i}: ok`)));
    }
    const program = [
      '// intent: hand each task to a subagent',
      `const done = await gather(Array.from({ length: ${count} }, (_, i) => agent({ task: \`task \${i}\`, tools: ['read'] })));`,
      "print(done.map((child) => child.result).join('\\n'));",
    ].join('\n');
    server.reply((r) => r.text(block('ptc', program)));
    server.reply((r) => r.text('Done.'));
  };
}

/** The parent's requests: those whose first user message is its prompt. */
const parentRequests = (server: FakeLlm) => server.requests.filter((request) => firstUser(request.body) === 'fan out');

/** Measures the figures; `env` is the clean environment the other benchmarks start fence with. */
export async function subagentFigures(root: string, bin: string, env: Record<string, string>, rounds = 5): Promise<SubagentFigures> {
  const processStart: number[] = [];
  const childStart: number[] = [];
  const one: number[] = [];
  const eight: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const count of [1, 8]) {
      const { server, spawnedAt } = await fenceRun(root, bin, env, fanOut(count, false));
      const [first, next] = parentRequests(server);
      const sent = first?.lastFrameAt;
      if (!first || !next || sent === undefined) throw new Error(`the parent with ${count} children did not make its two requests`);
      (count === 1 ? one : eight).push(next.receivedAt - sent);
      if (count === 1) {
        processStart.push(first.receivedAt - spawnedAt);
        const child = server.requests.find((request) => firstUser(request.body) === 'task 0');
        if (!child) throw new Error('the child made no request');
        childStart.push(child.receivedAt - sent);
      }
    }
  }
  const { server } = await fenceRun(root, bin, env, fanOut(20, true));
  const last = parentRequests(server).at(-1);
  const result = last?.body.messages?.at(-1)?.content;
  if (typeof result !== 'string') throw new Error('the parent did not get the program result');
  return {
    processStartMs: median(processStart),
    childStartMs: median(childStart),
    oneChildMs: median(one),
    eightChildrenMs: median(eight),
    fanOutAddedChars: result.length,
    filesChars: 20 * 2048,
  };
}
