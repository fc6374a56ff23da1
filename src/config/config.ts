import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { z } from 'zod';
import type { ModelInfo } from '../llm/model-info';
import type { ReasoningLevel } from '../llm/provider';
import type { ToolFormat } from '../parse/tool-use';
import type { PolicyRule, RuleSource } from '../policy/admit';
import { globMatcher, resourceMatcher } from '../policy/pattern';
import { configFileSchemas } from './config-file-schema';
import {
  BUILTIN_TOOL_NAMES,
  OCCASIONAL_TOOL_NAMES,
  DEFAULT_AGENT_MAX_DEPTH,
  DEFAULT_AGENT_MAX_PARALLEL,
  DEFAULT_PTC_CONFIG,
  DEFAULT_VM_LIMITS,
  type AgentsConfig,
  type CommandToolConfig,
  type ConfigFile,
  type HookConfig,
  type McpServerConfig,
  type ProviderConfig,
  type ProvidersConfig,
  type PtcConfig,
  SANDBOX_MODE_NAMES,
  type SandboxConfig,
  type SandboxFileConfig,
} from './config-schema';
import { holdsPasswordUrl, isWithheld } from './credential-names';
import { configHome, fenceHome } from './paths';
import { describeUnread, readRegularFile } from './regular-file';
import { writeTomlKey } from './toml-value';
import { isUsable, workspaceTrust, type WorkspaceTrust } from './trust';
import { mergeWebConfig, type WebConfig } from './web-config';

export {
  BUILTIN_TOOL_NAMES,
  DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS,
  DEFAULT_HIDE_TOOLS_ABOVE_TOKENS,
  DEFAULT_PTC_CONFIG,
  TOOL_FORMATS,
  type CommandToolConfig,
  type HookConfig,
  type HookEvent,
  type McpHttpServerConfig,
  type McpServerConfig,
  type McpStdioServerConfig,
  type ProviderConfig,
  type ProvidersConfig,
  type PtcConfig,
  type SandboxConfig,
} from './config-schema';

/** The name of a project's configuration file, at the top of its workspace. */
export const PROJECT_CONFIG_FILE = 'fence.toml';

/** The configuration of one session: the user's file and the project's, merged, with defaults. */
export interface FenceConfig {
  /** How the model writes tool calls, unless the command line says otherwise. */
  toolFormat: ToolFormat;
  /**
   * How hard the model should think (`reasoning`, the project's over the user's), unless
   * `--reasoning` says otherwise. Absent: the model's default (see `resolveReasoning`).
   */
  reasoning?: ReasoningLevel;
  /** User tools by name; each name is a JavaScript identifier that is no built-in's name. */
  tools: Record<string, CommandToolConfig>;
  /**
   * Admission rules, the user's then the project's, each with its `source`: `admit` reads the
   * two apart, and the stricter answer wins, so a project's rules can restrict but never
   * loosen the user's.
   */
  policy: PolicyRule[];
  ptc: PtcConfig;
  /** The `[agents]` table: present, the `agent` tool is offered (see `SubagentHost`); absent, it is not. */
  agents?: AgentsConfig;
  /**
   * Figures the files give for models (`[models."<provider/model>"]`), by model id: context
   * window, reply limit and prices, each over the built-in table's (see `modelInfo`).
   */
  models: Record<string, ModelInfo>;
  /**
   * MCP servers by name (`[mcp.servers.<name>]`); each name is letters, digits, `_` and `-`.
   * The project's table for a name replaces the user's whole.
   */
  mcpServers: Record<string, McpServerConfig>;
  /**
   * Above how many estimated tokens of full descriptions the registered tools are listed
   * briefly (`brief_tools_above_tokens`, the project's over the user's). Absent when neither
   * file sets it: `DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS`.
   */
  briefToolsAboveTokens?: number;
  /**
   * Above how many estimated tokens of one-line listing the registered tools are not listed at
   * all (`hide_tools_above_tokens`, the project's over the user's). Absent when neither file
   * sets it: `DEFAULT_HIDE_TOOLS_ABOVE_TOKENS`.
   */
  hideToolsAboveTokens?: number;
  /** The sandbox the files ask for (see `SandboxConfig`: a project can only narrow the user's). */
  sandbox: SandboxConfig;
  /**
   * The `[[hooks]]` of both files, the user's then the project's, each with its `source`; a
   * project's always run inside the sandbox. Absent: none.
   */
  hooks?: HookConfig[];
  /**
   * What the files say of each provider (`[providers.<openai|openrouter|local>]`): the API it
   * is spoken to through. The project's keys override the user's one by one (choosing an API
   * gives a project nothing it could misuse). Absent: as empty.
   */
  providers?: ProvidersConfig;
  /** `[web]`: the hosts `fetch` reads without asking and hosted web search (a project can only narrow the user's). Absent: none, off. */
  web?: WebConfig;
  /** Absolute paths of the files that were read, the user's first. */
  sources: string[];
  /**
   * Whether the workspace's own configuration was used: its `fence.toml` here, and by the
   * session its `.fence/programs/` and `AGENTS.md` (see `trust.ts`). Absent for a
   * configuration not read from a workspace, which has nothing of a project's.
   */
  trust?: WorkspaceTrust;
}

