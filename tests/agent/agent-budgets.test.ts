import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { Agent, NUDGE_TEXT, type AgentOptions } from '../../src/agent/agent';
import { LoopDetector } from '../../src/agent/loop-detector';
import { completeTool } from '../../src/tools/complete';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { useAgentRig } from '../support/agent-session';
import { fakeProvider } from '../support/fake-provider';
import { makeToolContext } from '../support/tool-context';

const rig = useAgentRig({ toolFormat: 'markdown', tools: ['read', 'complete'] });
beforeEach(async () => {
  await writeFile(join(rig.workspace, 'a.txt'), 'alpha\n');
});

async function makeAgent(options: Partial<AgentOptions> = {}) {
  const { provider, model, modelId } = await fakeProvider(rig.server, 'openai');
  const registry = new ToolRegistry([readTool, completeTool]);
  return new Agent({ provider, model, modelId, registry, store: rig.store, toolContext: makeToolContext(rig.workspace), ...options });
}

// Budgets count the usage providers report. Native calls are read to the end of the stream,
// where the usage comes; a markdown block stops the stream before it (and is estimated).
describe('budgets', () => {
  it('stops before the request that would start over the cost budget', async () => {
    // $1 per million input tokens and $10 per million output: each reply below costs $0.002.
    const costOf = (usage: { inputTokens: number; outputTokens: number }) => usage.inputTokens / 1e6 + (usage.outputTokens * 10) / 1e6;
    for (let i = 0; i < 10; i++) rig.server.reply((r) => r.toolCall('read', { path: 'a.txt' }).usage({ input: 1000, output: 100 }));
    const agent = await makeAgent({ costOf, maxCostUsd: 0.005, format: 'tool' });

    const outcome = await agent.run('Read it again and again.');

    expect(outcome).toMatchObject({ status: 'stopped', stop: 'max_cost' });
    expect(outcome.status === 'stopped' && outcome.reason).toBe('spent $0.0060 of the $0.005 budget (--max-cost)');
    expect(rig.server.requests).toHaveLength(3);
    expect(agent.costUsd).toBeCloseTo(0.006, 10);
  });

  it('stops before the request that would start over the token budget', async () => {
    for (let i = 1; i <= 5; i++) rig.server.reply((r) => r.toolCall('read', { path: 'a.txt' }).usage({ input: 1000 * i, output: 100 }));
    const agent = await makeAgent({ maxTokens: 3000, format: 'tool' });

    const outcome = await agent.run('Go.');

    // 1,100 then 2,100 tokens: 3,200 after two replies.
    expect(outcome).toMatchObject({ status: 'stopped', stop: 'max_tokens', reason: 'used 3200 of 3000 tokens (--max-tokens)' });
    expect(rig.server.requests).toHaveLength(2);
  });

  it('knows no cost once a reply had no price, and then never stops for cost', async () => {
    for (let i = 0; i < 3; i++) rig.server.reply((r) => r.text('```read a.txt\n```\n'));
    rig.server.reply((r) => r.text('Done.'));
    const agent = await makeAgent({ costOf: () => undefined, maxCostUsd: 0.000001 });

    expect(await agent.run('Go.')).toEqual({ status: 'done', answer: 'Done.' });
    expect(agent.costUsd).toBeUndefined();
  });
});

describe('autonomous runs', () => {
  it('ends when the model calls complete, with its result as the answer', async () => {
    rig.server.reply((r) => r.text('```read a.txt\n```\n'));
    rig.server.reply((r) => r.text('All checked.\n```complete\nRead a.txt: it says alpha.\n```\n'));
    const agent = await makeAgent({ auto: true });

    expect(await agent.run('Read a.txt.')).toEqual({ status: 'done', answer: 'Read a.txt: it says alpha.', completed: true });
    expect(rig.server.requests).toHaveLength(2);
  });

  it('nudges a reply without a tool call, and stops after the nudges run out', async () => {
    for (let i = 0; i < 5; i++) rig.server.reply((r) => r.text(`I think I am done (${i}).`));
    const agent = await makeAgent({ auto: true, maxNudges: 2 });

    const outcome = await agent.run('Do it.');

    expect(outcome).toEqual({
      status: 'stopped',
      stop: 'no_progress',
      reason: '2 replies in a row without a tool call, after 2 reminders',
      answer: 'I think I am done (2).',
    });
    expect(rig.server.requests).toHaveLength(3);
    const notices = rig.store.log.filter((message) => message.meta?.notice === 'nudge');
    expect(notices.map((message) => message.content)).toEqual([NUDGE_TEXT, NUDGE_TEXT]);
    // The nudge reaches the model as the last thing it reads.
    expect(JSON.stringify(rig.server.requests[1]?.body.messages?.at(-1))).toContain('You replied without a tool call');
  });

  it('counts nudges in a row only: a tool call in between starts them again', async () => {
    rig.server.reply((r) => r.text('Thinking.'));
    rig.server.reply((r) => r.text('```read a.txt\n```\n'));
    rig.server.reply((r) => r.text('Thinking again.'));
    rig.server.reply((r) => r.text('```complete\ndone\n```\n'));
    const agent = await makeAgent({ auto: true, maxNudges: 1 });

    expect(await agent.run('Do it.')).toEqual({ status: 'done', answer: 'done', completed: true });
  });

  it('does not end a run that is not autonomous when complete is called', async () => {
    rig.server.reply((r) => r.text('```complete\ndone\n```\n'));
    rig.server.reply((r) => r.text('Finished.'));
    const agent = await makeAgent();

    expect(await agent.run('Do it.')).toEqual({ status: 'done', answer: 'Finished.' });
  });
});

describe('loop detection', () => {
  it('nudges the model after the same call three times, and stops the run at five', async () => {
    for (let i = 0; i < 8; i++) rig.server.reply((r) => r.text('```read a.txt\n```\n'));
    const agent = await makeAgent({ loopDetector: new LoopDetector() });

    const outcome = await agent.run('Read it.');

    expect(outcome).toMatchObject({ status: 'stopped', stop: 'loop' });
    expect(rig.server.requests).toHaveLength(5);
    const notices = rig.store.log.filter((message) => message.meta?.notice === 'loop');
    expect(notices).toHaveLength(1);
    expect(rig.store.log.indexOf(notices[0]!)).toBe(7); // after the third call's result
  });
});
