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
      // The first reply, then one after each reminder.
      reason: '3 replies in a row without a tool call, after 2 reminders',
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

describe('complete without a result', () => {
  /** The run's messages after the prompt, as the model and the log see them. */
  const afterPrompt = () => rig.store.log.slice(rig.store.log.findIndex((message) => message.role === 'user') + 1);
  const expectEndedCleanly = () => {
    const last = rig.store.log.at(-1);
    expect(last).toMatchObject({ role: 'system', content: 'The run is complete.', meta: { toolResult: true, tool: 'complete' } });
    expect(last?.meta?.isError).toBeUndefined();
    expect(afterPrompt().filter((message) => message.meta?.notice)).toEqual([]);
  };

  it('markdown: an empty block after prose ends the run, the prose its answer, with no error and no nudge', async () => {
    rig.server.reply((r) => r.text('```read a.txt\n```\n'));
    rig.server.reply((r) => r.text('Read a.txt: it says alpha.\nNothing else to do.\n\n```complete\n```\n'));
    const agent = await makeAgent({ auto: true });

    expect(await agent.run('Read a.txt.')).toEqual({ status: 'done', answer: 'Read a.txt: it says alpha.\nNothing else to do.', completed: true });
    expect(rig.server.requests).toHaveLength(2);
    expectEndedCleanly();
  });

  it('markdown: an empty block alone answers with the last thing the model said in the run', async () => {
    rig.server.reply((r) => r.text('Reading the file first.\n```read a.txt\n```\n'));
    rig.server.reply((r) => r.text('```read a.txt\n```\n'));
    rig.server.reply((r) => r.text('```complete\n\n```\n'));
    const agent = await makeAgent({ auto: true });

    expect(await agent.run('Read a.txt.')).toEqual({ status: 'done', answer: 'Reading the file first.', completed: true });
    expectEndedCleanly();
  });

  it('ends with an empty answer when the model said nothing at all, and takes no words from an earlier prompt', async () => {
    rig.server.reply((r) => r.text('Alpha, as asked.\n```complete\nIt says alpha.\n```\n'));
    rig.server.reply((r) => r.text('```complete\n```'));
    const agent = await makeAgent({ auto: true });

    expect(await agent.run('Read a.txt.')).toEqual({ status: 'done', answer: 'It says alpha.', completed: true });
    expect(await agent.run('Now stop.')).toEqual({ status: 'done', answer: '', completed: true });
    expectEndedCleanly();
  });

  it('xml: an empty element after prose, or a bare one after an earlier reply, ends the run with the prose', async () => {
    rig.server.reply((r) => r.text('Checked: a.txt says alpha.\n<tool-use><complete></complete></tool-use>'));
    rig.server.reply((r) => r.text('Looking.\n<tool-use><read args="a.txt"/></tool-use>'));
    rig.server.reply((r) => r.text('<tool-use><complete/></tool-use>'));
    const agent = await makeAgent({ auto: true, format: 'xml' });

    expect(await agent.run('Read a.txt.')).toEqual({ status: 'done', answer: 'Checked: a.txt says alpha.', completed: true });
    expect(await agent.run('Again.')).toEqual({ status: 'done', answer: 'Looking.', completed: true });
    expectEndedCleanly();
  });

  it('native: complete called with {} or no arguments ends the run with the text of the reply, else the last one', async () => {
    rig.server.reply((r) => r.text('All checked: a.txt says alpha.').toolCall('complete', {}));
    rig.server.reply((r) => r.text('Reading it once more.').toolCall('read', { path: 'a.txt' }));
    rig.server.reply((r) => r.rawToolCall('complete', ''));
    const agent = await makeAgent({ auto: true, format: 'tool' });

    expect(await agent.run('Read a.txt.')).toEqual({ status: 'done', answer: 'All checked: a.txt says alpha.', completed: true });
    expect(await agent.run('Again.')).toEqual({ status: 'done', answer: 'Reading it once more.', completed: true });
    expectEndedCleanly();
  });

  it('a result of blanks counts as none', async () => {
    rig.server.reply((r) => r.text('It says alpha.').toolCall('complete', { result: '  \n' }));
    const agent = await makeAgent({ auto: true, format: 'tool' });

    expect(await agent.run('Read a.txt.')).toEqual({ status: 'done', answer: 'It says alpha.', completed: true });
  });
});

describe('the answer of a stopped run', () => {
  it('is what the last reply said before its tool block, never the block itself', async () => {
    rig.server.reply((r) => r.text('```read a.txt\n```\n'));
    rig.server.reply((r) => r.text('Reading it again.\n```read a.txt\n```\n'));
    const agent = await makeAgent();

    expect(await agent.run('Read it.', { maxTurns: 1 })).toEqual({ status: 'max_turns', answer: '', turns: 1 });
    expect(await agent.run('Read it.', { maxTurns: 1 })).toEqual({ status: 'max_turns', answer: 'Reading it again.', turns: 2 });
  });

  it('leaves native calls out', async () => {
    rig.server.reply((r) => r.toolCall('read', { path: 'a.txt' }).usage({ input: 1000, output: 100 }));
    rig.server.reply((r) => r.text('Reading once more.').toolCall('read', { path: 'a.txt' }).usage({ input: 1000, output: 100 }));
    const agent = await makeAgent({ format: 'tool', maxTokens: 2000 });

    expect(await agent.run('Read it.')).toMatchObject({ status: 'stopped', stop: 'max_tokens', answer: 'Reading once more.' });
  });

  it('is the words of a reply without a tool call when the nudges run out', async () => {
    rig.server.reply((r) => r.text('Reading.\n```read a.txt\n```\n'));
    rig.server.reply((r) => r.text('I am sure it says alpha.\n'));
    const agent = await makeAgent({ auto: true, maxNudges: 0 });

    expect(await agent.run('Read it.')).toEqual({
      status: 'stopped',
      stop: 'no_progress',
      reason: '1 reply in a row without a tool call, after 0 reminders',
      answer: 'I am sure it says alpha.',
    });
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
