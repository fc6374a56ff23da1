import { describe, expect, it } from 'vitest';
import { Agent, type AgentEvent, type AgentOptions } from '../../src/agent/agent';
import { compactedView } from '../../src/agent/compaction';
import { fitToWindow } from '../../src/agent/context-window';
import { createMessage, type Message, type ReasoningPart } from '../../src/conversation/message';
import { readMessages, SessionStore } from '../../src/conversation/session-store';
import { planHistory } from '../../src/llm/history';
import type { StreamEvent } from '../../src/llm/provider';
import type { ToolFormat } from '../../src/parse/tool-use';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { saveTool } from '../../src/tools/save';
import { useAgentRig } from '../support/agent-session';
import { ScriptedProvider } from '../support/scripted-provider';
import { makeToolContext } from '../support/tool-context';

const rig = useAgentRig({ toolFormat: 'tool', tools: ['read', 'save'], system: 'You are fence.' });

/** A reasoning part as an adapter would emit it (no `beforeCall`: the agent sets it). */
function part(name: string, api: ReasoningPart['api'] = 'anthropic'): ReasoningPart {
  return { api, raw: { type: 'thinking', thinking: `thought ${name}`, signature: `sig-${name}` }, text: `thought ${name}` };
}
const reasoning = (name: string, api?: ReasoningPart['api']): StreamEvent => ({ type: 'reasoning', part: part(name, api) });
const text = (value: string): StreamEvent => ({ type: 'text', text: value });
const call = (index: number, id: string, args: object): StreamEvent => ({ type: 'tool_call', index, id, name: 'read', argumentsDelta: JSON.stringify(args) });
const end = (stopReason: 'end' | 'tool_use' = 'end'): StreamEvent => ({ type: 'done', stopReason });

function makeAgent(provider: ScriptedProvider, format: ToolFormat, options: Partial<AgentOptions> = {}) {
  const events: AgentEvent[] = [];
  const agent = new Agent({
    provider,
    model: 'test',
    modelId: 'anthropic/test',
    registry: new ToolRegistry([readTool, saveTool]),
    store: rig.store,
    toolContext: makeToolContext(rig.workspace),
    format,
    onEvent: (event) => events.push(event),
    ...options,
  });
  return { agent, events };
}

const assistants = (log: readonly Message[]) => log.filter((message) => message.role === 'assistant');

describe('reasoning state kept with the reply', () => {
  it('keeps a part that came before the text without beforeCall, shows the thinking and counts its tokens', async () => {
    const usage = { inputTokens: 10, outputTokens: 30, reasoningTokens: 20 };
    const provider = new ScriptedProvider([{ type: 'thinking', text: 'Let me ' }, { type: 'thinking', text: 'think.' }, reasoning('a'), text('The answer.'), { type: 'usage', usage }, end()]);
    const { agent, events } = makeAgent(provider, 'markdown');

    expect(await agent.run('Why?')).toEqual({ status: 'done', answer: 'The answer.' });

    const [reply] = assistants(rig.store.log);
    expect(reply?.content).toBe('The answer.');
    expect(reply?.meta?.reasoning).toEqual([part('a')]);
    expect(reply?.meta?.usage).toEqual(usage);
    expect(events.filter((event) => event.type === 'thinking')).toEqual([
      { type: 'thinking', text: 'Let me ' },
      { type: 'thinking', text: 'think.' },
    ]);
    // Reasoning tokens are output tokens: the total counts them once.
    expect(agent.tokenCount).toBe(40);
    // What --resume reads back holds it too.
    expect(readMessages(rig.store.dir)).toEqual(rig.store.log);
  });

  it('places parts interleaved with two native calls before their own calls and sends them back', async () => {
    await import('node:fs/promises').then((fs) => fs.writeFile(`${rig.workspace}/a.txt`, 'A\n'));
    const provider = new ScriptedProvider(
      [reasoning('first'), text('Reading both.'), reasoning('second'), call(0, 'call_a', { path: 'a.txt' }), reasoning('third'), call(1, 'call_b', { path: 'b.txt' }), end('tool_use')],
      [reasoning('last'), text('Done.'), end()],
    );
    const { agent } = makeAgent(provider, 'tool');

    await agent.run('Read a and b.');

    const [first, second] = assistants(rig.store.log);
    expect(first?.meta?.toolCalls?.map((stored) => stored.id)).toEqual(['call_a', 'call_b']);
    expect(first?.meta?.reasoning).toEqual([part('first'), { ...part('second'), beforeCall: 0 }, { ...part('third'), beforeCall: 1 }]);
    expect(second?.meta?.reasoning).toEqual([part('last')]);
    // The next request carries the message with its reasoning, for the adapter to send back.
    const replayed = provider.requests[1]?.messages.find((message) => message.role === 'assistant');
    expect(replayed?.meta?.reasoning).toEqual(first?.meta?.reasoning);
  });

  it('keeps what came before the first complete markdown block and nothing after it', async () => {
    const provider = new ScriptedProvider(
      [reasoning('before'), text('Reading.\n'), reasoning('mid'), text('```read a.txt\n```\n\nand more'), reasoning('after'), text(' words'), end()],
      [text('Fine.'), end()],
    );
    const { agent } = makeAgent(provider, 'markdown');

    await agent.run('Read a.');

    const [first, second] = assistants(rig.store.log);
    expect(first?.content).toBe('Reading.\n```read a.txt\n```');
    // Without native calls, every part goes before the text.
    expect(first?.meta?.reasoning).toEqual([part('before'), part('mid')]);
    expect(second?.meta && 'reasoning' in second.meta).toBe(false);
  });

  it('leaves out a part that came after the block when the end of the reply settled it', async () => {
    const provider = new ScriptedProvider([text('```read a.txt\n```\n'), reasoning('after'), text('trailing'), end()], [text('Fine.'), end()]);
    const { agent } = makeAgent(provider, 'markdown');

    await agent.run('Read a.');

    const [first] = assistants(rig.store.log);
    expect(first?.content).toBe('```read a.txt\n```');
    expect(first?.meta?.reasoning).toBeUndefined();
  });

  it('keeps the parts of an interrupted reply, and only those after a restart', async () => {
    const provider = new ScriptedProvider([
      reasoning('lost'),
      text('Half'),
      { type: 'restart', attempt: 1, reason: 'connection reset' },
      reasoning('kept'),
      text('Partial answer'),
      { type: 'done', stopReason: 'error', error: 'the connection dropped' },
    ]);
    const { agent } = makeAgent(provider, 'markdown');

    expect(await agent.run('Go.')).toMatchObject({ status: 'error' });

    const [reply] = assistants(rig.store.log);
    expect(reply?.meta).toMatchObject({ interrupted: true, reasoning: [part('kept')] });
  });
});

