import { z } from 'zod';
import type { PolicyRule } from '../policy/admit';
import { defaultArguments, parseSignature } from '../ptc/program-params';
import type { ProgramStore } from '../ptc/program-store';
import { PYTHON_PRINCIPAL } from '../ptc/python-bridge';
import { runProgram, type ProgramRun, type ProgramTool, type RunProgramOptions } from '../ptc/run-program';
import type { VmLimits } from '../program-vm/run-in-vm';
import type { VmBudget } from '../program-vm/vm-budget';
import { toolDeclarations } from './declarations';
import { briefLine, DESCRIBE_TOOL, hiddenGroups } from './describe';
import { defineTool, type ToolContext, type ToolSpec } from './define-tool';
import { invokeTool } from './invoke-tool';

/**
 * The tools a program may call: those whose `callers` include `program`, plus the built-in
 * ones the configuration makes eligible by name (`[ptc] eligible = ["save"]`). Never `ptc`.
 */
export function eligibleTools(tools: readonly ToolSpec[], extraNames: readonly string[] = []): ToolSpec[] {
  return tools.filter((tool) => tool.name !== 'ptc' && (tool.callers.includes('program') || extraNames.includes(tool.name)));
}

/**
 * Each eligible tool as a program sees it. A call goes through `invokeTool` — validation,
 * admission with the program's principal and intent, confirmation (with the program's wall
 * clock held while a person answers), the tool itself — and the program receives the tool's
 * `value` (its text output when it has none).
 */
export function programTools(tools: readonly ToolSpec[], ctx: ToolContext, rules: readonly PolicyRule[]): Record<string, ProgramTool> {
  const map: Record<string, ProgramTool> = {};
  for (const spec of tools) {
    map[spec.name] = async (args, call) => {
      const notation = call.principal === PYTHON_PRINCIPAL ? 'python' : 'program';
      const caller = { principal: call.principal, rules, notation, ...(call.intent ? { intent: call.intent } : {}) } as const;
      // A person's time to answer a confirmation is not the program's: the wall clock waits.
      const { confirm } = ctx;
      const held = confirm && call.holdClock ? { confirm: heldWhileAsking(confirm, call.holdClock) } : {};
      const nested = { ...(call.vmBudget ? { vmBudget: call.vmBudget } : {}), ...(call.holdClock ? { holdClock: call.holdClock } : {}) };
      const { decision, resource, result } = await invokeTool(spec, args ?? {}, { ...ctx, ...held, ...nested, signal: call.signal }, caller);
      const where = resource === undefined ? {} : { resource };
      if (result.isError) return { decision, ...where, ok: false, error: result.output };
      return { decision, ...where, ok: true, value: result.value !== undefined ? result.value : result.output };
    };
  }
  return map;
}

/**
 * Where a program run for a tool call takes its sandbox: nested in the calling program's
 * budget when a program made the call (no waiting: its caller holds a place), otherwise from
 * the session's `budget`, waiting its turn.
 */
function sandboxPlace(ctx: ToolContext, budget: VmBudget | undefined): { budget?: VmBudget; nested?: boolean } {
  if (ctx.vmBudget) return { budget: ctx.vmBudget, nested: true };
  return budget ? { budget } : {};
}

/**
 * What every program run for a tool call takes from its session and its call: the session
 * (for the trace), the call's signal, the session's limits and store, the call's listener of
 * tool calls (`ctx.onToolCall`), and its place in a sandbox budget (see `sandboxPlace`).
 */
export function sessionRun(
  options: Pick<PtcToolOptions, 'session' | 'limits' | 'store' | 'budget'>,
  ctx: ToolContext,
): Pick<RunProgramOptions, 'session' | 'signal' | 'limits' | 'store' | 'onCall' | 'budget' | 'nested'> {
  return {
    session: options.session,
    signal: ctx.signal,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.store ? { store: options.store } : {}),
    ...(ctx.onToolCall ? { onCall: ctx.onToolCall } : {}),
    ...sandboxPlace(ctx, options.budget),
  };
}

/** `confirm`, with the program's wall clock held while the person answers. */
function heldWhileAsking(confirm: NonNullable<ToolContext['confirm']>, holdClock: () => () => void): NonNullable<ToolContext['confirm']> {
  return async (request) => {
    const release = holdClock();
    try {
      return await confirm(request);
    } finally {
      release();
    }
  };
}

/** What the `ptc` tool needs from its session. */
export interface PtcToolOptions {
  /** The tools programs may call (see `eligibleTools`). */
  tools: readonly ToolSpec[];
  rules: readonly PolicyRule[];
  limits?: Partial<VmLimits>;
  store?: ProgramStore;
  session: { id: string; dir: string };
  /** The session's budget of sandboxes, shared by every program it runs. */
  budget?: VmBudget;
  /**
   * The model calls tools natively, from definitions that give their parameters: the tools it
   * has definitions of are only named in the instructions (with their result types), not
   * declared again.
   */
  native?: boolean;
}

/**
 * The tools programs can call, for `ptc`'s instructions: those listed in full as TypeScript
 * declarations in a ```` ```ts ```` block, then those listed briefly (`brief`) one a line, with
 * a sentence sending the model to `describe` for their parameters, then the hidden ones
 * counted by group. With `native`, the tools the model has definitions of (direct, not hidden)
 * come first, by name and result type only: their definitions already give their arguments.
 * Otherwise a declared tool the prompt lists in full (direct, with a block form) is declared
 * without its description, which its own section gives just above.
 */
