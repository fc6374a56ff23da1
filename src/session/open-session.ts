import { join } from 'node:path';
import type { OpenSession } from '../agent/session-parts';
import { buildSystemPrompt, toolChangeNotice } from '../agent/system-prompt';
import type { FenceConfig } from '../config/config';
import { isUsable, trustNotice } from '../config/trust';
import { createMessage } from '../conversation/message';
import { FileCheckpoints } from '../conversation/file-checkpoints';
import { messagesToRepair, newRuntimesNotice } from '../conversation/resume';
import { newSessionId, SessionStore } from '../conversation/session-store';
import { PythonToolBridge } from '../ptc/python-bridge';
import { approvedPrograms, programRoots } from '../ptc/saved-programs';
import type { CellResult, PythonKernel } from '../processes/python-kernel';
import type { ToolFormat } from '../parse/tool-use';
import type { SandboxMode } from '../os-sandbox/policy';
import { visibleText } from '../processes/visible-text';
import type { PythonCells, ToolContext } from '../tools/define-tool';
import { admittedRestore } from '../tools/admitted-restore';
import { programTools } from '../tools/ptc';
import { ToolRegistry } from '../tools/registry';
import { createAgentTool } from '../tools/agent';
import type { SubagentHost } from './subagent';
import { agentsFileFor } from './agents-file';
import { openMcpServers, type LiveMcpServers } from './mcp-servers';
import { followMcpServers } from './session-mcp-tools';
import { unsandboxedCommands } from './unsandboxed-commands';
import { describeSandbox, openSessionSandbox } from './session-sandbox';
import { sandboxStartProblem, startShell, type StartingShell } from './starting-shell';
import { buildToolset, sessionTools } from './toolset';
import { createSessionHooks, runHooksOf } from '../hooks/session-hooks';
import { findSkills, type SkillCatalog } from '../skills/find-skills';
import { skillRoots } from '../skills/skill-roots';
import { skillsSection } from '../skills/skills-prompt';

/**
 * Creates a session folder, writes the system prompt as its first (pinned) message and wires
 * the tools the config describes; or, with `resume`, opens an existing session (locked for
 * this process), records the model, format and tools it now runs with, and answers any call
 * that a stop cut off. A resumed session keeps its system prompt, and is told in a system
 * message which tools were added or are gone since it last ran.
 *
 * The shell is started first (unless one was started for it already, see `shell`), before
 * anything else is awaited: most runs use it, and its start-up then overlaps building the
 * session and the first model request, so that it is ready when a model that answers at once
 * asks for it. In an OS sandbox, the session does not open until bash is up there: a sandbox
 * that cannot start throws, with bwrap's reason (see `sandboxStartProblem`). No MCP server is
 * waited for (see `openMcpServers`): the tools of those in the cache of listed tools are in the
 * registry before the system prompt is written (the server starts on its first call); the
 * others start now and their tools join once listed — the registry takes them, and the model
 * is told before its next request (`toolNotices`, see `followMcpServers`). A server that fails
 * costs one line (`warn`) when it fails; the servers stop with `close()`, those still starting
 * without being waited for. The approved saved programs of the user and the project join as
 * tools too (see `approvedPrograms`).
 */
