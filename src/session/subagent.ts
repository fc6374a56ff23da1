import { relative } from 'node:path';
import { Agent, DEFAULT_MAX_TURNS, type RunOutcome } from '../agent/agent';
import { loadAgentModel } from '../agent/agent-model';
import { LoopDetector } from '../agent/loop-detector';
import { agentParts } from '../agent/session-parts';
import { BUILTIN_TOOL_NAMES, DEFAULT_AGENT_MAX_DEPTH, DEFAULT_AGENT_MAX_PARALLEL } from '../config/config-schema';
import type { FenceConfig } from '../config/config';
import { resolveModel } from '../llm/models';
import type { SandboxMode } from '../os-sandbox/policy';
import type { ToolFormat } from '../parse/tool-use';
import type { PolicyRule } from '../policy/admit';
import { globMatcher, wildcardMatcher } from '../policy/pattern';
import type { SubagentRequest, SubagentResult } from '../tools/agent';
import type { ToolContext } from '../tools/define-tool';

/** What a parent agent's budgets hold so far: its requests, tokens and cost, and a way to count a child's in. */
export interface SpendingAgent {
  readonly turnCount: number;
  readonly costUsd: number | undefined;
  addSpent(tokens: number, costUsd: number | undefined): void;
}

/** The parent's run, known once its Agent exists (see `SubagentHost.bind`). */
export interface SubagentParent {
  agent: SpendingAgent;
  sessionId: string;
  /** The names of the parent's tools now. */
  tools(): readonly string[];
  maxTurns?: number;
  maxCostUsd?: number;
  /** When the parent's `--timeout` ends, in `Date.now()` milliseconds. */
  deadline?: number;
}

/** A subagent starting or ending, for the stream-json output. */
export type SubagentEvent =
  | { type: 'agent_start'; session_id: string; child_session: string; task: string }
  | { type: 'agent_end'; session_id: string; child_session: string; status: SubagentResult['status']; cost_usd: number | null };

/** The session facts a child opens with: the parent's, as `fence -n` was given them. */
export interface SubagentFacts {
  home: string;
  workspace: string;
  modelId: string;
  config: FenceConfig;
  format: ToolFormat;
  sandboxMode?: SandboxMode;
  /** 0 for a session a person started; a child's is its parent's plus one. */
  depth: number;
  /** Opens a session as `openSession` does (passed in, so this file does not import it back). */
  open: OpenChildSession;
  onEvent?: (event: SubagentEvent) => void;
}

/** `openSession` as a child uses it. */
export type OpenChildSession = (options: {
  home: string;
  workspace: string;
  modelId: string;
  config: FenceConfig;
  format: ToolFormat;
  auto: true;
  signal: AbortSignal;
  sandboxMode?: SandboxMode;
  agents?: SubagentHost;
  only: readonly string[];
  parent: string;
}) => Promise<import('../agent/session-parts').OpenSession>;

/**
 * The subagents of one session: whether it offers the `agent` tool (its depth is under
 * `[agents] max_depth`), how many of its children run at once (`max_parallel`, the rest wait),
 * and the budgets they are carved from: each child's turns, cost and time are at most what the
 * parent has left, less what its running children hold; what a child spends is counted in the
 * parent's totals when it ends.
 */
export class SubagentHost {
  private parent: SubagentParent | undefined;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private reservedCost = 0;
  private started = 0;

  constructor(private readonly facts: SubagentFacts) {}

  /** Whether the session offers the `agent` tool: the configuration has an `[agents]` table, and the depth allows it. */
  get offersTool(): boolean {
    return this.facts.config.agents !== undefined && this.facts.depth < this.maxDepth;
  }

  private get maxDepth(): number {
    return this.facts.config.agents?.maxDepth ?? DEFAULT_AGENT_MAX_DEPTH;
  }

  private get maxParallel(): number {
    return this.facts.config.agents?.maxParallel ?? DEFAULT_AGENT_MAX_PARALLEL;
  }

  /** Tells the host of the parent's run, whose budgets children are carved from. */
  bind(parent: SubagentParent): void {
    this.parent = parent;
  }