export function programToolListing(tools: readonly ToolSpec[], native = false): string[] {
  const defined = native ? tools.filter((tool) => tool.callers.includes('direct') && !tool.hidden) : [];
  const rest = tools.filter((tool) => !defined.includes(tool));
  const full = rest.filter((tool) => !tool.brief);
  const brief = rest.filter((tool) => tool.brief && !tool.hidden);
  const hidden = rest.filter((tool) => tool.hidden);
  const lines: string[] = [];
  if (defined.length > 0) {
    const named = defined.map((tool) => (tool.returns ? `${tool.name} → ${tool.returns}` : tool.name));
    lines.push(`Your tools, with the arguments their definitions give (→ what a program gets back): ${named.join(', ')}.`);
  }
  const described = (tool: ToolSpec) => !native && tool.callers.includes('direct') && tool.blockTypes.length > 0;
  if (full.length > 0) lines.push(...(defined.length > 0 ? ['And these:'] : []), '```ts', toolDeclarations(full, { described }), '```');
  if (brief.length > 0) {
    lines.push(
      `${full.length > 0 ? 'More tools' : 'Tools'}, listed by name only: the ${DESCRIBE_TOOL} tool gives a tool's parameters and result; describe one before a program calls it.`,
      ...brief.map((tool) => `- ${briefLine(tool)}`),
    );
  }
  if (hidden.length > 0) {
    lines.push(
      `${hidden.length} more tools are too many to list; the ${DESCRIBE_TOOL} tool finds them by name, pattern or words and gives their parameters. Where they come from:`,
      ...hiddenGroups(hidden),
    );
  }
  return lines;
}

/** Makes the `ptc` tool: runs a ```` ```ptc ```` block as a program over the eligible tools. */
export function createPtcTool(options: PtcToolOptions) {
  const names = options.tools.map((t) => t.name);
  return defineTool({
    name: 'ptc',
    description: 'Run a short JavaScript program that calls tools, for loops, parallel calls and aggregation.',
    instructions: [
      'The program (`code`) runs in a sandbox; only what it prints and its top-level `return` value come back to you, so keep large data inside it.',
      'Each tool is an async function of one object argument: `await read({ path: "a.txt" })`, also `tools.read(...)`; a failed or refused call throws an Error.',
      'Globals: print(...) and console.log(...) write output; gather(promises) runs calls in parallel; unique(array); store(key, value) and load(key) keep JSON values for later programs. No file system, network, require or import: use the tools.',
      'Start the program with a comment saying what it is for: `// intent: <purpose>`. Inputs worth changing may follow as `// param name: type = default` (read as `args.name`).',
      names.length > 0 ? 'The tools programs can call:' : 'No tools can be called from programs in this session.',
      ...programToolListing(options.tools, options.native),
    ].join('\n'),
    example: {
      code: [
        '// intent: count TODO lines in the TypeScript sources',
        'const files = await glob({ pattern: "src/**/*.ts" });',
        'const texts = await gather(files.map((path) => read({ path })));',
        'const counts = files.map((path, i) => [path, texts[i].split("\\n").filter((l) => l.includes("TODO")).length]);',
        'print(counts.filter(([, n]) => n > 0));',
      ].join('\n'),
    },
    blockTypes: ['ptc'],
    parameters: z.object({ code: z.string().describe('The JavaScript program') }),
    block: { content: 'code' },
    callers: ['direct'],
    mutating: options.tools.some((t) => t.mutating),
    async execute({ code }, ctx) {
      if (!code.trim()) return { output: 'The program was empty: write the JavaScript to run.', isError: true };
      const signature = parseSignature(code);
      if (signature.errors.length > 0) return { output: `The program's declarations cannot be read: ${signature.errors.join('; ')}`, isError: true };
      const run = await runProgram({
        // Declared parameters run with their defaults here; called as a saved program, with its arguments.
        ...(signature.parameters.length > 0 ? { args: defaultArguments(signature.parameters) } : {}),
        code,
        tools: programTools(options.tools, ctx, options.rules),
        ...sessionRun(options, ctx),
      });
      return { output: describeRun(run), value: run.trace.result, isError: !run.trace.ok, details: run };
    },
  });
}

/**
 * A run as the model reads it: the program's output, its result, the error with its line,
 * and one line naming the trace.
 */
export function describeRun(run: ProgramRun): string {
  const { trace } = run;
  const parts: string[] = [];
  if (trace.stdout) parts.push(trace.stdout.replace(/\n+$/, ''));
  if (trace.droppedOutputBytes > 0) parts.push(`[${trace.droppedOutputBytes} more bytes of output were dropped]`);
  if (trace.result !== undefined) parts.push(`Result: ${JSON.stringify(trace.result, null, 2)}`);
  if (trace.error) {
    const where = trace.error.line === undefined ? '' : ` at line ${trace.error.line}`;
    parts.push(`Program failed (${trace.error.kind})${where}: ${trace.error.message}`);
  }
  const calls = trace.calls.length;
  const refused = trace.calls.filter((c) => c.decision !== undefined && c.decision.action !== 'allow').length;
  parts.push(`[${calls} tool call${calls === 1 ? '' : 's'}${refused ? `, ${refused} refused by policy` : ''}; trace ${trace.id}]`);
  return parts.join('\n');
}
