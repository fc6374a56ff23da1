import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { streamReply, type ReplyEvent } from '../../src/agent/stream-reply';
import { createMessage, type Message } from '../../src/conversation/message';
import { estimateMessageTokens } from '../../src/llm/estimate-tokens';
import { MarkdownStreamScanner } from '../../src/parse/stream-scanner';
import type { IsTool } from '../../src/parse/tool-use';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm';
import { fakeProvider, type FakeApi } from '../support/fake-provider';

let server: FakeLlm;
beforeEach(async () => {
  server = await startFakeLlm();
});
afterEach(async () => {
  await server.close();
});

const isTool: IsTool = (tag) => tag === 'shell' || tag === 'read' || tag === 'save';
const messages: Message[] = [createMessage('system', 'You are fence.'), createMessage('user', 'List the files.')];

/** Streams one reply from the fake server, recording the events passed to onEvent. */
async function reply(api: FakeApi = 'openai', signal?: AbortSignal, onEvent?: (event: ReplyEvent) => void) {
  const { provider, model } = await fakeProvider(server, api);
  const events: ReplyEvent[] = [];
  const result = await streamReply(provider, { model, messages }, {
    scanner: () => new MarkdownStreamScanner(isTool),
    signal,
    onEvent: (event) => {
      events.push(event);
      onEvent?.(event);
    },
  });
  const streamed = events.flatMap((event) => (event.type === 'text' ? [event.text] : [])).join('');
  return { result, events, streamed };
}

describe.each(['openai', 'anthropic'] as const)('streamReply over the %s adapter', (api) => {
  it('stops at the first complete tool block and closes the request', async () => {
    const block = 'Let me look.\n```shell\nls -la\n```\n';
    // The blank line after the closing fence is what shows that the block is complete.
    server.reply((r) => r.text(block.slice(0, 20)).text(`${block.slice(20)}\nsaid in the same chunk`).text('more').hang());

    const { result, streamed } = await reply(api);

    // The script hangs after 'more': the response closes only because fence left the stream.
    await server.responseClosed(0);
    expect(result.stopReason).toBe('tool_use');
    expect(result.text).toBe('Let me look.\n```shell\nls -la\n```');
    expect(result.toolUse).toMatchObject({ tool: 'shell', content: 'ls -la', format: 'markdown' });
    expect(streamed).toBe(block);
    expect(streamed).not.toContain('same chunk');
    expect(streamed).not.toContain('more');
    expect(result.usage?.estimated).toBe(true);
    expect(result.usage?.outputTokens).toBeGreaterThan(0);
    expect(result.error).toBeUndefined();
  });

  it('returns a reply without a tool block whole, with the provider usage', async () => {
    server.reply((r) => r.text('Just ').text('an answer.').usage({ input: 12, output: 3 }));

    const { result, streamed } = await reply(api);

    expect(result).toEqual({ text: 'Just an answer.', usage: { inputTokens: 12, outputTokens: 3 }, stopReason: 'end' });
    expect(streamed).toBe('Just an answer.');
  });
});