/** Where to look: the workspace (for `fence.toml`) and the environment (for the user's folder). */
export interface LoadConfigOptions {
  workspace: string;
  env?: NodeJS.ProcessEnv;
}

/** A configuration, or one line saying which file and key are wrong and why. */
export type LoadConfigResult = { config: FenceConfig } | { error: string };

/** Path of the user's configuration file (see `configHome`). */
export function userConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configHome(env), 'config.toml');
}

/**
 * Loads the user's `config.toml` and the project's `fence.toml` — the project's only when the
 * person trusts the workspace (see `workspaceTrust`; `config.trust` says where it stands) —
 * validates both and merges
 * them: the project's tools replace the user's of the same name whole, its policy rules are
 * kept apart from the user's (each tagged with its `source`; a project's can only add
 * restrictions, see `admit`), its `[mcp.servers.<name>]` tables replace the user's of the same name
 * whole, and its `[ptc]` keys and the keys of each of its `[models."<id>"]` and
 * `[providers.<name>]` tables
 * override the user's one by one; missing keys take their defaults. A missing file counts as
 * empty. Never throws: a TOML syntax error, a value of the wrong type, an unknown key, a bad
 * tool name or a model id without its provider gives an error naming the file and the key,
 * e.g. `fence.toml: tools.get_expenses.command: expected an array of strings, got a string`.
 */
export function loadConfig(options: LoadConfigOptions): LoadConfigResult {
  const env = options.env ?? process.env;
  const trust = workspaceTrust(options.workspace, fenceHome(env));
  const files = [
    { path: userConfigPath(env), shown: userConfigPath(env) },
    ...(isUsable(trust) ? [{ path: join(options.workspace, PROJECT_CONFIG_FILE), shown: PROJECT_CONFIG_FILE }] : []),
  ];
  const loaded: ConfigFile[] = [];
  const sources: string[] = [];
  for (const [i, file] of files.entries()) {
    const text = readIfExists(file.path);
    if (text === undefined) continue;
    if (typeof text !== 'string') return { error: `${file.shown}: ${text.reason}` };
    const parsed = parseConfigText(text, file.shown);
    if ('error' in parsed) return parsed;
    loaded[i] = parsed.file;
    sources.push(file.path);
  }
  return { config: { ...mergeConfigFiles(loaded[0] ?? {}, loaded[1] ?? {}, env), sources, trust } };
}

/**
 * Parses and validates the text of one configuration file; `shown` names the file in errors.
 * Never throws.
 */
