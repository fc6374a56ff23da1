import { Agent, type AgentEvent, type ContextOptions, type RunOutcome } from '../agent/agent';
import { LoopDetector } from '../agent/loop-detector';
import { EXIT_CODES, USAGE_EXIT_CODE, type RunStop } from '../agent/run-stop';
import { loadConfig } from '../config/config';
import { fenceHome } from '../config/paths';
import { readSession } from '../conversation/session-store';
import { createProvider } from '../llm/create-provider';
import { costOf, modelInfo } from '../llm/model-info';
import { resolveModel } from '../llm/models';
import type { ToolFormat } from '../parse/tool-use';
import { openSession, resolveWorkspace } from './open-session';
import { createStreamJsonWriter, jsonResult, usageTotals, type OutputFormat, type RunSummary } from './output-format';
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
  /** Autonomous: implies `-n` and `-y`; the run ends with `complete` or a budget. */
  auto?: boolean;
  maxCost?: number;
  maxTokens?: number;
  /** Wall-clock limit of the whole run, in milliseconds. */
  timeout?: number;
  outputFormat?: OutputFormat;
  /** The id of a session to go on with: its model and tool format, unless given again. */
  resume?: string;
}

/** The prompt of a resumed run when none is given. */
const RESUME_PROMPT = 'Go on with the task where you left off.';

/** What ended a run and what it said: the stop reason, the answer, and a line for stderr. */
interface Ending {
  stop: RunStop;
  answer: string;
  message?: string;
}

/**
 * Runs the prompts of the command line (and piped input) through one agent session.
 * One-shot mode prints only the final answer on stdout (or one JSON result, or a JSON line per
 * event) and everything else on stderr. Returns the process exit code, one per stop reason
 * (see `run-stop.ts`); never throws for an expected failure.
 */
