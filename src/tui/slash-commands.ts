import { writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { Agent } from '../agent/agent';
import { loadAgentModel } from '../agent/agent-model';
import type { OpenSession } from '../agent/session-parts';
import type { FenceConfig } from '../config/config';
import { createMessage } from '../conversation/message';
import { newSessionId, readSessionInfo } from '../conversation/session-store';
import { isReasoningLevel, modelInfo, REASONING_LEVELS, resolveReasoning, unsentReasoningNote } from '../llm/model-info';
import type { ReasoningLevel } from '../llm/provider';
import { resolveModel } from '../llm/models';
import type { ToolUse } from '../parse/tool-use';
import { visibleLine, visibleText } from '../processes/visible-text';
import { runToolUse } from '../tools/run-tool-use';
import type { ChatView } from './chat-view';
import { dollars, sessionUsage, shortCount } from './session-usage';
import { exportMarkdown, fullLog } from './transcript';
import { wrapUnder } from './word-wrap';

/** What a slash command works with. */
export interface ChatCommandContext {
  readonly agent: Agent;
  readonly session: OpenSession;
  readonly view: ChatView;
  readonly home: string;
  readonly workspace: string;
  readonly config: FenceConfig;
  /**
   * The reasoning level the person chose (`--reasoning`, the configuration's `reasoning` or
   * `/reasoning`); absent: each model's default. `/reasoning` changes it.
   */
  readonly reasoning: { explicit?: ReasoningLevel };
  /** Runs work the person may stop with Ctrl-C, with the spinner showing `label`. */
  interruptible<T>(label: string, work: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

/** What the chat does after a command: leave, or put text back in the input line. */
export interface CommandOutcome {
  exit?: boolean;
  prefill?: string;
}

interface ChatCommand {
  name: string;
  /** The argument as `/help` shows it. */
  usage?: string;
  summary: string;
  run(ctx: ChatCommandContext, argument: string): Promise<CommandOutcome | void> | CommandOutcome | void;
}

const COMMANDS: ChatCommand[] = [
  { name: 'help', summary: 'this list, and the keys', run: (ctx) => help(ctx) },
  { name: 'undo', usage: '[n]', summary: 'take back the last n prompts (default 1) and all that followed, and put back the files save, append and patch changed', run: undo },
  { name: 'log', summary: 'the whole conversation, tool outputs in full', run: (ctx) => ctx.view.print(fullLog(ctx.session.store.log, ctx.view.style, ctx.view.width)) },
  { name: 'tokens', summary: "the session's token use and cost", run: tokens },
  { name: 'model', usage: '[provider/model]', summary: 'show the model, or switch to another', run: model },
  { name: 'reasoning', usage: `[${REASONING_LEVELS.join('|')}]`, summary: 'show how hard the model thinks, or set it for the next requests', run: reasoningCommand },
  { name: 'thinking', summary: "the last reply's thinking, whole", run: thinking },
  { name: 'tools', summary: 'the tools the model can use', run: tools },
  { name: 'rename', usage: '<name>', summary: 'give the session a name', run: rename },
  { name: 'fork', usage: '[name]', summary: 'copy the session and go on in the copy (the original stays as it is)', run: fork },
  { name: 'export', usage: '[file.md]', summary: 'write the conversation to a markdown file', run: exportCommand },
  { name: 'compact', summary: 'have the model summarize the older turns now', run: compact },
  {
    name: 'save-program',
    usage: '<name> [trace] [--project]',
    summary: "keep this session's last program that worked (or the trace named) as a saved program",
    run: saveProgram,
  },
  { name: 'exit', summary: 'leave (Ctrl-D does too)', run: () => ({ exit: true }) },
];

/** Whether a line is a slash command rather than a prompt: `/word`, not `/path/to/file` or `//`. */
export function isSlashCommand(line: string): boolean {
  return /^\/[A-Za-z][\w-]*(\s|$)/.test(line.trim());
}

/**
 * Runs one slash command line: a command of the table, or `/<tool> <input>` to run a tool
 * directly (`/shell ls`, `/read README.md`; on several lines the first line's words are the
 * tool's arguments and the rest its body, as in a block). A tool run by the person is not asked
 * about, and its result is added to the conversation so the model sees it. Anything else gets
 * a line naming the commands. Never throws for a person's mistake.
 */
export async function runSlashCommand(line: string, ctx: ChatCommandContext): Promise<CommandOutcome> {
  const text = line.trim();
  const name = (/^\/([\w-]+)/.exec(text)?.[1] ?? '').toLowerCase();
  const argument = text.slice(name.length + 1).replace(/^[ \t]+/, '');
  const command = COMMANDS.find((c) => c.name === name) ?? (name === 'quit' ? COMMANDS.find((c) => c.name === 'exit') : undefined);
  if (command) return (await command.run(ctx, argument)) ?? {};
  const tool = ctx.session.registry.forTag(name);
  if (tool) {
    await runToolDirectly(ctx, name, argument);
    return {};
  }
  const { style } = ctx.view;
  ctx.view.printLines([
    `${style.yellow(`Unknown command /${name}.`)} Commands: ${COMMANDS.map((c) => `/${c.name}`).join(' ')}`,
    style.dim(`Tools run as /<tool> <input>, e.g. /shell ls. /help says more; a prompt that starts with / needs a space before it.`),
  ]);
  return {};
}

/** Narrowest room for the summaries beside the commands that all commands must leave for one column beside each. */
const SUMMARY_MIN_COLUMNS = 24;

/**
 * `/help`: each command and what it does, then the keys and the answers to a confirmation,
 * wrapped to the terminal at word boundaries, each continuation line indented under its text.
 * The summaries make a column beside the commands; when some commands would leave it less
 * than `SUMMARY_MIN_COLUMNS`, the column is placed after the commands of at most a third of
 * the width, and a wider command has its summary on the line below, in the same column.
 */
function help(ctx: ChatCommandContext): void {
  const { style, width: columns } = ctx.view;
  const rows = [...COMMANDS.map((c) => ({ usage: `/${c.name} ${c.usage ?? ''}`.trimEnd(), summary: c.summary })), { usage: '/<tool> <input>', summary: 'run a tool yourself, e.g. /shell ls; the model sees the result' }];
  const lengths = rows.map((row) => row.usage.length);
  const widest = Math.max(...lengths);
  const fitting = columns - widest - 4 >= SUMMARY_MIN_COLUMNS ? lengths : lengths.filter((length) => length <= Math.floor(columns / 3));
  // With no command narrow enough, every summary goes under its command, a little indented.
  const width = fitting.length > 0 ? Math.max(...fitting) : 0;
  const lines: string[] = [];
  for (const row of rows) {
    if (row.usage.length <= width) {
      lines.push(...wrapUnder(`  ${style.cyan(row.usage.padEnd(width))}  `, width + 4, row.summary, columns));
      continue;
    }
    lines.push(...wrapUnder('  ', 2, row.usage, columns, style.cyan), ...wrapUnder(' '.repeat(Math.max(4, width + 4)), Math.max(4, width + 4), row.summary, columns));
  }
  const item = (text: string) => wrapUnder('  ', 2, text, columns);
  lines.push(
    '',
    style.bold('Keys'),
    ...item('Enter sends · a line ending with \\ , Alt-Enter or a paste adds lines · Up/Down walk the history'),
    ...item('Ctrl-C stops the reply or the tool under way; at an empty prompt, twice (or Ctrl-D) leaves'),
    '',
    style.bold('Confirmations'),
    ...item('y run it · n do not (n <reason> tells the model why) · e edit it in $EDITOR first · a yes to all in this session'),
  );
  ctx.view.printLines(lines);
}

/** `/undo [n]`: removes the last n prompts and everything after each; gives the first one back to edit. */
async function undo(ctx: ChatCommandContext, argument: string): Promise<CommandOutcome> {
  const { style } = ctx.view;
  const count = argument ? Number(argument) : 1;
  if (!Number.isInteger(count) || count < 1) {
    ctx.view.printLines([style.yellow('/undo takes a whole number of prompts to take back, e.g. /undo 2')]);
    return {};
  }
  const log = ctx.session.store.log;
  const prompts: number[] = [];
  log.forEach((message, index) => {
    if (message.role === 'user') prompts.push(index);
  });
  const from = prompts[prompts.length - count];
  if (from === undefined) {
    ctx.view.printLines([style.yellow(prompts.length === 0 ? 'Nothing to undo yet.' : `There ${prompts.length === 1 ? 'is only 1 prompt' : `are only ${prompts.length} prompts`} to take back.`)]);
    return {};
  }
  const removed = ctx.session.store.undo(log.length - from);
  const prompt = removed[0]?.content ?? '';
  const files = (await ctx.session.restoreFiles?.(from)) ?? { restored: [], failed: [] };
  const lines = [style.dim(`Took back ${count === 1 ? 'the last prompt' : `${count} prompts`} (${removed.length} messages). The prompt is back in the input line.`)];
  if (files.restored.length > 0) lines.push(style.dim(`Put back ${describeFiles(ctx, files.restored)} as ${files.restored.length === 1 ? 'it was' : 'they were'} before.`));
  for (const failure of files.failed) lines.push(style.yellow(`Could not put back ${relativeTo(ctx.workspace, failure.path)}: ${visibleLine(failure.reason)}.`));
  const shell = removed.some((m) => m.meta?.toolResult && SHELL_LIKE.has(String(m.meta.tool)));
  if (shell) lines.push(style.dim('What its shell commands and Python cells changed stays as it is.'));
  ctx.view.printLines(lines);
  return { prefill: prompt };
}

/** Tools whose changes to files no checkpoint keeps (the file tools' are kept, from programs too). */
const SHELL_LIKE = new Set(['shell', 'python']);

/** `a.txt, src/b.ts` (workspace-relative), or a count when there are many. */
function describeFiles(ctx: ChatCommandContext, paths: readonly string[]): string {
  const shown = paths.slice(0, 5).map((path) => relativeTo(ctx.workspace, path));
  return paths.length > 5 ? `${shown.join(', ')} and ${paths.length - 5} more` : shown.join(', ');
}

/** The path as shown: workspace-relative when inside it, on one line of visible text (the model names files). */
function relativeTo(workspace: string, path: string): string {
  const inside = relative(workspace, path);
  return visibleLine(inside && !inside.startsWith('..') && !isAbsolute(inside) ? inside : path);
}

function tokens(ctx: ChatCommandContext): void {
  const { style } = ctx.view;
  const { store } = ctx.session;
  const usage = sessionUsage(store.log, ctx.config.models, store.undone);
  const cached = usage.cacheReadTokens + usage.cacheWriteTokens;
  const takenBack = usage.takenBack ? ` (${usage.takenBack} taken back by /undo, still paid for)` : '';
  const cost =
    usage.costUsd === undefined ? `cost unknown (no prices for ${usage.unpriced.join(', ')}; set them in [models."id"] of fence.toml)` : dollars(usage.costUsd);
  const window = modelInfo(ctx.agent.modelId, ctx.config.models).contextWindow;
  ctx.view.printLines([
    `${style.bold('tokens')} ${shortCount(usage.inputTokens + cached)} in${cached ? ` (${shortCount(usage.cacheReadTokens)} from cache)` : ''} · ${shortCount(usage.outputTokens)} out${usage.reasoningTokens ? ` (${shortCount(usage.reasoningTokens)} reasoning)` : ''} · ${usage.requests} request${usage.requests === 1 ? '' : 's'}${takenBack}${usage.estimated ? ' · some estimated' : ''}`,
    `${style.bold('cost')} ${cost}`,
    `${style.bold('context')} ${shortCount(usage.lastInputTokens)} tokens in the last request${window ? ` of ${shortCount(window)}` : ''} · model ${ctx.agent.modelId}`,
  ]);
}

async function model(ctx: ChatCommandContext, argument: string): Promise<void> {
  const { style } = ctx.view;
  if (!argument) {
    ctx.view.printLines([`model ${style.bold(ctx.agent.modelId)} ${style.dim('(/model provider/model switches)')}`]);
    return;
  }
  const resolved = resolveModel(argument, process.env);
  if ('error' in resolved) {
    ctx.view.printLines([style.yellow(resolved.error)]);
    return;
  }
  let next;
  try {
    next = await loadAgentModel(resolved, ctx.config.models, ctx.view.warn, ctx.config.providers);
  } catch (error) {
    ctx.view.printLines([style.yellow(`Could not switch to ${resolved.id}: ${error instanceof Error ? error.message : String(error)}`)]);
    return;
  }
  ctx.agent.useModel(next);
  ctx.agent.useReasoning(resolveReasoning(ctx.reasoning.explicit, next.info));
  ctx.session.store.updateInfo({ model: resolved.id });
  ctx.view.printLines([style.dim(`Now using ${resolved.id}; the conversation goes on with it.`)]);
  const unsent = unsentReasoningNote(resolved.id, next.info, ctx.reasoning.explicit);
  if (unsent) ctx.view.printLines([style.yellow(unsent.replace(/^fence: /, ''))]);
}

/** `/reasoning [level]`: shows the level the next requests carry, or sets it for them. */
function reasoningCommand(ctx: ChatCommandContext, argument: string): void {
  const { style } = ctx.view;
  const level = argument.trim().toLowerCase();
  if (level && !isReasoningLevel(level)) {
    ctx.view.printLines([style.yellow(`/reasoning takes one of ${REASONING_LEVELS.join(', ')}, e.g. /reasoning high`)]);
    return;
  }
  if (isReasoningLevel(level)) {
    ctx.reasoning.explicit = level;
    const info = modelInfo(ctx.agent.modelId, ctx.config.models);
    ctx.agent.useReasoning(resolveReasoning(level, info));
    const unsent = unsentReasoningNote(ctx.agent.modelId, info, level);
    ctx.view.printLines([unsent ? style.yellow(unsent.replace(/^fence: /, '')) : style.dim(`Reasoning ${level} from the next request on.`)]);
    return;
  }
  const current = ctx.agent.reasoning;
  const source = reasoningSource(ctx.reasoning.explicit, current, ctx.agent.modelId);
  ctx.view.printLines([`reasoning ${style.bold(current ?? 'not set')}${style.dim(source)} ${style.dim(`(/reasoning ${REASONING_LEVELS.join('|')} sets it)`)}`]);
}

/** Where the level `/reasoning` shows comes from, in parentheses; empty when the person chose it and it is sent. */
function reasoningSource(explicit: string | undefined, current: string | undefined, modelId: string): string {
  if (explicit) return current ? '' : ` (${explicit} chosen, not sent: ${modelId} does not reason)`;
  return current ? ` (the default of ${modelId})` : ` (none sent: no default for ${modelId})`;
}

/** `/thinking`: the whole thinking of the last reply that had some. */
function thinking(ctx: ChatCommandContext): void {
  const { style } = ctx.view;
  const text = ctx.view.lastThinking.trim();
  ctx.view.printLines(text ? [style.dim(visibleText(text))] : [style.dim('No thinking shown yet in this chat.')]);
}

function tools(ctx: ChatCommandContext): void {
  const { style } = ctx.view;
  const lines = ctx.session.registry.tools.map((tool) => {
    const tags = tool.blockTypes.length > 1 ? style.dim(` (also ${tool.blockTypes.slice(1).join(', ')})`) : '';
    const who = tool.callers.includes('direct') ? '' : style.dim(' [programs only]');
    return `  ${style.cyan(tool.name)}${tags}${who} — ${tool.description}${tool.mutating ? style.dim(' · asks first') : ''}`;
  });
  ctx.view.printLines(lines);
}

function rename(ctx: ChatCommandContext, argument: string): void {
  const { style } = ctx.view;
  if (!argument) {
    ctx.view.printLines([style.yellow('/rename needs a name, e.g. /rename fix-login-bug')]);
    return;
  }
  ctx.session.store.updateInfo({ name: argument });
  ctx.view.printLines([style.dim(`Session ${ctx.session.store.id} is now named "${argument}".`)]);
}

function fork(ctx: ChatCommandContext, argument: string): void {
  const { style } = ctx.view;
  const from = ctx.session.store;
  let next;
  try {
    next = from.fork(ctx.home, newSessionId(), argument || undefined);
  } catch (error) {
    ctx.view.printLines([style.yellow(`No fork: ${error instanceof Error ? error.message : String(error)}`)]);
    return;
  }
  ctx.agent.useStore(next);
  ctx.session.switchStore(next);
  ctx.view.printLines([style.dim(`Forked: now in session ${next.id}. The original, ${from.id}, stays as it was (fence -r ${from.id} goes back to it).`)]);
}

function exportCommand(ctx: ChatCommandContext, argument: string): void {
  const { style } = ctx.view;
  const store = ctx.session.store;
  const path = resolve(ctx.workspace, argument || `fence-${store.id}.md`);
  try {
    writeFileSync(path, exportMarkdown(store.info, store.log));
    ctx.view.printLines([style.dim(`Wrote the conversation to ${path}.`)]);
  } catch (error) {
    ctx.view.printLines([style.yellow(`Could not write ${path}: ${error instanceof Error ? error.message : String(error)}`)]);
  }
}

async function compact(ctx: ChatCommandContext): Promise<void> {
  const { style } = ctx.view;
  const outcome = await ctx.interruptible('summarizing', (signal) => ctx.agent.compact({ signal }));
  if (!outcome.ok) ctx.view.printLines([style.yellow(`No summary: ${outcome.error}.`)]);
}

/** `/<tool> <input>`: the person runs a tool; the result goes into the conversation for the model. */
/**
 * `/save-program <name> [trace] [--project]`: saves the newest program run of this session (or
 * of the session it was forked from) that worked, or the trace named, as `fence programs save`
 * does. Approving it stays a step of its own (`fence programs approve`).
 */
async function saveProgram(ctx: ChatCommandContext, argument: string): Promise<void> {
  const { style } = ctx.view;
  const words = argument.split(/\s+/).filter(Boolean);
  const project = words.includes('--project');
  const [name, traceId] = words.filter((word) => word !== '--project');
  if (!name) {
    ctx.view.printLines([style.yellow('/save-program needs a name for the program, e.g. /save-program over_limit')]);
    return;
  }
  const [{ keepTrace }, { findTrace }, { newestSavableTrace, programRoots }] = await Promise.all([
    import('../ptc/keep-trace'),
    import('../ptc/trace'),
    import('../ptc/saved-programs'),
  ]);
  const ids = new Set([ctx.session.store.id, ctx.session.store.info.forkedFrom].filter((id): id is string => id !== undefined));
  let trace;
  if (traceId) {
    const found = findTrace(ctx.home, traceId);
    if ('error' in found) return ctx.view.printLines([style.yellow(found.error)]);
    trace = found.trace;
  } else {
    trace = newestSavableTrace(ctx.home, ids);
    if (!trace) return ctx.view.printLines([style.yellow('No program of this session has worked yet: there is nothing to save.')]);
  }
  const known = readSessionInfo(join(ctx.home, 'sessions', trace.sessionId))?.tools ?? [];
  const kept = await keepTrace(programRoots(ctx.home, ctx.workspace), name, trace, project, known);
  if ('error' in kept) return ctx.view.printLines(kept.error.split('\n').map((line) => style.yellow(line)));
  ctx.view.printLines(kept.lines.map((line, i) => (i === 0 ? line : style.dim(line))));
}

async function runToolDirectly(ctx: ChatCommandContext, tag: string, argument: string): Promise<void> {
  const newline = argument.indexOf('\n');
  const multiline = newline >= 0;
  const args = multiline ? argument.slice(0, newline).split(/\s+/).filter(Boolean) : [];
  const content = multiline ? argument.slice(newline + 1) : argument;
  const use: ToolUse = { tool: tag, args, content, format: 'markdown', start: 0, end: 0 };
  const store = ctx.session.store;
  const started = Date.now();
  const outcome = await ctx.interruptible(`running ${tag}`, (signal) =>
    runToolUse(use, ctx.session.registry, { ...ctx.session.toolContext, signal }, { outputsDir: store.outputsDir, rules: ctx.session.rules, principal: 'user' }),
  );
  ctx.view.printLines(ctx.view.toolLines(use, outcome, Date.now() - started));
  const call = [tag, ...args].join(' ');
  store.append(
    createMessage('system', `The user ran \`${call}\` themselves:\n${content}\n\nResult${outcome.result.isError ? ' (error)' : ''}:\n${outcome.result.output}`, {
      meta: { notice: 'user_tool', tool: outcome.tool, ...(outcome.result.isError ? { isError: true } : {}) },
    }),
  );
}
