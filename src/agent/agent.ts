import { createMessage, type ImageRef, type Message, type Usage } from '../conversation/message';
import { interruptedCallNote } from '../conversation/resume';
import type { SessionStore } from '../conversation/session-store';
import type { FailureKind } from '../llm/failure';
import type { Provider, ReasoningLevel, ToolSchema } from '../llm/provider';
import { MarkdownStreamScanner } from '../parse/stream-scanner';
import type { ToolFormat, ToolStreamScanner, ToolUse } from '../parse/tool-use';
import { XmlStreamScanner } from '../parse/xml-stream-scanner';
import type { PolicyRule } from '../policy/admit';
import type { ToolContext } from '../tools/define-tool';
import type { ToolRegistry } from '../tools/registry';
import { COMPLETE_TOOL, completionText } from '../tools/complete';
import { planOfResult } from '../tools/plan';
import { runToolUse, type ToolRunOutcome } from '../tools/run-tool-use';
import { plural } from '../tools/text-file';
import { toolSchemas } from './system-prompt';
import type { ToolNotices } from './joined-tools';
import { compactedView, compactionEnd, summarize } from './compaction';
import { completeReminder } from './plan-notes';
import { fitToWindow } from './context-window';
import { attachImages, noImagesError, storeImages, withImageData } from './message-images';
import { messageImageTokens } from '../llm/image-tokens';
import { prepareCalls, replyMessage, type PreparedCall } from './reply-message';
import { hooksBeforePrompt, stopHookVerdict, type RunHooks } from './run-hooks';
import { streamReply, type Reply, type ReplyEvent } from './stream-reply';
import { warmUpReplyPath } from './warm-up';
import { TokenCounter } from './token-count';

/** Default cap on model requests in one run. */
export const DEFAULT_MAX_TURNS = 50;

/** Everything the step loop works with. */
export interface AgentOptions {
  provider: Provider;
  /** Full model id (`provider/model`), stored on each assistant message. */
  modelId: string;
  /** The provider's own model name. */
  model: string;
  registry: ToolRegistry;
  store: SessionStore;
  toolContext: ToolContext;
  /** Admission rules for the model's own tool calls. */
  rules?: readonly PolicyRule[];
  /** How the model writes tool calls (default `markdown`). */
  format?: ToolFormat;
  /** Cap on model requests over the agent's life (all prompts together). */
  maxTurns?: number;
  /** Cap on the cost of the agent's requests, in USD (needs `costOf`). */
  maxCostUsd?: number;
  /** Cap on the tokens of the agent's requests and replies (input, cached input and output). */
  maxTokens?: number;
  /** The cost of one reply's usage in USD; undefined when the model's prices are unknown. */
  costOf?: (usage: Usage) => number | undefined;
  /**
   * Autonomous: the run goes on until the model calls `complete` (a tool the session must
   * offer) or a budget ends; a reply without a tool call is answered with a nudge, at most
   * `maxNudges` times in a row (default 3).
   */
  auto?: boolean;
  maxNudges?: number;
  /** Watches each tool call for repeats; its nudges go to the model, its stop ends the run. */
  loopDetector?: LoopWatch;
  /** The person's hooks at the session's start, before each prompt and when a run would end (see `RunHooks`). */
  hooks?: RunHooks;
  /**
   * Tools that joined or left the registry after the session opened (see `JoinedTools`): what
   * it gives before a request is appended as a system message, so the model reads it first.
   */
  toolNotices?: ToolNotices;
  /** The model's context window: every request is kept inside it (absent: no limit is known). */
  context?: ContextOptions;
  /**
   * How hard the model should think, sent with every request of the agent's runs (see
   * `resolveReasoning`); absent: no level is sent. `useReasoning` changes it.
   */
  reasoning?: ReasoningLevel;
  /** Offer the provider's hosted web search with every request (`--web-search`, `[web] search`; see `StreamRequest.webSearch`). */
  webSearch?: boolean;
  /** `false`: the model is known to read text only, so images are refused (absent: it takes them). */
  images?: boolean;
  /**
   * The end of the session: it stops the run under way and every later one, and the session's
   * shell and kernel are closed after it. A tool call it cuts is stored with
   * `interruptedCallNote` before what the call printed, marked `meta.interrupted`.
   */
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
}