export async function runPromptCommand(words: string[], options: PromptCommandOptions): Promise<number> {
  const err = process.stderr;
  const started = Date.now();
  const output = options.outputFormat ?? 'text';
  const interactive = !options.nonInteractive && !options.auto && output === 'text' && process.stdin.isTTY === true;
  const prompts = await withPipedInput(splitPrompts(words));
  const resumed = options.resume === undefined ? undefined : readSession(fenceHome(), options.resume);
  if (options.resume !== undefined && !resumed) {
    err.write(`fence: no session "${options.resume}" to resume (fence sessions list shows them)\n`);
    return USAGE_EXIT_CODE;
  }
  if (resumed && prompts.length === 0 && !interactive) prompts.push(RESUME_PROMPT);
  if (prompts.length === 0 && !interactive) {
    err.write('fence: no prompt given. Usage: fence -n "your task" (or pipe it on standard input)\n');
    return USAGE_EXIT_CODE;
  }
  const resolved = resolveModel(options.model ?? resumed?.info.model, process.env);
  if ('error' in resolved) {
    err.write(`fence: ${resolved.error}\n`);
    return EXIT_CODES.error;
  }
  const workspace = resolveWorkspace(options.workspace ?? resumed?.info.workspace);
  if ('error' in workspace) {
    err.write(`fence: ${workspace.error}\n`);
    return EXIT_CODES.error;
  }

  const loaded = loadConfig({ workspace: workspace.path, env: process.env });
  if ('error' in loaded) {
    err.write(`fence: ${loaded.error}\n`);
    return EXIT_CODES.error;
  }
  const info = modelInfo(resolved.id, loaded.config.models);
  if (options.maxCost !== undefined && (info.inputPerMTok === undefined || info.outputPerMTok === undefined)) {
    err.write(`fence: --max-cost needs the prices of ${resolved.id}; set input_per_mtok and output_per_mtok in [models."${resolved.id}"] of fence.toml\n`);
    return USAGE_EXIT_CODE;
  }

  const format = options.toolFormat ?? resumed?.info.toolFormat ?? loaded.config.toolFormat;
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
      auto: options.auto,
      ...(options.resume ? { resume: options.resume } : {}),
      signal: controller.signal,
    });
  } catch (error) {
    err.write(`fence: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_CODES.error;
  }
  const formatNote = format === 'markdown' ? '' : ` · ${format === 'xml' ? 'XML' : 'native'} tool calls`;
  const resumeNote = resumed ? ` · resumed at message ${resumed.log.length + 1}` : '';
  err.write(`session ${session.store.id} · model ${resolved.id}${resolved.defaulted ? ' (default for the key found)' : ''}${formatNote}${resumeNote}\n`);

  const stream = output === 'stream-json' ? createStreamJsonWriter((line) => process.stdout.write(line)) : undefined;
  stream?.start({
    session_id: session.store.id,
    model: resolved.id,
    tool_format: format,
    tools: session.registry.tools.map((tool) => tool.name),
    cwd: workspace.path,
  });
  const progress = createProgressRenderer(interactive ? process.stdout : err);
  const onEvent = (event: AgentEvent) => {
    progress(event);
    stream?.event(event);
  };

  let stoppedBy: 'timeout' | undefined;
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT_CODES.interrupted);
    err.write('\n[interrupted; press Ctrl-C again to quit at once]\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  const timer =
    options.timeout === undefined
      ? undefined
      : setTimeout(() => {
          stoppedBy = 'timeout';
          controller.abort();
        }, options.timeout);
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
      maxCostUsd: options.maxCost,
      maxTokens: options.maxTokens,
      costOf: (usage) => costOf(usage, info),
      auto: options.auto,
      loopDetector: new LoopDetector(),
      ...(info.contextWindow ? { context: contextFor(info.contextWindow, info.maxOutputTokens, resolved.id) } : {}),
      signal: controller.signal,
      onEvent,
    });
    if (interactive) return await chat(agent, prompts, controller);
    let outcome: RunOutcome = { status: 'done', answer: '' };
    for (const prompt of prompts) {
      outcome = await agent.run(prompt);
      if (outcome.status !== 'done') break;
    }
    const ending = describeOutcome(outcome, stoppedBy, options.timeout);
    const summary: RunSummary = {
      result: ending.answer,
      session_id: session.store.id,
      stop_reason: ending.stop,
      is_error: ending.stop !== 'done' && ending.stop !== 'complete',
      turns: agent.turnCount,
      usage: usageTotals(session.store.log),
      cost_usd: agent.costUsd ?? null,
      duration_ms: Date.now() - started,
      ...(ending.message ? { error: ending.message } : {}),
    };
    if (ending.message) err.write(`fence: ${ending.message}; session ${session.store.id}\n`);
    if (output === 'json') process.stdout.write(jsonResult(summary));
    else if (stream) stream.result(summary);
    else if (!summary.is_error) process.stdout.write(ending.answer.endsWith('\n') ? ending.answer : `${ending.answer}\n`);
    return EXIT_CODES[ending.stop];
  } finally {
    if (timer) clearTimeout(timer);
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    await session.close();
  }
}

/**
 * How a model's window is shared: the reply keeps its own limit (at most 16k tokens, and at
 * most a quarter of the window), the request gets the rest. OpenAI's models count tokens as
 * the o200k tokenizer does; for the others counts get a margin.
 */
function contextFor(window: number, maxOutput: number | undefined, modelId: string): ContextOptions {
  const reserve = Math.min(maxOutput ?? 16_000, 16_000, Math.floor(window / 4));
  return { window, reserve, exactTokenizer: /^(openai|openrouter\/openai)\//.test(modelId) };
}

/** What a run's outcome means for the user and for scripts: its stop reason, answer and message. */
function describeOutcome(outcome: RunOutcome, stoppedBy: 'timeout' | undefined, timeoutMs: number | undefined): Ending {
  switch (outcome.status) {
    case 'done':
      return { stop: outcome.completed ? 'complete' : 'done', answer: outcome.answer };
    case 'max_turns':
      return { stop: 'max_turns', answer: outcome.answer, message: `stopped after ${outcome.turns} model requests (--max-turns)` };
    case 'stopped':
      return { stop: outcome.stop, answer: outcome.answer, message: `stopped: ${outcome.reason}` };
    case 'error':
      return { stop: outcome.kind ?? 'error', answer: '', message: outcome.error };
    case 'aborted':
      if (stoppedBy === 'timeout') {
        return { stop: 'timeout', answer: '', message: `stopped after ${Math.round((timeoutMs ?? 0) / 1000)} s (--timeout)` };
      }
      return { stop: 'interrupted', answer: '', message: 'interrupted' };
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
    const ending = describeOutcome(await agent.run(prompt), undefined, undefined);
    if (ending.message && ending.stop !== 'interrupted') process.stderr.write(`fence: ${ending.message}\n`);
  };
  for (const prompt of prompts) await run(prompt);
  for await (const line of readChatLines()) {
    if (controller.signal.aborted) break;
    await run(line);
  }
  return EXIT_CODES.done;
}
