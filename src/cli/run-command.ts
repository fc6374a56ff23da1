import { Agent, type RunOutcome } from '../agent/agent';
import { loadConfig } from '../config/config';
import { fenceHome } from '../config/paths';
import { createProvider } from '../llm/create-provider';
import { resolveModel } from '../llm/models';
import type { ToolFormat } from '../parse/tool-use';
import { openSession, resolveWorkspace } from './open-session';
import { createProgressRenderer } from './progress-renderer';
import { splitPrompts, withPipedInput } from './read-prompts';

/** Options of the default command, as commander parses them. */
export interface PromptCommandOptions {
  nonInteractive?: boolean;
  yes?: boolean;
  model?: string;
  workspace?: string;
  name?: string;
  maxTurns?: number;
  toolFormat?: ToolFormat;
}

/** Exit codes of a run. */
export const EXIT = { ok: 0, error: 1, usage: 2, budget: 3, interrupted: 130 } as const;

/**
 * Runs the prompts of the command line (and piped input) through one agent session.
 * One-shot mode prints only the final answer on stdout and everything else on stderr.
 * Returns the process exit code; never throws for an expected failure.
 */
export async function runPromptCommand(words: string[], options: PromptCommandOptions): Promise<number> {
  const err = process.stderr;
  const interactive = !options.nonInteractive && process.stdin.isTTY === true;
  const prompts = await withPipedInput(splitPrompts(words));
  if (prompts.length === 0 && !interactive) {
    err.write('fence: no prompt given. Usage: fence -n "your task" (or pipe it on standard input)\n');
    return EXIT.usage;
  }
  const resolved = resolveModel(options.model, process.env);
  if ('error' in resolved) {
    err.write(`fence: ${resolved.error}\n`);
    return EXIT.error;
  }
  const workspace = resolveWorkspace(options.workspace);
  if ('error' in workspace) {
    err.write(`fence: ${workspace.error}\n`);
    return EXIT.error;
  }

  const loaded = loadConfig({ workspace: workspace.path, env: process.env });
  if ('error' in loaded) {
    err.write(`fence: ${loaded.error}\n`);
    return EXIT.error;
  }

  const format = options.toolFormat ?? loaded.config.toolFormat;
  const controller = new AbortController();
  let session;
  try {
    session = openSession({
      home: fenceHome(),
      workspace: workspace.path,
      modelId: resolved.id,
      config: loaded.config,
      name: options.name,
      format,
      signal: controller.signal,
    });
  } catch (error) {
    err.write(`fence: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.error;
  }
  const formatNote = format === 'markdown' ? '' : ` · ${format === 'xml' ? 'XML' : 'native'} tool calls`;
  err.write(`session ${session.store.id} · model ${resolved.id}${resolved.defaulted ? ' (default for the key found)' : ''}${formatNote}\n`);

  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT.interrupted);
    err.write('\n[interrupted; press Ctrl-C again to quit at once]\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  try {
    const provider = await createProvider(resolved);
    const agent = new Agent({
      provider,
      modelId: resolved.id,
      model: resolved.model,
      registry: session.registry,
      store: session.store,
      toolContext: session.toolContext,
      rules: session.rules,
      format,
      maxTurns: options.maxTurns,
      signal: controller.signal,
      onEvent: createProgressRenderer(interactive ? process.stdout : err),
    });
    if (interactive) return await chat(agent, prompts, controller);
    let outcome: RunOutcome = { status: 'done', answer: '' };
    for (const prompt of prompts) {
      outcome = await agent.run(prompt);
      if (outcome.status !== 'done') break;
    }
    return finish(outcome, session.store.id);
  } finally {
    process.off('SIGINT', onSigint);
    await session.close();
  }
}

/**
 * The plain line chat: the command line's prompts first, then one prompt a line until Ctrl-D
 * or `/exit`. Replies stream to stdout. Tools run without asking in this version.
 */
async function chat(agent: Agent, prompts: string[], controller: AbortController): Promise<number> {
  process.stdout.write('fence chat: tools run without asking for confirmation in this version. Ctrl-D or /exit to leave.\n');
  const { readChatLines } = await import('./line-chat');
  const run = async (prompt: string) => {
    const outcome = await agent.run(prompt);
    if (outcome.status === 'error') process.stderr.write(`fence: ${outcome.error}\n`);
    if (outcome.status === 'max_turns') process.stderr.write(`fence: stopped after ${outcome.turns} model requests (--max-turns)\n`);
  };
  for (const prompt of prompts) await run(prompt);
  for await (const line of readChatLines()) {
    if (controller.signal.aborted) break;
    await run(line);
  }
  return EXIT.ok;
}

function finish(outcome: RunOutcome, sessionId: string): number {
  const err = process.stderr;
  switch (outcome.status) {
    case 'done':
      process.stdout.write(outcome.answer.endsWith('\n') ? outcome.answer : `${outcome.answer}\n`);
      return EXIT.ok;
    case 'max_turns':
      err.write(`fence: stopped after ${outcome.turns} model requests (--max-turns); session ${sessionId}\n`);
      return EXIT.budget;
    case 'error':
      err.write(`fence: ${outcome.error}; session ${sessionId}\n`);
      return EXIT.error;
    case 'aborted':
      err.write(`fence: interrupted; session ${sessionId}\n`);
      return EXIT.interrupted;
  }
}
