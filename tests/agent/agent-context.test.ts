import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { beforeEach, describe, expect, it } from 'vitest';
import { Agent, type AgentEvent, type AgentOptions } from '../../src/agent/agent';
import { compactedView } from '../../src/agent/compaction';
import { readMessages } from '../../src/conversation/session-store';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { useAgentRig } from '../support/agent-session';
import { checkToolCallPairing, type RecordedRequest, type WireBody } from '../support/fake-llm';
import { fakeProvider } from '../support/fake-provider';
import { makeToolContext } from '../support/tool-context';

const WINDOW = 4000;
const RESERVE = 500;

const rig = useAgentRig({ toolFormat: 'markdown', tools: ['read'], system: 'You are fence. Read files with ```read <path>```.' });
beforeEach(async () => {
  for (let i = 0; i < 20; i++) await writeFile(join(rig.workspace, `f${i}.txt`), `${`file ${i} line\n`.repeat(100)}`);
});

const isSummaryRequest = (body: WireBody) => JSON.stringify(body.messages?.[0] ?? '').includes('You compact the history');

/** Tokens of what a request's messages hold (o200k; the fake model is local). */
function requestTokens(request: RecordedRequest): number {
  return (request.body.messages ?? []).reduce((sum, message) => sum + encode(typeof message.content === 'string' ? message.content : JSON.stringify(message.content)).length + 4, 0);
}

async function makeAgent(options: Partial<AgentOptions> = {}) {
  const { provider, model, modelId } = await fakeProvider(rig.server, 'openai');
  const events: AgentEvent[] = [];
  const agent = new Agent({
    provider,
    model,
    modelId,
    registry: new ToolRegistry([readTool]),
    store: rig.store,
    toolContext: makeToolContext(rig.workspace),
    context: { window: WINDOW, reserve: RESERVE, exactTokenizer: true },
    maxTurns: 100,
    onEvent: (event) => events.push(event),
    ...options,
  });
  return { agent, events };
}

function queueReads(count: number): void {
  for (let i = 0; i < count; i++) rig.server.reply((r) => r.text(`Reading file ${i}.\n\`\`\`read f${i}.txt\n\`\`\`\n`));
  rig.server.reply((r) => r.text('All files read.'));
}

describe('keeping requests inside the context window', () => {
  it('summarizes older turns when the conversation nears the window, and keeps every request inside it', async () => {
    rig.server.route(isSummaryRequest, (r) => r.text('Files f0 to f5 were read; each holds 100 lines "file N line".'));
    queueReads(20);
    const { agent, events } = await makeAgent();

    expect(await agent.run('Read the twenty files one by one.')).toEqual({ status: 'done', answer: 'All files read.' });

    const requests = rig.server.requests.filter((request) => !isSummaryRequest(request.body));
    expect(requests).toHaveLength(21);
    for (const request of requests) expect(requestTokens(request)).toBeLessThanOrEqual(WINDOW - RESERVE);
    expect(rig.server.requests.flatMap(checkToolCallPairing)).toEqual([]);
    const summaries = rig.store.log.filter((message) => message.meta?.compaction);
    expect(summaries.length).toBeGreaterThan(0);
    expect(events.filter((event) => event.type === 'compaction')).toHaveLength(summaries.length);
    // The task and the system prompt travel in every request; the summary replaces what it covers.
    const last = JSON.stringify(requests.at(-1)?.body.messages);
    expect(last).toContain('Read the twenty files one by one.');
    expect(last).toContain('You are fence.');
    expect(last).toContain('Files f0 to f5 were read');
    // Nothing left the log: every read result is still there, in order.
    const log = readMessages(rig.store.dir);
    expect(log.filter((message) => message.meta?.toolResult)).toHaveLength(20);
    expect(compactedView(log).length).toBeLessThan(log.length);
  });

  it('cuts the oldest turns instead when the summary fails, and still finishes inside the window', async () => {
    rig.server.route(isSummaryRequest, (r) => r.status(400, { message: 'summaries are not available' }));
    queueReads(20);
    const { agent, events } = await makeAgent();

    expect(await agent.run('Read the twenty files one by one.')).toEqual({ status: 'done', answer: 'All files read.' });

    const requests = rig.server.requests.filter((request) => !isSummaryRequest(request.body));
    for (const request of requests) expect(requestTokens(request)).toBeLessThanOrEqual(WINDOW - RESERVE);
    expect(rig.server.requests.flatMap(checkToolCallPairing)).toEqual([]);
    // Asked once; after a failure fence cuts rather than asking on every step.
    expect(rig.server.requests.filter((request) => isSummaryRequest(request.body))).toHaveLength(1);
    expect(events.some((event) => event.type === 'compaction_failed')).toBe(true);
    expect(JSON.stringify(requests.at(-1)?.body.messages)).toMatch(/earlier messages were left out to fit the context window/);
  });

  it('counts the summary toward cost and tokens, not toward turns', async () => {
    rig.server.route(isSummaryRequest, (r) => r.text('Summary.').usage({ input: 3000, output: 50 }));
    queueReads(20);
    const { agent } = await makeAgent({ costOf: (usage) => (usage.inputTokens + usage.outputTokens) / 1e6 });

    await agent.run('Read the twenty files one by one.');

    expect(agent.turnCount).toBe(21);
    const summaryCount = rig.server.requests.filter((request) => isSummaryRequest(request.body)).length;
    expect(summaryCount).toBeGreaterThan(0);
    expect(agent.tokenCount).toBeGreaterThanOrEqual(summaryCount * 3050);
  });
});