/** The model an agent talks to; `useModel` switches to another mid-session. */
export type AgentModel = Pick<AgentOptions, 'provider' | 'modelId' | 'model' | 'context' | 'costOf' | 'images'>;

/** Options of one `run`. */
export interface RunOptions {
  /** Stops this run (the stream, or the tool under way); the agent's own signal stops every run. */
  signal?: AbortSignal;
  /** Most model requests of this run alone (default: what is left of the agent's `maxTurns`). */
  maxTurns?: number;
  /**
   * Absolute paths of image files the prompt message carries (see `attachImages`). Each is
   * checked and prepared before anything is appended or sent; one that fails, or any image for
   * a model known to read text only, ends the run with `error` (one sentence naming the file)
   * having appended and sent nothing.
   */
  images?: readonly (string | AttachedImage)[];
}

/**
 * An image file to attach to a prompt: its absolute `path`, how errors and the log name it
 * (default: `path`), and, when the front end already read the file it judged, its `bytes`:
 * then those are prepared and the path is not opened again.
 */
export interface AttachedImage {
  path: string;
  name?: string;
  bytes?: Buffer;
}

/**
 * What the loop reports as it goes, for display. Every `tool_end` follows the `tool_start` of
 * the same use, also for a native call refused before it could run.
 */
export type AgentEvent =
  | ReplyEvent
  | { type: 'prompt'; message: Message }
  | { type: 'turn'; turn: number }
  | { type: 'reply_end'; message: Message }
  | { type: 'tool_start'; use: ToolUse }
  | { type: 'tool_end'; use: ToolUse; outcome: ToolRunOutcome }
  | { type: 'compaction'; message: Message }
  | { type: 'compaction_failed'; error: string };

/** How requests are kept inside the model's context window. */
export interface ContextOptions {
  /** The model's context window, in tokens. */
  window: number;
  /** Tokens kept free for the reply. */
  reserve: number;
  /** The model counts tokens as o200k does (OpenAI); other counts get a margin. */
  exactTokenizer?: boolean;
  /** Share of the budget that, still exceeded once old outputs are shrunk, has older turns summarized (default 0.8). */
  compactAt?: number;
  /** Recent messages never summarized, shrunk or left out (default 6). */
  keepRecent?: number;
  /** How long a summary may take before fence cuts old messages instead (default 120 s). */
  summaryTimeoutMs?: number;
}

/** What the step loop needs of a loop detector (see `LoopDetector`). */
export interface LoopWatch {
  observe(call: { tool: string; input: unknown; output: string; isError: boolean }):
    | { action: 'continue' }
    | { action: 'nudge'; message: string }
    | { action: 'stop'; reason: string };
}

/**
 * How one prompt's run ended. `done` with `completed` when the model called `complete`;
 * `stopped` for a budget other than turns, a loop, or nudges that went unheeded (`reason` is
 * one line for the user); `error` with `kind` when the key was refused or the rate limit
 * outlasted the retries. The `answer` of a run that ended at a tool call or a budget is what
 * the model wrote outside its tool calls, never a tool block (see `Agent.run`).
 */
export type RunOutcome =
  | { status: 'done'; answer: string; completed?: boolean }
  | { status: 'max_turns'; answer: string; turns: number }
  | { status: 'stopped'; stop: 'max_cost' | 'max_tokens' | 'loop' | 'no_progress' | 'hook'; reason: string; answer: string }
  | { status: 'error'; error: string; kind?: FailureKind }
  | { status: 'aborted' };

/** Default number of nudges in a row, in `auto`, before a run that keeps replying without a tool call stops. */
export const DEFAULT_MAX_NUDGES = 3;

/** What the model is told when, in `auto`, it replied without a tool call. */
export const NUDGE_TEXT =
  'You replied without a tool call. Nobody is watching this run to answer you: carry on with the next step yourself, or, if the task is done, call complete with a short summary of what you did.';

/**
 * The step loop: send the conversation (kept inside the model's context window when it is
 * known), stream the reply, run its tool calls — the first block in markdown and XML, every
 * native call in the tool format — append each result as a `system` message, and repeat until
 * a reply has no tool call (in `auto`: until `complete`), a budget is spent or a loop is seen.
 * Every message is appended to the session store as it completes.
 */
