import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Whether a git folder could make git run a program: a config key outside a short list of
 * harmless ones (`core.fsmonitor`, `core.hooksPath`, `core.pager`, a filter, an alias, an
 * `include`…), or a hook that is not one of git's `*.sample` files. Used on git folders made
 * inside the sandbox, which it could not guard; git itself reads the config, so no quirk of
 * its syntax reads differently here.
 */

/** Config keys (as `git config --list` prints them, section and name in lower case) that run nothing. */
const HARMLESS_KEYS = new Set([
  'core.repositoryformatversion',
  'core.filemode',
  'core.bare',
  'core.logallrefupdates',
  'core.ignorecase',
  'core.precomposeunicode',
  'core.symlinks',
  'core.worktree',
  'core.autocrlf',
  'core.eol',
  'core.safecrlf',
  'init.defaultbranch',
  'user.name',
  'user.email',
  'extensions.objectformat',
]);

/** Keys with a subsection (`remote.<name>.url`) that run nothing: section and name. */
const HARMLESS_NAMED_KEYS: Record<string, readonly string[]> = {
  remote: ['url', 'fetch', 'pushurl'],
  branch: ['remote', 'merge'],
  submodule: ['url', 'active'],
};

/**
 * Why git could run a program from the git folder `folder`, in a few words
 * (`config sets core.fsmonitor`, `hooks/pre-commit`), or undefined when it could not.
 * A config git cannot read, or that is a link, counts as a risk: it cannot be judged.
 */
export function gitFolderRisk(folder: string): string | undefined {
  return configRisk(join(folder, 'config')) ?? hooksRisk(join(folder, 'hooks'));
}

function configRisk(file: string): string | undefined {
  const kind = entryKind(file);
  if (kind === 'none') return undefined;
  if (kind !== 'file') return 'config is not a plain file';
  const listed = spawnSync('git', ['config', '--file', file, '--no-includes', '--null', '--list'], {
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    stdio: ['ignore', 'pipe', 'ignore'],
    timeout: 10_000,
  });
  if (listed.status !== 0) return 'config git cannot read';
  for (const item of listed.stdout.split('\0')) {
    if (item === '') continue;
    const key = item.split('\n', 1)[0] ?? '';
    if (!harmlessKey(key)) return `config sets ${key}`;
  }
  return undefined;
}

function harmlessKey(key: string): boolean {
  if (HARMLESS_KEYS.has(key)) return true;
  const first = key.indexOf('.');
  const last = key.lastIndexOf('.');
  if (first === last) return false;
  return HARMLESS_NAMED_KEYS[key.slice(0, first)]?.includes(key.slice(last + 1)) ?? false;
}

function hooksRisk(folder: string): string | undefined {
  const kind = entryKind(folder);
  if (kind === 'none') return undefined;
  if (kind !== 'folder') return 'hooks is not a plain folder';
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return 'hooks cannot be read';
  }
  const hook = names.find((name) => !name.endsWith('.sample'));
  return hook === undefined ? undefined : `hooks/${hook}`;
}

function entryKind(path: string): 'none' | 'file' | 'folder' | 'other' {
  try {
    const stat = lstatSync(path);
    return stat.isFile() ? 'file' : stat.isDirectory() ? 'folder' : 'other';
  } catch {
    return 'none';
  }
}
