import { Lexer, type Token } from 'marked';
import { describe, expect, it } from 'vitest';
import { createStyle, stripAnsi, visibleWidth } from '../../src/tui/terminal-style';
import { briefHistory, conversationOf, exportMarkdown, fullLog } from '../../src/tui/transcript';
import { createMessage, type Message } from '../../src/conversation/message';
import type { SessionInfo } from '../../src/conversation/session-store';

const plain = createStyle(false);
const colour = createStyle(true);

const systemPrompt = () => createMessage('system', 'You are fence. Use the tools.', { pinned: true });
const prompt = (text: string) => createMessage('user', text);
const reply = (text: string) => createMessage('assistant', text, { meta: { model: 'local/test' } });
const toolResult = (tool: string, output: string, isError = false) =>
  createMessage('system', output, { meta: { toolResult: true, tool, ...(isError ? { isError: true } : {}) } });

const info: SessionInfo = {
  id: '20300101-120000-abcdef',
  model: 'local/test',
  workspace: '/projects/app',
  toolFormat: 'markdown',
  tools: ['shell', 'save'],
  createdAt: '2030-01-01T12:00:00.000Z',
};

describe('conversationOf', () => {
  it('leaves out the pinned system prompt at the start', () => {
    const log = [systemPrompt(), prompt('hi'), reply('hello')];
    expect(conversationOf(log)).toEqual(log.slice(1));
  });

  it('leaves out every pinned message at the start', () => {
    const log = [systemPrompt(), createMessage('system', 'project notes', { pinned: true }), prompt('hi')];
    expect(conversationOf(log).map((m) => m.content)).toEqual(['hi']);
  });

  it('keeps everything of a log without a system prompt, and later messages even when pinned', () => {
    const later = createMessage('system', 'pinned later', { pinned: true });
    const log = [prompt('hi'), later, reply('hello')];
    expect(conversationOf(log)).toEqual(log);
  });

  it('gives nothing for an empty log or one with only the system prompt', () => {
    expect(conversationOf([])).toEqual([]);
    expect(conversationOf([systemPrompt()])).toEqual([]);
  });
});

describe('briefHistory', () => {
  const log: Message[] = [
    systemPrompt(),
    prompt('first prompt'),
    reply('first reply'),
    prompt('second prompt'),
    reply('\n\n  Let me look.\nsecond line of the reply'),
    toolResult('shell', 'total 0\nfile.txt'),
    toolResult('read', 'no such file', true),
    reply('done'),
  ];

  it('shows the last messages, one line each, and how many came before', () => {
    const lines = briefHistory(log, plain, 80, 3);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/\b4 earlier\b/);
    expect(lines.slice(1).map((line) => line.includes('\n'))).toEqual([false, false, false]);
    expect(lines[1]).toContain('total 0');
    expect(lines[1]).toContain('shell');
    expect(lines[2]).toContain('no such file');
    expect(lines[2]).toContain('read');
    expect(lines[3]).toContain('done');
  });

  it('shows the first non-blank line of a message, and names who wrote it', () => {
    const lines = briefHistory(log, plain, 80, 7);
    expect(lines).toHaveLength(7);
    const lookLine = lines.find((line) => line.includes('Let me look.'));
    expect(lookLine).toBeDefined();
    expect(lookLine).not.toContain('second line');
    const you = lines.find((line) => line.includes('first prompt')) ?? '';
    const fence = lines.find((line) => line.includes('first reply')) ?? '';
    expect(you).toMatch(/\byou\b/);
    expect(fence).toMatch(/\bfence\b/);
    expect(lines.join('\n')).not.toContain('You are fence');
  });

  it('marks a failed tool result apart from one that worked', () => {
    const [worked] = briefHistory([toolResult('shell', 'exit 1')], plain, 80);
    const [failed] = briefHistory([toolResult('shell', 'exit 1', true)], plain, 80);
    expect(worked).toContain('shell');
    expect(failed).toContain('shell');
    expect(failed).not.toEqual(worked);
  });

  it('has no line about earlier messages when all fit', () => {
    const lines = briefHistory(log, plain, 80, 50);
    expect(lines).toHaveLength(7);
    expect(lines.join('\n')).not.toMatch(/earlier/);
  });

  it('shows 6 messages by default', () => {
    const lines = briefHistory(log, plain, 80);
    expect(lines).toHaveLength(7);
    expect(lines[0]).toMatch(/\b1 earlier\b/);
  });

  it('cuts long lines to the width', () => {
    const long = [prompt(`please ${'really '.repeat(40)}fix it`), reply(`${'word '.repeat(60)}end`)];
    for (const style of [plain, colour]) {
      const lines = briefHistory(long, style, 40);
      expect(lines).toHaveLength(2);
      for (const line of lines) {
        expect(visibleWidth(line)).toBeLessThanOrEqual(40);
        expect(stripAnsi(line).endsWith('…')).toBe(true);
      }
    }
  });

  it('leaves out hidden messages, and does not count them as earlier', () => {
    const withHidden = [prompt('visible one'), createMessage('system', 'a hidden nudge', { hide: true }), reply('visible two')];
    const lines = briefHistory(withHidden, plain, 80, 2);
    expect(lines).toHaveLength(2);
    expect(lines.join('\n')).not.toContain('hidden nudge');
    expect(lines.join('\n')).not.toMatch(/earlier/);
  });

  it('gives nothing for an empty conversation', () => {
    expect(briefHistory([systemPrompt()], plain, 80)).toEqual([]);
  });
});

