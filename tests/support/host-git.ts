import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { SandboxRig } from './sandbox-rig';

/** Who commits, for git inside the sandbox and on the host; no system config. */
export const GIT_AUTHOR = {
  GIT_AUTHOR_NAME: 'Fence Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Fence Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  GIT_CONFIG_NOSYSTEM: '1',
};

/** The file a command the model planted for git makes when it runs: it must never exist. */
export const modelCodeMarker = (rig: SandboxRig) => join(rig.outside, 'model-code-ran');

/** A `core.fsmonitor` value that runs the model's command. */
export const fsmonitorCommand = (rig: SandboxRig) => `touch ${modelCodeMarker(rig)}; false`;

/** Runs git on the host as the person would, in the rig's fake home, with `env` added. */
export function hostGit(rig: SandboxRig, cwd: string, args: string[], env: Record<string, string> = {}) {
  return spawnSync('git', args, { cwd, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: rig.home, ...GIT_AUTHOR, ...env } });
}
