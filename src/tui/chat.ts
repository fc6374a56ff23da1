import { join } from 'node:path';
import { Agent, DEFAULT_MAX_TURNS, type RunOutcome } from '../agent/agent';
import { loadAgentModel } from '../agent/agent-model';
import { LoopDetector } from '../agent/loop-detector';
import { EXIT_CODES } from '../agent/run-stop';
import { agentParts, type OpenSession } from '../agent/session-parts';
import type { FenceConfig } from '../config/config';
import { createMessage } from '../conversation/message';
import type { SessionStore } from '../conversation/session-store';
import { resolveReasoning } from '../llm/model-info';
import type { ResolvedModel } from '../llm/models';
import type { Provider, ReasoningLevel } from '../llm/provider';
import { warmUpFetch } from '../llm/node-fetch';
import type { ToolFormat } from '../parse/tool-use';
import { visibleLine, visibleText } from '../processes/visible-text';
import type { ToolContext } from '../tools/define-tool';
import { SAVED_PROGRAMS_GROUP } from '../tools/program-tool';
import { attachedFileLines, attachedImageLines, type AttachFiles } from './chat-attachments';
import { ChatView } from './chat-view';
import { createConfirmPrompt } from './confirm-prompt';
import { InputHistory } from './input-history';
import { LineEditor } from './line-editor';
import { RunKeys } from './run-keys';
import { dollars, sessionUsage, shortCount } from './session-usage';
import { isSlashCommand, runSlashCommand, type ChatCommandContext } from './slash-commands';
import { colorEnabled, createStyle } from './terminal-style';
import { briefHistory } from './transcript';
import { latestPlan } from '../conversation/latest-plan';
import { planLines } from './plan-view';
import { wrapHanging, wrapUnder } from './word-wrap';

/** Everything the chat starts from, as the command line and config gave it. */
export interface ChatSetup {
  home: string;
  workspace: string;
  resolved: ResolvedModel;
  config: FenceConfig;
  format: ToolFormat;
  /**
   * The format with another configuration (the one read again once the person trusts the
   * folder, whose `tool_format` may differ). Absent: `format` whatever the configuration.
   */
  formatFor?: (config: FenceConfig) => ToolFormat;
  /** Prompts of the command line, run before the first one is read. */
  prompts: string[];
  /** The id of a session to go on with. */
  resume?: string;
  /** `-y`: mutating tools run without asking. */
  yes: boolean;
  /** Most model requests for each prompt (default 50). */
  maxTurns?: number;
  /** Budgets over the whole chat, as in one-shot runs. */
  maxCostUsd?: number;
  maxTokens?: number;
  /** `--reasoning`: the level of every request, over the configuration's and the model's default. */
  reasoning?: ReasoningLevel;
  /** Offer the provider's hosted web search with every request (decided by `webSearchChoice`). */
  webSearch?: boolean;
  /**
   * Opens (or resumes) the chat's session, keeping what the file tools overwrite for `/undo`:
   * the command line's wiring, which this layer does not import. `confirm` asks the person
   * before calls run; `signal` ends with the whole chat.
   */
  openSession(parts: { confirm: NonNullable<ToolContext['confirm']>; signal: AbortSignal; config: FenceConfig }): Promise<OpenSession>;
  /**
   * The workspace has configuration of its own that the person has not trusted (or that
   * changed since): asked before the session opens. `lines` show what trusting it lets in;
   * `trust` records the trust and gives the configuration read again with it.
   */
  trustQuestion?: { lines: string[]; trust(): { config: FenceConfig } | { error: string } };
  /**
   * The workspace is the home folder, `/` or above the home folder, and the sandbox would make
   * it writable: `lines` say why that is a risk; asked first, and anything but yes leaves
   * before a session opens.
   */
  wideWorkspaceQuestion?: { lines: string[] };
  /** Takes in the files each prompt names (see `AttachFiles`); absent: prompts go as typed. */
  attach?: AttachFiles;
}

/** Where the chat's input history is kept, across sessions. */
export function historyPath(home: string): string {
  return join(home, 'input-history.jsonl');
}

/**
 * Asks whether to trust the workspace, showing what that lets in: `y` or `yes` trusts it,
 * anything else (Enter too) goes on without its configuration, Ctrl-C leaves.
 */
