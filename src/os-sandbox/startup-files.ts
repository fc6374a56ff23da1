import { join } from 'node:path';
import { isWithin, realPathOf } from './policy';

/**
 * Files and folders of the home folder that programs run later, outside any sandbox, read as
 * code or as settings that run code: the shells' start-up files, git's configuration (its
 * aliases, hooks path, pager and filters run commands), readline's, the desktop's autostart
 * entries, user services, the folder of the user's own commands on `PATH`, and ssh's `rc`.
 * Relative to the home folder. Kept read-only whenever a writable path of the sandbox holds
 * them (see `startupFilesWithin`), so nothing the model runs can leave code there.
 */
export const STARTUP_FILES_IN_HOME: readonly string[] = [
  '.bashrc',
  '.bash_profile',
  '.bash_login',
  '.bash_logout',
  '.profile',
  '.zshrc',
  '.zshenv',
  '.zprofile',
  '.zlogin',
  '.zlogout',
  '.kshrc',
  '.cshrc',
  '.tcshrc',
  '.config/fish',
  '.config/nushell',
  '.gitconfig',
  '.config/git',
  '.inputrc',
  '.xprofile',
  '.xinitrc',
  '.xsession',
  '.config/autostart',
  '.config/environment.d',
  '.config/systemd/user',
  '.local/bin',
  '.ssh/rc',
  '.pam_environment',
];

/**
 * The start-up paths of `home` (absolute) that lie inside one of `writable` (absolute,
 * normalised), judged by the paths as written and by their real paths, so a writable root
 * reached through a link still counts. What `sessionPolicy` adds to the protected paths: with
 * the workspace `~/project`, none; with `~` or `~/.config` writable, those under it.
 */
export function startupFilesWithin(home: string, writable: readonly string[]): string[] {
  const roots = [...new Set(writable.flatMap((root) => [root, realPathOf(root)]))];
  return STARTUP_FILES_IN_HOME.map((path) => join(home, path)).filter((path) => {
    const real = realPathOf(path);
    return roots.some((root) => isWithin(path, root) || isWithin(real, root));
  });
}
