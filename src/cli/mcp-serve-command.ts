import { existsSync, mkdirSync, realpathSync, rmSync, watch, type FSWatcher } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { version } from '../../package.json';
import { loadConfig } from '../config/config';
import { fenceHome } from '../config/paths';
import { trustNotice } from '../config/trust';
import { newSessionId, PRIVATE_FOLDER, SessionStore } from '../conversation/session-store';
import { approvalsDir } from '../ptc/approvals';
import { approvedPrograms, programLabel, programRoots } from '../ptc/saved-programs';
import type { BashSession } from '../processes/bash-session';
import type { ToolContext, ToolSpec } from '../tools/define-tool';
import { SAVED_PROGRAMS_GROUP } from '../tools/program-tool';
import { startMcpServers } from '../session/mcp-servers';
import { chooseToken, endpointUrl, parseHttpAddress, serveHttp, TOKEN_VARIABLE, type HttpAddress } from './mcp-http';
import { createProgramServer, oneCallTool, type ProgramServer, type ServedTool } from './mcp-serve';
import { openSessionSandbox } from '../session/session-sandbox';
import { unsandboxedCommands } from '../session/unsandboxed-commands';
import { buildToolset, type Toolset } from '../session/toolset';
import { resolveWorkspace } from '../session/workspace';

/** Options of `fence mcp serve`. */
export interface McpServeOptions {
  workspace?: string;
  printConfig?: boolean;
  /** `[host:]port` to serve streamable HTTP on instead of stdio. */
  http?: string;
  /** Serve the session's tools that programs may call too (see `oneCallTool`). */
  tools?: boolean;
}

/** How long approvals must stay still before the programs are listed again. */
const APPROVALS_SETTLE_MS = 200;

/**
 * `fence mcp serve`: serves the approved programs visible from the workspace (the user's, and
 * the project's when the folder is trusted) as MCP tools over stdio, until the client closes
 * stdin or the process is told to stop. Calls run as they run for fence's own model (see
 * `createProgramServer`), in one session made for the serve, whose folder keeps their traces,
 * with the workspace's OS sandbox and MCP servers. When approvals change while it serves, the
 * programs are listed again and the client told. With `tools`, the tools programs may call are
 * served too, each call run as a program of one call (see `oneCallTool`). stdout carries only
 * MCP messages; notices and problems go to stderr. With `http`, serves streamable HTTP instead (see `serveHttp`), until
 * the process is told to stop. With `printConfig`, prints a client config that starts it (or,
 * with `http`, that reaches it) and exits. Returns the exit code: 0; 1 when the workspace,
 * config, sandbox or address cannot be used; 2 when `http` is not an address or would open the
 * programs beyond loopback without `FENCE_MCP_TOKEN`.
 */