async function askTrust(question: Pick<NonNullable<ChatSetup['trustQuestion']>, 'lines'>, view: ChatView, editor: LineEditor, style: ReturnType<typeof createStyle>, asked = 'trust it?'): Promise<'yes' | 'no' | 'interrupt'> {
  // The lines quote the folder's own configuration (commands, names): shown, never acted on by the terminal.
  const lines = question.lines.map(visibleText);
  view.printLines([...lines.slice(0, -1), style.bold(lines[lines.length - 1] ?? '')]);
  const input = await editor.read(`${style.cyan(asked)} [y/N] `);
  if (input.kind === 'interrupt') return 'interrupt';
  return input.kind === 'line' && /^\s*y(es)?\s*$/i.test(input.text) ? 'yes' : 'no';
}

/**
 * The interactive chat: the command line's prompts first, then one prompt at a time from the
 * line editor until `/exit`, Ctrl-D, or Ctrl-C twice at an empty prompt. Replies are rendered as
 * they stream; mutating calls are confirmed; Ctrl-C stops the reply or the tool under way and
 * the chat goes on. Returns the exit code: 0 when the person leaves, 1 when the session cannot
 * be opened.
 */
export async function runChat(setup: ChatSetup): Promise<number> {
  const stdout = process.stdout;
  const style = createStyle(colorEnabled(stdout));
  let format = setup.format;
  const view = new ChatView(stdout, style, format === 'xml');
  const editor = new LineEditor({ input: process.stdin, output: stdout, style, history: InputHistory.load(historyPath(setup.home)) });
  const keys = new RunKeys(process.stdin);
  const sessionController = new AbortController();
  let run: AbortController | undefined;
  const stopRun = () => run?.abort();

  const confirm = createConfirmPrompt({
    view,
    yes: setup.yes,
    blocksShown: () => format !== 'tool',
    onInterrupt: stopRun,
    read: async (prompt) => {
      keys.pause();
      try {
        return await editor.read(prompt);
      } finally {
        keys.resume();
      }
    },
  });

  if (setup.wideWorkspaceQuestion) {
    const answer = await askTrust(setup.wideWorkspaceQuestion, view, editor, style, 'make it writable?');
    if (answer !== 'yes') {
      editor.close();
      return answer === 'interrupt' ? EXIT_CODES.interrupted : EXIT_CODES.done;
    }
  }

  let config = setup.config;
  if (setup.trustQuestion) {
    const answer = await askTrust(setup.trustQuestion, view, editor, style);
    if (answer === 'interrupt') {
      editor.close();
      return EXIT_CODES.interrupted;
    }
    if (answer === 'yes') {
      const trusted = setup.trustQuestion.trust();
      if ('error' in trusted) {
        process.stderr.write(`fence: ${trusted.error}\n`);
        editor.close();
        return EXIT_CODES.error;
      }
      config = trusted.config;
      format = setup.formatFor?.(config) ?? format;
      view.setXmlToolUse(format === 'xml');
    }
  }

  let session: OpenSession;
  try {
    session = await setup.openSession({ confirm: confirm.confirm, signal: sessionController.signal, config });
  } catch (error) {
    process.stderr.write(`fence: ${error instanceof Error ? error.message : String(error)}\n`);
    editor.close();
    return EXIT_CODES.error;
  }

  const onTerminate = () => {
    sessionController.abort();
    run?.abort();
    editor.close(); // a prompt being read ends as if Ctrl-D were pressed
    // The terminal is gone or the system asks fence to stop: if closing the runtimes takes
    // longer than this, leave anyway (every message is already on disk).
    setTimeout(() => process.exit(EXIT_CODES.interrupted), 5000).unref();
  };
  process.on('SIGINT', stopRun);
  process.on('SIGTERM', onTerminate);
  process.on('SIGHUP', onTerminate);
  // Raw mode for the whole chat, not only while a prompt is read: keys pressed between a run's
  // end and the next prompt (Ctrl-C above all) reach the editor instead of the terminal driver.
  const terminal = rawTerminal(process.stdin, stdout);
  try {
    const agentModel = await loadAgentModel(setup.resolved, config.models, view.warn, config.providers);
    const reasoning = { explicit: setup.reasoning ?? config.reasoning };
    const agent = new Agent({
      ...agentModel,
      ...agentParts(session),
      format,
      reasoning: resolveReasoning(reasoning.explicit, agentModel.info),
      ...(setup.webSearch ? { webSearch: true } : {}),
      maxCostUsd: setup.maxCostUsd,
      maxTokens: setup.maxTokens,
      loopDetector: new LoopDetector(),
      signal: sessionController.signal,
      onEvent: (event) => {
        view.onEvent(event);
        if (event.type === 'prompt') view.printLines(attachedImageLines(event.message, style));
      },
    });

    /** Runs work that Ctrl-C stops: a prompt's run, a tool run by hand, a summary. */
    const underway = async <T,>(work: (signal: AbortSignal) => Promise<T>, label?: string): Promise<T> => {
      run = new AbortController();
      keys.start(stopRun);
      if (label) view.busy(label);
      try {
        return await work(run.signal);
      } finally {
        view.endRun();
        keys.stop();
        run = undefined;
      }
    };
    const commands: ChatCommandContext = {
      agent,
      session,
      view,
      home: setup.home,
      workspace: setup.workspace,
      config,
      reasoning,
      interruptible: (label, work) => underway(work, label),
    };
    /** Runs a prompt; false when it was refused before anything was kept (a file it names), so it can be edited. */
    const runPrompt = async (typed: string): Promise<boolean> => {
      const prompt = setup.attach ? setup.attach(typed, session.toolContext) : { text: typed, images: [], files: [], warnings: [] };
      if ('error' in prompt) {
        view.printLines(wrapHanging(`✗ ${visibleLine(prompt.error)}`, view.width, 2, style.red));
        return false;
      }
      view.printLines(attachedFileLines(prompt, style));
      const kept = session.store.log.length;
      const images = prompt.images.length > 0 ? { images: prompt.images } : {};
      const outcome = await underway((signal) => agent.run(prompt.text, { signal, maxTurns: setup.maxTurns ?? DEFAULT_MAX_TURNS, ...images }));
      view.printLines(endLines(outcome, session.store, config, style));
      return outcome.status !== 'error' || session.store.log.length !== kept;
    };

    view.printLines(welcome(session, agent.modelId, setup, style, view.width));
    // First-use costs of the request path, paid while the person reads the prompt.
    setImmediate(() => void warmUp(agentModel.provider, agentModel.model));
    for (const prompt of setup.prompts) {
      if (sessionController.signal.aborted) break;
      view.printLines([`${style.bold('›')} ${visibleText(prompt)}`]);
      await runPrompt(prompt);
    }

    let prefill = '';
    let lastWasInterrupt = false;
    while (!sessionController.signal.aborted) {
      // Keys typed while the last run was under way reach the prompt as if typed now.
      for (const chunk of keys.takeTypeahead().reverse()) process.stdin.unshift(Buffer.from(chunk, 'utf8'));
      const input = await editor.read(`${style.cyan('›')} `, prefill ? { initial: prefill } : undefined);
      prefill = '';
      if (input.kind === 'eof') break;
      if (input.kind === 'interrupt') {
        if (input.text.trim() === '' && lastWasInterrupt) break;
        if (input.text.trim() === '') view.printLines([style.dim('(Ctrl-C again or Ctrl-D to leave)')]);
        lastWasInterrupt = input.text.trim() === '';
        continue;
      }
      lastWasInterrupt = false;
      const text = input.text;
      if (!text.trim()) continue;
      if (isSlashCommand(text)) {
        const outcome = await runSlashCommand(text, commands);
        if (outcome.exit) break;
        prefill = outcome.prefill ?? '';
        continue;
      }
      // A prompt refused before it was kept (an image the model cannot take, say) is given back to edit.
      if (!(await runPrompt(text.replace(/^ (?=\/)/, '')))) prefill = text;
    }
    view.printLines([style.dim(`Session ${session.store.id} is saved; fence -r goes on with it.`)]);
    return sessionController.signal.aborted ? EXIT_CODES.interrupted : EXIT_CODES.done;
  } finally {
    process.off('SIGINT', stopRun);
    process.off('SIGTERM', onTerminate);
    process.off('SIGHUP', onTerminate);
    view.idle();
    keys.stop();
    editor.close();
    terminal.restore();
    await session.close();
  }
}

