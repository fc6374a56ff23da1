import type { PolicyRule } from '../policy/admit';
import type { ProgramStore } from '../ptc/program-store';
import { defaultArguments, parametersSchema, parseSignature } from '../ptc/program-params';
import { runProgram, type ProgramTool } from '../ptc/run-program';
import { approvalCovers, programLabel, type SavedProgram } from '../ptc/saved-programs';
import type { VmLimits } from '../program-vm/run-in-vm';
import type { VmBudget } from '../program-vm/vm-budget';
import { defineTool, type ToolSpec } from './define-tool';
import { describeRun, programTools, sessionRun } from './ptc';

/** The `group` of saved programs' tools, for listings. */
export const SAVED_PROGRAMS_GROUP = 'saved programs';

/** How deep saved programs may call saved programs: a program called by a program called by one. */
export const MAX_PROGRAM_DEPTH = 3;

/** What a saved program needs of its session to run as a tool. */
export interface ProgramToolOptions {
  /**
   * The tools programs may call in this session (saved programs among them), looked up when a
   * call runs; the program gets only those its record names.
   */
  tools: () => readonly ToolSpec[];
  rules: readonly PolicyRule[];
  limits?: Partial<VmLimits>;
  store?: ProgramStore;
  session: { id: string; dir: string };
  /** The session's budget of sandboxes (see `PtcToolOptions.budget`). */
  budget?: VmBudget;
}

/** The principal a saved program's calls are admitted as: `program:over_limit@2`. */
export function programPrincipal(program: SavedProgram): string {
  return `program:${programLabel(program.record)}`;
}

/**
 * An approved program as a tool the model and programs may call. Its parameters are the ones
 * its leading comments declare (see `parseSignature`); the arguments reach the code as `args`,
 * with the declared defaults filled in. It runs in a fresh sandbox as principal
 * `program:<name>@<version>` (or as `ctx.principal`, when a caller outside fence sets one),
 * over the tools its record names and no others, and writes its own trace. Called from a program, it gives the code's `return` value, or what it printed
 * when it returned nothing; the model gets the run as `ptc` describes it. `mutating` says
 * whether `isMutating` finds a mutating tool among those it may call.
 *
 * The code that runs is the code `program` holds, read when the session listed the approved
 * programs: edits to the file afterwards do not reach it. A call is refused unless the
 * person's approval (`program.approval`) covers that code and those tools (see
 * `approvalCovers`), so a program that was never approved, or is not what was approved, does
 * not run.
 */
export function createProgramTool(program: SavedProgram, options: ProgramToolOptions, isMutating: (tool: string) => boolean): ToolSpec {
  const { record, code } = program;
  const signature = parseSignature(code);
  const label = programLabel(record);
  const intent = record.intent ?? `the saved program ${label}`;
  return defineTool({
    name: record.name,
    description: `${intent.charAt(0).toUpperCase()}${intent.slice(1)} (saved program ${label})`,
    instructions: [
      `A program saved from a run that worked, tested and approved (${label}). Its arguments are the parameters; it returns its result, or what it printed when it returns nothing.`,
      `It calls: ${record.tools.length > 0 ? record.tools.join(', ') : 'no tools'}.`,
    ].join('\n'),
    example: defaultArguments(signature.parameters),
    blockTypes: [],
    group: SAVED_PROGRAMS_GROUP,
    parameters: parametersSchema(signature.parameters),
    block: {},
    callers: ['direct', 'program'],
    mutating: record.tools.some(isMutating),
    ...(signature.returns ? { returns: signature.returns } : {}),
    resource: (input) => JSON.stringify(input),
    async execute(input, ctx) {
      if (!program.approval || !approvalCovers(program.approval, program)) {
        return { output: `${label} was not run: its code is not the code you approved (fence programs approve ${label} after reviewing it)`, isError: true };
      }
      const depth = (ctx.programDepth ?? 0) + 1;
      if (depth > MAX_PROGRAM_DEPTH) {
        return { output: `${label} was not run: saved programs may call each other only ${MAX_PROGRAM_DEPTH} deep`, isError: true };
      }
      const available = new Map(options.tools().map((tool) => [tool.name, tool]));
      const allowed = record.tools.flatMap((name) => available.get(name) ?? []);
      // An outside caller's principal is this run's; programs it calls run as themselves.
      const { principal = programPrincipal(program), admission, ...rest } = ctx;
      const tools: Record<string, ProgramTool> = programTools(allowed, { ...rest, programDepth: depth }, options.rules);
      for (const name of record.tools) {
        tools[name] ??= async () => ({ decision: { action: 'deny', reason: 'not in this session' }, ok: false, error: `tool ${name} is not available in this session` });
      }
      // The session's other tools are there only to say why they cannot be called.
      for (const name of available.keys()) {
        tools[name] ??= async () => ({
          decision: { action: 'deny', reason: 'not approved for this program' },
          ok: false,
          error: `${label} may call only the tools it was saved with (${record.tools.join(', ') || 'none'}), not ${name}`,
        });
      }
      const run = await runProgram({
        code,
        tools,
        principal,
        program: label,
        ...(admission ? { admission } : {}),
        args: input,
        ...sessionRun(options, ctx),
      });
      const { trace } = run;
      const value = trace.result !== undefined ? trace.result : trace.stdout;
      return { output: describeRun(run), value, isError: !trace.ok, details: run };
    },
  });
}
