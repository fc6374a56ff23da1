import { existsSync, mkdirSync, rmdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { SandboxConfig } from '../config/config';
import { configHome } from '../config/paths';
import { homeWorkspaceReason, homeWorkspaceRefusal } from './home-workspace';
import { unsandboxedCodePaths, type UnsandboxedCommand } from './unsandboxed-commands';
import { sessionOutputsDir } from '../conversation/session-store';
import { bubblewrapSandbox, noSandbox, sandboxSupport, seatbeltSandbox, type OsSandbox } from '../os-sandbox/os-sandbox';
import { sandboxResourceLimits } from '../os-sandbox/resource-limits';
import { startupFilesWithin } from '../os-sandbox/startup-files';
import { credentialStorePaths } from '../os-sandbox/credential-stores';
import { sandboxPackageSetup } from '../os-sandbox/package-caches';
import { workspaceProtectedPaths, type SandboxMode, type SandboxPolicy } from '../os-sandbox/policy';
import { surveyWorkspaceGit } from '../os-sandbox/workspace-git';
import { readOnlySkillFolders, unwrittenSkillFolders } from '../skills/skill-sandbox-folders';

/** What a session's sandbox is made from: the command line's choice, the configuration, where things are. */
export interface SessionSandboxOptions {
  /** `--sandbox`, when given. */
  mode?: SandboxMode;
  config: SandboxConfig;
  workspace: string;
  /** fence's data folder (`$FENCE_HOME`): denied, but for the session's saved outputs. */
  fenceHome: string;
  /** The session's id: its saved tool outputs stay readable. */
  sessionId: string;
  /** An autonomous run: it refuses to start without a sandbox unless the sandbox was turned off on purpose. */
  auto?: boolean;
  /** The person agreed to a workspace that is the home folder or above it (see `homeWorkspaceReason`); otherwise `workspace-write` refuses one. */
  wideWorkspace?: 'allowed';
  /** The configuration's commands that run outside the sandbox (see `unsandboxedCommands`): the workspace code they run is protected. */
  unsandboxed?: readonly UnsandboxedCommand[];
  env?: NodeJS.ProcessEnv;
  home?: string;
}

/** The session's sandbox, and a line for the user when it is not what they asked for; or why the run cannot start. */
export type SessionSandbox = { sandbox: OsSandbox; warning?: string } | { error: string };

/**
 * The sandbox of a new session. The mode is `--sandbox`, else the configuration's, else
 * `workspace-write`. Where the machine cannot sandbox, the session goes on without one and
 * `warning` says so and how to fix it, except an `--auto` run, which has nobody watching: it
 * refuses to start unless the sandbox was turned off on purpose (`--sandbox off`, or
 * `mode = "off"` in the user's configuration). A `workspace-write` session in the home folder,
 * `/` or a folder above the home folder is refused with the reason and what to do instead,
 * unless the person agreed to it (`wideWorkspace`).
 */
export function openSessionSandbox(options: SessionSandboxOptions): SessionSandbox {
  const mode = options.mode ?? options.config.mode ?? 'workspace-write';
  const wide = mode === 'workspace-write' && options.wideWorkspace !== 'allowed' ? homeWorkspaceReason(options.workspace, options.home) : undefined;
  if (wide !== undefined) return { error: homeWorkspaceRefusal(resolve(options.workspace), wide) };
  const policy = sessionPolicy({ ...options, mode });
  if (mode === 'off') return { sandbox: noSandbox(policy) };
  const support = sandboxSupport(options.env, join(options.fenceHome, 'sandbox-probe.json'));
  if (support.kind === 'none') {
    if (options.auto) {
      return { error: `no OS sandbox: ${support.reason}. To fix it: ${support.fix}. An --auto run needs one; give --sandbox off to run it without (the model then has your full access)` };
    }
    return { sandbox: noSandbox({ ...policy, replaced: replacedHostFolders('none') }), warning: `fence: no OS sandbox (${support.reason}): commands run with your full access. To fix it: ${support.fix}; --sandbox off silences this` };
  }
  // Mounted readable at spawn, so made now; taken back on close if the session never started.
  const outputs = sessionOutputsDir(options.fenceHome, options.sessionId);
  const made = mkdirSync(outputs, { recursive: true, mode: 0o700 });
  const report = (line: string) => process.stderr.write(`fence: ${line}\n`);
  // Package managers write to a cache folder of fence's own for the workspace, and work offline without a network.
  const packages = sandboxPackageSetup(policy, { env: options.env ?? process.env, ...(options.home ? { home: options.home } : {}), passEnv: options.config.passEnv });
  if (packages.warning !== undefined) report(packages.warning);
  const sandbox = support.kind === 'seatbelt' ? seatbeltSandbox(packages.policy, packages.environment) : bubblewrapSandbox({ ...packages.policy, replaced: replacedHostFolders('bubblewrap') }, support.path, {
        report,
        gitGuardRecords: join(options.fenceHome, 'git-guard'),
        limits: sandboxResourceLimits(options.config),
        environment: packages.environment,
      });
  return {
    sandbox: {
      ...sandbox,
      // The file tools keep to the session's writable paths (the package caches are the package managers'), and
      // find a path under /tmp in the sandbox's own /tmp, as the shell does.
      policy: { ...sandbox.policy, writable: policy.writable, ...(support.kind === 'bubblewrap' && sandbox.tempDir !== undefined ? { privateTmp: sandbox.tempDir } : {}) },
      close() {
        sandbox.close();
        if (made !== undefined) removeIfNeverStarted(outputs, made);
      },
    },
  };
}

/**
 * The host's folders the file tools refuse because the sandbox's processes do not see them
 * (see `SandboxPolicy.replaced`): under bubblewrap, `/tmp`, `/run` and `/proc`, which it mounts
 * afresh; without a sandbox, `/proc` still, whose `self` is fence's own process, with the keys
 * in its environment that the shell's lacks. Seatbelt leaves the Mac's `/tmp` shared.
 */
function replacedHostFolders(kind: 'bubblewrap' | 'none'): string[] {
  return kind === 'bubblewrap' ? ['/tmp', '/run', '/proc'] : ['/proc'];
}

/**
 * Removes the outputs folder made ahead for a session, and the folders made with it, when the
 * session never started (it has no `session.json`) and nothing was written there.
 */
function removeIfNeverStarted(outputs: string, firstMade: string): void {
  const session = dirname(outputs);
  if (existsSync(join(session, 'session.json'))) return;
  for (let path = outputs; path.length >= firstMade.length; path = dirname(path)) {
    try {
      rmdirSync(path);
    } catch {
      return;
    }
  }
}

/**
 * The rules of a session's sandbox: the workspace and the user's `writable` paths are
 * writable; keys, credentials, fence's data (but for this session's outputs) and fence's
 * configuration folder are denied, with the configuration's `deny_read`; the git folders of
 * the repository holding the workspace, when they lie outside it and belong to it, are
 * writable for git's data (see `findEnclosingRepository`); fence's configuration and git's
 * hooks and config in the workspace and in those git folders are protected, and so are the
 * shell, git and desktop start-up files of the home folder that a writable path holds (see
 * `STARTUP_FILES_IN_HOME`), and the workspace code that commands run outside the sandbox (see
 * `unsandboxedCodePaths`).
 */
export function sessionPolicy(options: SessionSandboxOptions & { mode: SandboxMode }): SandboxPolicy {
  const home = options.home ?? homedir();
  const workspace = resolve(options.workspace);
  const place = (path: string) => (path === '~' ? home : path.startsWith('~/') ? join(home, path.slice(2)) : isAbsolute(path) ? resolve(path) : resolve(workspace, path));
  const writable = [workspace, ...options.config.writable.map(place)];
  // Shell, git and desktop start-up files stay read-only when a writable path holds them (the home folder, ~/.config, …).
  const startup = options.mode === 'workspace-write' ? startupFilesWithin(resolve(home), writable) : [];
  // What `sandbox = false` entries run from the workspace: the model must not rewrite code that runs with the user's access.
  const runOutside = options.mode === 'workspace-write' ? unsandboxedCodePaths(options.unsandboxed ?? [], writable) : [];
  const git = existsSync(workspace) ? surveyWorkspaceGit(workspace, { home, env: options.env ?? process.env, writable }) : undefined;
  // The repository holding the workspace keeps its git folders outside it (a monorepo's package, a worktree, a submodule): git writes its data there, its hooks and config stay protected.
  const gitData = git?.repository?.access.writable ? git.repository.gitFolders : [];
  const denied = [...credentialStorePaths(home, options.env ?? process.env), resolve(options.fenceHome), configHome(options.env ?? process.env), ...options.config.denyRead.map(place)];
  // A skill folder a writable path could create is held read-only, so none is planted for a later session.
  const missingSkills = options.mode === 'workspace-write' ? unwrittenSkillFolders({ home, env: options.env ?? process.env, writable, denied }) : [];
  return {
    mode: options.mode,
    workspace,
    writable: [...writable, ...gitData],
    denied,
    // The user's skills: readable and run, never written (see `readOnlySkillFolders`).
    readable: [sessionOutputsDir(resolve(options.fenceHome), options.sessionId), ...readOnlySkillFolders({ home, env: options.env ?? process.env, workspace, denied })],
    protected: [...(git ? workspaceProtectedPaths(workspace, git) : []), ...startup, ...runOutside, ...missingSkills],
    network: options.config.network,
    ...(git ? { git } : {}),
  };
}

/** How a session's sandbox is named to the user and in its log: `workspace-write (bubblewrap)`, `off`, `none available`. */
export function describeSandbox(sandbox: OsSandbox): string {
  if (sandbox.policy.mode === 'off') return 'off';
  return sandbox.kind === 'none' ? `${sandbox.policy.mode}, but none available` : `${sandbox.policy.mode} (${sandbox.kind})`;
}