  /** Runs one child (see `RunSubagent`). */
  readonly run = async (request: SubagentRequest, ctx: ToolContext): Promise<SubagentResult> => {
    const parent = this.parent;
    if (!parent) return failed('subagents are not available in this session');
    const tools = this.childTools(request, parent);
    if ('error' in tools) return failed(tools.error);
    // A program's wall clock counts its own time: a subagent's run is carved from the parent's budgets instead.
    const releaseClock = ctx.holdClock?.();
    await this.slot(ctx.signal);
    try {
      if (ctx.signal.aborted) return { result: '', status: 'cancelled', changes: [], cost: null, session: '' };
      return await this.runChild(request, ctx, parent, tools.names);
    } finally {
      this.release();
      releaseClock?.();
    }
  };

  /** The tools a child gets: those asked for, all the parent's; by default the parent's built-ins. */
  private childTools(request: SubagentRequest, parent: SubagentParent): { names: string[] } | { error: string } {
    const own = parent.tools();
    if (request.tools) {
      const unknown = request.tools.filter((name) => !own.includes(name) || name === 'complete');
      if (unknown.length > 0) return { error: `a subagent can only have tools you have; not yours: ${unknown.join(', ')}` };
    }
    const builtins: readonly string[] = BUILTIN_TOOL_NAMES;
    const wanted = request.tools ?? own.filter((name) => builtins.includes(name) || name === 'agent');
    // A child at the depth limit has no `agent` tool, asked for or not.
    const deeper = this.facts.depth + 1 < this.maxDepth;
    return { names: [...new Set(wanted)].filter((name) => name !== 'agent' || deeper) };
  }

  private async slot(signal: AbortSignal): Promise<void> {
    if (this.running < this.maxParallel) {
      this.running++;
      return;
    }
    await new Promise<void>((resolve) => {
      const go = () => {
        signal.removeEventListener('abort', go);
        const at = this.waiting.indexOf(go);
        if (at >= 0) this.waiting.splice(at, 1);
        this.running++;
        resolve();
      };
      this.waiting.push(go);
      signal.addEventListener('abort', go, { once: true });
    });
  }

  private release(): void {
    this.running--;
    this.waiting[0]?.();
  }

  private async runChild(request: SubagentRequest, ctx: ToolContext, parent: SubagentParent, tools: readonly string[]): Promise<SubagentResult> {
    // Turns are carved from the parent's left; cost from what is left less what running children hold.
    const turnsLeft = (parent.maxTurns ?? DEFAULT_MAX_TURNS) - parent.agent.turnCount;
    if (turnsLeft <= 0) return { ...failed('the parent has no model requests left for a subagent (--max-turns)'), status: 'budget' };
    const maxTurns = Math.min(request.max_turns ?? turnsLeft, turnsLeft);
    let maxCost = request.max_cost;
    if (parent.maxCostUsd !== undefined) {
      const costLeft = parent.maxCostUsd - (parent.agent.costUsd ?? 0) - this.reservedCost;
      if (costLeft <= 0) return { ...failed('the parent has no budget left for a subagent (--max-cost)'), status: 'budget' };
      // Unasked, a child takes its share of what is left, so the children running at once fit in it.
      maxCost = Math.min(maxCost ?? costLeft / this.maxParallel, costLeft);
    }
    const timeLeft = parent.deadline === undefined ? undefined : parent.deadline - Date.now();
    if (timeLeft !== undefined && timeLeft <= 0) return { ...failed('the parent has no time left for a subagent (--timeout)'), status: 'budget' };
    const asked = request.timeout === undefined ? undefined : request.timeout * 1000;
    const timeoutMs = timeLeft === undefined ? asked : Math.min(asked ?? timeLeft, timeLeft);

    const resolved = resolveModel(request.model ?? this.facts.modelId, process.env);
    if ('error' in resolved) return failed(resolved.error);
    const { config } = this.facts;
    let model;
    try {
      model = await loadAgentModel(resolved, config.models, undefined, config.providers);
    } catch (error) {
      return failed(error instanceof Error ? error.message : String(error));
    }
    if (maxCost !== undefined && (model.info.inputPerMTok === undefined || model.info.outputPerMTok === undefined)) {
      return failed(`a subagent under a cost budget needs the prices of ${resolved.id}`);
    }

    this.started++;
    const principal = `agent:${parent.sessionId}/${this.started}`;
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            stop.abort();
          }, timeoutMs);
    this.reservedCost += maxCost ?? 0;
    const host = new SubagentHost({ ...this.facts, depth: this.facts.depth + 1 });
    let session;
    try {
      session = await this.facts.open({
        home: this.facts.home,
        workspace: this.facts.workspace,
        modelId: resolved.id,
        config: { ...config, policy: subagentRules(config.policy, principal, parent.tools(), tools) },
        format: this.facts.format,
        auto: true,
        signal: stop.signal,
        ...(this.facts.sandboxMode ? { sandboxMode: this.facts.sandboxMode } : {}),
        ...(host.offersTool ? { agents: host } : {}),
        only: tools,
        parent: parent.sessionId,
      });
    } catch (error) {
      this.reservedCost -= maxCost ?? 0;
      ctx.signal.removeEventListener('abort', onAbort);
      if (timer) clearTimeout(timer);
      return failed(error instanceof Error ? error.message : String(error));
    }
    const child = session.store.id;
    const changed = new Set<string>();
    // Every write of the file tools (the model's, its programs' and Python's) passes here.
    session.toolContext.beforeWrite = (path) => changed.add(relative(this.facts.workspace, path));
    this.facts.onEvent?.({ type: 'agent_start', session_id: parent.sessionId, child_session: child, task: request.task });
    const agent = new Agent({
      ...model,
      ...agentParts(session),
      format: this.facts.format,
      maxTurns,
      ...(maxCost === undefined ? {} : { maxCostUsd: maxCost }),
      auto: true,
      loopDetector: new LoopDetector(),
      signal: stop.signal,
    });
    host.bind({
      agent,
      sessionId: child,
      tools: () => session.registry.tools.map((tool) => tool.name),
      maxTurns,
      ...(maxCost === undefined ? {} : { maxCostUsd: maxCost }),
      ...(timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs }),
    });
    let outcome: RunOutcome;
    try {
      outcome = await agent.run(request.task);
    } finally {
      if (timer) clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      await session.close();
      this.reservedCost -= maxCost ?? 0;
      parent.agent.addSpent(agent.tokenCount, agent.costUsd);
    }
    const cost = agent.costUsd ?? null;
    const ended = endOf(outcome, timedOut);
    const result: SubagentResult = { result: ended.answer, status: ended.status, changes: [...changed].sort(), cost, session: child, ...(ended.error ? { error: ended.error } : {}) };
    this.facts.onEvent?.({ type: 'agent_end', session_id: parent.sessionId, child_session: child, status: result.status, cost_usd: cost });
    return result;
  }
}

