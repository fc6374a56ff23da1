import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { isWithin, realPathOf } from '../os-sandbox/policy';

/**
 * Why `workspace` is too wide to be made writable, or undefined: it is the home folder, `/`,
 * or a folder above the home folder (both compared by their real paths too). Making it
 * writable would hand every dotfile to what the model runs — shell start-up files, git's
 * configuration, `~/.local/bin` — and everything of the user's beside the project.
 */
export function homeWorkspaceReason(workspace: string, home: string = homedir()): string | undefined {
  const place = resolve(workspace);
  const real = realPathOf(place);
  const homes = [resolve(home), realPathOf(resolve(home))];
  if (place === '/' || real === '/') return 'it is the root folder /';
  if (homes.includes(place) || homes.includes(real)) return 'it is your home folder';
  if (homes.some((folder) => isWithin(folder, place) || isWithin(folder, real))) return 'it holds your home folder';
  return undefined;
}

/**
 * The error of a run refused for a workspace too wide (see `homeWorkspaceReason`): the reason,
 * and what to do instead.
 */
export function homeWorkspaceRefusal(workspace: string, reason: string): string {
  return (
    `the workspace ${workspace} cannot be made writable: ${reason}, so what the model runs could change your shell's start-up files, ` +
    "git's configuration and everything else there. cd into a project folder (or give -w <folder>), or use --sandbox read-only"
  );
}