describe('compacting on request, stopping one run, switching models', () => {
  it('summarizes the older turns now, and later requests carry the summary instead of them', async () => {
    rig.server.route(isSummaryRequest, (r) => r.text('Earlier: f0 to f2 were read.'));
    queueReads(3);
    // No window: compact() works without one, and requests then carry the summary too.
    const { agent, events } = await makeAgent({ context: undefined });
    await agent.run('Read three files.');
    const outcome = await agent.compact({ keepRecent: 2 });
    expect(outcome.ok).toBe(true);
    expect(events.some((event) => event.type === 'compaction')).toBe(true);
    rig.server.reply((r) => r.text('Still here.'));
    await agent.run('Anything else?');
    const last = rig.server.requests.at(-1);
    const text = JSON.stringify(last?.body.messages);
    expect(text).toContain('Earlier: f0 to f2 were read.');
    expect(text).not.toContain('Reading file 0.');
    // The log itself keeps everything.
    expect(readMessages(rig.store.dir).some((m) => m.content.includes('Reading file 0.'))).toBe(true);
  });

  it('says why when there is too little to compact', async () => {
    const { agent } = await makeAgent();
    expect(await agent.compact()).toEqual({ ok: false, error: 'the conversation is too short to compact' });
  });

  it("stops a run with the run's own signal and goes on with the next prompt", async () => {
    rig.server.reply((r) => r.text('Thinking about it').hang()).reply((r) => r.text('Fresh answer.'));
    const { agent } = await makeAgent();
    const stop = new AbortController();
    const first = agent.run('slow one', { signal: stop.signal });
    await rig.server.waitForRequests(1);
    stop.abort();
    expect(await first).toEqual({ status: 'aborted' });
    expect(await agent.run('next one')).toEqual({ status: 'done', answer: 'Fresh answer.' });
  });

  it('sends later requests to the model given to useModel, with the same conversation', async () => {
    rig.server.reply((r) => r.text('One.')).reply((r) => r.text('Two.'));
    const { agent } = await makeAgent();
    await agent.run('first');
    const other = await fakeProvider(rig.server, 'openai');
    agent.useModel({ provider: other.provider, model: 'other-model', modelId: 'local/other-model' });
    expect(agent.modelId).toBe('local/other-model');
    await agent.run('second');
    expect(rig.server.requests.map((request) => request.body.model)).toEqual([expect.any(String), 'other-model']);
    expect(JSON.stringify(rig.server.requests[1]?.body.messages)).toContain('One.');
    expect(rig.store.log.at(-1)?.meta?.model).toBe('local/other-model');
  });
});
