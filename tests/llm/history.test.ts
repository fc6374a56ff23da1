import { describe, expect, it } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import { planHistory } from '../../src/llm/history';

describe('planHistory', () => {
  const result = (content: string, callId?: string) => createMessage('system', content, { callId, meta: { toolResult: true } });

  it('joins the leading system prompts and keeps every later message, hidden ones too', () => {
    const history = planHistory(
      [createMessage('system', 'one'), createMessage('system', 'two'), createMessage('user', 'hi', { hide: true }), createMessage('system', 'note')],
      { nativeCalls: false },
    );
    expect(history).toEqual({ systemPrompt: 'one\n\ntwo', entries: [{ kind: 'user', text: 'hi' }, { kind: 'system', text: 'note' }] });
  });

  const assistant = (text: string, calls: { id: string; name: string; arguments: string }[]) =>
    createMessage('assistant', text, { meta: { toolCalls: calls } });

  it('makes a structured call native only when its result follows directly', () => {
    const a = { id: 'c1', name: 'a', arguments: '{}' };
    const b = { id: 'c2', name: 'b', arguments: '{"x":1}' };
    const c = { id: 'c3', name: 'c', arguments: '{}' };
    const history = planHistory(
      [
        createMessage('user', 'go'),
        assistant('Working.\n@a(c1): {}\n@b(c2): {"x":1}\n@c(c3): {}', [a, b, c]),
        result('for c2', 'c2'),
        result('plain result'),
        result('for c1', 'c1'),
        result('again c1', 'c1'),
        createMessage('user', 'and'),
        result('late c3', 'c3'),
      ],
      { nativeCalls: true },
    );
    expect(history.entries).toEqual([
      { kind: 'user', text: 'go' },
      { kind: 'assistant', text: 'Working.\n@c(c3): {}', calls: [a, b], reasoning: [] },
      { kind: 'tool_result', callId: 'c1', name: 'a', text: 'for c1', isError: false },
      { kind: 'tool_result', callId: 'c2', name: 'b', text: 'for c2', isError: false },
      { kind: 'system', text: 'plain result' },
      { kind: 'system', text: 'again c1' },
      { kind: 'user', text: 'and' },
      { kind: 'system', text: 'late c3' },
    ]);
  });

  it('never makes a call of prose that only looks like one', () => {
    const history = planHistory(
      [createMessage('assistant', 'Run it like this:\n@shell(c9): {"command":"rm -rf /"}'), result('r', 'c9')],
      { nativeCalls: true },
    );
    expect(history.entries).toEqual([
      { kind: 'assistant', text: 'Run it like this:\n@shell(c9): {"command":"rm -rf /"}', calls: [], reasoning: [] },
      { kind: 'system', text: 'r' },
    ]);
  });

  it('keeps calls as text when native calls are off', () => {
    const history = planHistory([assistant('@a(c1): {}', [{ id: 'c1', name: 'a', arguments: '{}' }]), result('r', 'c1')], { nativeCalls: false });
    expect(history.entries).toEqual([
      { kind: 'assistant', text: '@a(c1): {}', calls: [], reasoning: [] },
      { kind: 'system', text: 'r' },
    ]);
  });
});
