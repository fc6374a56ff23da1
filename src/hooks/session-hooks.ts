import type { HookConfig, HookEvent } from '../config/config-schema';
import { globMatcher, resourceMatcher, type Matcher } from '../policy/pattern';
import { hookInput, type HookFacts } from './hook-input';
import { DEFAULT_HOOK_TIMEOUT_SECONDS, runHook, type HookRun, type WrapInSandbox } from './run-hook';

/** What a session's hooks are made from. */
export interface SessionHooksOptions {
  /** The configuration's `[[hooks]]`, the user's then a trusted project's. */
  hooks: readonly HookConfig[];
  /** The session's id as it is now (a fork changes it). */
  sessionId: () => string;
  workspace: string;
  /** Runs a command inside the session's sandbox; absent: the session has none, and hooks run as they are. */
  wrap?: WrapInSandbox;
  /** Where a line about a hook that failed goes (the person's terminal, not the model). */
  report: (line: string) => void;
}

/** One call of a tool, as the hooks around it see it. */
export interface HookedCall {
  tool: string;
  input: Record<string, unknown>;
  resource?: string;
  principal: string;
}

/**
 * A session's hooks, by event. Each runs the matching hooks one after the other, in the order
 * of the configuration, and never throws: a hook that exits with a code other than 0 or 2,
 * times out, is killed or cannot start is reported (`report`) and otherwise ignored.
 */
export interface SessionHooks {
  /**
   * Runs the `session_start` hooks once (later calls give the first one's answer): their
   * stdout, joined, for the model to read before the first prompt; undefined when none printed.
   */
  sessionStart(source: 'startup' | 'resume'): Promise<string | undefined>;
  /**
   * Runs the `prompt` hooks before a prompt is sent: `refused` with the first exit 2's stderr
   * (for the person), else their stdout joined as `context` for the model.
   */
  prompt(prompt: string, signal?: AbortSignal): Promise<{ refused: string } | { context?: string }>;
  /**
   * Runs the matching `pre_tool` hooks: the first exit 2's reason, else undefined (the call
   * runs). A call whose hooks `signal` stopped is refused too.
   */
  beforeTool(call: HookedCall, signal?: AbortSignal): Promise<string | undefined>;
  /**
   * Runs the matching `post_tool` hooks after a call ran: their stdout (and an exit 2's stderr),
   * joined, to append to the result the model reads; undefined when there is nothing to add.
   */
  afterTool(call: HookedCall & { output: string; isError: boolean }, signal?: AbortSignal): Promise<string | undefined>;
  /**
   * Runs the `stop` hooks when a run would end: the first exit 2's stderr, a reason for the
   * model to go on, else undefined (the run ends). `active`: the run already went on for one.
   */
  stop(facts: { answer: string; active: boolean }, signal?: AbortSignal): Promise<string | undefined>;
}

/** A hook with its patterns compiled. */
interface ReadyHook {
  config: HookConfig;
  tool?: Matcher;
  resource?: Matcher;
}

/** Longest part of a hook's command line quoted in a report. */
const SHOWN_COMMAND_CHARS = 80;

/** Lines of a failing hook's stderr quoted in a report. */
const SHOWN_STDERR_LINES = 5;

/**
 * The hooks of a session, or undefined when the configuration has none. A hook runs in the
 * workspace, inside the sandbox unless its entry (of the user's own file) says `sandbox =
 * false`, with the event as JSON on stdin (see `hookInput`) and `FENCE_PROJECT_DIR`,
 * `CLAUDE_PROJECT_DIR` (the workspace), `FENCE_SESSION_ID` and `FENCE_HOOK_EVENT` set.
 */
