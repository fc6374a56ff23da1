/**
 * Long-run figures for `npm run bench`: a scripted model drives the real `Agent` (markdown
 * format, the built-in tools, a real pty bash, the fake server over loopback HTTP) through
 * hundreds of shell steps, and the harness is watched for work that grows with the log: the
 * time fence takes between a reply's last frame and its next request, early and late; the
 * host's memory; the bytes each message adds to `conversation.jsonl`; the size of the last
 * request.
 */
import { mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '../src/agent/agent';
import { buildSystemPrompt } from '../src/agent/system-prompt';
import { createMessage } from '../src/conversation/message';
import { SessionStore } from '../src/conversation/session-store';
import { BashSession } from '../src/processes/bash-session';
import { builtinTools } from '../src/tools/builtin-tools';
import type { ToolContext } from '../src/tools/define-tool';
import { ToolRegistry } from '../src/tools/registry';
import { startFakeLlm, type RecordedRequest, type WireBody } from '../tests/support/fake-llm';
import { fakeProvider } from '../tests/support/fake-provider';
import { median } from './ptc';

/** What one long run measured. */
export interface LongRunFigures {
  /** Median harness time of steps 5–20: last frame of a reply to the next request, in ms (the shell command included). */
  earlyStepMs: number;
  /** The same over the last 16 steps. */
  lateStepMs: number;
  /** lateStepMs / earlyStepMs: about 1 when no step does work that grows with the log. */
  ratio: number;
  /** Highest RSS over the run less the RSS at step 10, in MB. */
  rssGrowthMb: number;
  /** Bytes `conversation.jsonl` grew per message over steps 5–20. */
  bytesPerMessageEarly: number;
  /** The same over the last 16 steps. */
  bytesPerMessageLate: number;
  /** Characters of the message contents of the last request. */
  lastRequestChars: number;
  /** lastRequestChars / 4, rounded. */
  lastRequestTokens: number;
  /** Bytes of the last request's body as sent. */
  lastRequestBytes: number;
}

/** The first and last step of the early window; the late window is as long and ends at the last step. */
const EARLY = [5, 20] as const;
/** Steps at which the host's memory is collected before it is sampled (and every 50th). */
const BASELINE_STEP = 10;

/** The files the scripted commands list and read. */
const WORKSPACE_FILES: Record<string, string> = {
  'notes.txt': Array.from({ length: 30 }, (_, i) => `note ${i + 1}: check the handler for case ${i * 7 + 3} before the release`).join('\n') + '\n',
  'todo.txt': 'fix the parser\nwrite the release notes\nrun the benchmarks\n',
  'data-1.txt': 'alpha,1\nbeta,2\ngamma,3\n',
  'data-2.txt': 'delta,4\nepsilon,5\n',
  'README.md': '# sample project\n\nA folder for the long-run benchmark.\n',
  'main.ts': 'export const answer = 42;\n',
  'config.json': '{ "name": "sample", "version": "1.0.0" }\n',
};

/** Labels the printf step prints, one item each. */
const NAMES = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa', 'lambda', 'mu', 'nu', 'xi', 'omicron', 'pi'];

/**
 * One scripted reply: prose, a ```shell block with a cheap command printing a few hundred
 * bytes (five kinds, in turn), and prose after the block that fence stops reading before.
 * Returned as the frames the fake server sends; the block closes in the last frame, so the
 * server's record of its last frame is the moment the block was complete.
 */
function stepFrames(step: number): string[] {
  const commands = [
    `echo "step ${step}"; ls -l`,
    `seq ${step} ${step + 70}`,
    `printf 'item %03d: %s\\n' ${NAMES.map((name, i) => `${step + i} ${name}`).join(' ')}`,
    `head -n ${8 + (step % 5)} notes.txt`,
    'wc -lwc *.txt *.md *.ts *.json | sort -n',
  ];
  const intents = [
    'look at what is in the workspace now',
    'get a range of numbers to check the counting logic against',
    'print a few labelled items to compare with the expected format',
    'read the first notes again, since the last change touched that handler',
    'check the file sizes to see whether anything grew unexpectedly',
  ];
  const kind = step % commands.length;
  const prose =
    `Step ${step}. The previous output looks as expected, so I will move on. ` +
    `Next I want to ${intents[kind]}. This is a cheap command and it should finish at once; ` +
    `if its output differs from what I expect I will stop and look more closely.\n\n`;
  const body = `\`\`\`shell\n${commands[kind]}\n`;
  const text = prose + body;
  // Deltas of about 48 characters, as a streaming model sends them.
  const frames: string[] = [];
  for (let i = 0; i < text.length; i += 48) frames.push(text.slice(i, i + 48));
  frames.push('```\nAfter this I will compare the result with the notes and decide the next step.');
  return frames;
}

/** Characters of the message contents of a request body (string contents and text parts). */
function contentChars(body: WireBody): number {
  let chars = 0;
  for (const message of body.messages ?? []) {
    if (typeof message.content === 'string') chars += message.content.length;
    else if (Array.isArray(message.content)) {
      for (const part of message.content as unknown[]) {
        const text = typeof part === 'object' && part !== null ? (part as Record<string, unknown>).text : undefined;
        if (typeof text === 'string') chars += text.length;
      }
    }
  }
  return chars;
}

/** Bytes of a recorded request's body: its content-length, or its JSON when the header is missing. */
function bodyBytes(request: RecordedRequest): number {
  const header = Number(request.headers['content-length']);
  return Number.isFinite(header) && header > 0 ? header : Buffer.byteLength(JSON.stringify(request.body));
}

/**
 * Runs `steps` scripted shell steps and a final answer through the real Agent and measures
 * the harness (see {@link LongRunFigures}). Each step's time runs from the fake server handing
 * the last frame of a reply to the socket to its receiving the whole next request, so it holds
 * fence's own work, one shell round trip and the fake server's reading of the request; steps
 * at which memory was collected are left out of the medians. The fake server's copies of
 * earlier request bodies are dropped as the run goes, so the memory figure is fence's.
 * Temp folders, the shell and the server are removed or closed however the run ends.
 * Needs `steps` ≥ 40; throws if the run does not end with the final answer.
 */
export async function longRunFigures(steps = 500): Promise<LongRunFigures> {
  if (steps < 40) throw new Error('longRunFigures needs at least 40 steps');
  const server = await startFakeLlm();
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'fence-bench-long-ws-')));
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'fence-bench-long-home-')));
  for (const [name, text] of Object.entries(WORKSPACE_FILES)) writeFileSync(join(workspace, name), text);
  const tools = builtinTools();
  const store = SessionStore.create(home, {
    id: 'long-run',
    model: 'local/test',
    workspace,
    toolFormat: 'markdown',
    tools: tools.map((tool) => tool.name),
  });
  let bash: Promise<BashSession> | undefined;
  const controller = new AbortController();
  try {
    store.append(createMessage('system', buildSystemPrompt({ tools, workspace, format: 'markdown' }), { pinned: true }));
    for (let step = 1; step <= steps; step++) {
      const frames = stepFrames(step);
      server.reply((reply) => {
        for (const frame of frames) reply.text(frame);
      });
    }
    server.reply((reply) => reply.text(`All ${steps} checks are done and every output matched what I expected. Nothing needed to change.`));

    const startBash = () => (bash ??= BashSession.start({ cwd: workspace }));
    await startBash();
    const toolContext: ToolContext = { workspace, signal: controller.signal, bash: startBash };
    const { provider, model, modelId } = await fakeProvider(server, 'openai');
    const logPath = join(store.dir, 'conversation.jsonl');

    // Per turn (1-based; turn t sends request t - 1): the log's size and length just before the request.
    const logBytes: number[] = [];
    const logMessages: number[] = [];
    const rss: number[] = [];
    /** Steps whose interval holds a collection (turn t falls in step t - 1's interval). */
    const collected = new Set<number>();
    const onTurn = (turn: number) => {
      if (turn % 50 === 0 || turn === BASELINE_STEP) {
        global.gc?.();
        collected.add(turn - 1);
      }
      rss[turn] = process.memoryUsage().rss;
      logBytes[turn] = statSync(logPath).size;
      logMessages[turn] = store.log.length;
      // Keep only the newest request body: the server's copies would otherwise dwarf fence's memory.
      for (let i = 0; i < server.requests.length - 1; i++) {
        const request = server.requests[i];
        if (request && request.body.messages) request.body = {};
      }
    };

    const agent = new Agent({
      provider,
      model,
      modelId,
      registry: new ToolRegistry(tools),
      store,
      toolContext,
      format: 'markdown',
      maxTurns: steps + 10,
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === 'turn') onTurn(event.turn);
      },
    });
    const outcome = await agent.run('Go through the workspace step by step and check every output against the notes.');
    if (outcome.status !== 'done') throw new Error(`the long run ended with ${outcome.status}`);
    const requests = server.requests;
    if (requests.length !== steps + 1 || !requests.every((request) => request.scripted)) {
      throw new Error(`the long run made ${requests.length} requests, not the ${steps + 1} scripted ones`);
    }
    const failed = store.log.filter((message) => message.meta?.toolResult && message.meta.isError);
    if (failed.length > 0) throw new Error(`${failed.length} shell steps failed; first: ${failed[0]?.content}`);

    /**
     * Step s (1-based): from the last frame of reply s - 1 to the arrival of request s's
     * headers — fence's work and the shell, not the fake server's parsing of the body.
     */
    const stepMs = (from: number, to: number): number => {
      const times: number[] = [];
      for (let step = from; step <= to; step++) {
        if (collected.has(step)) continue;
        const sent = requests[step - 1]?.lastFrameAt;
        const next = requests[step]?.arrivedAt;
        if (sent === undefined || next === undefined) throw new Error(`no timing for step ${step}`);
        times.push(next - sent);
      }
      return median(times);
    };
    const perMessage = (from: number, to: number): number => {
      // Turn t + 1 comes right after step t's result was appended.
      const bytes = logBytes[to + 1]! - logBytes[from]!;
      const messages = logMessages[to + 1]! - logMessages[from]!;
      return bytes / messages;
    };
    const [earlyFrom, earlyTo] = EARLY;
    const lateFrom = steps - (earlyTo - earlyFrom);
    const earlyStepMs = stepMs(earlyFrom, earlyTo);
    const lateStepMs = stepMs(lateFrom, steps);
    const baseline = rss[BASELINE_STEP]!;
    const peak = Math.max(...rss.filter((value) => value !== undefined));
    const last = requests.at(-1)!;
    const lastRequestChars = contentChars(last.body);
    return {
      earlyStepMs,
      lateStepMs,
      ratio: lateStepMs / earlyStepMs,
      rssGrowthMb: (peak - baseline) / 1024 / 1024,
      bytesPerMessageEarly: perMessage(earlyFrom, earlyTo),
      bytesPerMessageLate: perMessage(lateFrom, steps),
      lastRequestChars,
      lastRequestTokens: Math.round(lastRequestChars / 4),
      lastRequestBytes: bodyBytes(last),
    };
  } finally {
    controller.abort();
    const shell = await bash?.catch(() => undefined);
    await shell?.close();
    store.close();
    await server.close();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  }
}