export class Agent {
  private turns = 0;
  /** Tokens of every reply so far (input, cached input and output). */
  private tokens = 0;
  /** Cost of every reply so far, in USD; undefined once a reply's cost was unknown. */
  private cost: number | undefined = 0;
  private nudges = 0;
  private counter: TokenCounter | undefined;
  private llm: AgentModel;
  /** The signal of the run under way: the agent's and the run's own. */
  private signal: AbortSignal | undefined;
  /** The tools' context for the run under way: the session's, with the run's signal. */
  private toolContext: ToolContext;
  private store: SessionStore;
  /** Set when a summary failed: the run goes on with cut requests rather than asking again each step. */
  private summaryFailedAt: number | undefined;
  private readonly format: ToolFormat;
  /** The tool definitions sent with requests in the native format, and the registry version they were made from. */
  private definitions: { version: number; tools: ToolSchema[] } | undefined;
  private readonly scanner: (() => ToolStreamScanner) | undefined;
  /** Whether the first-use costs of the step after a reply were paid already (see `warmUpReplyPath`). */
  private warmedUp = false;
  private reasoningLevel: ReasoningLevel | undefined;
  /** The base64 of the session's images read so far, by file (see `withImageData`). */
  private readonly imageData = new Map<string, string>();
  /** In `auto`, whether this run's `complete` was already answered with the plan's open items. */
  private remindedOfPlan = false;

  constructor(private readonly options: AgentOptions) {
    this.format = options.format ?? 'markdown';
    const { registry } = options;
    this.scanner =
      this.format === 'markdown' ? () => new MarkdownStreamScanner(registry.isTool) : this.format === 'xml' ? () => new XmlStreamScanner() : undefined;
    this.llm = options;
    this.counter = counterFor(options.context);
    this.signal = options.signal;
    this.toolContext = options.toolContext;
    this.store = options.store;
    this.reasoningLevel = options.reasoning;
  }

  /** The reasoning level sent with the next requests; undefined when none is sent. */
  get reasoning(): ReasoningLevel | undefined {
    return this.reasoningLevel;
  }

  /** Sends `level` with the next requests (the chat's `/reasoning`, or after `/model`); undefined: none. */
  useReasoning(level: ReasoningLevel | undefined): void {
    this.reasoningLevel = level;
  }

  /** The model id requests go to now. */
  get modelId(): string {
    return this.llm.modelId;
  }

  /** Appends to another session's log from now on (the chat's `/fork`): the tools and runtimes stay. */
  useStore(store: SessionStore): void {
    this.store = store;
  }

  /**
   * Sends the next requests to another model (the chat's `/model`). The conversation, the
   * tools and the tool format stay; so do the counts of turns, tokens and cost.
   */
  useModel(model: AgentModel): void {
    this.llm = model;
    this.counter = counterFor(model.context);
  }

  /** Model requests made so far. */
  get turnCount(): number {
    return this.turns;
  }

  /** Cost of the requests so far in USD, undefined when a model's prices are unknown. */
  get costUsd(): number | undefined {
    return this.cost;
  }

  /** Tokens of the requests and replies so far. */
  get tokenCount(): number {
    return this.tokens;
  }

  /**
   * Counts what a subagent spent in this agent's totals, so its cost and token budgets hold
   * it: its tokens, and its cost in USD (undefined when unknown, which makes this agent's unknown).
   */
  addSpent(tokens: number, costUsd: number | undefined): void {
    this.tokens += tokens;
    this.cost = this.cost === undefined || costUsd === undefined ? undefined : this.cost + costUsd;
  }

