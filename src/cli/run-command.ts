import { homedir } from 'node:os';
import { Agent, DEFAULT_MAX_TURNS, type AgentEvent, type RunOutcome } from '../agent/agent';
import { LoopDetector } from '../agent/loop-detector';
import { EXIT_CODES, type RunStop } from '../agent/run-stop';
import { loadConfig, type FenceConfig } from '../config/config';
import { describeProject } from '../config/project-summary';
import { isUsable, trustWorkspace, type WorkspaceTrust } from '../config/trust';
import { fenceHome } from '../config/paths';
import { newSessionNameProblem, readSession } from '../conversation/session-store';
import { modelInfo, resolveReasoning, retiredNote, unsentReasoningNote } from '../llm/model-info';
import type { ReasoningLevel } from '../llm/provider';
import { resolveModel } from '../llm/models';
import type { ToolFormat } from '../parse/tool-use';
import type { SandboxMode } from '../os-sandbox/policy';
import { visibleText } from '../processes/visible-text';
import { loadAgentModel } from '../agent/agent-model';
import { agentParts } from '../agent/session-parts';
import { homeWorkspaceReason } from '../session/home-workspace';
import { openSession } from '../session/open-session';
import { SubagentHost } from '../session/subagent';
import { resolveWorkspace } from '../session/workspace';
import { resumeTarget } from './resume-target';
import { planSummary, unfinishedPlanWarning } from './run-plan';
import { createStreamJsonWriter, jsonResult, resultBeforeRun, textAnswer, usageTotals, type OutputFormat, type RunSummary } from './output-format';
import { createProgressRenderer } from '../tui/progress-renderer';
import { sameTerminal } from './same-terminal';
import { splitPrompts, withPipedInput } from './read-prompts';
import { attachedSummary, attachToPrompts, chatAttachments } from './prompt-attachments';
import type { StartingShell } from '../session/starting-shell';
import { webSearchChoice } from './web-search-choice';
import type { ChatSetup } from '../tui/chat';

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
  /**
   * The id of a session to go on with: its model and tool format, unless given again; `true`
   * (`-r` alone) for the latest session of the workspace.
   */
  resume?: string | true;
  /** `--sandbox`: the OS sandbox's mode, over the configuration's. */
  sandbox?: SandboxMode;
  /** `--reasoning`: the level of every request, over the configuration's and the model's default. */
  reasoning?: ReasoningLevel;
  /** `--web-search`: offer the provider's hosted web search (see `webSearchChoice`). */
  webSearch?: boolean;
  /** `--image`: image files (relative to the current folder) the first prompt carries. */
  image?: string[];
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
 * event) and everything else on stderr; in the JSON formats a run that fails before it starts
 * still prints its result. Returns the process exit code, one per stop reason (see
 * `run-stop.ts`); never throws for an expected failure. `shell` is the session's shell when it
 * was started already (see `startShellForCommand`); the caller closes it if no session took it.
 */