export function parseConfigText(text: string, shown: string): { file: ConfigFile } | { error: string } {
  let raw: unknown;
  try {
    raw = parseToml(text.replace(/^\uFEFF/, ''));
  } catch (error) {
    if (!(error instanceof TomlError)) return { error: `${shown}: ${String(error)}` };
    const message = (error.message.split('\n')[0] ?? '').replace(/^Invalid TOML document: /, '');
    return { error: `${shown}: line ${error.line}, column ${error.column}: ${message}` };
  }
  const result = configFileSchemas().file.safeParse(raw);
  if (!result.success) return { error: `${shown}: ${describeIssue(result.error.issues)}` };
  for (const name of Object.keys(result.data.tools ?? {})) {
    const problem = toolNameProblem(name);
    if (problem) return { error: `${shown}: ${keyPath(['tools', name])}: ${problem}` };
  }
  for (const name of Object.keys(result.data.mcpServers ?? {})) {
    if (!MCP_SERVER_NAME.test(name)) return { error: `${shown}: ${keyPath(['mcp', 'servers', name])}: a server name is letters, digits, _ and -, e.g. finance` };
  }
  for (const [index, hook] of (result.data.hooks ?? []).entries()) {
    const problem = hookPatternProblem(hook);
    if (problem) return { error: `${shown}: ${keyPath(['hooks', index, problem.key])}: ${problem.message}` };
  }
  for (const id of Object.keys(result.data.models ?? {})) {
    if (!MODEL_ID.test(id)) return { error: `${shown}: ${keyPath(['models', id])}: a model id is written provider/model, e.g. "anthropic/claude-sonnet-4-6"` };
  }
  return { file: result.data };
}

/**
 * The project's file over the user's (see `loadConfig`), with defaults filled in. `env` is
 * fence's environment, whose values a project's command tool is kept from when they hold a
 * password (see `withoutCredentials`).
 */
export function mergeConfigFiles(user: ConfigFile, project: ConfigFile, env: NodeJS.ProcessEnv = process.env): Omit<FenceConfig, 'sources' | 'trust'> {
  const briefToolsAboveTokens = project.briefToolsAboveTokens ?? user.briefToolsAboveTokens;
  const hideToolsAboveTokens = project.hideToolsAboveTokens ?? user.hideToolsAboveTokens;
  const reasoning = project.reasoning ?? user.reasoning;
  const sandbox = mergeSandbox(user.sandbox ?? {}, project.sandbox ?? {});
  // What a project asked of [web] in vain is said with the sandbox's.
  const web = mergeWebConfig(user.web ?? {}, project.web ?? {}, PROJECT_CONFIG_FILE, sandbox.ignored);
  const projectTools = withoutCredentials(insideSandbox(project.tools, 'tools', sandbox.ignored), sandbox.passEnv, env, sandbox.ignored);
  const projectServers = insideSandbox(project.mcpServers, 'mcp.servers', sandbox.ignored);
  return {
    toolFormat: project.toolFormat ?? user.toolFormat ?? 'markdown',
    ...(reasoning ? { reasoning } : {}),
    tools: { ...user.tools, ...projectTools },
    policy: [...tagRules(user.policy, 'user'), ...tagRules(project.policy, 'project')],
    ptc: { ...DEFAULT_PTC_CONFIG, ...user.ptc, ...project.ptc },
    models: mergeModels(user.models, project.models),
    mcpServers: { ...fromSource(user.mcpServers, 'user'), ...fromSource(projectServers, 'project') },
    ...hooksOf(mergeHooks(user.hooks, project.hooks, sandbox.ignored)),
    providers: mergeProviders(user.providers, project.providers),
    ...(briefToolsAboveTokens === undefined ? {} : { briefToolsAboveTokens }),
    ...(hideToolsAboveTokens === undefined ? {} : { hideToolsAboveTokens }),
    sandbox,
    ...(user.web || project.web ? { web } : {}),
    ...(user.agents || project.agents ? { agents: mergeAgents(user.agents, project.agents) } : {}),
  };
}

/** One file's policy rules, each marked with the file it came from. */
function tagRules(rules: readonly PolicyRule[] | undefined, source: RuleSource): PolicyRule[] {
  return (rules ?? []).map((rule) => ({ ...rule, source }));
}