  /**
   * Runs one user prompt to its end. Never throws for model or tool failures.
   *
   * The answer: a reply without a tool call is the answer, whole. A `complete` call's answer is
   * its `result`; when that is empty or missing, the text the model wrote before the call in
   * that reply, else the last text it wrote outside tool calls in this run (else ''). A run
   * stopped by a budget or by the nudges running out answers with what its last reply said
   * before its tool call ('' when it went straight to the call); a loop answers ''.
   */
  async run(prompt: string, options: RunOptions = {}): Promise<RunOutcome> {
    const { onEvent } = this.options;
    const store = this.store;
    const images = options.images?.length
      ? await attachImages(options.images, { dir: store.dir, modelId: this.llm.modelId, takesImages: this.llm.images !== false })
      : [];
    if ('error' in images) return { status: 'error', error: images.error };
    const hooked = await hooksBeforePrompt(this.options.hooks, store, prompt, combineSignals(this.options.signal, options.signal));
    if ('refused' in hooked) return hooked.refused;
    const promptMessage = createMessage('user', prompt, images.length > 0 ? { meta: { images } } : {});
    store.append(promptMessage);
    onEvent?.({ type: 'prompt', message: promptMessage });
    if (hooked.context) store.append(createMessage('system', hooked.context));
    this.signal = combineSignals(this.options.signal, options.signal);
    const session = this.options.toolContext;
    const toolSignal = combineSignals(session.signal, options.signal);
    this.toolContext = toolSignal === session.signal || !toolSignal ? session : { ...session, signal: toolSignal };
    const maxTurns = options.maxTurns === undefined ? (this.options.maxTurns ?? DEFAULT_MAX_TURNS) : this.turns + options.maxTurns;
    this.remindedOfPlan = false;
    /** What the last reply said outside its tool calls. */
    let lastProse = '';
    /** The last thing the model said outside tool calls in this run: the answer of an empty `complete`. */
    let lastWords = '';
    let stopRefusals = 0;
    while (this.turns < maxTurns) {
      const spent = this.spentBudget(lastProse);
      if (spent) return spent;
      this.turns += 1;
      onEvent?.({ type: 'turn', turn: this.turns });
      const joined = this.options.toolNotices?.take();
      if (joined) store.append(createMessage('system', joined));
      const fitted = await this.requestMessages();
      if ('error' in fitted) return { status: 'error', error: fitted.error };
      const messages = withImageData(fitted, store.dir, this.imageData, this.llm.images !== false);
      const reasoning = this.reasoningLevel;
      const tools = this.toolDefinitions();
      const request = { model: this.llm.model, messages, ...(tools ? { tools } : {}), ...(reasoning ? { reasoning } : {}), ...(this.options.webSearch ? { webSearch: true } : {}) };
      let warming: AbortController | undefined;
      if (!this.warmedUp) {
        this.warmedUp = true;
        warming = new AbortController();
        const { tools } = this.options.registry;
        void warmUpReplyPath({ format: this.format, tools, signal: warming.signal, ...(this.scanner ? { scanner: this.scanner } : {}) });
      }
      const reply = await streamReply(this.llm.provider, request, {
        ...(this.scanner ? { scanner: this.scanner } : {}),
        signal: this.signal,
        onEvent: warming ? (event) => (warming.abort(), onEvent?.(event)) : onEvent,
      });
      warming?.abort();
      const interrupted = reply.stopReason === 'error' || reply.stopReason === 'aborted';
      const calls = reply.toolCalls?.length ? await prepareCalls(reply.toolCalls) : [];
      if (reply.text.trimEnd() || calls.length > 0 || !interrupted) {
        const message = replyMessage(reply, calls, this.llm.modelId);
        store.append(message);
        onEvent?.({ type: 'reply_end', message });
      }
      this.count(reply);
      if (reply.stopReason === 'error') {
        return { status: 'error', error: reply.error ?? 'the model request failed', ...(reply.errorKind ? { kind: reply.errorKind } : {}) };
      }
      if (reply.stopReason === 'aborted') return { status: 'aborted' };
      lastProse = proseOf(reply);
      if (lastProse) lastWords = lastProse;
      let ended: RunOutcome | undefined;
      if (calls.length > 0) {
        ended = await this.runNativeCalls(calls, reply, lastWords);
      } else if (reply.toolUse) {
        ended = await this.runTool(reply.toolUse, lastWords);
      } else if (this.options.auto) {
        ended = this.nudge(lastProse);
      } else {
        ended = { status: 'done', answer: reply.text };
      }
      if (ended?.status === 'done' && this.options.hooks) {
        const verdict = await stopHookVerdict(this.options.hooks, store, ended, stopRefusals++, this.signal);
        if (verdict === 'go_on') continue;
        ended = verdict;
      }
      if (ended) return ended;
      if (this.signal?.aborted) return { status: 'aborted' };
    }
    return { status: 'max_turns', answer: lastProse, turns: this.turns };
  }