export async function runPromptCommand(words: string[], options: PromptCommandOptions, shell?: StartingShell): Promise<number> {
  const err = process.stderr;
  const started = Date.now();
  const output = options.outputFormat ?? 'text';
  /** Ends a run that could not start: one line on stderr and, in the JSON formats, the result. */
  const failBeforeRun = (stop: 'usage' | 'error', message: string): number => {
    err.write(`fence: ${message}\n`);
    if (output !== 'text') process.stdout.write(jsonResult(resultBeforeRun(stop, message, Date.now() - started)));
    return EXIT_CODES[stop];
  };
  const interactive = !options.nonInteractive && !options.auto && output === 'text' && process.stdin.isTTY === true;
  const prompts = await withPipedInput(splitPrompts(words));
  const resumeId = options.resume === undefined ? undefined : resumeTarget(fenceHome(), options.resume, options.workspace);
  if (resumeId !== undefined && 'error' in resumeId) return failBeforeRun('usage', resumeId.error);
  const resumed = resumeId === undefined ? undefined : readSession(fenceHome(), resumeId.id);
  if (resumeId !== undefined && !resumed) return failBeforeRun('usage', `no session "${resumeId.id}" to resume (fence sessions list shows them)`);
  if (resumed && prompts.length === 0 && !interactive) prompts.push(RESUME_PROMPT);
  if (prompts.length === 0 && !interactive) return failBeforeRun('usage', 'no prompt given. Usage: fence -n "your task" (or pipe it on standard input)');
  const nameProblem = options.name !== undefined && resumeId === undefined ? newSessionNameProblem(fenceHome(), options.name) : undefined;
  if (nameProblem) return failBeforeRun('usage', nameProblem);
  const resolved = resolveModel(options.model ?? resumed?.info.model, process.env);
  if ('error' in resolved) return failBeforeRun(resolved.badId ? 'usage' : 'error', resolved.error);
  const workspace = resolveWorkspace(options.workspace ?? resumed?.info.workspace);
  if ('error' in workspace) return failBeforeRun('error', workspace.error);

  // Read already when the shell was started for this workspace (see `startShellForCommand`).
  const loaded = shell?.config && shell.cwd === workspace.path ? { config: shell.config } : loadConfig({ workspace: workspace.path, env: process.env });
  if ('error' in loaded) return failBeforeRun('error', loaded.error);
  const info = modelInfo(resolved.id, loaded.config.models);
  const retired = retiredNote(resolved.id, info);
  if (retired) err.write(`${retired}\n`);
  const unsent = unsentReasoningNote(resolved.id, info, options.reasoning ?? loaded.config.reasoning);
  if (unsent) err.write(`${unsent}\n`);
  const webSearch = webSearchChoice(options.webSearch, loaded.config, resolved);
  if ('error' in webSearch) return failBeforeRun('usage', webSearch.error);
  if (webSearch.note) err.write(`${webSearch.note}\n`);
  if (options.maxCost !== undefined && (info.inputPerMTok === undefined || info.outputPerMTok === undefined)) {
    return failBeforeRun('usage', `--max-cost needs the prices of ${resolved.id}; set input_per_mtok and output_per_mtok in [models."${resolved.id}"] of your config.toml (or of a trusted project's fence.toml)`);
  }

  // The flag, else the resumed session's, else the configuration's: read again if the person trusts the folder in the chat.
  const formatFor = (config: FenceConfig): ToolFormat => options.toolFormat ?? resumed?.info.toolFormat ?? config.toolFormat;
  const format = formatFor(loaded.config);
  const explicitReasoning = options.reasoning ?? loaded.config.reasoning;
  if (interactive) {
    const { runChat } = await import('../tui/chat');
    const trustQuestion = loaded.config.trust && !isUsable(loaded.config.trust) ? trustQuestionFor(loaded.config.trust) : undefined;
    const wide = (options.sandbox ?? loaded.config.sandbox.mode ?? 'workspace-write') === 'workspace-write' ? homeWorkspaceReason(workspace.path) : undefined;
    return runChat({
      openSession: async ({ confirm, signal, config }) => {
        // A shell started with the configuration the person has just trusted away is not this session's.
        const sameConfig = config === loaded.config;
        if (shell && !sameConfig) await shell.close();
        return openSession({
          home: fenceHome(),
          workspace: workspace.path,
          modelId: resolved.id,
          config,
          format: formatFor(config),
          signal,
          confirm,
          keepFiles: true,
          ...(options.sandbox ? { sandboxMode: options.sandbox } : {}),
          // The chat asked first (`wideWorkspaceQuestion`), and opens no session without a yes.
          ...(wide ? { wideWorkspace: 'allowed' as const } : {}),
          ...(shell && sameConfig ? { shell } : {}),
          ...(options.name ? { name: options.name } : {}),
          ...(resumeId ? { resume: resumeId.id } : {}),
        });
      },
      ...(trustQuestion ? { trustQuestion } : {}),
      attach: chatAttachments(options.image ?? [], process.cwd(), { workspace: workspace.path, home: homedir() }),
      ...(wide ? { wideWorkspaceQuestion: { lines: wideWorkspaceLines(workspace.path, wide) } } : {}),
      home: fenceHome(),
      workspace: workspace.path,
      resolved,
      config: loaded.config,
      format,
      formatFor,
      prompts,
      yes: options.yes === true,
      ...(options.reasoning ? { reasoning: options.reasoning } : {}),
      ...(webSearch.on ? { webSearch: true } : {}),
      ...(resumeId ? { resume: resumeId.id } : {}),
      ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}),
      ...(options.maxCost ? { maxCostUsd: options.maxCost } : {}),
      ...(options.maxTokens ? { maxTokens: options.maxTokens } : {}),
    });
  }
  const controller = new AbortController();
  // The provider first, and its connection opened now: the connect (and TLS handshake) then
  // overlaps opening the session, instead of following it.
  let agentModel;
  try {
    agentModel = await loadAgentModel(resolved, loaded.config.models, undefined, loaded.config.providers);
  } catch (error) {
    return failBeforeRun('error', error instanceof Error ? error.message : String(error));
  }
  agentModel.provider.preconnect?.();
  // The model's subagents: sessions opened as this one, carved from its budgets once its Agent exists.
  const subagents = new SubagentHost({
    home: fenceHome(),
    workspace: workspace.path,
    modelId: resolved.id,
    config: loaded.config,
    format,
    depth: 0,
    open: openSession,
    ...(options.sandbox ? { sandboxMode: options.sandbox } : {}),
    ...(output === 'stream-json' ? { onEvent: (event) => process.stdout.write(`${JSON.stringify(event)}\n`) } : {}),
  });
  let session;
  try {
    session = await openSession({
      agents: subagents,
      home: fenceHome(),
      workspace: workspace.path,
      modelId: resolved.id,
      config: loaded.config,
      name: options.name,
      format,
      auto: options.auto,
      ...(resumeId ? { resume: resumeId.id } : {}),
      ...(options.sandbox ? { sandboxMode: options.sandbox } : {}),
      ...(shell ? { shell } : {}),
      signal: controller.signal,
    });
  } catch (error) {
    return failBeforeRun('error', error instanceof Error ? error.message : String(error));
  }
  const formatNote = format === 'markdown' ? '' : ` · ${format === 'xml' ? 'XML' : 'native'} tool calls`;
  const reasoning = resolveReasoning(explicitReasoning, info);
  const reasoningNote = reasoning ? ` · reasoning ${reasoning}` : '';
  const resumeNote = resumed ? ` · resumed at message ${resumed.log.length + 1}` : '';
  err.write(`session ${session.store.id} · model ${resolved.id}${resolved.defaulted ? ' (default for the key found)' : ''}${formatNote}${reasoningNote}${webSearch.on ? ' · web search' : ''}${resumeNote}\n`);
  // After the session opens, for its sandbox's denied paths; before anything is sent.
  const attached = attachToPrompts(prompts, options.image ?? [], process.cwd(), { workspace: workspace.path, home: homedir(), policy: session.toolContext.sandboxPolicy });
  if ('error' in attached) {
    await session.close({ exiting: true });
    return failBeforeRun('usage', visibleText(attached.error));
  }
  for (const warning of attached.warnings) err.write(`fence: ${visibleText(warning)}\n`);
  for (const prompt of attached.prompts) {
    const summary = attachedSummary(prompt);
    if (summary) err.write(`${visibleText(summary)}\n`);
  }

  const stream = output === 'stream-json' ? createStreamJsonWriter((line) => process.stdout.write(line)) : undefined;
  stream?.start({
    session_id: session.store.id,
    model: resolved.id,
    tool_format: format,
    ...(reasoning ? { reasoning } : {}),
    tools: session.registry.tools.map((tool) => tool.name),
    cwd: workspace.path,
    sandbox: session.store.info.sandbox ?? 'off',
  });
  const progress = createProgressRenderer(err);
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
    // A resumed session's earlier replies were paid for by earlier runs: this run reports its own.
    const firstOfRun = session.store.log.length;
    const agent = new Agent({
      ...agentModel,
      ...agentParts(session),
      format,
      reasoning,
      ...(webSearch.on ? { webSearch: true } : {}),
      maxTurns: options.maxTurns,
      maxCostUsd: options.maxCost,
      maxTokens: options.maxTokens,
      auto: options.auto,
      loopDetector: new LoopDetector(),
      signal: controller.signal,
      onEvent,
    });
    const opened = session;
    subagents.bind({
      agent,
      sessionId: opened.store.id,
      tools: () => opened.registry.tools.map((tool) => tool.name),
      maxTurns: options.maxTurns ?? DEFAULT_MAX_TURNS,
      ...(options.maxCost === undefined ? {} : { maxCostUsd: options.maxCost }),
      ...(options.timeout === undefined ? {} : { deadline: started + options.timeout }),
    });
    let outcome: RunOutcome = { status: 'done', answer: '' };
    for (const prompt of attached.prompts) {
      outcome = await agent.run(prompt.text, prompt.images.length > 0 ? { images: prompt.images.map((image) => ({ path: image.path, name: image.shown, bytes: image.bytes })) } : {});
      if (outcome.status !== 'done') break;
    }
    const ending = describeOutcome(outcome, stoppedBy, options.timeout);
    const summary: RunSummary = {
      result: ending.answer,
      session_id: session.store.id,
      stop_reason: ending.stop,
      is_error: ending.stop !== 'done' && ending.stop !== 'complete',
      turns: agent.turnCount,
      usage: usageTotals(session.store.log.slice(firstOfRun)),
      cost_usd: agent.costUsd ?? null,
      duration_ms: Date.now() - started,
      ...(ending.message ? { error: ending.message } : {}),
      ...planSummary(session.store.log),
    };
    const unfinished = unfinishedPlanWarning(ending.stop, summary.plan);
    if (unfinished) err.write(`${unfinished}\n`);
    // The message may quote the provider's error text: shown, never acted on by the terminal.
    // A message may end as a sentence; the session's id follows it after a semicolon.
    if (ending.message) err.write(`fence: ${visibleText(ending.message).replace(/\.$/, '')}; session ${session.store.id}\n`);
    if (output === 'json') process.stdout.write(jsonResult(summary));
    else if (stream) stream.result(summary);
    // The answer was streamed on stderr: printed again on the same terminal, it would show twice.
    else if (!summary.is_error && !(ending.stop === 'done' && sameTerminal(1, 2))) {
      process.stdout.write(textAnswer(ending.answer, process.stdout.isTTY === true));
    }
    return EXIT_CODES[ending.stop];
  } finally {
    if (timer) clearTimeout(timer);
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    // The process exits right after (see main.ts): the shell and the kernel need not be waited for.
    await session.close({ exiting: true });
  }
}

