import { describe, expect, it } from 'vitest';
import { createMessage, type ImageRef, type Message } from '../../src/conversation/message';
import { toAnthropicMessages } from '../../src/llm/anthropic-messages';
import { planHistory } from '../../src/llm/history';
import { OPENAI_COMPAT } from '../../src/llm/openai-compat';
import { toOpenAIMessages } from '../../src/llm/openai-messages';
import { toResponsesInput } from '../../src/llm/openai-responses-input';

const image = (data: string, withData = true): ImageRef => ({
  file: `images/${'a'.repeat(64)}.png`,
  mediaType: 'image/png',
  width: 2,
  height: 2,
  ...(withData ? { data } : {}),
});

/** A turn of two native reads, each with an image, then the model's answer and a prompt with one. */
const log: Message[] = [
  createMessage('system', 'You are fence.'),
  createMessage('user', 'Compare the shots.'),
  createMessage('assistant', 'Reading.\n@read(c1): {"path":"a.png"}\n@read(c2): {"path":"b.png"}', {
    meta: {
      toolCalls: [
        { id: 'c1', name: 'read', arguments: '{"path":"a.png"}' },
        { id: 'c2', name: 'read', arguments: '{"path":"b.png"}' },
      ],
    },
  }),
  createMessage('system', 'a.png: PNG 2×2.', { callId: 'c1', meta: { toolResult: true, tool: 'read', images: [image('AAAA')] } }),
  createMessage('system', 'b.png: PNG 2×2.', { callId: 'c2', meta: { toolResult: true, tool: 'read', images: [image('BBBB')] } }),
];

describe('images in the history', () => {
  it('carries only the images whose bytes were loaded', () => {
    const history = planHistory([createMessage('user', 'look', { meta: { images: [image('AAAA'), image('', false)] } })], { nativeCalls: false });
    expect(history.entries).toEqual([{ kind: 'user', text: 'look', images: [{ mediaType: 'image/png', data: 'AAAA' }] }]);
  });
});

describe('Chat Completions', () => {
  it('answers every call of a turn before the images follow, in one user message naming the calls', () => {
    const out = toOpenAIMessages(log, OPENAI_COMPAT.openai, true);
    expect(out.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'user']);
    expect(out[5]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'The image of the read result (call c1):\nThe image of the read result (call c2):' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,BBBB' } },
      ],
    });
  });

  it('merges a prompt with images into the user message before it where the server wants alternation', () => {
    const messages = [createMessage('user', 'one'), createMessage('user', 'two', { meta: { images: [image('CCCC')] } })];
    expect(toOpenAIMessages(messages, OPENAI_COMPAT.local, false)).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,CCCC' } },
        ],
      },
    ]);
  });
});

describe('Anthropic Messages', () => {
  it('puts each image inside its tool_result block, after the text', () => {
    const { messages } = toAnthropicMessages(log, true);
    const last = messages.at(-1)!;
    expect(last.role).toBe('user');
    expect(last.content).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'c1',
        content: [
          { type: 'text', text: 'a.png: PNG 2×2.' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
        ],
      },
      {
        type: 'tool_result',
        tool_use_id: 'c2',
        content: [
          { type: 'text', text: 'b.png: PNG 2×2.' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'BBBB' } },
        ],
        cache_control: { type: 'ephemeral' },
      },
    ]);
  });
});

describe('Responses', () => {
  it("puts each image in its function_call_output's output list", () => {
    const { input } = toResponsesInput(log, OPENAI_COMPAT.openai, true);
    const outputs = input.filter((item) => 'type' in item && item.type === 'function_call_output');
    expect(outputs).toEqual([
      {
        type: 'function_call_output',
        call_id: 'c1',
        output: [
          { type: 'input_text', text: 'a.png: PNG 2×2.' },
          { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'auto' },
        ],
      },
      {
        type: 'function_call_output',
        call_id: 'c2',
        output: [
          { type: 'input_text', text: 'b.png: PNG 2×2.' },
          { type: 'input_image', image_url: 'data:image/png;base64,BBBB', detail: 'auto' },
        ],
      },
    ]);
  });
});