  /**
   * The messages of the next request. Without a known window, the whole log. With one: the log
   * as compaction left it, with old long tool outputs cut to head and tail; when even that
   * stays above the compaction threshold, the model summarizes the older turns (the summary is
   * appended to the log); then, if need be, the oldest steps are left out, so the request
   * always fits. A summary that fails or takes too long only means cutting instead — the run
   * never wedges.
   */
  private async requestMessages(): Promise<readonly Message[] | { error: string }> {
    const store = this.store;
    const { context } = this.llm;
    const counter = this.counter;
    if (!context || !counter) return store.log.some((message) => message.meta?.compaction) ? compactedView(store.log) : store.log;
    const budget = context.window - context.reserve;
    let view = compactedView(store.log);
    const estimate = view.reduce((sum, message) => sum + counter.estimate(message.content) + messageImageTokens(message.meta?.images), 0);
    if (estimate < budget / 2) return view;
    await counter.load();
    const keepRecent = context.keepRecent ?? 6;
    const fitOptions = { budget, countTokens: counter.count, keepRecent };
    // Shrinking old outputs comes first; when even that leaves the request over the threshold
    // (steps would have to be left out), the model summarizes the older turns.
    const soft = fitToWindow(view, { ...fitOptions, budget: Math.floor(budget * (context.compactAt ?? 0.8)) });
    if (soft.dropped > 0 && this.summaryFailedAt === undefined) {
      const end = compactionEnd(view, keepRecent);
      if (end !== undefined) {
        const outcome = await this.summarizeUpTo(view, end, budget * 2, context.summaryTimeoutMs, this.signal);
        if (outcome.ok) view = compactedView(store.log);
        else this.summaryFailedAt = store.log.length;
      }
    }
    const fit = fitToWindow(view, fitOptions);
    if (!fit.fits) return { error: `the system prompt, the task and the last ${keepRecent} messages alone exceed the context window of ${context.window} tokens` };
    return fit.messages;
  }

  /**
   * Has the model summarize the older turns now, whatever the window (the chat's `/compact`):
   * all but the last `keepRecent` messages after the task. The summary is appended to the log
   * and later requests carry it instead of those turns. Never throws.
   */
  async compact(options: { signal?: AbortSignal; keepRecent?: number } = {}): Promise<{ ok: true; message: Message } | { ok: false; error: string }> {
    const view = compactedView(this.store.log);
    const end = compactionEnd(view, options.keepRecent ?? 4);
    if (end === undefined) return { ok: false, error: 'the conversation is too short to compact' };
    const { context } = this.llm;
    const maxChars = context ? (context.window - context.reserve) * 2 : 400_000;
    const signal = combineSignals(this.options.signal, options.signal);
    return this.summarizeUpTo(view, end, maxChars, context?.summaryTimeoutMs, signal);
  }

  /** Asks for a summary of `view` up to `end`, counts its usage, appends it and reports it. */
  private async summarizeUpTo(
    view: readonly Message[],
    end: number,
    maxChars: number,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ ok: true; message: Message } | { ok: false; error: string }> {
    const { store } = this;
    const { onEvent } = this.options;
    const outcome = await summarize({
      provider: this.llm.provider,
      model: this.llm.model,
      modelId: this.llm.modelId,
      log: store.log,
      view,
      end,
      timeoutMs: timeoutMs ?? 120_000,
      maxChars,
      ...(signal ? { signal } : {}),
    });
    if (outcome.usage) this.addUsage(outcome.usage);
    if (!outcome.ok) {
      onEvent?.({ type: 'compaction_failed', error: outcome.error });
      return { ok: false, error: outcome.error };
    }
    store.append(outcome.message);
    onEvent?.({ type: 'compaction', message: outcome.message });
    return { ok: true, message: outcome.message };
  }

  /** The native tool definitions of the registry's tools now (made again only when they changed); undefined in other formats. */
  private toolDefinitions(): ToolSchema[] | undefined {
    if (this.format !== 'tool') return undefined;
    const { registry } = this.options;
    if (this.definitions?.version !== registry.version) this.definitions = { version: registry.version, tools: toolSchemas(registry.tools) };
    return this.definitions.tools;
  }