/**
 * Puts a terminal input in raw mode until `restore`, which also runs if the process exits
 * first (a crash must not leave the person's terminal without echo).
 */
function rawTerminal(input: NodeJS.ReadStream, output: NodeJS.WriteStream): { restore(): void } {
  if (!input.isTTY) return { restore: () => undefined };
  const wasRaw = input.isRaw;
  const restore = () => {
    process.off('exit', restore);
    try {
      input.setRawMode(wasRaw);
    } catch {
      // The terminal is gone.
    }
    // Cursor shown, bracketed paste off, whatever was drawing when it ended.
    if (output.isTTY) output.write('\x1b[?25h\x1b[?2004l');
  };
  input.setRawMode(true);
  process.on('exit', restore);
  return { restore };
}

/**
 * Runs the request path once without sending anything: the web classes Node loads on first
 * use, then the provider's own code with a signal that is already aborted, so the SDK builds a
 * request and gives up before any byte leaves. Never throws.
 */
async function warmUp(provider: Provider, model: string): Promise<void> {
  try {
    await warmUpFetch();
    const request = { model, messages: [createMessage('user', 'warm-up')], signal: AbortSignal.abort() };
    for await (const event of provider.stream(request)) if (event.type === 'done') break;
  } catch {
    // Only a head start: the first real request does the same work if this failed.
  }
}

