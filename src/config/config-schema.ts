import type { ModelInfo } from '../llm/model-info';
import type { ReasoningLevel } from '../llm/provider';
import type { OpenAIApi } from '../llm/provider-options';
import type { PolicyRule } from '../policy/admit';
import type { WebFileConfig } from './web-config';

/**
 * The shape of one configuration file (the user's `config.toml` or a project's `fence.toml`):
 * its types, names and defaults. The zod schemas that check a file are in
 * `config-file-schema.ts`, built only when there is a file to check.
 */

/** The ways the model can write tool calls (`--tool-format`, `tool_format`). */
export const TOOL_FORMATS = ['markdown', 'xml', 'tool'] as const;

/** Names of the built-in tools; a user tool may not take one. */
export const BUILTIN_TOOL_NAMES = ['shell', 'save', 'append', 'patch', 'read', 'glob', 'grep', 'python', 'ptc', 'plan', 'fetch'] as const;

/**
 * Tools fence adds in some sessions only (`complete` in autonomous runs, `describe` when tools
 * are listed briefly, `call` when a block format has tools without a block of their own):
 * no user tool or saved program may take their names.
 */
export const OCCASIONAL_TOOL_NAMES: readonly string[] = ['complete', 'describe', 'call'];

/**
 * Estimated tokens (four characters a token) that the full descriptions of the registered
 * tools (`[tools.<name>]`, MCP tools, saved programs) may take before they are listed by name
 * and one line only, with the `describe` tool for the rest (`brief_tools_above_tokens`).
 */
export const DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS = 2000;

/**
 * Estimated tokens that even the one-line listing of the registered tools may take before
 * they are not listed at all, only counted by where they come from, with `describe` to find
 * them and `call` to call them (`hide_tools_above_tokens`): a few hundred tools.
 */
export const DEFAULT_HIDE_TOOLS_ABOVE_TOKENS = 3000;

/** A JSON object (a JSON schema, here), as TOML gives it. */
export type JsonObject = Record<string, unknown>;

/** A tool the user registers in config: a command that reads JSON arguments and prints one JSON value. */
export interface CommandToolConfig {
  /** One line: what the tool does, shown to the model. */
  description: string;
  /** The program and its arguments, run without a shell. */
  command: string[];
  /** JSON schema of the arguments; must describe an object. Absent: an object with any keys. */
  parameters?: JsonObject;
  /** Who may call it. Absent: `['direct', 'program']`. */
  callers?: ('direct' | 'program')[];
  /** TypeScript type of the result, for the declarations shown to the model. */
  returns?: string;
  /** Names of environment variables passed to the command besides the minimal set. */
  env?: string[];
  /** Seconds before the command is stopped. Absent: 30. */
  timeout?: number;
  /** Working folder, relative to the workspace (`~/` expanded). Absent: the workspace. */
  cwd?: string;
  /** `false`: runs outside the session's sandbox (honoured from the user's file only). Absent: inside. */
  sandbox?: boolean;
}

/** The moments a hook can run at (`[[hooks]] event`). */
export const HOOK_EVENTS = ['session_start', 'prompt', 'pre_tool', 'post_tool', 'stop'] as const;

/** One of `HOOK_EVENTS`. */
export type HookEvent = (typeof HOOK_EVENTS)[number];

/**
 * One `[[hooks]]` entry: a command the person's configuration runs at an event, given the
 * event as JSON on stdin (see `src/hooks/`).
 */
export interface HookConfig {
  event: HookEvent;
  /** For `pre_tool` and `post_tool`: the tools it runs for, a policy rule's `tool` pattern. Absent: every tool. */
  tool?: string;
  /** For `pre_tool` and `post_tool`: what the call touches, a policy rule's `resource` pattern. Absent: any call. */
  resource?: string;
  /** The program and its arguments, run without a shell in the workspace. */
  command: string[];
  /** Seconds before the hook is stopped. Absent: 30. */
  timeout?: number;
  /** `false`: runs outside the session's sandbox (honoured from the user's file only). Absent: inside. */
  sandbox?: boolean;
  /** Which file the entry came from, set as the files are merged; absent counts as a project's. */
  source?: 'user' | 'project';
}