export async function mcpServeCommand(options: McpServeOptions): Promise<number> {
  const err = (line: string) => process.stderr.write(`${line}\n`);
  const workspace = resolveWorkspace(options.workspace);
  if ('error' in workspace) {
    err(`fence: ${workspace.error}`);
    return 1;
  }
  let address: HttpAddress | undefined;
  if (options.http !== undefined) {
    const parsed = parseHttpAddress(options.http);
    if ('error' in parsed) {
      err(`fence: ${parsed.error}`);
      return 2;
    }
    address = parsed;
  }
  if (options.printConfig) {
    if (address?.port === 0) {
      err('fence: --print-config --http needs the port clients will reach, not 0');
      return 2;
    }
    const printed = address ? httpClientConfig(address) : clientConfig(workspace.path, options.tools === true);
    process.stdout.write(`${JSON.stringify(printed, null, 2)}\n`);
    return 0;
  }
  const chosenToken = address && chooseToken(address, process.env);
  if (chosenToken && 'error' in chosenToken) {
    err(`fence: ${chosenToken.error}`);
    return 2;
  }
  const loaded = loadConfig({ workspace: workspace.path, env: process.env });
  if ('error' in loaded) {
    err(`fence: ${loaded.error}`);
    return 1;
  }
  const { config } = loaded;
  const untrusted = config.trust && trustNotice(config.trust);
  if (untrusted) err(untrusted);

  const home = fenceHome();
  const id = newSessionId();
  const session = { id, dir: join(home, 'sessions', id) };
  const chosen = openSessionSandbox({ config: config.sandbox, workspace: workspace.path, fenceHome: home, sessionId: id, unsandboxed: unsandboxedCommands(config, workspace.path) });
  if ('error' in chosen) {
    err(`fence: ${chosen.error}`);
    return 1;
  }
  const { sandbox } = chosen;
  if (chosen.warning) err(chosen.warning);
  for (const line of config.sandbox.ignored) err(`fence: ${line}`);
  const mcp = await startMcpServers(config, workspace.path, { dir: join(home, 'mcp-tools') }, sandbox.kind === 'none' ? undefined : sandbox);
  for (const problem of mcp.problems) err(`fence: ${problem}`);

  const roots = () => programRoots(home, workspace.path).filter((root) => untrusted === undefined || root.scope !== 'project');
  let toolset = buildToolset(config, session, mcp.tools, approvedPrograms(roots(), home));
  const withTools = options.tools === true;
  let served = servedTools(toolset, approvedPrograms(roots(), home), withTools);
  for (const problem of toolset.problems) err(`fence: ${problem}`);
  const store = SessionStore.create(home, {
    id,
    model: 'none (fence mcp serve)',
    programsOnly: true,
    startedAs: 'fence mcp serve',
    workspace: workspace.path,
    toolFormat: 'tool',
    tools: served.map((entry) => entry.tool.name),
  });

  let bash: Promise<BashSession> | undefined;
  const context = (signal: AbortSignal): ToolContext => ({
    workspace: workspace.path,
    signal,
    sandboxPolicy: sandbox.policy,
    ...(sandbox.kind === 'none' ? {} : { wrapInSandbox: sandbox.wrap }),
    bash: () =>
      (bash ??= import('../processes/bash-session').then(({ BashSession }) =>
        BashSession.start({ cwd: workspace.path, passEnv: config.sandbox.passEnv, ...(sandbox.kind === 'none' ? {} : { sandbox }) }),
      )),
  });
  const newServer = (): ProgramServer => createProgramServer({ tools: () => served, rules: () => toolset.rules, context, version });
  const servingLine = (over: string) => {
    const labels = served.flatMap((entry) => (entry.program ? [programLabel(entry.program.record)] : []));
    const tools = served.length - labels.length;
    const programs = `${labels.length} approved program${labels.length === 1 ? '' : 's'}`;
    return `fence: serving ${programs}${withTools ? ` and ${tools} tool${tools === 1 ? '' : 's'}` : ''} over ${over}${labels.length > 0 ? `: ${labels.join(', ')}` : ''}`;
  };
  let listChanged = async (): Promise<void> => undefined;

  // Approvals given or revoked while serving: list the programs again and tell the client.
  const relist = () => {
    let programs: ReturnType<typeof approvedPrograms>;
    let next: Toolset;
    try {
      programs = approvedPrograms(roots(), home);
      next = buildToolset(config, session, mcp.tools, programs, { budget: toolset.budget, store: toolset.store });
    } catch (error) {
      err(`fence: the approved programs could not be listed again: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    const before = served.map(servedKey).join('\n');
    toolset = next;
    served = servedTools(next, programs, withTools);
    const after = served.map(servedKey).join('\n');
    if (before !== after) void listChanged();
  };
  const watcher = watchApprovals(home, relist);

  const stopped = new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  const cleanUp = async () => {
    watcher?.close();
    const shell = await bash?.catch(() => undefined);
    await Promise.all([shell?.close(), mcp.close()]);
    sandbox.close();
    store.close();
    // A client starts a serve each time it starts: one that served no call leaves no session behind.
    if (!existsSync(join(session.dir, 'traces'))) rmSync(session.dir, { recursive: true, force: true });
  };

  if (address && chosenToken) {
    const http = await serveHttp({ address, token: chosenToken.token, newServer, problem: err });
    if ('error' in http) {
      err(`fence: ${http.error}`);
      await cleanUp();
      return 1;
    }
    listChanged = () => http.listChanged();
    err(servingLine(`HTTP at ${endpointUrl(http.address)}`));
    if (served.length === 0) err(nothingServed(home));
    if (chosenToken.generated) err(`fence: clients must send Authorization: Bearer ${chosenToken.token} (set ${TOKEN_VARIABLE} to choose the token)`);
    try {
      await stopped;
    } finally {
      await http.close();
      await cleanUp();
    }
    return 0;
  }

  const programServer = newServer();
  listChanged = () => programServer.listChanged();
  err(servingLine('stdio'));
  if (served.length === 0) err(nothingServed(home));
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.stdin.once('end', stop);
    void stopped.then(stop);
    transport.onclose = stop;
  });
  try {
    await programServer.server.connect(transport);
    await closed;
  } finally {
    await programServer.server.close().catch(() => undefined);
    await cleanUp();
  }
  return 0;
}

/**
 * The approved programs the toolset made tools of (one left out for its name is not served),
 * each with its tool; with `tools`, then the toolset's other tools that programs may call,
 * each as one call of a program (see `oneCallTool`).
 */
function servedTools(toolset: Toolset, programs: ReturnType<typeof approvedPrograms>, tools: boolean): ServedTool[] {
  const saved = new Map<string, ToolSpec>(toolset.eligible.filter((tool) => tool.group === SAVED_PROGRAMS_GROUP).map((tool) => [tool.name, tool]));
  const served: ServedTool[] = programs.flatMap((program) => {
    const tool = saved.get(program.record.name);
    return tool ? [{ program, tool }] : [];
  });
  if (!tools) return served;
  const own = toolset.eligible.filter((tool) => tool.group !== SAVED_PROGRAMS_GROUP);
  return [...served, ...own.map((tool) => ({ tool: oneCallTool(tool, toolset.ptcOptions) }))];
}

/** What identifies a served tool for telling whether the list changed: a program's label and approved code, a tool's name. */
function servedKey(entry: ServedTool): string {
  return entry.program ? `${programLabel(entry.program.record)} ${entry.program.approval?.sha256}` : entry.tool.name;
}

/**
 * Says where a serve with nothing to offer looked, so a person whose client started it with
 * another `FENCE_HOME` (or none) sees why.
 */
function nothingServed(home: string): string {
  return `fence: no approved program found in ${home} (FENCE_HOME) or the workspace; approve one with fence programs approve <name>, and serve the tools programs may call with --tools`;
}

/**
 * Calls `onChange` once approvals have stayed still for a moment after changing. Undefined
 * when the folder cannot be watched: the list then stays as it was at the start.
 */
function watchApprovals(home: string, onChange: () => void): FSWatcher | undefined {
  const dir = approvalsDir(home);
  let timer: NodeJS.Timeout | undefined;
  try {
    mkdirSync(dir, { recursive: true, mode: PRIVATE_FOLDER });
    const watcher = watch(dir, () => {
      clearTimeout(timer);
      timer = setTimeout(onChange, APPROVALS_SETTLE_MS);
    });
    watcher.on('close', () => clearTimeout(timer));
    watcher.on('error', () => watcher.close());
    return watcher;
  } catch {
    return undefined;
  }
}

/**
 * A generic MCP client's config that starts this serve: node by its absolute path running
 * fence's own entry script by its real path, so it works from any folder and with any PATH
 * (clients started from a desktop often have a short one, and `npx fence` outside a project
 * that has fence installed would fetch whatever the registry calls `fence`). Its `env` names
 * fence's home as this shell resolves it (and `XDG_CONFIG_HOME` when set), because clients
 * pass a server only a few variables of their own (`HOME`, `PATH`, …): without it, a person
 * whose `FENCE_HOME` is set would get a serve that finds none of their approved programs.
 */
export function clientConfig(
  workspace: string,
  tools = false,
  env: NodeJS.ProcessEnv = process.env,
): { mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }> } {
  let script = process.argv[1] ?? 'fence';
  try {
    script = realpathSync(script);
  } catch {
    // Keep it as given.
  }
  const passed: Record<string, string> = { FENCE_HOME: fenceHome(env) };
  if (env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)) passed.XDG_CONFIG_HOME = env.XDG_CONFIG_HOME;
  const args = [script, 'mcp', 'serve', '-w', workspace, ...(tools ? ['--tools'] : [])];
  return { mcpServers: { fence: { command: process.execPath, args, env: passed } } };
}

/**
 * A client config that reaches the HTTP endpoint at `address`, in the form Claude Code's
 * `.mcp.json` and other clients read: the URL and an `Authorization` header that takes the
 * token from the client's own `FENCE_MCP_TOKEN`, so no token is written into a file.
 */
export function httpClientConfig(address: HttpAddress): { mcpServers: Record<string, { type: 'http'; url: string; headers: Record<string, string> }> } {
  return { mcpServers: { fence: { type: 'http', url: endpointUrl(address), headers: { Authorization: `Bearer \${${TOKEN_VARIABLE}}` } } } };
}
