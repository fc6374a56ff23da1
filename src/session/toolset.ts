import { join } from 'node:path';
import { z } from 'zod';
import type { FenceConfig } from '../config/config';
import {
  BUILTIN_TOOL_NAMES,
  DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS,
  DEFAULT_HIDE_TOOLS_ABOVE_TOKENS,
  OCCASIONAL_TOOL_NAMES,
  type PtcConfig,
} from '../config/config-schema';
import type { ToolFormat } from '../parse/tool-use';
import type { PolicyRule } from '../policy/admit';
import { createProgramStore, type ProgramStore } from '../ptc/program-store';
import { programLabel, type SavedProgram } from '../ptc/saved-programs';
import type { VmLimits } from '../program-vm/run-in-vm';
import { VmBudget } from '../program-vm/vm-budget';
import { builtinTools } from '../tools/builtin-tools';
import { createCommandTool } from '../tools/command-tool';
import type { FetchToolOptions } from '../tools/fetch';
import { createCallTool } from '../tools/call';
import { completeTool } from '../tools/complete';
import type { ToolSpec } from '../tools/define-tool';
import { createDescribeTool, hidesTools, listsBriefly, markBrief, markHidden } from '../tools/describe';
import { createProgramTool, type ProgramToolOptions } from '../tools/program-tool';
import { createPtcTool, eligibleTools, type PtcToolOptions } from '../tools/ptc';

// zod compiles a checker for each object schema (with `new Function`) the first time it checks
// an input, ~0.5 ms a schema; a session checks a few inputs per tool, which zod's plain checker
// does as fast, so sessions go without the compile.
z.config({ jitless: true });

/** The tools of a session and what governs them. */
export interface Toolset {
  /** Every tool, in prompt order: built-ins, registered tools, `describe` when they are listed briefly, then `ptc`. */
  tools: ToolSpec[];
  /** The tools programs may call. */
  eligible: ToolSpec[];
  rules: readonly PolicyRule[];
  limits: VmLimits;
  /** The session's budget of sandboxes, shared by all its programs (`[ptc] max_live_sandboxes`, `total_memory_mb`). */
  budget: VmBudget;
  /** What programs of the session keep with `store()`. */
  store: ProgramStore;
  /** One line per saved program left out (no `fence:` prefix). */
  problems: string[];
  /** What the `ptc` tool was made from, so a format can have its own (see `sessionTools`). */
  ptcOptions: PtcToolOptions;
  /** The `agent` tool, when the session offers it (built with the others again when they change). */
  agent?: ToolSpec;
}

/** The `fetch` tool's hosts and time cap from the `[web]` table of the config. */
function fetchToolOptions(config: FenceConfig): FetchToolOptions {
  const web = config.web;
  return { allow: web?.allow ?? [], ...(web?.timeoutSeconds === undefined ? {} : { limits: { timeoutMs: web.timeoutSeconds * 1000 } }) };
}

/** Sandbox limits from the `[ptc]` table of the config. */
export function sandboxLimits(ptc: PtcConfig): VmLimits {
  return {
    memoryBytes: ptc.memoryMb * 1024 * 1024,
    cpuTimeMs: ptc.cpuTimeSeconds * 1000,
    wallTimeMs: ptc.wallTimeSeconds * 1000,
    stackBytes: ptc.stackKb * 1024,
    maxToolCalls: ptc.maxToolCalls,
    maxConcurrentCalls: ptc.maxConcurrentCalls,
    maxOutputBytes: ptc.maxOutputKb * 1024,
  };
}

/**
 * Builds a session's tools from the config: the built-ins, one tool per `[tools.<name>]`
 * command, the `extra` tools (those of the MCP servers, see `startMcpServers`), the approved
 * saved `programs` (see `approvedPrograms`), and the `ptc` tool over the ones programs may
 * call. When the registered tools would take too much of the prompt, they are listed by name
 * and one line, with `describe` (see `registeredListing`). Programs' `store()` is kept in the
 * session folder. A toolset built again for the same session (its approved programs changed)
 * passes the first one's `budget` and `store` in `shared`, so every program of the session
 * still shares them.
 */