  /** Adds a reply's usage to the run's tokens and cost. */
  private count(reply: Reply): void {
    if (reply.usage) this.addUsage(reply.usage);
  }

  private addUsage(usage: Usage): void {
    const { inputTokens, outputTokens, cacheReadTokens = 0, cacheWriteTokens = 0 } = usage;
    this.tokens += inputTokens + outputTokens + cacheReadTokens + cacheWriteTokens;
    const cost = this.llm.costOf?.(usage);
    this.cost = this.cost === undefined || cost === undefined ? undefined : this.cost + cost;
  }

  /** The outcome when a cost or token budget is spent, checked before each request. */
  private spentBudget(answer: string): RunOutcome | undefined {
    const { maxCostUsd, maxTokens } = this.options;
    if (maxCostUsd !== undefined && this.cost !== undefined && this.cost >= maxCostUsd) {
      return { status: 'stopped', stop: 'max_cost', reason: `spent $${this.cost.toFixed(4)} of the $${maxCostUsd} budget (--max-cost)`, answer };
    }
    if (maxTokens !== undefined && this.tokens >= maxTokens) {
      return { status: 'stopped', stop: 'max_tokens', reason: `used ${this.tokens} of ${maxTokens} tokens (--max-tokens)`, answer };
    }
    return undefined;
  }

  /** In `auto`, answers a reply without a tool call: a nudge, or the end of the run after too many in a row. */
  private nudge(answer: string): RunOutcome | undefined {
    const most = this.options.maxNudges ?? DEFAULT_MAX_NUDGES;
    if (this.nudges >= most) {
      // Each reminder followed a reply without a tool call, and this reply is one more.
      const reason = `${plural(most + 1, 'reply', 'replies')} in a row without a tool call, after ${plural(most, 'reminder')}`;
      return { status: 'stopped', stop: 'no_progress', reason, answer };
    }
    this.nudges += 1;
    this.store.append(createMessage('system', NUDGE_TEXT, { meta: { notice: 'nudge' } }));
    return undefined;
  }

  /**
   * Runs the native calls of one reply in order, each answered by its own result (with its
   * call's id), whatever happens to the others. A call that cannot run — no name, arguments
   * that are not a JSON object, arguments cut short by the reply's token limit, or the run
   * being stopped — gets an error result saying why, so no call is ever left unanswered. It
   * is shown like any other call: a `tool_start`, then its `tool_end`. `lastWords` is the
   * answer of a `complete` call without a result.
   */
  private async runNativeCalls(calls: readonly PreparedCall[], reply: Reply, lastWords: string): Promise<RunOutcome | undefined> {
    let ended: RunOutcome | undefined;
    for (const call of calls) {
      const { id, name } = call.stored;
      const use: ToolUse = { tool: name, args: [], content: '', format: 'tool', callId: id, start: 0, end: 0 };
      let refusal: string | undefined;
      if (this.signal?.aborted) refusal = 'Not run: the run was stopped before this call.';
      else if (name === '') refusal = 'This tool call has no tool name: call one of the tools you were given.';
      else if (!call.parsed.ok) refusal = `The arguments of this ${name} call are not usable (${call.parsed.error}); nothing was run. Call it again with a JSON object.`;
      else if (reply.stopReason === 'max_tokens' && call.parsed.repaired) {
        refusal = `Your reply reached its length limit while writing this ${name} call, so its arguments are incomplete; nothing was run. Call it again, shorter (split a large file into a save and appends).`;
      }
      if (call.parsed.ok) use.kwargs = call.parsed.value;
      if (ended) refusal = 'Not run: the run ended before this call.';
      if (refusal !== undefined) {
        this.options.onEvent?.({ type: 'tool_start', use });
        this.appendResult(use, { tool: name || '(none)', result: { output: refusal, isError: true } });
        continue;
      }
      ended = await this.runTool(use, lastWords);
    }
    return ended;
  }