describe('reasoning state of a resumed session', () => {
  it('is read back from the log and sent with the next request, in its place', async () => {
    const provider = new ScriptedProvider([reasoning('a'), text('Reading.'), reasoning('b'), call(0, 'call_a', { path: 'a.txt' }), end('tool_use')], [text('Done.'), end()]);
    const first = makeAgent(provider, 'tool');
    await first.agent.run('Read a.');
    const stored = assistants(rig.store.log)[0]?.meta?.reasoning;
    expect(stored).toEqual([part('a'), { ...part('b'), beforeCall: 0 }]);
    rig.store.close();

    const resumed = SessionStore.open(rig.home, 'test');
    try {
      const next = new ScriptedProvider([text('Again.'), end()]);
      const agent = new Agent({ provider: next, model: 'test', modelId: 'anthropic/test', registry: new ToolRegistry([readTool]), store: resumed, toolContext: makeToolContext(rig.workspace), format: 'tool' });
      await agent.run('Go on.');
      const sent = next.requests[0]?.messages.find((message) => message.role === 'assistant');
      expect(sent?.meta?.reasoning).toEqual(stored);
      // What an adapter is handed: each part with the id of the call it came before.
      const history = planHistory(next.requests[0]?.messages ?? [], { nativeCalls: true });
      const entry = history.entries.find((item) => item.kind === 'assistant');
      expect(entry?.kind === 'assistant' ? entry.reasoning.map((item) => item.beforeCallId) : []).toEqual([undefined, 'call_a']);
    } finally {
      resumed.close();
    }
  });
});

describe('the reasoning level of requests', () => {
  it('sends the agent level with every request, and the new one after useReasoning', async () => {
    const provider = new ScriptedProvider([call(0, 'call_a', { path: 'a.txt' }), end('tool_use')], [text('Done.'), end()], [text('Again.'), end()]);
    const { agent } = makeAgent(provider, 'tool', { reasoning: 'high' });

    await agent.run('Read a.');
    agent.useReasoning('off');
    await agent.run('Once more.');
    agent.useReasoning(undefined);
    await agent.run('And again.');

    expect(provider.requests.map((request) => request.reasoning)).toEqual(['high', 'high', 'off', undefined]);
    expect('reasoning' in (provider.requests[3] ?? {})).toBe(false);
  });

  it('sends no level when none was given', async () => {
    const provider = new ScriptedProvider([text('Hi.'), end()]);
    const { agent } = makeAgent(provider, 'markdown');
    await agent.run('Hello.');
    expect(agent.reasoning).toBeUndefined();
    expect(provider.requests[0] && 'reasoning' in provider.requests[0]).toBe(false);
  });
});

describe('reasoning state and compaction', () => {
  it('keeps the meta of the turns that compaction and fitting keep', () => {
    const kept = createMessage('assistant', 'Recent.', { meta: { reasoning: [part('recent')] } });
    const log = [
      createMessage('system', 'You are fence.', { pinned: true }),
      createMessage('user', 'Task.'),
      createMessage('assistant', 'Old.', { meta: { reasoning: [part('old')] } }),
      createMessage('system', 'Summary.', { meta: { compaction: { through: 2 } } }),
      createMessage('user', 'More.'),
      kept,
    ];
    const view = compactedView(log);
    expect(view.at(-1)?.meta?.reasoning).toEqual([part('recent')]);
    const fit = fitToWindow(view, { budget: 10_000, countTokens: (value) => value.length, keepRecent: 2 });
    expect(fit.messages.find((message) => message.content === 'Recent.')?.meta?.reasoning).toEqual([part('recent')]);
  });
});