export function buildToolset(
  config: FenceConfig,
  session: { id: string; dir: string },
  extra: readonly ToolSpec[] = [],
  programs: readonly SavedProgram[] = [],
  shared: { budget?: VmBudget; store?: ProgramStore; agent?: ToolSpec } = {},
): Toolset {
  const configured = [...builtinTools({ fetch: fetchToolOptions(config) }), ...(shared.agent ? [shared.agent] : []), ...Object.entries(config.tools).map(([name, tool]) => createCommandTool(name, tool)), ...extra];
  const limits = sandboxLimits(config.ptc);
  const store = shared.store ?? createProgramStore(join(session.dir, 'program-store.json'), config.ptc.storeMaxKb * 1024);
  const budget = shared.budget ?? new VmBudget({ maxLive: config.ptc.maxLiveSandboxes, memoryBytes: config.ptc.totalMemoryMb * 1024 * 1024 });
  // Saved programs call the session's eligible tools, themselves among them, once all are made.
  let eligible: ToolSpec[] = [];
  const saved = savedProgramTools(programs, configured, { tools: () => eligible, rules: config.policy, limits, store, session, budget });
  const listing = registeredListing([...configured, ...saved.tools], config);
  const base = listing.tools;
  eligible = eligibleTools(base, config.ptc.eligible);
  const ptcOptions: PtcToolOptions = { tools: eligible, rules: config.policy, limits, store, session, budget };
  const ptc = createPtcTool(ptcOptions);
  return { tools: [...base, ...listing.describe, ptc], eligible, rules: config.policy, limits, budget, store, problems: saved.problems, ptcOptions, ...(shared.agent ? { agent: shared.agent } : {}) };
}

/**
 * The tools a session offers in a format: the toolset's (natively with a `ptc` that names the
 * tools the model has definitions of rather than declaring them again), then `call` when some
 * tool cannot be called otherwise (see `createCallTool`), then, in an autonomous run,
 * `complete`.
 */
export function sessionTools(toolset: Pick<Toolset, 'tools' | 'ptcOptions'>, format: ToolFormat, auto = false, startingServers: readonly string[] = []): ToolSpec[] {
  const call = createCallTool(toolset.tools, format, startingServers);
  // Natively the tools' definitions give their arguments: ptc names those tools instead of declaring them.
  const tools = format === 'tool' ? toolset.tools.map((tool) => (tool.name === 'ptc' ? createPtcTool({ ...toolset.ptcOptions, native: true }) : tool)) : toolset.tools;
  return [...tools, ...(call ? [call] : []), ...(auto ? [completeTool] : [])];
}

/**
 * How the registered tools (all but the built-ins) are listed: in full; or — when their full
 * descriptions would be over `brief_tools_above_tokens` (see `listsBriefly`) — as copies marked
 * `brief`; or — when even their one-line listing would be over `hide_tools_above_tokens` (see
 * `hidesTools`) — as copies marked `hidden`, counted by group only. Either way with the
 * `describe` tool over them. The built-ins are always in full.
 */
export function registeredListing(tools: readonly ToolSpec[], config: FenceConfig): { tools: ToolSpec[]; describe: ToolSpec[] } {
  const builtins: readonly string[] = BUILTIN_TOOL_NAMES;
  const registered = tools.filter((tool) => !builtins.includes(tool.name));
  const hide = hidesTools(registered, config.hideToolsAboveTokens ?? DEFAULT_HIDE_TOOLS_ABOVE_TOKENS);
  if (!hide && !listsBriefly(registered, config.briefToolsAboveTokens ?? DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS)) return { tools: [...tools], describe: [] };
  const marked = new Map((hide ? markHidden(registered) : markBrief(registered)).map((tool) => [tool.name, tool]));
  const listed = tools.map((tool) => marked.get(tool.name) ?? tool);
  return { tools: listed, describe: [createDescribeTool([...marked.values()]) as ToolSpec] };
}

/** Tools a session adds beside the configured ones, whose names a saved program cannot take. */
const SESSION_TOOL_NAMES: readonly string[] = ['ptc', ...OCCASIONAL_TOOL_NAMES];

/**
 * The approved programs as tools (see `createProgramTool`). One whose name another tool has
 * is left out with a line in `problems`. A program is mutating when a tool it may call is:
 * a mutating tool of `others`, a mutating program, or a tool this session does not have.
 */
export function savedProgramTools(
  programs: readonly SavedProgram[],
  others: readonly ToolSpec[],
  options: ProgramToolOptions,
): { tools: ToolSpec[]; problems: string[] } {
  const byName = new Map(others.map((tool) => [tool.name, tool]));
  const records = new Map(programs.map((program) => [program.record.name, program.record]));
  const isMutating = (name: string, seen: ReadonlySet<string> = new Set()): boolean => {
    const tool = byName.get(name);
    if (tool) return tool.mutating;
    const record = records.get(name);
    if (!record || seen.has(name)) return !record;
    return record.tools.some((inner) => isMutating(inner, new Set([...seen, name])));
  };
  const tools: ToolSpec[] = [];
  const problems: string[] = [];
  for (const program of programs) {
    if (byName.has(program.record.name) || SESSION_TOOL_NAMES.includes(program.record.name)) {
      problems.push(`saved program ${programLabel(program.record)} left out: another tool is named ${program.record.name}`);
      continue;
    }
    tools.push(createProgramTool(program, options, (name) => isMutating(name, new Set([program.record.name]))));
  }
  return { tools, problems };
}
