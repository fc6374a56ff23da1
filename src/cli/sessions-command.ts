import { loadConfig } from '../config/config';
import { fenceHome } from '../config/paths';
import type { Message } from '../conversation/message';
import { findSession, listSessions, type SessionInfo, type SessionSummary } from '../conversation/session-store';
import type { ModelInfo } from '../llm/model-info';
import { visibleLine, visibleText } from '../processes/visible-text';
import { sessionTreeLines } from './session-tree';
import { dollars, sessionUsage, shortCount } from '../tui/session-usage';

/** Width a listing is cut to when stdout is not a terminal. */
const PIPED_WIDTH = 160;

/**
 * `fence sessions list`: a header, then one line a session, newest first: its id, when it
 * started, its model, its requests and their cost (replies taken back by /undo included; `-`
 * when the model's prices are unknown, `—` for a session that never asked a model), and its
 * name, its first prompt, or the command that made it (`fence run lint.js`), cut to fit the
 * terminal. Returns the exit code.
 */
export function listSessionsCommand(): number {
  const sessions = listSessions(fenceHome());
  if (sessions.length === 0) {
    process.stdout.write('no sessions yet\n');
    return 0;
  }
  const prices = new ModelPrices();
  const rows = sessions.map((session) => {
    const usage = sessionUsage(session.paid, prices.forWorkspace(session.workspace));
    return [
      session.id,
      session.createdAt.slice(0, 16).replace('T', ' '),
      session.model,
      String(usage.requests),
      askedNoModel(session) ? '—' : usage.costUsd === undefined ? '-' : dollars(usage.costUsd),
      `${session.running ? '[running] ' : ''}${about(session)}`,
    ];
  });
  const header = ['session', 'started', 'model', 'requests', 'cost', 'name or first prompt'];
  const widths = header.slice(0, -1).map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const width = process.stdout.isTTY ? process.stdout.columns || 80 : PIPED_WIDTH;
  for (const row of [header, ...rows]) {
    const line = row.map((cell, column) => (column < widths.length ? cell.padEnd(widths[column] ?? 0) : cell)).join('  ');
    process.stdout.write(`${cut(line, width)}\n`);
  }
  return 0;
}

/**
 * What a session is about, on one line: its name when it was given one besides its id, else
 * its first prompt, else the command that made it (for a session made before that was
 * recorded, the command its model names: `none (fence run)`).
 */
function about(session: SessionSummary): string {
  if (session.name && session.name !== session.id) return visibleLine(session.name);
  if (session.firstPrompt !== undefined) return visibleLine(session.firstPrompt).replace(/\s+/g, ' ').trim();
  if (session.startedAs !== undefined || session.programsOnly) return visibleLine(startedBy(session));
  return '(no prompt yet)';
}

/** The command that made a session of program runs: as recorded, else as its model names it (`none (fence run)`). */
function startedBy(info: SessionInfo): string {
  return info.startedAs ?? /^none \((.+)\)$/.exec(info.model)?.[1] ?? 'program runs';
}

/** Whether a session never asked a model anything: one of program runs, or one left before its first prompt. */
function askedNoModel(session: SessionSummary): boolean {
  return session.paid.length === 0 && (session.programsOnly === true || session.firstPrompt === undefined);
}

/** `text`, cut to `width` characters with an ellipsis. */
function cut(text: string, width: number): string {
  const chars = [...text.trimEnd()];
  return chars.length <= width ? chars.join('') : `${chars.slice(0, Math.max(1, width - 1)).join('')}…`;
}

/** The `[models]` prices of each workspace's configuration, read once each; none where it cannot be read. */
class ModelPrices {
  private readonly byWorkspace = new Map<string, Readonly<Record<string, ModelInfo>>>();

  forWorkspace(workspace: string): Readonly<Record<string, ModelInfo>> {
    let models = this.byWorkspace.get(workspace);
    if (!models) {
      const loaded = loadConfig({ workspace, env: process.env });
      models = 'error' in loaded ? {} : loaded.config.models;
      this.byWorkspace.set(workspace, models);
    }
    return models;
  }
}

/** Options of `fence sessions show`. */
export interface ShowSessionOptions {
  /** Print the system prompt whole instead of one line about it. */
  systemPrompt?: boolean;
}

/**
 * `fence sessions show <id>`: the conversation as readable text, also while it runs. `id` may
 * be the start of a session's id when only one begins so. The system prompt is one line
 * unless `systemPrompt` is set. Returns the exit code.
 */
export function showSessionCommand(id: string, options: ShowSessionOptions = {}): number {
  const found = findSession(fenceHome(), id);
  if ('error' in found) {
    process.stderr.write(`fence: ${found.error}\n`);
    return 1;
  }
  const { info, log, undone } = found;
  const out = process.stdout;
  const name = info.name && info.name !== info.id ? ` · name ${visibleLine(info.name)}` : '';
  out.write(`session ${info.id}${name} · model ${info.model} · workspace ${info.workspace}\n`);
  // A session of program runs asked no model: what made it, not a cost of nothing.
  out.write(info.programsOnly ? `no model requests: the program runs of ${visibleLine(startedBy(info))} (fence trace list shows them)\n` : `${spending(log, undone, info.workspace)}\n`);
  for (const line of sessionTreeLines(listSessions(fenceHome()), info.id)) out.write(`${line}\n`);
  for (const [index, message] of log.entries()) {
    if (index === 0 && message.role === 'system' && message.pinned && !options.systemPrompt) {
      const lines = message.content.split('\n').length;
      out.write(`\n── system prompt · ${message.timestamp} · ${lines} line${lines === 1 ? '' : 's'}, not shown (--system-prompt shows it)\n`);
      continue;
    }
    const label = message.meta?.toolResult ? `result of ${message.meta.tool ?? 'tool'}${message.meta.isError ? ' (error)' : ''}` : message.role;
    const usage = message.meta?.usage;
    const tokens = usage ? ` · ${usage.inputTokens} in / ${usage.outputTokens} out${usage.estimated ? ' (estimated)' : ''}` : '';
    // What the model and its tools wrote: shown, never acted on by the terminal.
    out.write(`\n── ${visibleLine(label)} · ${message.timestamp}${tokens}\n${visibleText(message.content)}\n`);
  }
  return 0;
}

/** One line on what the session's requests came to, those of replies taken back by /undo included. */
function spending(log: readonly Message[], undone: readonly Message[], workspace: string): string {
  const usage = sessionUsage(log, new ModelPrices().forWorkspace(workspace), undone);
  const cached = usage.cacheReadTokens + usage.cacheWriteTokens;
  const cost = usage.costUsd === undefined ? 'cost unknown' : dollars(usage.costUsd);
  const parts = [
    `${usage.requests} request${usage.requests === 1 ? '' : 's'}`,
    `${shortCount(usage.inputTokens + cached)} in · ${shortCount(usage.outputTokens)} out`,
    cost,
  ];
  if (undone.length > 0) parts.push(`${undone.length} message${undone.length === 1 ? '' : 's'} taken back by /undo, not shown (their ${usage.takenBack} request${usage.takenBack === 1 ? '' : 's'} counted)`);
  return parts.join(' · ');
}
