import { Lexer, type Tokens } from 'marked';
import type { Message } from '../conversation/message';
import { readFenceLine } from '../parse/fence-line';
import type { SessionInfo } from '../conversation/session-store';
import { visibleLine, visibleText } from '../processes/visible-text';
import { MarkdownStream } from './markdown-stream';
import { truncateToWidth, type Style } from './terminal-style';

/** The messages a person wrote or read: everything but the system prompt at the start. */
export function conversationOf(log: readonly Message[]): Message[] {
  let start = 0;
  while (start < log.length && log[start]?.pinned) start++;
  return log.slice(start);
}

/** Who wrote a message, as the chat names it. */
function speaker(message: Message): string {
  if (message.meta?.toolResult) return `${message.meta.isError ? '✗' : '✓'} ${visibleLine(message.meta.tool ?? 'tool')}`;
  if (message.meta?.compaction) return 'summary';
  if (message.role === 'user') return 'you';
  if (message.role === 'assistant') return 'fence';
  return 'note';
}

/**
 * The end of a conversation in a few lines, for a resumed chat: the last `count` messages, each
 * one line (who, then its first line cut to the width), and how many came before.
 */
export function briefHistory(log: readonly Message[], style: Style, width: number, count = 6): string[] {
  const messages = conversationOf(log).filter((message) => !message.hide);
  const shown = messages.slice(-count);
  const lines: string[] = [];
  if (messages.length > shown.length) lines.push(style.dim(`⋯ ${messages.length - shown.length} earlier messages (/log shows them all)`));
  for (const message of shown) {
    const who = speaker(message);
    // A reply that is a code block is shown by its first line of code, not by its fence.
    const first = message.content.split('\n').find((line) => line.trim() && !readFenceLine(line)) ?? '';
    const text = truncateToWidth(visibleLine(first).trim(), Math.max(10, width - who.length - 4));
    const label = message.role === 'user' ? style.bold(`${who} ›`) : style.dim(`${who} ›`);
    lines.push(`${label} ${message.role === 'user' ? text : style.dim(text)}`);
  }
  return lines;
}

/**
 * The whole conversation for the terminal (`/log`): prompts, replies rendered from markdown,
 * tool results in full, notes and summaries dimmed. Prompts, results and notes are made visible
 * first (see `visibleText`), replies shown as `MarkdownStream` shows them: nothing of the
 * conversation can drive the terminal.
 */
export function fullLog(log: readonly Message[], style: Style, width: number): string {
  const parts: string[] = [];
  for (const message of conversationOf(log)) {
    const who = speaker(message);
    if (message.role === 'assistant') {
      const markdown = new MarkdownStream({ style, width });
      parts.push(`${style.cyan(`${who} ›`)}\n${markdown.push(message.content)}${markdown.finish()}`);
    } else if (message.role === 'user') {
      parts.push(`${style.bold(`${who} ›`)} ${visibleText(message.content)}\n`);
    } else {
      const bar = style.dim('│ ');
      const body = visibleText(message.content).replace(/\n+$/, '').split('\n').map((line) => bar + line).join('\n');
      parts.push(`${style.dim(`${who} ›`)}\n${body}\n`);
    }
  }
  return parts.join('\n');
}

/**
 * A session as a markdown document (`/export`): a title with the session's id, model and
 * workspace, then each prompt and reply under a heading, tool results in fenced blocks long
 * enough to hold any backticks inside them.
 */
export function exportMarkdown(info: SessionInfo, log: readonly Message[]): string {
  const lines = [`# fence session ${info.name ?? info.id}`, '', `- id: ${info.id}`, `- model: ${info.model}`, `- workspace: ${info.workspace}`, `- exported: ${new Date().toISOString()}`, ''];
  for (const message of conversationOf(log)) {
    const who = speaker(message);
    if (message.role === 'user') lines.push('## You', '', message.content, '');
    else if (message.role === 'assistant') lines.push('## fence', '', withClosedFence(message.content), '');
    else {
      const fence = '`'.repeat(Math.max(3, longestRun(message.content, '`') + 1));
      lines.push(`### ${message.meta?.toolResult ? `Result of ${who}` : who}`, '', `${fence}text`, message.content.replace(/\n+$/, ''), fence, '');
    }
  }
  return `${lines.join('\n').replace(/\n+$/, '')}\n`;
}

/**
 * A reply as it was, with a closing fence added when it ends inside a code block (cut short by
 * Ctrl-C or its length limit), so the rest of the document is not swallowed by it.
 */
function withClosedFence(text: string): string {
  const tokens = new Lexer().lex(text).filter((token) => token.type !== 'space');
  const last = tokens[tokens.length - 1];
  if (last?.type !== 'code' || (last as Tokens.Code).codeBlockStyle === 'indented') return text;
  const raw = last.raw.trimStart();
  const char = raw[0];
  if (char !== '`' && char !== '~') return text;
  const opening = longestLeadingRun(raw, char);
  const lastLine = raw.trimEnd().split('\n').pop()?.trim() ?? '';
  const closed = raw.trimEnd().includes('\n') && lastLine.length >= opening && [...lastLine].every((c) => c === char);
  return closed ? text : `${text.replace(/\n*$/, '')}\n${char.repeat(opening)}`;
}

function longestLeadingRun(text: string, char: string): number {
  let n = 0;
  while (text[n] === char) n++;
  return n;
}

function longestRun(text: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (const c of text) {
    run = c === char ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  return longest;
}