/** What every MCP server table may say besides how to reach the server. */
interface McpServerCommon {
  /** Who may call the server's tools. Absent: `['direct', 'program']`. */
  callers?: ('direct' | 'program')[];
  /** Seconds one call may take. Absent: 60. */
  timeout?: number;
  /**
   * `true`: a stdio server runs inside the session's sandbox; `false`: outside, even when it
   * names paths the sandbox can write (honoured from the user's file only). Absent: a server of
   * the user's file runs outside when nothing it runs can be written from the sandbox, one of a
   * project's inside (see `mcp-server-placement.ts`).
   */
  sandbox?: boolean;
  /** Which file the entry came from, set as the files are merged; absent counts as a project's. */
  source?: 'user' | 'project';
}

/** An MCP server fence starts as a subprocess and speaks to over its stdin and stdout. */
export interface McpStdioServerConfig extends McpServerCommon {
  /** The program to run, without a shell. */
  command: string;
  args?: string[];
  /** Variables set for the server besides the minimal environment. */
  env?: Record<string, string>;
  /** Working folder (`~/` expanded, relative to the workspace). Absent: the home folder outside the sandbox, the workspace inside. */
  cwd?: string;
}

/** An MCP server reached over streamable HTTP. */
export interface McpHttpServerConfig extends McpServerCommon {
  url: string;
  /** Headers sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
}

/** One `[mcp.servers.<name>]` table: exactly one of `command` (stdio) and `url` (HTTP). */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** Limits and eligibility of program runs (the `[ptc]` table); every key has a default. */
export interface PtcConfig {
  memoryMb: number;
  cpuTimeSeconds: number;
  wallTimeSeconds: number;
  stackKb: number;
  maxToolCalls: number;
  maxConcurrentCalls: number;
  maxOutputKb: number;
  storeMaxKb: number;
  /** Sandboxes alive at once in a session (programs calling programs included). */
  maxLiveSandboxes: number;
  /** Sum of the memory caps of a session's live sandboxes, in MiB. */
  totalMemoryMb: number;
  /** Built-in tools made callable from programs that are not by default (e.g. `save`, `shell`). */
  eligible: string[];
}

/** The defaults of the `[ptc]` table. */
export const DEFAULT_PTC_CONFIG: Readonly<PtcConfig> = Object.freeze({
  memoryMb: 64,
  cpuTimeSeconds: 10,
  wallTimeSeconds: 30,
  stackKb: 256,
  maxToolCalls: 1000,
  maxConcurrentCalls: 16,
  maxOutputKb: 1024,
  storeMaxKb: 256,
  maxLiveSandboxes: 8,
  totalMemoryMb: 1024,
  eligible: [],
});

/** How each `[ptc]` key of the file is named in `PtcConfig`. */
export const PTC_KEYS = {
  memory_mb: 'memoryMb',
  cpu_time_s: 'cpuTimeSeconds',
  wall_time_s: 'wallTimeSeconds',
  stack_kb: 'stackKb',
  max_tool_calls: 'maxToolCalls',
  max_concurrent_calls: 'maxConcurrentCalls',
  max_output_kb: 'maxOutputKb',
  store_max_kb: 'storeMaxKb',
  max_live_sandboxes: 'maxLiveSandboxes',
  total_memory_mb: 'totalMemoryMb',
  eligible: 'eligible',
} as const satisfies Record<string, keyof PtcConfig>;

/** How each key of a `[models."<provider/model>"]` table is named in `ModelInfo`. */
export const MODEL_KEYS = {
  context_window: 'contextWindow',
  max_output_tokens: 'maxOutputTokens',
  input_per_mtok: 'inputPerMTok',
  output_per_mtok: 'outputPerMTok',
  cache_read_per_mtok: 'cacheReadPerMTok',
  cache_write_per_mtok: 'cacheWritePerMTok',
  images: 'images',
} as const satisfies Record<string, keyof ModelInfo>;

/** The providers a `[providers.<name>]` table may be written for: those that speak more than one API. */
export const API_PROVIDERS = ['openai', 'openrouter', 'local'] as const;

/** One `[providers.<name>]` table. */
export interface ProviderConfig {
  /** The API fence speaks to the provider: `responses` or `chat` (absent: the provider's default, see `defaultApi`). */
  api?: OpenAIApi;
}

/** The `[providers]` tables by provider name. */
export type ProvidersConfig = Partial<Record<(typeof API_PROVIDERS)[number], ProviderConfig>>;

/** How deep subagents nest when `[agents] max_depth` is not set: parent → child → grandchild. */
export const DEFAULT_AGENT_MAX_DEPTH = 2;
/** How many subagents of one agent run at once when `[agents] max_parallel` is not set. */
export const DEFAULT_AGENT_MAX_PARALLEL = 4;

/** The `[agents]` table: how deep subagents nest (`max_depth`) and how many of one agent's run at once (`max_parallel`). */
export interface AgentsConfig {
  maxDepth?: number;
  maxParallel?: number;
}

/** The contents of one file, validated, before merging and defaults. */
export interface ConfigFile {
  toolFormat?: (typeof TOOL_FORMATS)[number];
  /** `reasoning`: the level of every request unless `--reasoning` says otherwise. */
  reasoning?: ReasoningLevel;
  tools?: Record<string, CommandToolConfig>;
  policy?: PolicyRule[];
  ptc?: Partial<PtcConfig>;
  /** What the file says of models, by model id; only the keys it sets. */
  models?: Record<string, ModelInfo>;
  /** MCP servers by name (`[mcp.servers.<name>]`). */
  mcpServers?: Record<string, McpServerConfig>;
  /** See `DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS`. */
  briefToolsAboveTokens?: number;
  /** See `DEFAULT_HIDE_TOOLS_ABOVE_TOKENS`. */
  hideToolsAboveTokens?: number;
  /** The `[sandbox]` table, keys as written. */
  sandbox?: SandboxFileConfig;
  /** The `[providers.<name>]` tables. */
  providers?: ProvidersConfig;
  /** The `[web]` table: hosts `fetch` reads without asking, hosted web search. */
  web?: WebFileConfig;
  /** The `[agents]` table: its presence offers the `agent` tool (see `AgentsConfig`). */
  agents?: AgentsConfig;
  /** The `[[hooks]]` entries, in the file's order. */
  hooks?: HookConfig[];
}

/**
 * The limits inside the sandbox when the configuration sets none: enough for a parallel build
 * (processes count threads too: a JVM or a linker has dozens), low enough that a fork bomb
 * stops at a few thousand tasks, one process cannot take all of a machine's memory, and one
 * file cannot fill a disk.
 */
export const DEFAULT_VM_LIMITS = { maxProcesses: 2048, maxMemoryMb: 8192, maxFileMb: 4096 } as const;

/** How strict each sandbox mode is: a project may choose a stricter one than the user's, not a looser one. */
export const SANDBOX_MODE_NAMES = ['off', 'workspace-write', 'read-only'] as const;

/** One file's `[sandbox]` table. */
export interface SandboxFileConfig {
  mode?: (typeof SANDBOX_MODE_NAMES)[number];
  /** Paths writable besides the workspace: absolute, `~/…`, or relative to the workspace. */
  writable?: string[];
  /** Paths neither read nor written besides the defaults. */
  deny_read?: string[];
  /** `true`: the network is on; a list: only these hosts; `false` (the default): off. */
  network?: boolean | string[];
  /** Variables the shell and the Python kernel get although they look like credentials (honoured from the user's file only). */
  pass_env?: string[];
  /** Most processes alive at once in each sandboxed process tree. */
  max_processes?: number;
  /** Most memory (data segment and private writable mappings) of each process inside, in MiB. */
  max_memory_mb?: number;
  /** Largest file a process inside may write, in MiB. */
  max_file_mb?: number;
}

/**
 * The sandbox the files ask for, merged: the user's file sets it, and a project's `fence.toml`
 * can only narrow it (a stricter mode, more denied paths, fewer hosts). What a project asked
 * for and did not get is in `ignored`, one line each, for the user to see.
 */
export interface SandboxConfig {
  /** Absent: the default, `workspace-write` where the machine can sandbox. */
  mode?: (typeof SANDBOX_MODE_NAMES)[number];
  writable: string[];
  denyRead: string[];
  network: boolean | string[];
  /** `pass_env` of the user's file: a project's is ignored (see `childEnvironment`). */
  passEnv: string[];
  /** The limits the files set (absent: the defaults of `sandboxLimits`); a project's only where lower than the user's. */
  maxProcesses?: number;
  maxMemoryMb?: number;
  maxFileMb?: number;
  ignored: string[];
}
