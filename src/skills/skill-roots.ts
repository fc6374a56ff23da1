import { homedir } from 'node:os';
import { join } from 'node:path';
import { configHome } from '../config/paths';
import { PROJECT_SKILLS_DIR } from '../config/project-skill-files';

/**
 * Where a skill comes from, in the order a name is taken (the first wins): the trusted
 * project's `.fence/skills/`, fence's own `skills/` in its configuration folder, then the
 * folders other agents of the machine read, `~/.agents/skills` and `~/.claude/skills`.
 */
export type SkillScope = 'project' | 'fence' | 'agents' | 'claude';

/** A folder of skill folders, with where it stands among them. */
export interface SkillRoot {
  scope: SkillScope;
  /** Absolute path of the folder that holds one folder per skill. */
  folder: string;
}

/** Where the skill folders are found: the home folder and the environment (for fence's configuration folder). */
export interface SkillRootOptions {
  home?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * The user's skill folders, first taken first: fence's own (`$XDG_CONFIG_HOME/fence/skills`,
 * else `~/.config/fence/skills`, see `configHome`), `~/.agents/skills`, `~/.claude/skills`.
 * Whether each exists is for the reader.
 */
export function userSkillRoots(options: SkillRootOptions = {}): SkillRoot[] {
  const home = options.home ?? homedir();
  return [
    { scope: 'fence', folder: join(configHome(options.env ?? process.env), 'skills') },
    { scope: 'agents', folder: join(home, '.agents', 'skills') },
    { scope: 'claude', folder: join(home, '.claude', 'skills') },
  ];
}

/**
 * Every skill folder of a session, first taken first: the workspace's `.fence/skills/` when
 * `project` says its own configuration may be used (trusted, see `isUsable`), then the user's
 * (see `userSkillRoots`).
 */
export function skillRoots(options: SkillRootOptions & { workspace: string; project: boolean }): SkillRoot[] {
  const project: SkillRoot[] = options.project ? [{ scope: 'project', folder: join(options.workspace, PROJECT_SKILLS_DIR) }] : [];
  return [...project, ...userSkillRoots(options)];
}