/** The chat's question before making a workspace writable that is the home folder or above it. */
function wideWorkspaceLines(workspace: string, reason: string): string[] {
  return [
    `fence would let the model's commands write in ${workspace}: ${reason}.`,
    "Your shell's, git's and the desktop's start-up files there stay read-only, but everything else of yours would be writable.",
    'Better: leave, cd into a project folder (or give -w <folder>), or start with --sandbox read-only.',
    `Make ${workspace} writable for this session anyway?`,
  ];
}

/**
 * The chat's question about a workspace whose own configuration is not trusted: what trusting
 * it lets in (see `describeProject`), and how to record it and read the configuration again.
 */
function trustQuestionFor(trust: WorkspaceTrust): NonNullable<ChatSetup['trustQuestion']> {
  const head =
    trust.state === 'changed'
      ? `This folder's own fence configuration changed since you trusted it (${(trust.changed ?? []).join(', ')}):`
      : 'This folder has a fence configuration of its own, not trusted on this machine yet:';
  return {
    lines: [
      head,
      ...describeProject(trust).map((line) => `  ${line}`),
      'Trusting it lets its tools and MCP servers run (inside the sandbox), its rules apply and its AGENTS.md reach the model.',
      `Trust ${trust.workspace}? Without it, the session uses your own configuration only.`,
    ],
    trust: () => {
      try {
        trustWorkspace(trust.workspace);
      } catch (error) {
        return { error: `cannot record the trust: ${(error as NodeJS.ErrnoException).code ?? String(error)}` };
      }
      return loadConfig({ workspace: trust.workspace, env: process.env });
    },
  };
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
