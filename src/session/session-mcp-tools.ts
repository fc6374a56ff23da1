import { JoinedTools } from '../agent/joined-tools';
import type { FenceConfig } from '../config/config';
import type { ToolFormat } from '../parse/tool-use';
import type { ProgramTool } from '../ptc/run-program';
import type { SavedProgram } from '../ptc/saved-programs';
import type { ToolContext } from '../tools/define-tool';
import { programTools } from '../tools/ptc';
import type { ToolRegistry } from '../tools/registry';
import type { LiveMcpServers } from './mcp-servers';
import { buildToolset, sessionTools, type Toolset } from './toolset';

/** What a session's tools are made of, to make them again when an MCP server's tools join. */
export interface SessionToolParts {
  config: FenceConfig;
  /** Where program runs write their traces (see `buildToolset`). */
  traceSession: { id: string; dir: string };
  programs: readonly SavedProgram[];
  format: ToolFormat;
  auto: boolean;
  /** The toolset the session opened with: its budget of sandboxes and program store stay the session's. */
  toolset: Toolset;
  registry: ToolRegistry;
  /** The functions Python's tool bridge calls, changed in place (a kernel started later defines the new ones). */
  pythonTools: Record<string, ProgramTool>;
  toolContext: ToolContext;
  /** Records the names of the session's tools (its `session.json`), so a resumed session compares with them. */
  recordTools(names: string[]): void;
  warn(line: string): void;
  /** A subagent's tools: the servers' tools join only when named here (with `complete`); absent: all. */
  only?: readonly string[];
}

/**
 * Keeps a session's tools in step with its MCP servers: each time one joins (it finished
 * starting after the session opened) or lists its tools again, the toolset is made again with
 * the servers' tools now (the same rules as at the start: admission, `ptc` eligibility, brief
 * or hidden listing over all registered tools), the registry takes it, Python's bridge gets
 * the new functions, and the returned `JoinedTools` tells the model before its next request.
 * A saved program left out afresh (a server's tool took its name) gets its line once.
 */
export function followMcpServers(servers: LiveMcpServers, parts: SessionToolParts): JoinedTools {
  const joined = new JoinedTools(parts.registry, parts.format);
  const said = new Set(parts.toolset.problems);
  const shared = { budget: parts.toolset.budget, store: parts.toolset.store, ...(parts.toolset.agent ? { agent: parts.toolset.agent } : {}) };
  servers.onChange((change) => {
    const toolset = buildToolset(parts.config, parts.traceSession, servers.tools, parts.programs, shared);
    for (const problem of toolset.problems.filter((line) => !said.has(line))) {
      said.add(problem);
      parts.warn(`fence: ${problem}`);
    }
    const only = parts.only;
    const offered = sessionTools(toolset, parts.format, parts.auto, servers.starting);
    const tools = only ? offered.filter((tool) => only.includes(tool.name) || tool.name === 'complete') : offered;
    try {
      parts.registry.replace(tools);
    } catch (error) {
      parts.warn(`fence: MCP server ${change.server}: its tools were left out: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    for (const name of Object.keys(parts.pythonTools)) delete parts.pythonTools[name];
    const eligible = only ? toolset.eligible.filter((tool) => only.includes(tool.name)) : toolset.eligible;
    Object.assign(parts.pythonTools, programTools(eligible, parts.toolContext, toolset.rules));
    parts.recordTools(tools.map((tool) => tool.name));
    joined.note(change);
  });
  return joined;
}