describe('fullLog', () => {
  it('holds every prompt, reply and tool output, and not the system prompt', () => {
    const log = [systemPrompt(), prompt('list the files'), reply('Listing them now.'), toolResult('shell', 'alpha.txt\nbeta.txt'), reply('There are two.')];
    const text = stripAnsi(fullLog(log, plain, 80));
    for (const part of ['list the files', 'Listing them now.', 'alpha.txt', 'beta.txt', 'There are two.']) expect(text).toContain(part);
    expect(text).not.toContain('You are fence');
    expect(text.indexOf('list the files')).toBeLessThan(text.indexOf('alpha.txt'));
    expect(text.indexOf('alpha.txt')).toBeLessThan(text.indexOf('There are two.'));
  });
});

/** The block tokens of a markdown document, blank space left out. */
function blocksOf(markdown: string): Token[] {
  return Lexer.lex(markdown).filter((token) => token.type !== 'space');
}

function headings(markdown: string): string[] {
  return blocksOf(markdown).flatMap((token) => (token.type === 'heading' ? [`${'#'.repeat(token.depth as number)} ${token.text as string}`] : []));
}

function codeBlocks(markdown: string): string[] {
  return blocksOf(markdown).flatMap((token) => (token.type === 'code' ? [token.text as string] : []));
}

describe('exportMarkdown', () => {
  it('starts with a title and the session id, model and workspace', () => {
    const markdown = exportMarkdown(info, [prompt('hi')]);
    const [title, list] = blocksOf(markdown);
    expect(title).toMatchObject({ type: 'heading', depth: 1 });
    expect((title as { text: string }).text).toContain(info.id);
    expect(list?.type).toBe('list');
    expect(list?.raw).toContain(info.id);
    expect(list?.raw).toContain('local/test');
    expect(list?.raw).toContain('/projects/app');
  });

  it("uses the session's name in the title when it has one", () => {
    const markdown = exportMarkdown({ ...info, name: 'login bug' }, [prompt('hi')]);
    expect(headings(markdown)[0]).toContain('login bug');
  });

  it('puts each prompt and reply under a heading, and each tool result in a code block, in order', () => {
    const log = [systemPrompt(), prompt('list the files'), reply('Listing them.'), toolResult('shell', 'alpha.txt\nbeta.txt\n'), reply('There are two.')];
    const markdown = exportMarkdown(info, log);
    const titles = headings(markdown);
    expect(titles).toHaveLength(5);
    expect(titles.slice(1).map((title) => title.split(' ')[0])).toEqual(['##', '##', '###', '##']);
    expect(titles[3]).toContain('shell');
    expect(codeBlocks(markdown)).toEqual(['alpha.txt\nbeta.txt']);
    for (const part of ['list the files', 'Listing them.', 'There are two.']) expect(markdown).toContain(part);
    expect(markdown).not.toContain('You are fence');
    expect(markdown.indexOf('list the files')).toBeLessThan(markdown.indexOf('Listing them.'));
    expect(markdown.endsWith('\n')).toBe(true);
    expect(markdown.endsWith('\n\n')).toBe(false);
  });

  it('fences a tool output holding ``` with a longer fence, so the document stays valid', () => {
    const output = ['README.md:', '```sh', 'npm install', '```', 'more text'].join('\n');
    const log = [prompt('show the readme'), toolResult('read', output), prompt('thanks'), reply('You are welcome.')];
    const markdown = exportMarkdown(info, log);
    expect(codeBlocks(markdown)).toEqual([output]);
    const titles = headings(markdown);
    expect(titles).toHaveLength(5);
    expect(titles.at(-2)).toMatch(/^## /);
    expect(titles.at(-1)).toMatch(/^## /);
  });

  it('fences an output holding a run of many backticks with a longer fence still', () => {
    const output = 'before\n``````\ninside\n``````\nafter';
    const markdown = exportMarkdown(info, [toolResult('shell', output), prompt('next')]);
    expect(codeBlocks(markdown)).toEqual([output]);
    expect(headings(markdown).at(-1)).toMatch(/^## /);
  });

  it('keeps a code block the model wrote in its reply as a code block', () => {
    const log = [prompt('run it'), reply('Running:\n\n```shell\nnpm test\n```'), toolResult('shell', 'ok')];
    const markdown = exportMarkdown(info, log);
    expect(codeBlocks(markdown)).toEqual(['npm test', 'ok']);
    expect(headings(markdown)).toHaveLength(4);
  });

  it('keeps the headings after a reply whose code block was cut short', () => {
    const log = [prompt('run it'), reply('Running:\n\n```shell\nnpm te'), prompt('go on'), reply('Done.')];
    const markdown = exportMarkdown(info, log);
    expect(codeBlocks(markdown)).toEqual(['npm te']);
    expect(headings(markdown).slice(-3)).toEqual(['## fence', '## You', '## fence']);
  });
});