describe('streamReply', () => {
  it('estimates the input of a stopped reply from the request when the provider sent no usage yet', async () => {
    server.reply((r) => r.text('```read a.txt\n```\n\n').hang());
    const { result } = await reply('openai');
    expect(result.usage).toEqual({ inputTokens: estimateMessageTokens(messages), outputTokens: 5, estimated: true });
  });

  it('keeps the usage the provider had reported when it stops at a block', async () => {
    // Anthropic reports the input tokens at the start of the stream.
    server.reply((r) => r.usage({ input: 42 }).text('```read a.txt\n```\n\n').hang());
    const { result } = await reply('anthropic');
    expect(result.usage).toMatchObject({ inputTokens: 42, estimated: true });
  });

  it('finds a block whose closing fence is the very last thing in the stream', async () => {
    server.reply((r) => r.text('Run it:\n```shell\necho hi\n``').text('`').usage({ input: 7, output: 4 }));

    const { result } = await reply();

    expect(result.stopReason).toBe('tool_use');
    expect(result.toolUse).toMatchObject({ tool: 'shell', content: 'echo hi' });
    expect(result.text).toBe('Run it:\n```shell\necho hi\n```');
    expect(result.usage).toEqual({ inputTokens: 7, outputTokens: 4 });
  });

  it('keeps only the second attempt when the stream is cut mid-reply and restarted', async () => {
    server.reply((r) => r.text('Plan A:\n```shell\nrm -rf build\n').cut());
    server.reply((r) => r.text('Plan B, no tools needed.'));

    const { result, events } = await reply();

    expect(result).toMatchObject({ text: 'Plan B, no tools needed.', stopReason: 'end' });
    expect(result.toolUse).toBeUndefined();
    const types = events.map((event) => event.type);
    expect(types).toContain('restart');
    expect(types.indexOf('restart')).toBeLessThan(types.lastIndexOf('text'));
    expect(server.requests).toHaveLength(2);
  });

  it('ends with a one-line error on HTTP 401', async () => {
    server.reply((r) => r.status(401, { message: 'Invalid API key.\nCheck your settings.' }));

    const { result } = await reply();

    expect(result.stopReason).toBe('error');
    expect(result.text).toBe('');
    expect(result.toolUse).toBeUndefined();
    expect(result.error).toMatch(/401/);
    expect(result.error).toContain('Invalid API key');
    expect(result.error).not.toContain('\n');
    expect(server.requests).toHaveLength(1);
  });

  it('ends with aborted when the outer signal aborts mid-stream', async () => {
    server.reply((r) => r.text('Thinking about it').hang());
    const controller = new AbortController();

    const { result } = await reply('openai', controller.signal, (event) => {
      if (event.type === 'text') controller.abort();
    });

    expect(result.stopReason).toBe('aborted');
    expect(result.text).toBe('Thinking about it');
    expect(result.toolUse).toBeUndefined();
    expect(result.error).toBeUndefined();
    await server.responseClosed(0);
  });

  it('treats a block tagged with a non-tool language as text', async () => {
    const text = 'Like this:\n```ts\nconst x = 1;\n```\nThat is all.';
    server.reply((r) => r.text(text));

    const { result, streamed } = await reply();

    expect(result).toMatchObject({ text, stopReason: 'end' });
    expect(result.toolUse).toBeUndefined();
    expect(streamed).toBe(text);
  });

  it('runs the first tool block after a non-tool block', async () => {
    server.reply((r) => r.text('```ts\nlet y;\n```\n```read src/a.ts\n```\n```shell\nrm x\n```\n').hang());

    const { result } = await reply();

    expect(result.toolUse).toMatchObject({ tool: 'read', args: ['src/a.ts'] });
    expect(result.text).toBe('```ts\nlet y;\n```\n```read src/a.ts\n```');
    await server.responseClosed(0);
  });

  it('waits for the line after a closing fence before it stops the stream', async () => {
    const written = 'Saving.\n```save README.md\n# Tool\n\nInstall:\n```\nnpm install\n```\n\nDone!\n```\n';
    server.reply((r) => r.text(written.slice(0, 40)).text(written.slice(40)).text('\nSaved').hang());

    const { result, streamed } = await reply();

    await server.responseClosed(0);
    expect(result.stopReason).toBe('tool_use');
    expect(result.toolUse).toMatchObject({ tool: 'save', content: '# Tool\n\nInstall:\n```\nnpm install\n```\n\nDone!' });
    expect(result.text).toBe(written.trimEnd());
    expect(streamed).toBe(written);
  });

  it('runs a block whose closing fence is the last line when the reply ends, not before', async () => {
    server.reply((r) => r.text('```shell\necho hi\n```\n').usage({ input: 7, output: 4 }));

    const { result } = await reply();

    expect(result).toMatchObject({ stopReason: 'tool_use', text: '```shell\necho hi\n```', toolUse: { tool: 'shell', content: 'echo hi' } });
    expect(result.usage).toEqual({ inputTokens: 7, outputTokens: 4 });
  });

  it('ends a block at its closing fence when the reply ends in prose written against it, and keeps only the block', async () => {
    server.reply((r) => r.text('Listing.\n```shell\nls\n```\nThat lists the files.\nAnd more.'));

    const { result, streamed } = await reply();

    expect(result).toMatchObject({ stopReason: 'tool_use', text: 'Listing.\n```shell\nls\n```', toolUse: { tool: 'shell', content: 'ls' } });
    // The prose arrived before the block was known to be complete, so it was shown.
    expect(streamed).toBe('Listing.\n```shell\nls\n```\nThat lists the files.\nAnd more.');
  });

  it('stops at the next fence line after prose written against a closing fence', async () => {
    server.reply((r) => r.text('```shell\nls\n```\nThen I will read it:\n```read a.txt\n```\n').hang());

    const { result } = await reply();

    await server.responseClosed(0);
    expect(result).toMatchObject({ stopReason: 'tool_use', text: '```shell\nls\n```', toolUse: { tool: 'shell', content: 'ls' } });
  });

  it('runs nothing from a reply its length limit cut while the block was in doubt', async () => {
    for (const text of ['```save README.md\nInstall:\n```\nnpm install\n', '```shell\nls\n```\n']) {
      server.reply((r) => r.text(text).stop('max_tokens'));
      const { result } = await reply();
      expect(result).toMatchObject({ stopReason: 'max_tokens', text });
      expect(result.toolUse).toBeUndefined();
    }
  });

  it('runs a block completed before the length limit cut the reply', async () => {
    server.reply((r) => r.text('```shell\nls\n```\n\nThe list will').stop('max_tokens'));

    const { result } = await reply();

    expect(result).toMatchObject({ stopReason: 'tool_use', text: '```shell\nls\n```', toolUse: { tool: 'shell', content: 'ls' } });
  });
});
