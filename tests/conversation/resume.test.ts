import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, NativeToolCall } from '../../src/conversation/message';
import { interruptedCallNote, messagesToRepair, newRuntimesNotice } from '../../src/conversation/resume';
import { readMessages, SessionStore } from '../../src/conversation/session-store';
import { planHistory } from '../../src/llm/history';
import { useTempWorkspace } from '../support/tool-context';

const NOW = new Date('2026-05-03T12:00:00.000Z');
const T = '2026-05-03T11:00:00.000Z';

const system: Message = { role: 'system', content: 'You are fence.', timestamp: T, pinned: true };
const user: Message = { role: 'user', content: 'Fix the tests.', timestamp: T };

function assistant(content: string, meta: Message['meta'] = {}): Message {
  return { role: 'assistant', content, timestamp: T, meta: { model: 'local/test', ...meta } };
}

function call(id: string, name: string, args = '{}'): NativeToolCall {
  return { id, name, arguments: args };
}

function withCalls(...calls: NativeToolCall[]): Message {
  return assistant(calls.map((c) => `@${c.name}(${c.id}): ${c.arguments}`).join('\n'), { stopReason: 'tool_use', toolCalls: calls });
}

function result(content: string, tool: string, callId?: string): Message {
  return { role: 'system', content, timestamp: T, ...(callId ? { callId } : {}), meta: { toolResult: true, tool } };
}

function interrupted(tool?: string, callId?: string): Message {
  return {
    role: 'system',
    content: interruptedCallNote(tool),
    timestamp: '2026-05-03T12:00:00.000Z',
    ...(callId ? { callId } : {}),
    meta: { toolResult: true, ...(tool ? { tool } : {}), isError: true, interrupted: true },
  };
}

const markdownBlock = assistant("I'll run it.\n```shell\nnpm test\n```", { stopReason: 'tool_use' });

describe('interruptedCallNote', () => {
  it('names the call, says it may or may not have taken effect, and what a new shell and kernel lose', () => {
    const note = interruptedCallNote('shell');
    expect(note).toMatch(/^Interrupted: fence stopped before this shell call finished or before its result was recorded\./);
    expect(note).toContain('It may or may not have taken effect, wholly or in part: check before repeating it.');
    expect(note).toContain('new shell and a new Python kernel');
    expect(note).toContain('the working folder is the workspace again');
    expect(note).toContain("the old shell's variables, functions and jobs and the old kernel's variables and imports are gone");
    expect(note).toContain('unless fence was killed outright');
    expect(interruptedCallNote()).toMatch(/^Interrupted: fence stopped before this tool call finished/);
  });
});

describe('messagesToRepair', () => {
  it('needs nothing for an empty log or one holding only the system prompt', () => {
    expect(messagesToRepair([], NOW)).toEqual([]);
    expect(messagesToRepair([system], NOW)).toEqual([]);
  });

  it('needs nothing when the log ends with a user message', () => {
    expect(messagesToRepair([system, user], NOW)).toEqual([]);
    expect(messagesToRepair([system, user, markdownBlock, result('ok', 'shell'), user], NOW)).toEqual([]);
  });

  it('needs nothing after a final answer, a reply cut short or a failed request', () => {
    expect(messagesToRepair([system, user, assistant('Done.', { stopReason: 'end' })], NOW)).toEqual([]);
    expect(messagesToRepair([system, user, assistant('Half a', { stopReason: 'aborted', interrupted: true })], NOW)).toEqual([]);
    expect(messagesToRepair([system, user, assistant('Half a', { stopReason: 'error', interrupted: true })], NOW)).toEqual([]);
    expect(messagesToRepair([system, user, assistant('Long', { stopReason: 'max_tokens' })], NOW)).toEqual([]);
  });

  it('answers a markdown or XML block that was about to run with one interrupted result, without tool or callId', () => {
    expect(messagesToRepair([system, user, markdownBlock], NOW)).toEqual([interrupted()]);
    const xml = assistant('<tool-use name="shell">npm test</tool-use>', { stopReason: 'tool_use', toolCalls: [] });
    expect(messagesToRepair([system, user, xml], NOW)).toEqual([interrupted()]);
  });

  it('needs nothing when the block has its result', () => {
    expect(messagesToRepair([system, user, markdownBlock, result('3 passed', 'shell')], NOW)).toEqual([]);
  });

  it('answers every native call of the last reply when none has a result, in call order', () => {
    const log = [system, user, withCalls(call('c1', 'read', '{"path":"a"}'), call('c2', 'shell', '{"command":"ls"}'))];
    expect(messagesToRepair(log, NOW)).toEqual([interrupted('read', 'c1'), interrupted('shell', 'c2')]);
  });

  it('answers only the native calls that have no result', () => {
    const log = [system, user, withCalls(call('c1', 'read'), call('c2', 'shell'), call('c3', 'save')), result('a', 'read', 'c1'), result('ok', 'save', 'c3')];
    expect(messagesToRepair(log, NOW)).toEqual([interrupted('shell', 'c2')]);
  });

  it('needs nothing when every native call has its result, in whatever order', () => {
    const log = [system, user, withCalls(call('c1', 'read'), call('c2', 'shell')), result('ok', 'shell', 'c2'), result('a', 'read', 'c1')];
    expect(messagesToRepair(log, NOW)).toEqual([]);
  });

  it('does not count results of an earlier reply, nor results without the call id', () => {
    const log = [
      system,
      user,
      withCalls(call('c1', 'read')),
      result('a', 'read', 'c1'),
      withCalls(call('c1', 'read'), call('c2', 'shell')),
      result('no id', 'shell'),
      result('other id', 'shell', 'c9'),
    ];
    expect(messagesToRepair(log, NOW)).toEqual([interrupted('read', 'c1'), interrupted('shell', 'c2')]);
  });

  it('needs nothing when something other than tool results follows the calls', () => {
    expect(messagesToRepair([system, user, withCalls(call('c1', 'read')), user], NOW)).toEqual([]);
    const notice: Message = { role: 'system', content: 'A notice.', timestamp: T };
    expect(messagesToRepair([system, user, withCalls(call('c1', 'read')), notice], NOW)).toEqual([]);
  });

  it('answers a repeated call id once and skips an empty one', () => {
    const log = [system, user, withCalls(call('c1', 'read'), call('c1', 'shell'), call('', 'save'))];
    expect(messagesToRepair(log, NOW)).toEqual([interrupted('read', 'c1')]);
  });

  it('leaves the tool out when the call has no name', () => {
    expect(messagesToRepair([system, user, withCalls(call('c1', ''))], NOW)).toEqual([interrupted(undefined, 'c1')]);
  });

  it('stamps with the current time by default, and never changes the log', () => {
    const log = [system, user, markdownBlock];
    const copy = structuredClone(log);
    const [repair] = messagesToRepair(log);
    expect(new Date(repair!.timestamp).toISOString()).toBe(repair!.timestamp);
    expect(log).toEqual(copy);
  });

  it('leaves a log whose every native call has exactly one replayed result, and then needs nothing more', () => {
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const arb = fc.record({
      calls: fc.uniqueArray(fc.constantFrom(...ids), { minLength: 1, maxLength: 5 }),
      answered: fc.subarray(ids),
      order: fc.shuffledSubarray(ids, { minLength: 5, maxLength: 5 }),
    });
    fc.assert(
      fc.property(arb, ({ calls, answered, order }) => {
        const results = order.filter((id) => calls.includes(id) && answered.includes(id)).map((id) => result(`out ${id}`, 'read', id));
        const log = [system, user, withCalls(...calls.map((id) => call(id, 'read'))), ...results];
        const repaired = [...log, ...messagesToRepair(log, NOW)];

        expect(messagesToRepair(repaired, NOW)).toEqual([]);
        const entries = planHistory(repaired, { nativeCalls: true }).entries;
        const replayed = entries.find((entry) => entry.kind === 'assistant');
        expect(replayed?.kind === 'assistant' ? replayed.calls.map((c) => c.id) : []).toEqual(calls);
        const paired = entries.filter((entry) => entry.kind === 'tool_result').map((entry) => (entry.kind === 'tool_result' ? entry.callId : ''));
        expect(paired).toEqual(calls);
      }),
    );
  });
});

