import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent, type AgentEvent, type AgentOptions } from '../../src/agent/agent';
import { readMessages } from '../../src/conversation/session-store';
import type { RetryOptions } from '../../src/llm/retry';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { saveTool } from '../../src/tools/save';
import { z } from 'zod';
import { interruptedCallNote } from '../../src/conversation/resume';
import { useAgentRig } from '../support/agent-session';
import { fakeTool } from '../support/fake-tool';
import type { WireMessage } from '../support/fake-llm';
import { fakeProvider } from '../support/fake-provider';
import { makeToolContext } from '../support/tool-context';

const rig = useAgentRig({ toolFormat: 'markdown', tools: ['read', 'save'] });

/** An agent over the fake rig.server with the read and save tools, recording its events. */
async function makeAgent(options: Partial<AgentOptions> & { retry?: RetryOptions } = {}) {
  const { provider, model, modelId } = await fakeProvider(rig.server, 'openai', options.retry);
  const events: AgentEvent[] = [];
  const agent = new Agent({
    provider,
    model,
    modelId,
    registry: new ToolRegistry([readTool, saveTool]),
    store: rig.store,
    toolContext: makeToolContext(rig.workspace),
    onEvent: (event) => events.push(event),
    ...options,
  });
  return { agent, events };
}

/** The text of a wire message (the local server's messages carry plain strings). */
const wireText = (message: WireMessage | undefined): string => (typeof message?.content === 'string' ? message.content : '');

