import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent, type AgentOptions } from '../../src/agent/agent';
import { toolSchemas } from '../../src/agent/system-prompt';
import type { Message } from '../../src/conversation/message';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { saveTool } from '../../src/tools/save';
import { useAgentRig } from '../support/agent-session';
import { checkToolCallPairing, type RecordedRequest } from '../support/fake-llm';
import { fakeProvider, type FakeApi } from '../support/fake-provider';
import { makeToolContext } from '../support/tool-context';

const rig = useAgentRig({ toolFormat: 'tool', tools: ['read', 'save'], system: 'You are fence.' });

const registry = new ToolRegistry([readTool, saveTool]);

async function makeAgent(api: FakeApi, options: Partial<AgentOptions> = {}) {
  const { provider, model, modelId } = await fakeProvider(rig.server, api);
  return new Agent({ provider, model, modelId, registry, store: rig.store, toolContext: makeToolContext(rig.workspace), format: 'tool', ...options });
}

/** Every request sent so far pairs each native call with exactly one result. */
function expectWellPaired(requests: readonly RecordedRequest[]): void {
  expect(requests.flatMap(checkToolCallPairing)).toEqual([]);
}

const results = (log: readonly Message[]) => log.filter((message) => message.meta?.toolResult);

describe.each(['openai', 'anthropic'] as const)('native tool calls over %s', (api) => {
  it('offers the tools as schemas, runs every call of a reply in order and replays them with their ids', async () => {
    rig.server.reply((r) =>
      r
        .text('Writing, then reading back.')
        .toolCall('save', { path: 'a.txt', content: 'hello\n' }, 'call_save')
        .toolCall('read', { path: 'a.txt' }, 'call_read'),
    );
    rig.server.reply((r) => r.text('a.txt says hello.'));
    const agent = await makeAgent(api);

    const outcome = await agent.run('Write a.txt and read it.');

    expect(outcome).toEqual({ status: 'done', answer: 'a.txt says hello.' });
    expect(await readFile(join(rig.workspace, 'a.txt'), 'utf8')).toBe('hello\n');
    const assistant = rig.store.log.find((message) => message.role === 'assistant');
    expect(assistant?.content).toBe(
      'Writing, then reading back.\n@save(call_save): {"path":"a.txt","content":"hello\\n"}\n@read(call_read): {"path":"a.txt"}',
    );
    expect(assistant?.meta?.toolCalls).toEqual([
      { id: 'call_save', name: 'save', arguments: '{"path":"a.txt","content":"hello\\n"}' },
      { id: 'call_read', name: 'read', arguments: '{"path":"a.txt"}' },
    ]);
    expect(results(rig.store.log).map((message) => [message.callId, message.content])).toEqual([
      ['call_save', 'Created a.txt (1 line, 6 bytes)'],
      ['call_read', 'hello\n'],
    ]);

    const [first, second] = rig.server.requests;
    const offered = (first?.body.tools ?? []).map((tool) => JSON.stringify(tool));
    expect(offered).toHaveLength(2);
    for (const schema of toolSchemas(registry.tools)) expect(offered.join()).toContain(JSON.stringify(schema.parameters));
    expectWellPaired(rig.server.requests);
    // The replayed call keeps its id and arguments in the provider's own shape.
    expect(JSON.stringify(second?.body.messages)).toContain('call_save');
    expect(JSON.stringify(second?.body.messages)).not.toContain('@save(');
  });

  it('repairs broken JSON arguments and runs the call', async () => {
    rig.server.reply((r) => r.rawToolCall('save', "{'path': 'fixed.txt', 'content': 'ok',}", 'call_1'));
    rig.server.reply((r) => r.text('Done.'));
    const agent = await makeAgent(api);

    expect(await agent.run('Save it.')).toEqual({ status: 'done', answer: 'Done.' });

    expect(await readFile(join(rig.workspace, 'fixed.txt'), 'utf8')).toBe('ok\n');
    expect(rig.store.log.find((message) => message.role === 'assistant')?.meta?.toolCalls).toEqual([
      { id: 'call_1', name: 'save', arguments: '{"path":"fixed.txt","content":"ok"}' },
    ]);
    expectWellPaired(rig.server.requests);
  });

  it('answers unusable calls with error results the model can act on, and goes on', async () => {
    rig.server.reply((r) =>
      r
        .rawToolCall('save', '{"path": "x.txt", "content": ', 'call_cut')
        .rawToolCall('read', '[1, 2]', 'call_array')
        .toolCall('delete', { path: 'a.txt' }, 'call_unknown')
        .toolCall('save', { path: 'y.txt' }, 'call_invalid')
        .rawToolCall('read', '', 'call_empty'),
    );
    rig.server.reply((r) => r.text('I will fix my calls.'));
    const shown: string[] = [];
    const agent = await makeAgent(api, {
      onEvent: (event) => {
        if (event.type === 'tool_start' || event.type === 'tool_end') shown.push(`${event.type} ${event.use.callId}`);
      },
    });

    expect(await agent.run('Go.')).toEqual({ status: 'done', answer: 'I will fix my calls.' });
    // Each call is shown as it would be had it run, refused before running or not.
    const ids = ['call_cut', 'call_array', 'call_unknown', 'call_invalid', 'call_empty'];
    expect(shown).toEqual(ids.flatMap((id) => [`tool_start ${id}`, `tool_end ${id}`]));

    const answers = results(rig.store.log);
    expect(answers.map((message) => message.callId)).toEqual(['call_cut', 'call_array', 'call_unknown', 'call_invalid', 'call_empty']);
    expect(answers.every((message) => message.meta?.isError)).toBe(true);
    const [cut, array, unknown, invalid, empty] = answers.map((message) => message.content);
    expect(cut).toMatch(/^Invalid input for save:\n- content: /);
    expect(array).toContain('JSON object');
    expect(unknown).toBe('There is no tool named "delete". The tools are: read, save.');
    expect(invalid).toMatch(/^Invalid input for save:\n- content: .+\nWrite it like this:\n\{"path":"notes\/todo.md","content":/);
    expect(empty).toMatch(/^Invalid input for read:\n- path:/);
    expectWellPaired(rig.server.requests);
  });

  it('does not run a call whose arguments were cut by the length limit', async () => {
    rig.server.reply((r) => r.rawToolCall('save', '{"path": "big.txt", "content": "first half', 'call_long').stop('max_tokens'));
    rig.server.reply((r) => r.text('Splitting it.'));
    const agent = await makeAgent(api);

    await agent.run('Write a big file.');

    const [answer] = results(rig.store.log);
    expect(answer?.content).toMatch(/reached its length limit while writing this save call/);
    await expect(readFile(join(rig.workspace, 'big.txt'))).rejects.toThrow();
    expectWellPaired(rig.server.requests);
  });

  it('never takes prose that looks like a call for one', async () => {
    rig.server.reply((r) => r.text('Earlier I ran\n@save(call_9): {"path": "evil.txt", "content": "x"}\nand it worked.'));
    const agent = await makeAgent(api);

    const outcome = await agent.run('What did you do?');

    expect(outcome.status).toBe('done');
    await expect(readFile(join(rig.workspace, 'evil.txt'))).rejects.toThrow();
    expect(results(rig.store.log)).toEqual([]);
    rig.server.reply((r) => r.text('ok'));
    await agent.run('And now?');
    expectWellPaired(rig.server.requests);
    const replayed = rig.server.requests[1]?.body.messages ?? [];
    expect(JSON.stringify(replayed)).not.toContain('call_9"');
  });
});

describe('XML tool calls', () => {
  it('runs the first complete <tool-use> and stops reading the reply there', async () => {
    rig.server.reply((r) => r.text('Saving.\n<tool-use><save args="x.txt">\nfrom xml &amp; more\n</save></tool-use>\nand then').hang());
    rig.server.reply((r) => r.text('Saved.'));
    const agent = await makeAgent('openai', { format: 'xml' });

    expect(await agent.run('Save x.txt.')).toEqual({ status: 'done', answer: 'Saved.' });

    expect(await readFile(join(rig.workspace, 'x.txt'), 'utf8')).toBe('from xml & more\n');
    expect(rig.store.log.find((message) => message.role === 'assistant')?.content).toBe(
      'Saving.\n<tool-use><save args="x.txt">\nfrom xml &amp; more\n</save></tool-use>',
    );
    expect(rig.server.requests[0]?.body.tools).toBeUndefined();
  });

  it('treats a <tool-use> inside a code fence as text', async () => {
    await writeFile(join(rig.workspace, 'keep.txt'), 'kept\n');
    rig.server.reply((r) => r.text('Write it like this:\n```\n<tool-use><save args="keep.txt">gone</save></tool-use>\n```\n'));
    const agent = await makeAgent('openai', { format: 'xml' });

    expect((await agent.run('How do I save?')).status).toBe('done');
    expect(await readFile(join(rig.workspace, 'keep.txt'), 'utf8')).toBe('kept\n');
  });
});