describe('newRuntimesNotice', () => {
  const answer = assistant('Done.', { stopReason: 'end' });
  const shellBlock = assistant('```shell\ncd sub\n```', { stopReason: 'tool_use' });
  const notice: Message = { role: 'system', content: 'new', timestamp: T, meta: { notice: 'new_runtimes' } };

  it('tells a session that used the shell or Python that both are new, even after a run that ended well', () => {
    for (const tool of ['shell', 'python']) {
      const text = newRuntimesNotice([system, user, shellBlock, result('ok', tool), answer]);
      expect(text).toContain('new shell and a new Python kernel');
      expect(text).toContain('the working folder is the workspace again');
    }
  });

  it('says nothing to a session that never used them', () => {
    expect(newRuntimesNotice([system, user, answer])).toBeUndefined();
    expect(newRuntimesNotice([system, user, assistant('```read a\n```', { stopReason: 'tool_use' }), result('text', 'read'), answer])).toBeUndefined();
    expect(newRuntimesNotice([])).toBeUndefined();
  });

  it('says nothing when the log already says it last: an interruption note, or an earlier notice', () => {
    expect(newRuntimesNotice([system, user, shellBlock, interrupted()])).toBeUndefined();
    expect(newRuntimesNotice([system, user, shellBlock, result('ok', 'shell'), answer, notice, user, answer])).toBeUndefined();
  });

  it('says it again once the shell was used after the last notice', () => {
    expect(newRuntimesNotice([system, shellBlock, result('ok', 'shell'), notice, user, shellBlock, result('ok', 'shell'), answer])).toContain('new shell');
  });
});

describe('resuming a stored session', () => {
  const home = useTempWorkspace('fence-resume-');

  it('repairs a log left mid-call once, and the repair is stored for good', () => {
    const store = SessionStore.create(home(), { id: 'mid-call', model: 'local/test', workspace: '/w', toolFormat: 'tool', tools: ['read', 'shell'] });
    for (const message of [system, user, withCalls(call('c1', 'read'), call('c2', 'shell')), result('a', 'read', 'c1')]) store.append(message);
    store.close();

    const resumed = SessionStore.open(home(), 'mid-call');
    const repairs = messagesToRepair(resumed.log, NOW);
    expect(repairs).toEqual([interrupted('shell', 'c2')]);
    for (const message of repairs) resumed.append(message);
    resumed.close();

    const again = SessionStore.open(home(), 'mid-call');
    expect(messagesToRepair(again.log, NOW)).toEqual([]);
    expect(again.log.at(-1)).toEqual(interrupted('shell', 'c2'));
    again.close();
    expect(readMessages(again.dir)).toHaveLength(5);
  });
});