/**
 * The sandbox of the user's `[sandbox]` table, narrowed by the project's: a project's mode is
 * taken when it is stricter, its denied paths are added, and its hosts kept when the user's
 * setting allows them. A project cannot loosen it: a cloned repository must not be able to
 * turn the sandbox off, add writable paths or open the network. What it asked for in vain is
 * said in `ignored`.
 */
function mergeSandbox(user: SandboxFileConfig, project: SandboxFileConfig): SandboxConfig {
  const ignored: string[] = [];
  const strictness = (mode: SandboxFileConfig['mode']) => SANDBOX_MODE_NAMES.indexOf(mode ?? 'workspace-write');
  let mode = user.mode;
  if (project.mode !== undefined) {
    if (strictness(project.mode) >= strictness(user.mode)) mode = project.mode;
    else ignored.push(`${PROJECT_CONFIG_FILE}: [sandbox] mode = "${project.mode}" ignored: a project can make the sandbox stricter, not looser (set it in your own config.toml, or use --sandbox)`);
  }
  if (project.writable?.length) {
    ignored.push(`${PROJECT_CONFIG_FILE}: [sandbox] writable ignored: only your own config.toml can add writable paths`);
  }
  if (project.pass_env?.length) {
    ignored.push(`${PROJECT_CONFIG_FILE}: [sandbox] pass_env ignored: only your own config.toml can pass credentials to the shell and Python`);
  }
  const userNetwork = user.network ?? false;
  let network = userNetwork;
  if (project.network !== undefined) {
    const wanted = project.network;
    if (wanted === false) network = false;
    else if (userNetwork === true && wanted !== true) {
      // The whole network reaches public addresses only: a project's private: or address entries would reach further.
      network = wanted.filter((host) => !reachesPrivate(host));
      const refused = wanted.filter(reachesPrivate);
      if (refused.length > 0) ignored.push(`${PROJECT_CONFIG_FILE}: [sandbox] network: ${refused.join(', ')} ignored: only your own config.toml can open this machine or a private network`);
    } else if (userNetwork === true) network = wanted;
    else if (userNetwork === false || wanted === true) {
      ignored.push(`${PROJECT_CONFIG_FILE}: [sandbox] network ignored: a project cannot open more of the network than your own config.toml does`);
    } else {
      network = wanted.filter((host) => userNetwork.includes(host));
      const refused = wanted.filter((host) => !userNetwork.includes(host));
      if (refused.length > 0) ignored.push(`${PROJECT_CONFIG_FILE}: [sandbox] network: ${refused.join(', ')} ignored: not among the hosts your own config.toml allows`);
    }
  }
  return {
    ...(mode === undefined ? {} : { mode }),
    writable: [...(user.writable ?? [])],
    denyRead: [...(user.deny_read ?? []), ...(project.deny_read ?? [])],
    network,
    passEnv: [...(user.pass_env ?? [])],
    ...tighterLimit('maxProcesses', user.max_processes, project.max_processes, 'max_processes', ignored),
    ...tighterLimit('maxMemoryMb', user.max_memory_mb, project.max_memory_mb, 'max_memory_mb', ignored),
    ...tighterLimit('maxFileMb', user.max_file_mb, project.max_file_mb, 'max_file_mb', ignored),
    ignored,
  };
}

/** A host entry that may reach this machine or a private network: `private:…`, or an address. */
function reachesPrivate(entry: string): boolean {
  return entry.toLowerCase().startsWith('private:') || entry.startsWith('[') || /^[\d.]+(:\d+)?$/.test(entry);
}

/**
 * One limit of `[sandbox]`: the user's, or the project's where it is lower (a project may
 * tighten a limit, not loosen it; against no user value it is compared with the default,
 * `DEFAULT_VM_LIMITS`). A project's higher value is noted in `ignored`.
 */