/**
 * The first lines: the session, model and keys, the saved programs offered, and for a resumed
 * session the end of its conversation. Wrapped to `width` at word boundaries, each
 * continuation line indented under its text.
 */
function welcome(session: OpenSession, modelId: string, setup: ChatSetup, style: ReturnType<typeof createStyle>, width: number): string[] {
  const lines: string[] = [];
  if (setup.resume) {
    lines.push(style.dim(`Resuming ${session.store.info.name ?? session.store.id}:`));
    lines.push(...briefHistory(session.store.log, style, width));
    const plan = latestPlan(session.store.log);
    if (plan?.length) lines.push(style.dim('Plan:'), ...planLines(plan, style, width));
    lines.push('');
  }
  const asks = setup.yes ? 'tools run without asking (-y)' : 'asks before changing anything';
  lines.push(...wrapUnder(`${style.bold('fence')} `, 'fence '.length, `· ${modelId} · session ${session.store.id} · ${asks}`, width, style.dim));
  const programs = session.registry.tools.filter((tool) => tool.group === SAVED_PROGRAMS_GROUP).map((tool) => tool.name);
  if (programs.length > 0) lines.push(...wrapHanging(`saved programs offered as tools: ${programs.join(', ')}`, width, 2, style.dim));
  lines.push(...wrapHanging('/help for commands · Ctrl-C stops a reply · Ctrl-D leaves', width, 2, style.dim));
  return lines;
}

/**
 * What follows a run: why it stopped when it did not simply finish, then the session's tokens
 * and cost — replies taken back by /undo included, since they were paid for.
 */
function endLines(
  outcome: RunOutcome,
  store: Pick<SessionStore, 'log' | 'undone'>,
  config: FenceConfig,
  style: ReturnType<typeof createStyle>,
): string[] {
  const lines: string[] = [];
  if (outcome.status === 'error') lines.push(style.red(`✗ ${visibleText(outcome.error)}`));
  else if (outcome.status === 'max_turns') lines.push(style.yellow('■ stopped at the limit of model requests for one prompt (--max-turns); say "go on" to continue'));
  else if (outcome.status === 'stopped') lines.push(style.yellow(`■ stopped: ${visibleLine(outcome.reason)}`));
  else if (outcome.status === 'aborted') lines.push(style.yellow('■ interrupted · the conversation is kept'));
  const usage = sessionUsage(store.log, config.models, store.undone);
  const cost = usage.costUsd === undefined ? '' : ` · ${dollars(usage.costUsd)}`;
  lines.push(style.dim(`${shortCount(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens)} in · ${shortCount(usage.outputTokens)} out${cost}`), '');
  return lines;
}
