import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import { planHistory } from '../../src/llm/history';
import { findNativeCalls, formatNativeCall } from '../../src/llm/native-calls';

describe('findNativeCalls', () => {
  it('finds calls in text order, minding braces inside strings', () => {
    const text = 'First.\n@save(call_1): {"path":"a}.txt","content":"{ not a brace"}\nthen @shell(call-2): {"command":"ls"}';
    expect(findNativeCalls(text).map(({ name, id, argumentsJson }) => ({ name, id, argumentsJson }))).toEqual([
      { name: 'save', id: 'call_1', argumentsJson: '{"path":"a}.txt","content":"{ not a brace"}' },
      { name: 'shell', id: 'call-2', argumentsJson: '{"command":"ls"}' },
    ]);
  });

  it('leaves alone what only looks like a call', () => {
    expect(findNativeCalls('@shell(call_1): {"command": ')).toEqual([]);
    expect(findNativeCalls('@shell(call_1): {command: ls}')).toEqual([]);
    expect(findNativeCalls('mail me @home(now): later')).toEqual([]);
  });

  it('reads back every call it writes', () => {
    const name = fc.stringMatching(/^[A-Za-z_][\w-]{0,12}$/);
    const id = fc.stringMatching(/^[\w-]{1,20}$/);
    fc.assert(
      fc.property(fc.string(), name, id, fc.dictionary(fc.string(), fc.jsonValue()), (before, toolName, callId, args) => {
        const json = JSON.stringify(args);
        const text = `${before.replaceAll('@', '')}\n${formatNativeCall(toolName, callId, json)}`;
        const calls = findNativeCalls(text);
        expect(calls.at(-1)).toMatchObject({ name: toolName, id: callId, argumentsJson: json, end: text.length });
      }),
    );
  });
});

describe('planHistory', () => {
  const result = (content: string, callId?: string) => createMessage('system', content, { callId, meta: { toolResult: true } });

  it('joins the leading system prompts and keeps every later message, hidden ones too', () => {
    const history = planHistory(
      [createMessage('system', 'one'), createMessage('system', 'two'), createMessage('user', 'hi', { hide: true }), createMessage('system', 'note')],
      { nativeCalls: false },
    );
    expect(history).toEqual({ systemPrompt: 'one\n\ntwo', entries: [{ kind: 'user', text: 'hi' }, { kind: 'system', text: 'note' }] });
  });

  it('makes a call native only when its result follows directly', () => {
    const history = planHistory(
      [
        createMessage('user', 'go'),
        createMessage('assistant', '@a(c1): {}\n@b(c2): {"x":1}\n@c(c3): {}'),
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
      {
        kind: 'assistant',
        text: '@c(c3): {}',
        calls: [
          { name: 'a', id: 'c1', argumentsJson: '{}', start: 0, end: 10 },
          { name: 'b', id: 'c2', argumentsJson: '{"x":1}', start: 11, end: 26 },
        ],
      },
      { kind: 'tool_result', callId: 'c1', name: 'a', text: 'for c1', isError: false },
      { kind: 'tool_result', callId: 'c2', name: 'b', text: 'for c2', isError: false },
      { kind: 'system', text: 'plain result' },
      { kind: 'system', text: 'again c1' },
      { kind: 'user', text: 'and' },
      { kind: 'system', text: 'late c3' },
    ]);
  });

  it('keeps calls as text when native calls are off', () => {
    const history = planHistory([createMessage('assistant', '@a(c1): {}'), result('r', 'c1')], { nativeCalls: false });
    expect(history.entries).toEqual([
      { kind: 'assistant', text: '@a(c1): {}', calls: [] },
      { kind: 'system', text: 'r' },
    ]);
  });
});