function tighterLimit<K extends string>(key: K, user: number | undefined, project: number | undefined, name: string, ignored: string[]): { [P in K]?: number } {
  const current = user ?? DEFAULT_VM_LIMITS[key as keyof typeof DEFAULT_VM_LIMITS];
  if (project !== undefined && project <= current) return { [key]: project } as { [P in K]?: number };
  if (project !== undefined) ignored.push(`${PROJECT_CONFIG_FILE}: [sandbox] ${name} = ${project} ignored: a project can lower a limit, not raise it`);
  return user === undefined ? {} : ({ [key]: user } as { [P in K]?: number });
}

/** Each server marked with the file it came from (a project's stays inside the sandbox, see `McpServerConfig.sandbox`). */
function fromSource(servers: Record<string, McpServerConfig> | undefined, source: 'user' | 'project'): Record<string, McpServerConfig> {
  return Object.fromEntries(Object.entries(servers ?? {}).map(([name, server]) => [name, { ...server, source }]));
}

/** A project's tools or servers with `sandbox = false` taken back (noted in `ignored`): only the user's file can take one out. */
function insideSandbox<T extends { sandbox?: boolean }>(entries: Record<string, T> | undefined, table: string, ignored: string[]): Record<string, T> {
  const kept: Record<string, T> = {};
  for (const [name, entry] of Object.entries(entries ?? {})) {
    if (entry.sandbox === false) {
      const { sandbox: _outside, ...inside } = entry;
      kept[name] = inside as T;
      ignored.push(`${PROJECT_CONFIG_FILE}: ${table}.${writeTomlKey(name)}.sandbox = false ignored: it runs inside the sandbox (only your own config.toml can take a tool out)`);
    } else kept[name] = entry;
  }
  return kept;
}

/**
 * A project's command tools without the variables of their `env` that look like credentials
 * (see `isWithheld`) or whose value in `env` holds a URL with a password, unless the user's own
 * `pass_env` names them; each one dropped is said in `ignored`. A repository must not hand your
 * tokens to a script of its own.
 */
function withoutCredentials(tools: Record<string, CommandToolConfig>, passEnv: readonly string[], env: NodeJS.ProcessEnv, ignored: string[]): Record<string, CommandToolConfig> {
  const credential = (variable: string) => isWithheld(variable) || holdsPasswordUrl(env[variable] ?? '');
  const kept: Record<string, CommandToolConfig> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const refused = (tool.env ?? []).filter((variable) => credential(variable) && !passEnv.includes(variable));
    if (refused.length === 0) {
      kept[name] = tool;
      continue;
    }
    kept[name] = { ...tool, env: (tool.env ?? []).filter((variable) => !refused.includes(variable)) };
    ignored.push(`${PROJECT_CONFIG_FILE}: tools.${writeTomlKey(name)}.env: ${refused.join(', ')} ignored: a project's tool gets a credential only when your own config.toml passes it (pass_env)`);
  }
  return kept;
}

/**
 * The user's hooks, then the project's, each marked with its file; a project's `sandbox = false`
 * is taken back (noted in `ignored`): a repository cannot run a hook outside the sandbox.
 */
function mergeHooks(user: readonly HookConfig[] | undefined, project: readonly HookConfig[] | undefined, ignored: string[]): HookConfig[] {
  const projectHooks = (project ?? []).map((hook, index): HookConfig => {
    if (hook.sandbox !== false) return { ...hook, source: 'project' };
    ignored.push(`${PROJECT_CONFIG_FILE}: hooks[${index}].sandbox = false ignored: it runs inside the sandbox (only your own config.toml can take a hook out)`);
    const { sandbox: _outside, ...inside } = hook;
    return { ...inside, source: 'project' };
  });
  return [...(user ?? []).map((hook): HookConfig => ({ ...hook, source: 'user' })), ...projectHooks];
}

/** `{ hooks }` when there are any, else nothing: a configuration without hooks has no key for them. */
function hooksOf(hooks: HookConfig[]): { hooks?: HookConfig[] } {
  return hooks.length > 0 ? { hooks } : {};
}