export async function openSession(options: {
  home: string;
  workspace: string;
  modelId: string;
  config: FenceConfig;
  name?: string;
  /** How the model writes tool calls (default `markdown`). */
  format?: ToolFormat;
  /** An autonomous run: the `complete` tool is offered and the prompt says nobody answers. */
  auto?: boolean;
  /** The id of a session to go on with instead of starting one. */
  resume?: string;
  signal: AbortSignal;
  /** Asks a person before calls run (the chat); absent, nobody is asked. */
  confirm?: ToolContext['confirm'];
  /** Where a line about an MCP server that did not start goes. Default: stderr. */
  warn?: (line: string) => void;
  /** Keep what the file tools overwrite, so taking turns back can put files back (the chat's `/undo`). */
  keepFiles?: boolean;
  /** The session's shell, started before in the workspace (see `startShellForCommand`); else started here. */
  shell?: StartingShell;
  /** `--sandbox`, when given (see `openSessionSandbox`). */
  sandboxMode?: SandboxMode;
  /** The person agreed to make a workspace writable that is the home folder or above it (see `openSessionSandbox`). */
  wideWorkspace?: 'allowed';
  /** Offer the `agent` tool, whose subagents this host runs (see `SubagentHost`); absent: none. */
  agents?: SubagentHost;
  /** A subagent's tools: only these of the session's are offered (with `complete`); absent: all. */
  only?: readonly string[];
  /** The session whose `agent` call opens this one, recorded in its `session.json`. */
  parent?: string;
}): Promise<OpenSession> {
  // The shell is a built-in tool of every session: one started for another folder, or for another session, is not this one's.
  const given = options.shell?.cwd === options.workspace && (options.resume === undefined || options.shell.sessionId === undefined) ? options.shell : undefined;
  const id = options.resume ?? given?.sessionId ?? options.name ?? newSessionId();
  if (options.shell && !given) await options.shell.close();
  // The chat may have put the terminal in raw mode already, where a line needs its carriage return.
  // A line may quote a server's or a file's text: shown, never acted on by the terminal.
  const warn = options.warn ?? ((line: string) => process.stderr.write(`${visibleText(line)}${process.stdin.isTTY && process.stdin.isRaw ? '\r\n' : '\n'}`));
  let shell = given;
  if (!shell) {
    const chosen = openSessionSandbox({
      ...(options.sandboxMode ? { mode: options.sandboxMode } : {}),
      config: options.config.sandbox,
      workspace: options.workspace,
      fenceHome: options.home,
      sessionId: id,
      auto: options.auto === true,
      ...(options.wideWorkspace ? { wideWorkspace: options.wideWorkspace } : {}),
      unsandboxed: unsandboxedCommands(options.config, options.workspace),
    });
    if ('error' in chosen) throw new Error(chosen.error);
    shell = startShell(options.workspace, chosen.sandbox, { passEnv: options.config.sandbox.passEnv, ...(chosen.warning ? { warning: chosen.warning } : {}) });
  }
  if (shell.warning) warn(shell.warning);
  const untrusted = options.config.trust && trustNotice(options.config.trust);
  if (untrusted) warn(untrusted);
  for (const line of options.config.sandbox.ignored) warn(`fence: ${line}`);
  // A new session lists its skills in the system prompt; a project's only once trusted (a resumed session keeps its prompt).
  const projectTrusted = !options.config.trust || isUsable(options.config.trust);
  const skillsFound = options.resume ? undefined : findSkills(skillRoots({ workspace: options.workspace, project: projectTrusted }), options.workspace);
  let mcp: LiveMcpServers;
  try {
    // No server is waited for: those not in the cache start now and join the session once they have listed their tools.
    const sandbox = shell.sandbox.kind === 'none' ? undefined : shell.sandbox;
    mcp = await openMcpServers(options.config, options.workspace, { dir: join(options.home, 'mcp-tools') }, sandbox, (line) => warn(`fence: ${line}`));
  } catch (error) {
    await shell.close();
    throw error;
  }
  // Started before the servers, so mostly ready by now: a sandbox that cannot start ends the session here.
  const notStarted = await sandboxStartProblem(shell);
  if (notStarted) {
    await Promise.all([mcp.close(), shell.close()]);
    throw new Error(notStarted);
  }
  const skills = await skillsFound;
  try {
    return openWithTools(options, id, shell, mcp, warn, skills);
  } catch (error) {
    await Promise.all([mcp.close(), shell.close()]);
    throw error;
  }
}