describe('Agent.run', () => {
  it('appends user, assistant and tool-result messages in order and stops at a reply without a block', async () => {
    await writeFile(join(rig.workspace, 'a.txt'), 'hello from a\n');
    // The blank line after the closing fence completes the block; the stream is left there.
    rig.server.reply((r) => r.text("I'll read it.\n```read a.txt\n```\n\nand then I would guess.").hang());
    rig.server.reply((r) => r.text('It says hello.'));
    const { agent, events } = await makeAgent();

    const outcome = await agent.run('What is in a.txt?');

    expect(outcome).toEqual({ status: 'done', answer: 'It says hello.' });
    expect(rig.store.log.map((m) => m.role)).toEqual(['user', 'assistant', 'system', 'assistant']);
    const [user, call, result, answer] = rig.store.log;
    expect(user?.content).toBe('What is in a.txt?');
    expect(call?.content).toBe("I'll read it.\n```read a.txt\n```");
    expect(call?.meta).toMatchObject({ model: 'local/test', stopReason: 'tool_use' });
    expect(result?.content).toBe('hello from a\n');
    expect(result?.meta).toMatchObject({ toolResult: true, tool: 'read' });
    expect(result?.meta?.isError).toBeUndefined();
    expect(answer?.content).toBe('It says hello.');
    expect(answer?.meta).toMatchObject({ model: 'local/test', stopReason: 'end', usage: { inputTokens: 10, outputTokens: 5 } });
    expect(agent.turnCount).toBe(2);

    // Appended to the file as they completed, not only kept in memory.
    expect(readMessages(rig.store.dir)).toEqual(rig.store.log);

    const kinds = events.filter((e) => e.type !== 'text').map((e) => e.type);
    expect(kinds).toEqual(['prompt', 'turn', 'reply_end', 'tool_start', 'tool_end', 'turn', 'reply_end']);
    expect(events[0]).toEqual({ type: 'prompt', message: rig.store.log.find((message) => message.role === 'user') });
  });

  it('sends every earlier message with each request', async () => {
    await writeFile(join(rig.workspace, 'a.txt'), 'alpha\n');
    rig.server.reply((r) => r.text('```read a.txt\n```'));
    rig.server.reply((r) => r.text('```save b.txt\nbeta\n```'));
    rig.server.reply((r) => r.text('Copied.'));
    const { agent } = await makeAgent();

    expect(await agent.run('Copy a.txt to b.txt.')).toMatchObject({ status: 'done' });

    expect(rig.server.requests.map((request) => request.body.messages?.length)).toEqual([1, 3, 5]);
    const last = rig.server.requests.at(-1)?.body.messages ?? [];
    expect(last.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(wireText(last[0])).toBe('Copy a.txt to b.txt.');
    expect(wireText(last[1])).toBe('```read a.txt\n```');
    expect(wireText(last[2])).toContain('alpha');
    expect(wireText(last[3])).toBe('```save b.txt\nbeta\n```');
    expect(wireText(last[4])).toContain('b.txt');
    expect(rig.store.log).toHaveLength(6);
  });

  it('saves a README with bare inner blocks whole, and keeps the reply up to the block', async () => {
    const readme = '# Tool\n\nInstall:\n```\nnpm install\n```\n\nRun it:\n```bash\ntool --help\n```\nDone!';
    const written = `I'll write the README.\n\`\`\`save README.md\n${readme}\n\`\`\`\n`;
    rig.server.reply((r) => r.text(written.slice(0, 50)).text(written.slice(50)).text('\nSaved; now the tests.\n').hang());
    rig.server.reply((r) => r.text('Written.'));
    const { agent } = await makeAgent();

    expect(await agent.run('Write a README.')).toEqual({ status: 'done', answer: 'Written.' });

    expect(await readFile(join(rig.workspace, 'README.md'), 'utf8')).toBe(`${readme}\n`);
    const [, call, result] = rig.store.log;
    expect(call?.content).toBe(written.trimEnd());
    expect(call?.meta).toMatchObject({ stopReason: 'tool_use' });
    expect(result?.meta).toMatchObject({ toolResult: true, tool: 'save' });
    expect(result?.meta?.isError).toBeUndefined();
  });

  it('saves the file when the reply ends right after its closing fence, or with prose written against it', async () => {
    rig.server.reply((r) => r.text('```save a.md\nA\n```\nb\n```\nC\n```'));
    rig.server.reply((r) => r.text('```save b.md\nB\n```\nSaved it.'));
    rig.server.reply((r) => r.text('Both written.'));
    const { agent } = await makeAgent();

    expect(await agent.run('Write a.md and b.md.')).toEqual({ status: 'done', answer: 'Both written.' });

    expect(await readFile(join(rig.workspace, 'a.md'), 'utf8')).toBe('A\n```\nb\n```\nC\n');
    expect(await readFile(join(rig.workspace, 'b.md'), 'utf8')).toBe('B\n');
    expect(rig.store.log[3]?.content).toBe('```save b.md\nB\n```');
  });

  it('writes nothing when the length limit cuts a reply inside a bare inner block', async () => {
    rig.server.reply((r) => r.text('```save README.md\n# Tool\n\nInstall:\n```\nnpm install\n').stop('max_tokens'));
    const { agent } = await makeAgent();

    const outcome = await agent.run('Write a README.');

    expect(outcome).toMatchObject({ status: 'done' });
    await expect(readFile(join(rig.workspace, 'README.md'), 'utf8')).rejects.toThrow(/ENOENT/);
    expect(rig.store.log.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(rig.store.log[1]?.meta).toMatchObject({ stopReason: 'max_tokens' });
  });

  it('gives a failing tool an error result and goes on', async () => {
    rig.server.reply((r) => r.text('```read missing.txt\n```'));
    rig.server.reply((r) => r.text('There is no such file.'));
    const { agent } = await makeAgent();

    const outcome = await agent.run('Read missing.txt.');

    expect(outcome).toEqual({ status: 'done', answer: 'There is no such file.' });
    const result = rig.store.log[2];
    expect(result?.role).toBe('system');
    expect(result?.content).toContain('missing.txt');
    expect(result?.meta).toMatchObject({ toolResult: true, tool: 'read', isError: true });
    expect(wireText(rig.server.requests[1]?.body.messages?.at(-1))).toContain('missing.txt');
  });

  it('stops after maxTurns requests', async () => {
    await writeFile(join(rig.workspace, 'a.txt'), 'again\n');
    rig.server.reply((r) => r.text('```read a.txt\n```'));
    rig.server.reply((r) => r.text('Once more.\n```read a.txt\n```'));
    rig.server.reply((r) => r.text('never requested'));
    const { agent } = await makeAgent({ maxTurns: 2 });

    const outcome = await agent.run('Loop.');

    // What the last reply said, not the block that was never run.
    expect(outcome).toEqual({ status: 'max_turns', answer: 'Once more.', turns: 2 });
    expect(rig.server.requests).toHaveLength(2);
    expect(rig.server.pending).toBe(1);
    expect(rig.store.log.map((m) => m.role)).toEqual(['user', 'assistant', 'system', 'assistant', 'system']);
  });

  it('ends with an error and keeps the partial text, marked interrupted', async () => {
    rig.server.reply((r) => r.text('Half of an ans').cut());
    const { agent } = await makeAgent({ retry: { maxAttempts: 1 } });

    const outcome = await agent.run('Answer.');

    expect(outcome.status).toBe('error');
    expect(outcome.status === 'error' && outcome.error).toMatch(/\S/);
    expect(rig.store.log.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(rig.store.log[1]?.content).toBe('Half of an ans');
    expect(rig.store.log[1]?.meta).toMatchObject({ interrupted: true, stopReason: 'error' });
  });

  it('appends no assistant message when an error leaves no text', async () => {
    rig.server.reply((r) => r.status(401));
    const { agent } = await makeAgent();

    const outcome = await agent.run('Answer.');

    expect(outcome).toMatchObject({ status: 'error', error: expect.stringContaining('401') });
    expect(rig.store.log.map((m) => m.role)).toEqual(['user']);
  });

  it('ends with aborted when its signal aborts mid-reply, keeping the text so far', async () => {
    rig.server.reply((r) => r.text('Let me think').hang());
    const controller = new AbortController();
    const { agent } = await makeAgent({
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === 'text') controller.abort();
      },
    });

    expect(await agent.run('Think.')).toEqual({ status: 'aborted' });
    expect(rig.store.log[1]).toMatchObject({ role: 'assistant', content: 'Let me think', meta: { interrupted: true, stopReason: 'aborted' } });
    await rig.server.responseClosed(0);
  });

  it('shares the history between prompts run one after another', async () => {
    rig.server.reply((r) => r.text('First answer.'));
    rig.server.reply((r) => r.text('Second answer.'));
    const { agent } = await makeAgent();

    expect(await agent.run('First question.')).toEqual({ status: 'done', answer: 'First answer.' });
    expect(await agent.run('Second question.')).toEqual({ status: 'done', answer: 'Second answer.' });

    const second = rig.server.requests[1]?.body.messages ?? [];
    expect(second.map((m) => [m.role, wireText(m)])).toEqual([
      ['user', 'First question.'],
      ['assistant', 'First answer.'],
      ['user', 'Second question.'],
    ]);
    expect(rig.store.log.map((m) => m.content)).toEqual(['First question.', 'First answer.', 'Second question.', 'Second answer.']);
    expect(agent.turnCount).toBe(2);
  });

  it('counts maxTurns over all prompts of its life', async () => {
    rig.server.reply((r) => r.text('One.'));
    rig.server.reply((r) => r.text('not requested'));
    const { agent } = await makeAgent({ maxTurns: 1 });

    expect(await agent.run('First.')).toEqual({ status: 'done', answer: 'One.' });
    expect(await agent.run('Second.')).toEqual({ status: 'max_turns', answer: '', turns: 1 });
    expect(rig.server.requests).toHaveLength(1);
  });

  describe('a tool call cut by a stop', () => {
    /** A tool that reports what it did once its signal aborts, as the shell does. */
    const waitTool = () =>
      fakeTool({
        name: 'wait',
        parameters: z.object({}),
        example: {},
        execute: async (_input, ctx) => {
          if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          return { output: 'half of it\nInterrupted before it finished.', isError: true };
        },
      });

    it('tells the model the session ended, before what the call said, when the agent\'s own signal stops it', async () => {
      rig.server.reply((r) => r.text('```wait\n```\n'));
      const session = new AbortController();
      const { agent } = await makeAgent({
        registry: new ToolRegistry([waitTool().spec]),
        toolContext: makeToolContext(rig.workspace, session.signal),
        signal: session.signal,
        onEvent: (event) => {
          if (event.type === 'tool_start') session.abort();
        },
      });

      expect(await agent.run('Wait.')).toEqual({ status: 'aborted' });

      const result = rig.store.log.at(-1);
      expect(result?.content).toBe(`${interruptedCallNote('wait')}\n\nWhat the call reported before it stopped:\nhalf of it\nInterrupted before it finished.`);
      expect(result?.content).toContain('may or may not have taken effect');
      expect(result?.content).toContain('new shell and a new Python kernel');
      expect(result?.meta).toMatchObject({ toolResult: true, tool: 'wait', isError: true, interrupted: true });
      expect(readMessages(rig.store.dir)).toEqual(rig.store.log);
    });

    it('stores only what the call said when one run is stopped and the session goes on', async () => {
      rig.server.reply((r) => r.text('```wait\n```\n'));
      const run = new AbortController();
      const sessionSignal = new AbortController().signal;
      const { agent } = await makeAgent({
        registry: new ToolRegistry([waitTool().spec]),
        toolContext: makeToolContext(rig.workspace, sessionSignal),
        signal: sessionSignal,
        onEvent: (event) => {
          if (event.type === 'tool_start') run.abort();
        },
      });

      expect(await agent.run('Wait.', { signal: run.signal })).toEqual({ status: 'aborted' });

      const result = rig.store.log.at(-1);
      expect(result?.content).toBe('half of it\nInterrupted before it finished.');
      expect(result?.meta?.interrupted).toBeUndefined();
    });
  });
});