/** Why a hook's `tool` or `resource` pattern cannot be used, with the key; undefined when both can. */
function hookPatternProblem(hook: HookConfig): { key: 'tool' | 'resource'; message: string } | undefined {
  const checks = [
    ['tool', hook.tool, globMatcher],
    ['resource', hook.resource, resourceMatcher],
  ] as const;
  for (const [key, pattern, compile] of checks) {
    if (pattern === undefined) continue;
    try {
      compile(pattern);
    } catch (error) {
      return { key, message: error instanceof Error ? error.message : String(error) };
    }
  }
  return undefined;
}

/** A name `[mcp.servers.<name>]` takes. */
const MCP_SERVER_NAME = /^[A-Za-z0-9_-]+$/;

/** A model id as `[models."<id>"]` takes it: a provider, a slash, then the model. */
const MODEL_ID = /^[^/\s]+\/\S+$/;

/** The user's model figures with the project's over them, key by key for the same model. */
function mergeModels(user: ConfigFile['models'], project: ConfigFile['models']): Record<string, ModelInfo> {
  const merged: Record<string, ModelInfo> = {};
  for (const [id, info] of Object.entries(user ?? {})) merged[id] = { ...info };
  for (const [id, info] of Object.entries(project ?? {})) merged[id] = { ...merged[id], ...info };
  return merged;
}

/** The user's provider tables with the project's over them, key by key for the same provider. */
function mergeProviders(user: ConfigFile['providers'], project: ConfigFile['providers']): ProvidersConfig {
  const merged: ProvidersConfig = {};
  for (const tables of [user, project]) {
    for (const [name, table] of Object.entries(tables ?? {}) as [keyof ProvidersConfig, ProviderConfig | undefined][]) {
      merged[name] = { ...merged[name], ...table };
    }
  }
  return merged;
}

/** fence's own tools that only some sessions have: `complete` in autonomous runs, `describe` with many tools. */

/** Names that the programs a model writes already use, so a user tool cannot take them. */
const PROGRAM_GLOBALS = ['print', 'console', 'tools', 'gather', 'unique', 'store', 'load', 'JSON'];

/** Reserved words of JavaScript, which cannot name a function in a program. */
const RESERVED_WORDS = new Set(
  (
    'await break case catch class const continue debugger default delete do else enum export extends false finally for ' +
    'function if implements import in instanceof interface let new null package private protected public return static ' +
    'super switch this throw true try typeof var void while with yield arguments eval undefined NaN Infinity'
  ).split(' '),
);

/** Why `name` cannot name a user tool, or undefined when it can. */
export function toolNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z_$][\w$]*$/.test(name)) {
    return 'a tool name must be a JavaScript identifier (letters, digits, _ and $, not starting with a digit), e.g. get_expenses';
  }
  if ((BUILTIN_TOOL_NAMES as readonly string[]).includes(name)) return `"${name}" is the name of a built-in tool; choose another name`;
  if (OCCASIONAL_TOOL_NAMES.includes(name)) return `"${name}" is the name of a tool fence offers in some sessions; choose another name`;
  if (RESERVED_WORDS.has(name)) return `"${name}" is a reserved word of JavaScript; choose another name`;
  if (PROGRAM_GLOBALS.includes(name)) return `"${name}" is already a global of programs; choose another name`;
  return undefined;
}

/** The one issue to report: unknown keys first (they explain the "missing" ones a typo causes). */
function describeIssue(issues: readonly z.core.$ZodIssue[]): string {
  const issue = issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0];
  if (!issue) return 'invalid configuration';
  const where = issue.path.length > 0 ? `${keyPath(issue.path)}: ` : '';
  if (issue.code !== 'unrecognized_keys') return `${where}${issue.message}`;
  const keys = issue.keys.map((key) => JSON.stringify(key)).join(', ');
  const known = knownKeys(issue.path);
  const hint = known ? ` (known keys: ${known.join(', ')})` : '';
  return `${where}unknown key${issue.keys.length === 1 ? '' : 's'} ${keys}${hint}`;
}

