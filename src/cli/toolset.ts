import { join } from 'node:path';
import type { FenceConfig } from '../config/config';
import { BUILTIN_TOOL_NAMES, type McpServerConfig, type PtcConfig } from '../config/config-schema';
import type { PolicyRule } from '../policy/admit';
import { createProgramStore } from '../ptc/program-store';
import type { McpConnection, McpToolInfo } from '../runtime/mcp-connection';
import type { SandboxLimits } from '../runtime/sandbox';
import { builtinTools } from '../tools/builtin-tools';
import { createCommandTool } from '../tools/command-tool';
import type { ToolSpec } from '../tools/define-tool';
import { createPtcTool, eligibleTools } from '../tools/ptc';

/** The tools of a session and what governs them. */
export interface Toolset {
  /** Every tool, in prompt order: built-ins, registered tools, then `ptc`. */
  tools: ToolSpec[];
  /** The tools programs may call. */
  eligible: ToolSpec[];
  rules: readonly PolicyRule[];
  limits: SandboxLimits;
}

/** Sandbox limits from the `[ptc]` table of the config. */
export function sandboxLimits(ptc: PtcConfig): SandboxLimits {
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
 * command, the `extra` tools (those of the MCP servers, see `startMcpServers`), and the `ptc`
 * tool over the ones programs may call. Programs' `store()` is kept in the session folder.
 */
export function buildToolset(config: FenceConfig, session: { id: string; dir: string }, extra: readonly ToolSpec[] = []): Toolset {
  const base = [...builtinTools(), ...Object.entries(config.tools).map(([name, tool]) => createCommandTool(name, tool)), ...extra];
  const eligible = eligibleTools(base, config.ptc.eligible);
  const limits = sandboxLimits(config.ptc);
  const ptc = createPtcTool({
    tools: eligible,
    rules: config.policy,
    limits,
    store: createProgramStore(join(session.dir, 'program-store.json'), config.ptc.storeMaxKb * 1024),
    session,
  });
  return { tools: [...base, ptc], eligible, rules: config.policy, limits };
}

/** One MCP server after its start: its connection, and its tools or why it has none. */
export interface McpServerStart {
  name: string;
  config: McpServerConfig;
  connection: McpConnection;
  /** The tools it listed; absent when it did not start or list. */
  listed?: McpToolInfo[];
  /** Why it did not start or list. */
  error?: string;
}

/**
 * Starts every server of `servers` at the same time (stdio servers in `cwd`) and lists its
 * tools. Never throws: a server that fails has `error`. The SDK is loaded only when there is
 * a server to start.
 */
export async function connectMcpServers(servers: Record<string, McpServerConfig>, cwd: string): Promise<McpServerStart[]> {
  const entries = Object.entries(servers);
  if (entries.length === 0) return [];
  const { McpConnection } = await import('../runtime/mcp-connection');
  return Promise.all(
    entries.map(async ([name, config]): Promise<McpServerStart> => {
      const connection = new McpConnection({ name, config, cwd });
      const listed = await connection.listTools();
      return listed.ok ? { name, config, connection, listed: listed.tools } : { name, config, connection, error: listed.error };
    }),
  );
}

/** The MCP servers of a session: their tools, what went wrong, and how to stop them. */
export interface McpServers {
  /** Fence tools of every server that started, in config order. */
  tools: ToolSpec[];
  /** One line per server that did not start and per tool left out (no `fence:` prefix). */
  problems: string[];
  /** Stops every server; safe to call more than once. */
  close(): Promise<void>;
}

/**
 * Starts the config's MCP servers (see `connectMcpServers`) and makes their tools (see
 * `createMcpTools`). A server that fails is left out with a line in `problems`
 * (`MCP server finance did not start: …`), as is a tool whose fence name another tool has.
 */
export async function startMcpServers(config: FenceConfig, cwd: string): Promise<McpServers> {
  const started = await connectMcpServers(config.mcpServers, cwd);
  const problems: string[] = [];
  const tools: ToolSpec[] = [];
  const taken = new Set<string>([...BUILTIN_TOOL_NAMES, 'complete', ...Object.keys(config.tools)]);
  const { createMcpTools } = started.length > 0 ? await import('../tools/mcp-tool') : { createMcpTools: undefined };
  for (const server of started) {
    if (!server.listed || !createMcpTools) {
      problems.push(`MCP server ${server.name} did not start: ${oneLine(server.error ?? 'unknown error')}`);
      continue;
    }
    for (const tool of createMcpTools(server.name, server.config, server.connection, server.listed)) {
      if (taken.has(tool.name)) {
        problems.push(`MCP server ${server.name}: tool ${tool.name} left out, another tool has that name`);
        continue;
      }
      taken.add(tool.name);
      tools.push(tool);
    }
  }
  let closing: Promise<void> | undefined;
  return {
    tools,
    problems,
    close: () => (closing ??= Promise.all(started.map((server) => server.connection.close())).then(() => undefined)),
  };
}

/** A message on one line: its lines joined with " | ". */
function oneLine(text: string): string {
  return text.split(/\s*\n\s*/).filter((line) => line !== '').join(' | ');
}
