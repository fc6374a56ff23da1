import { BashSession } from '../runtime/bash-session';
import { resolveWorkspace } from './workspace';

/**
 * A session's shell from the moment it is spawned: `get` gives it once it is ready for
 * commands, `close` stops it, started or not (see `BashSession.close`).
 */
export interface StartingShell {
  /** The folder bash started in. */
  readonly cwd: string;
  get(): Promise<BashSession>;
  close(options?: { waitForExit?: boolean }): Promise<void>;
}

/**
 * Starts bash in `cwd`: the process is spawned before this returns (see `BashSession.start`),
 * so it starts up while the caller goes on. A failed start is kept: each `get` rejects with
 * it, which the shell tool reports.
 */
export function startShell(cwd: string): StartingShell {
  const started = BashSession.start({ cwd });
  started.catch(() => undefined);
  return {
    cwd,
    get: () => started,
    close: async (options) => (await started.catch(() => undefined))?.close(options),
  };
}

/**
 * The shell of the session a prompt command opens, started as soon as the command line is read,
 * so that bash is up by the time a model that answers at once asks for it: in the workspace
 * the command line names (the current folder by default). None when a session is resumed
 * without `-w` (its workspace is read from the session) or when the folder is unusable (the
 * command reports that itself).
 */
export function startShellForCommand(options: { workspace?: string; resume?: string | true }): StartingShell | undefined {
  if (options.resume !== undefined && options.workspace === undefined) return undefined;
  const workspace = resolveWorkspace(options.workspace);
  return 'path' in workspace ? startShell(workspace.path) : undefined;
}