export function createSessionHooks(options: SessionHooksOptions): SessionHooks | undefined {
  if (options.hooks.length === 0) return undefined;
  const ready: ReadyHook[] = options.hooks.map((config) => ({
    config,
    ...(config.tool === undefined ? {} : { tool: globMatcher(config.tool) }),
    ...(config.resource === undefined ? {} : { resource: resourceMatcher(config.resource) }),
  }));
  const matching = (event: HookEvent, call?: HookedCall) =>
    ready.filter(({ config, tool, resource }) => {
      if (config.event !== event) return false;
      if (!call) return true;
      if (tool && !tool(call.tool)) return false;
      return !resource || (call.resource !== undefined && resource(call.resource));
    });

  /** Runs each hook in turn until `decide` says to stop; reports the failures. `stopped` when `signal` stopped one. */
  const runEach = async (hooks: readonly ReadyHook[], facts: HookFacts, signal: AbortSignal | undefined, decide: (run: Extract<HookRun, { kind: 'exited' }>, config: HookConfig) => 'next' | 'stop'): Promise<'stopped' | undefined> => {
    const input = JSON.stringify(hookInput({ sessionId: options.sessionId(), workspace: options.workspace }, facts));
    for (const { config } of hooks) {
      const run = await runHook(
        {
          command: config.command,
          cwd: options.workspace,
          timeoutSeconds: config.timeout ?? DEFAULT_HOOK_TIMEOUT_SECONDS,
          ...(config.sandbox === false || !options.wrap ? {} : { wrap: options.wrap }),
          env: { FENCE_PROJECT_DIR: options.workspace, CLAUDE_PROJECT_DIR: options.workspace, FENCE_SESSION_ID: options.sessionId(), FENCE_HOOK_EVENT: config.event },
        },
        input,
        signal,
      );
      if (run.kind === 'stopped') return 'stopped';
      if (run.kind !== 'exited') {
        options.report(failureLine(config, run));
        continue;
      }
      if (run.code !== 0 && run.code !== 2) {
        options.report(failureLine(config, run));
        continue;
      }
      if (decide(run, config) === 'stop') return undefined;
    }
    return undefined;
  };

  let started: Promise<string | undefined> | undefined;
  return {
    sessionStart(source) {
      started ??= (async () => {
        const printed: string[] = [];
        await runEach(matching('session_start'), { event: 'session_start', source }, undefined, (run, config) => {
          // Nothing to refuse at the start of a session: an exit 2 is reported like any failure.
          if (run.code === 0) printed.push(run.stdout.trim());
          else options.report(failureLine(config, run));
          return 'next';
        });
        return joined(printed);
      })();
      return started;
    },
    async prompt(prompt, signal) {
      const printed: string[] = [];
      let refused: string | undefined;
      await runEach(matching('prompt'), { event: 'prompt', prompt }, signal, (run) => {
        if (run.code === 2) {
          refused = run.stderr.trim() || 'a prompt hook refused the prompt without saying why';
          return 'stop';
        }
        printed.push(run.stdout.trim());
        return 'next';
      });
      if (refused !== undefined) return { refused };
      const context = joined(printed);
      return context === undefined ? {} : { context };
    },
    async beforeTool(call, signal) {
      let refused: string | undefined;
      const stopped = await runEach(matching('pre_tool', call), { event: 'pre_tool', ...call }, signal, (run) => {
        if (run.code !== 2) return 'next';
        refused = run.stderr.trim() || 'a pre_tool hook refused it without saying why';
        return 'stop';
      });
      // A call whose hooks did not all answer does not run.
      return stopped ? 'the run was stopped while its pre_tool hooks ran' : refused;
    },
    async afterTool(call, signal) {
      const printed: string[] = [];
      await runEach(matching('post_tool', call), { event: 'post_tool', ...call }, signal, (run) => {
        printed.push(run.code === 2 ? run.stderr.trim() : run.stdout.trim());
        return 'next';
      });
      return joined(printed);
    },
    async stop(facts, signal) {
      let reason: string | undefined;
      await runEach(matching('stop'), { event: 'stop', ...facts }, signal, (run, config) => {
        if (run.code !== 2) return 'next';
        reason = run.stderr.trim() || 'a stop hook asked you to go on without saying why';
        // The person sees why the run goes on after an answer.
        options.report(`fence: stop hook "${shownCommand(config)}" sent the model back to work: ${reason.split('\n')[0] ?? ''}`);
        return 'stop';
      });
      return reason;
    },
  };
}

/** The texts that are not empty, joined by blank lines; undefined when none is left. */
function joined(texts: readonly string[]): string | undefined {
  const kept = texts.filter((text) => text !== '');
  return kept.length === 0 ? undefined : kept.join('\n\n');
}

/** A hook's command line as a report quotes it: its words, cut to `SHOWN_COMMAND_CHARS`. */
function shownCommand(config: HookConfig): string {
  const words = config.command.join(' ');
  return words.length > SHOWN_COMMAND_CHARS ? `${words.slice(0, SHOWN_COMMAND_CHARS - 1)}…` : words;
}

/** One line (and a few of stderr) about a hook that failed: it was ignored, and the run went on. */
function failureLine(config: HookConfig, run: HookRun): string {
  const hook = `${config.event} hook "${shownCommand(config)}"`;
  const what =
    run.kind === 'exited'
      ? `exited with code ${run.code}`
      : run.kind === 'timed-out'
        ? `timed out after ${config.timeout ?? DEFAULT_HOOK_TIMEOUT_SECONDS} s and was stopped`
        : run.kind === 'killed'
          ? `was killed by ${run.signal}`
          : run.kind === 'not-started'
            ? `could not run: ${run.reason}`
            : 'was stopped';
  const stderr = 'stderr' in run ? run.stderr.trim().split('\n').slice(-SHOWN_STDERR_LINES).join('\n') : '';
  return `fence: ${hook} ${what}; ignored${stderr ? `:\n${stderr}` : ''}`;
}

/**
 * The step loop's view of `hooks` (see `RunHooks` in `src/agent/`): the `session_start` hooks'
 * stdout given once, for the first prompt, then `prompt` and `stop` as they are.
 */
export function runHooksOf(
  hooks: SessionHooks,
  source: 'startup' | 'resume',
): { sessionStart(): Promise<string | undefined>; prompt: SessionHooks['prompt']; stop: SessionHooks['stop'] } {
  let taken = false;
  return {
    async sessionStart() {
      if (taken) return undefined;
      taken = true;
      return hooks.sessionStart(source);
    },
    prompt: (prompt, signal) => hooks.prompt(prompt, signal),
    stop: (facts, signal) => hooks.stop(facts, signal),
  };
}