  /**
   * Runs one tool use and appends its result. Returns how the run ends when it ends here: the
   * model called `complete` (in `auto`; its answer is `lastWords` when its result is empty), or
   * the loop detector stopped it.
   */
  private async runTool(use: ToolUse, lastWords: string): Promise<RunOutcome | undefined> {
    const { registry, onEvent } = this.options;
    const { store } = this;
    onEvent?.({ type: 'tool_start', use });
    const ran = await runToolUse(use, registry, this.toolContext, { outputsDir: store.outputsDir, rules: this.options.rules ?? [] });
    const sessionEnded = this.options.signal?.aborted === true;
    let outcome = sessionEnded ? cutBySessionEnd(ran) : ran;
    // A first `complete` with open plan items is answered with them instead; a second one ends the run.
    const reminder = this.options.auto && !this.remindedOfPlan ? completeReminder(outcome, store.log) : undefined;
    if (reminder) {
      this.remindedOfPlan = true;
      outcome = reminder;
    }
    this.appendResult(use, outcome, sessionEnded);
    this.nudges = 0;
    if (this.options.auto && outcome.tool === COMPLETE_TOOL && !outcome.result.isError && !reminder) {
      return { status: 'done', answer: completionText(outcome.result.value) || lastWords, completed: true };
    }
    const verdict = this.options.loopDetector?.observe({
      tool: outcome.tool,
      input: use.kwargs ?? { args: use.args, content: use.content },
      output: outcome.result.output,
      isError: outcome.result.isError === true,
    });
    if (verdict?.action === 'nudge') store.append(createMessage('system', verdict.message, { meta: { notice: 'loop' } }));
    if (verdict?.action === 'stop') return { status: 'stopped', stop: 'loop', reason: verdict.reason, answer: '' };
    return undefined;
  }

  private appendResult(use: ToolUse, given: ToolRunOutcome, interrupted = false): void {
    const { outcome, images } = this.keepImages(given);
    const plan = planOfResult(outcome.tool, outcome.result);
    this.store.append(
      createMessage('system', outcome.result.output, {
        ...(use.callId ? { callId: use.callId } : {}),
        meta: {
          toolResult: true,
          tool: outcome.tool,
          ...(outcome.result.isError ? { isError: true } : {}),
          ...(interrupted ? { interrupted: true } : {}),
          ...(outcome.fullOutputPath ? { fullOutput: outcome.fullOutputPath } : {}),
          ...(images ? { images } : {}),
          ...(plan ? { plan } : {}),
        },
      }),
    );
    this.options.onEvent?.({ type: 'tool_end', use, outcome });
  }

  /**
   * The images of a tool result, stored in the session folder for its message's `meta.images`.
   * For a model known to read text only, or when they cannot be stored, the result becomes an
   * error saying so, without images.
   */
  private keepImages(outcome: ToolRunOutcome): { outcome: ToolRunOutcome; images?: ImageRef[] } {
    const prepared = outcome.result.images;
    if (!prepared || prepared.length === 0) return { outcome };
    const { images: _images, ...result } = outcome.result;
    const first = prepared[0]?.name ?? 'the image';
    const stored = this.llm.images === false ? { error: noImagesError(this.llm.modelId, first, true) } : storeImages(this.store.dir, prepared);
    if ('error' in stored) return { outcome: { ...outcome, result: { ...result, output: stored.error, isError: true } } };
    return { outcome: { ...outcome, result }, images: stored };
  }
}

/**
 * What a reply says outside its tool calls, trimmed: the text before its tool block (markdown
 * and XML), or all of its text (a reply without a block; a native reply, whose calls come apart).
 */
function proseOf(reply: Reply): string {
  return (reply.toolUse ? reply.text.slice(0, reply.toolUse.start) : reply.text).trim();
}

/**
 * The result of a call that the session's end cut: the interrupted note (the same text a call
 * cut by `kill -9` gets on resume), then what the call itself reported. An error result.
 */
function cutBySessionEnd(outcome: ToolRunOutcome): ToolRunOutcome {
  const output = `${interruptedCallNote(outcome.tool)}\n\nWhat the call reported before it stopped:\n${outcome.result.output}`;
  return { ...outcome, result: { ...outcome.result, output, isError: true } };
}

function counterFor(context: ContextOptions | undefined): TokenCounter | undefined {
  return context ? new TokenCounter({ exact: context.exactTokenizer === true }) : undefined;
}

/** One signal for both, or the one given. */
function combineSignals(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (!a || !b || a === b) return a ?? b;
  return AbortSignal.any([a, b]);
}