/** A child that did not run. */
function failed(error: string): SubagentResult {
  return { result: '', status: 'error', changes: [], cost: null, session: '', error };
}

/** A child's outcome as its status. */
function endOf(outcome: RunOutcome, timedOut: boolean): { status: SubagentResult['status']; answer: string; error?: string } {
  switch (outcome.status) {
    case 'done':
      return { status: 'done', answer: outcome.answer };
    case 'max_turns':
      return { status: 'budget', answer: outcome.answer, error: `stopped after ${outcome.turns} model requests` };
    case 'stopped':
      return { status: outcome.stop === 'max_cost' || outcome.stop === 'max_tokens' ? 'budget' : 'error', answer: outcome.answer, error: outcome.reason };
    case 'error':
      return { status: 'error', answer: '', error: outcome.error };
    case 'aborted':
      return timedOut ? { status: 'budget', answer: '', error: 'stopped at its time limit' } : { status: 'cancelled', answer: '', error: 'stopped' };
  }
}

/**
 * The policy of a child acting as `principal`: the rules whose principal pattern matches it
 * (as a path glob, or with `*` spanning `/`, so `agent:*` names every subagent) hold for all of
 * its calls, its programs' and Python's too, and come first, so a rule for `model` cannot
 * answer a child's call before them; the other rules follow as they were. The parent's tools
 * it was not given are denied before all, so no program of the child reaches them either.
 */
export function subagentRules(rules: readonly PolicyRule[], principal: string, parentTools: readonly string[], tools: readonly string[]): PolicyRule[] {
  const names = (rule: PolicyRule) => rule.principal !== undefined && (globMatcher(rule.principal)(principal) || wildcardMatcher(rule.principal)(principal));
  const forChild = rules.filter(names).map(({ principal: _principal, ...rest }) => rest);
  const others = rules.filter((rule) => !names(rule));
  const denied = parentTools.filter((name) => !tools.includes(name) && name !== 'complete');
  return [...denied.map((tool): PolicyRule => ({ tool, action: 'deny', reason: `${tool} is not one of this subagent's tools` })), ...forChild, ...others];
}
