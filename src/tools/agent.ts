import { z } from 'zod';
import { defineTool, type ToolContext, type ToolSpec } from './define-tool';

/** What a subagent is asked to do: its task, and at most the tools, model and budgets given. */
export interface SubagentRequest {
  task: string;
  /** Names of the caller's tools it may use; absent: the caller's built-in tools. */
  tools?: readonly string[];
  /** Another model id (`provider/model`); absent: the caller's. */
  model?: string;
  max_turns?: number;
  /** In USD. */
  max_cost?: number;
  /** In seconds. */
  timeout?: number;
}

/** How a subagent's run ended: its answer, why it stopped, the files it wrote, its cost and its session. */
export interface SubagentResult {
  result: string;
  status: 'done' | 'budget' | 'error' | 'cancelled';
  /** Workspace-relative paths the file tools wrote (a shell command's writes are not seen). */
  changes: string[];
  /** In USD; null when the model's prices are unknown. */
  cost: number | null;
  /** Its session id (empty when it could not start). */
  session: string;
  /** Set with `error` when it could not start or failed: one sentence. */
  error?: string;
}

/** Runs one subagent to its end, stopped by `ctx.signal`. Never throws for a bad request: it answers `error`. */
export type RunSubagent = (request: SubagentRequest, ctx: ToolContext) => Promise<SubagentResult>;

const parameters = z.object({
  task: z.string().min(1),
  tools: z.array(z.string()).optional(),
  model: z.string().optional(),
  max_turns: z.number().int().positive().optional(),
  max_cost: z.number().positive().optional(),
  timeout: z.number().positive().optional(),
});

/** One line after the answer: status, cost and changed files. */
function statusLine(result: SubagentResult): string {
  const cost = result.cost === null ? 'cost unknown' : `$${result.cost.toFixed(4)}`;
  const changes = result.changes.length === 0 ? 'no files changed' : `changed ${result.changes.join(', ')}`;
  return `[subagent ${result.session || '(not started)'}: ${result.status} · ${cost} · ${changes}]`;
}

/**
 * The `agent` tool: hands `task` to a fresh unattended session (see `RunSubagent`, given by the
 * session layer, so this layer imports nothing above it) and answers with its final answer and
 * one line of status, cost and changes; a program gets the whole `SubagentResult`.
 */
export function createAgentTool(run: RunSubagent): ToolSpec<typeof parameters> {
  return defineTool({
    name: 'agent',
    description: 'Hand a self-contained task to a fresh subagent; only its answer comes back.',
    instructions: 'The task must stand alone: the subagent sees nothing else. `tools` narrows yours; programs may `gather` several at once.',
    example: { task: 'Review src/a.ts' },
    blockTypes: ['agent'],
    parameters,
    block: { content: 'task' },
    callers: ['direct', 'program'],
    mutating: true,
    returns: '{ result: string; status: string; changes: string[]; cost: number | null }',
    async execute(input, ctx) {
      const result = await run(input, ctx);
      const answer = result.error ?? result.result;
      return { output: `${answer || '(no answer)'}\n${statusLine(result)}`, value: result, ...(result.status === 'error' && !result.session ? { isError: true } : {}) };
    },
  });
}