function knownKeys(path: readonly PropertyKey[]): readonly string[] | undefined {
  if (path.length === 0) return configFileSchemas().knownKeys.top;
  if (path.length === 2 && path[0] === 'tools') return configFileSchemas().knownKeys.tool;
  if (path.length === 2 && path[0] === 'policy') return configFileSchemas().knownKeys.rule;
  if (path.length === 2 && path[0] === 'hooks') return configFileSchemas().knownKeys.hook;
  if (path.length === 1 && path[0] === 'ptc') return configFileSchemas().knownKeys.ptc;
  if (path.length === 1 && path[0] === 'agents') return configFileSchemas().knownKeys.agents;
  if (path.length === 2 && path[0] === 'models') return configFileSchemas().knownKeys.model;
  if (path.length === 1 && path[0] === 'mcp') return configFileSchemas().knownKeys.mcp;
  if (path.length === 3 && path[0] === 'mcp' && path[1] === 'servers') return configFileSchemas().knownKeys.mcpServer;
  if (path.length === 1 && path[0] === 'sandbox') return configFileSchemas().knownKeys.sandbox;
  if (path.length === 1 && path[0] === 'providers') return configFileSchemas().knownKeys.providers;
  if (path.length === 2 && path[0] === 'providers') return configFileSchemas().knownKeys.provider;
  if (path.length === 1 && path[0] === 'web') return configFileSchemas().knownKeys.web;
  return undefined;
}

/** A key path as TOML writes it: `tools.get_expenses.command`, `policy[0].action`, `tools."my tool"`. */
function keyPath(path: readonly PropertyKey[]): string {
  return path
    .map((key, i) => {
      if (typeof key === 'number') return `[${key}]`;
      const written = writeTomlKey(String(key));
      return i === 0 ? written : `.${written}`;
    })
    .join('');
}

/** Largest configuration file read; a larger one is an error, found before reading it. */
export const CONFIG_FILE_LIMIT_BYTES = 1024 * 1024;

/**
 * The file's text; undefined when it does not exist; why not when it cannot be read. An
 * empty folder in its place counts as no file: it is what a session's sandbox puts there to
 * keep the model from writing one (see `sandboxMounts`), and what a crash leaves behind. A
 * link is followed to its real path first; only a regular file of at most
 * `CONFIG_FILE_LIMIT_BYTES` is read (see `readRegularFile`), so a `fence.toml` that is a named
 * pipe or a link to `/dev/zero` neither hangs fence nor fills its memory.
 */
function readIfExists(path: string): string | undefined | { reason: string } {
  const read = readRegularFile(path, CONFIG_FILE_LIMIT_BYTES, 'follow');
  if (read.kind === 'read') return read.bytes.toString('utf8');
  if (read.kind === 'absent') return undefined;
  if (read.kind === 'not-regular' && read.what === 'a folder' && isEmptyFolder(path)) return undefined;
  return { reason: read.kind === 'unreadable' ? `cannot be read (${read.code})` : `cannot be read: ${describeUnread(read)}` };
}

function isEmptyFolder(path: string): boolean {
  try {
    return readdirSync(path).length === 0;
  } catch {
    return false;
  }
}

/**
 * The `[agents]` tables merged: a project's may lower the user's limits (or the defaults) but
 * never raise them, so a repository cannot have more subagents run, or nest deeper, than the
 * person allowed.
 */
function mergeAgents(user: AgentsConfig | undefined, project: AgentsConfig | undefined): AgentsConfig {
  const lower = (mine: number | undefined, theirs: number | undefined, fallback: number): number | undefined =>
    theirs === undefined ? mine : Math.min(theirs, mine ?? fallback);
  const maxDepth = lower(user?.maxDepth, project?.maxDepth, DEFAULT_AGENT_MAX_DEPTH);
  const maxParallel = lower(user?.maxParallel, project?.maxParallel, DEFAULT_AGENT_MAX_PARALLEL);
  return { ...(maxDepth === undefined ? {} : { maxDepth }), ...(maxParallel === undefined ? {} : { maxParallel }) };
}