/** The rest of `openSession`, with the MCP servers' tools known so far (the others join later, see `followMcpServers`). */
function openWithTools(
  options: Parameters<typeof openSession>[0],
  id: string,
  shell: StartingShell,
  mcp: LiveMcpServers,
  warn: (line: string) => void,
  skills: SkillCatalog | undefined,
): OpenSession {
  // A project's programs only from a workspace the person trusts (see `workspaceTrust`).
  const trusted = !options.config.trust || isUsable(options.config.trust);
  const programs = approvedPrograms(programRoots(options.home, options.workspace).filter((root) => trusted || root.scope !== 'project'), options.home);
  // Where program runs write their traces: the session's folder, and a fork's once it goes on in one.
  const traceSession = { id, dir: join(options.home, 'sessions', id) };
  const agent = options.agents?.offersTool ? createAgentTool(options.agents.run) : undefined;
  const toolset = buildToolset(options.config, traceSession, mcp.tools, programs, agent ? { agent } : {});
  for (const problem of toolset.problems) warn(`fence: ${problem}`);
  for (const problem of skills?.problems ?? []) warn(`fence: ${problem}`);
  const { rules } = toolset;
  // A subagent's Python reaches only the tools it was given.
  const eligible = options.only ? toolset.eligible.filter((tool) => options.only?.includes(tool.name)) : toolset.eligible;
  const offered = sessionTools(toolset, options.format ?? 'markdown', options.auto, mcp.starting);
  const only = options.only;
  const tools = only ? offered.filter((tool) => only.includes(tool.name) || tool.name === 'complete') : offered;
  const registry = new ToolRegistry(tools, mcp.absent);
  const info = {
    model: options.modelId,
    workspace: options.workspace,
    toolFormat: options.format ?? 'markdown',
    tools: tools.map((t) => t.name),
    sandbox: describeSandbox(shell.sandbox),
  };
  let store: SessionStore;
  if (options.resume) {
    store = SessionStore.open(options.home, options.resume);
    const before = store.info.tools;
    store.updateInfo(info);
    // A call cut off by a crash or Ctrl-C gets its "interrupted" result, so the next request is valid.
    for (const message of messagesToRepair(store.log)) store.append(message);
    const restarted = newRuntimesNotice(store.log);
    if (restarted) store.append(createMessage('system', restarted, { meta: { notice: 'new_runtimes' } }));
    // The system prompt stays as it was: the model is told which tools came and went since.
    // Tools of a server still starting are not gone: they are told of when it joins.
    const notice = before ? toolChangeNotice(before.filter((name) => !mcp.mayList(name)), tools, info.toolFormat) : undefined;
    if (notice) store.append(createMessage('system', notice));
  } else {
    store = SessionStore.create(options.home, { id, ...(options.name ? { name: options.name } : {}), ...(options.parent ? { parent: options.parent } : {}), ...info });
    const system = buildSystemPrompt({
      tools,
      workspace: options.workspace,
      format: options.format,
      auto: options.auto,
      agentsFile: agentsFileFor(options.workspace, options.config, shell.sandbox.policy, rules, warn),
      sandboxPlaceholders: (shell.sandbox.policy.placeholders?.length ?? 0) > 0,
      skills: skillsSection(skills?.skills ?? []),
    });
    store.append(createMessage('system', system, { pinned: true }));
  }

  // Python starts on its first cell: most sessions never use it, and it costs ~100 ms.
  let kernel: Promise<PythonKernel> | undefined;
  // Checkpoints go with the session the chat is in (a fork's once it forked) and the log's length.
  const checkpoints = options.keepFiles ? new FileCheckpoints(() => store.dir) : undefined;
  // The person's hooks run in the workspace, inside the sandbox (see `createSessionHooks`); those at the start begin now.
  const hooks = createSessionHooks({
    hooks: options.config.hooks ?? [],
    sessionId: () => store.id,
    workspace: options.workspace,
    ...(shell.sandbox.kind === 'none' ? {} : { wrap: shell.sandbox.wrap }),
    report: warn,
  });
  const hooksSource = options.resume ? 'resume' : 'startup';
  void hooks?.sessionStart(hooksSource);
  const toolContext: ToolContext = {
    workspace: options.workspace,
    signal: options.signal,
    bash: shell.get,
    python: () => startPython(),
    sandboxPolicy: shell.sandbox.policy,
    ...(shell.sandbox.kind === 'none' ? {} : { wrapInSandbox: shell.sandbox.wrap }),
    ...(options.confirm ? { confirm: options.confirm } : {}),
    ...(checkpoints ? { beforeWrite: (path: string, before: Buffer | undefined) => checkpoints.keep(path, before, store.log.length) } : {}),
    ...(hooks ? { toolHooks: hooks } : {}),
  };
  const pythonTools = programTools(eligible, toolContext, rules);
  const bridge = new PythonToolBridge(pythonTools, traceSession);
  const toolNotices = followMcpServers(mcp, {
    config: options.config,
    traceSession,
    programs,
    format: options.format ?? 'markdown',
    auto: options.auto === true,
    toolset,
    registry,
    pythonTools,
    toolContext,
    ...(options.only ? { only: options.only } : {}),
    recordTools: (names) => {
      try {
        store.updateInfo({ tools: names });
      } catch {
        // A store closed with the session: nothing to record.
      }
    },
    warn,
  });
  const startPython = async (): Promise<PythonCells> => {
    kernel ??= import('../processes/python-kernel').then(({ PythonKernel }) =>
      PythonKernel.start({
        cwd: options.workspace,
        onToolCall: bridge.call,
        toolNames: bridge.toolNames,
        passEnv: options.config.sandbox.passEnv,
        ...(shell.sandbox.kind === 'none' ? {} : { sandbox: shell.sandbox }),
      }),
    );
    const started = await kernel;
    return {
      run: async (code, runOptions) => {
        const cell = await bridge.runCell(code, runOptions?.signal ?? options.signal, () => started.run(code, runOptions), summarizeCell);
        return cell.result;
      },
    };
  };

  let closed = false;
  return {
    get store() {
      return store;
    },
    switchStore(next) {
      if (next === store) return;
      store.close();
      store = next;
      traceSession.id = next.id;
      traceSession.dir = next.dir;
    },
    registry,
    rules,
    toolContext,
    toolNotices,
    ...(hooks ? { hooks: runHooksOf(hooks, hooksSource) } : {}),
    ...(checkpoints ? { restoreFiles: (from: number) => checkpoints.restore(from, admittedRestore(toolContext, rules)) } : {}),
    async close(closeOptions = {}) {
      if (closed) return;
      closed = true;
      const runtimes = { waitForExit: closeOptions.exiting !== true };
      await Promise.all([shell.close(runtimes), kernel?.then((python) => python.close(runtimes), () => undefined), mcp.close()]);
      store.close();
    },
  };
}

/** What a Python cell's trace records of its result. */
function summarizeCell(result: CellResult) {
  const ok = !result.error && !result.timedOut && !result.interrupted && !result.restarted;
  return { output: result.output, ok, ...(result.error ? { error: `${result.error.name}: ${result.error.message}` } : {}) };
}
