import { loadConfig, type FenceConfig } from '../config/config';
import { fenceHome } from '../config/paths';
import { newSessionId, newSessionNameProblem } from '../conversation/session-store';
import { BashSession } from '../processes/bash-session';
import { noSandbox, offPolicy, type OsSandbox } from '../os-sandbox/os-sandbox';
import { ShellStartError } from '../processes/shell-start-error';
import type { SandboxMode } from '../os-sandbox/policy';
import { openSessionSandbox } from './session-sandbox';
import { unsandboxedCommands } from './unsandboxed-commands';
import { resolveWorkspace } from './workspace';

/**
 * A session's shell from the moment it is spawned: `get` gives it once it is ready for
 * commands, `close` stops it, started or not (see `BashSession.close`), and then its sandbox.
 */
export interface StartingShell {
  /** The folder bash started in. */
  readonly cwd: string;
  /** The OS sandbox bash runs in, which the session's other processes share; closed with the shell. */
  readonly sandbox: OsSandbox;
  /** The id of the session this shell was started for, when it was started before the session. */
  readonly sessionId?: string;
  /** A line for the user about the sandbox (none could be had, a setting was ignored). */
  readonly warning?: string;
  /** The configuration read for the workspace when the shell was started before the session: read once. */
  readonly config?: FenceConfig;
  get(): Promise<BashSession>;
  close(options?: { waitForExit?: boolean }): Promise<void>;
}

/**
 * Starts bash in `cwd`, inside `sandbox` (none: a sandbox that is off): the process is spawned
 * before this returns (see `BashSession.start`), so it starts up while the caller goes on. A
 * failed start is kept: each `get` rejects with it, which the shell tool reports.
 */
export function startShell(
  cwd: string,
  sandbox?: OsSandbox,
  extra: { sessionId?: string; warning?: string; config?: FenceConfig; passEnv?: readonly string[] } = {},
): StartingShell {
  const own = sandbox ?? noSandbox(offPolicy(cwd));
  const { passEnv, ...kept } = extra;
  const started = BashSession.start({ cwd, ...(passEnv?.length ? { passEnv } : {}), ...(own.kind === 'none' ? {} : { sandbox: own }) });
  started.catch(() => undefined);
  return {
    cwd,
    sandbox: own,
    ...kept,
    get: () => started,
    close: async (options) => {
      await (await started.catch(() => undefined))?.close(options);
      own.close();
    },
  };
}

/**
 * Waits for `shell` when it runs in an OS sandbox, and resolves with a sentence for the person
 * if bash could not start there (bwrap refused the sandbox, the workspace could not be entered):
 * the session must not go on without its shell. Undefined when bash started, or when it runs
 * with no sandbox (a shell that fails there is reported by the shell tool).
 */
export async function sandboxStartProblem(shell: StartingShell): Promise<string | undefined> {
  if (shell.sandbox.kind === 'none') return undefined;
  try {
    await shell.get();
    return undefined;
  } catch (error) {
    if (!(error instanceof ShellStartError)) return undefined;
    return (
      `the ${shell.sandbox.policy.mode} sandbox could not start in ${error.cwd}: ${error.reason}\n` +
      'fence sandbox check tries the sandbox step by step; --sandbox off runs without one (the model then has your full access).'
    );
  }
}

/**
 * The shell of the session a prompt command opens, started as soon as the command line is read,
 * so that bash is up by the time a model that answers at once asks for it: in the workspace
 * the command line names (the current folder by default), in the sandbox the command line and
 * the configuration ask for, for a session whose id is chosen here. None when a session is
 * resumed (its workspace and id are read from the session), or when the folder, the
 * configuration or the sandbox is unusable (the command reports that itself).
 */
export function startShellForCommand(options: { workspace?: string; resume?: string | true; name?: string; sandbox?: SandboxMode; auto?: boolean }): StartingShell | undefined {
  if (options.resume !== undefined) return undefined;
  const workspace = resolveWorkspace(options.workspace);
  if (!('path' in workspace)) return undefined;
  const loaded = loadConfig({ workspace: workspace.path, env: process.env });
  if ('error' in loaded) return undefined;
  // A name the command will refuse is not used to make any folder.
  if (options.name !== undefined && newSessionNameProblem(fenceHome(), options.name)) return undefined;
  const sessionId = options.name ?? newSessionId();
  const chosen = openSessionSandbox({
    ...(options.sandbox ? { mode: options.sandbox } : {}),
    config: loaded.config.sandbox,
    workspace: workspace.path,
    fenceHome: fenceHome(),
    sessionId,
    auto: options.auto === true,
    unsandboxed: unsandboxedCommands(loaded.config, workspace.path),
  });
  if ('error' in chosen) return undefined;
  return startShell(workspace.path, chosen.sandbox, {
    sessionId,
    config: loaded.config,
    passEnv: loaded.config.sandbox.passEnv,
    ...(chosen.warning ? { warning: chosen.warning } : {}),
  });
}
