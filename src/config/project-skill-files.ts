import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The folder of a workspace's skills, used only when the workspace is trusted. */
export const PROJECT_SKILLS_DIR = join('.fence', 'skills');

/** Most skill folders read from one folder of skills (and, in a workspace's, hashed for trust); the rest are left out. */
export const MAX_SKILL_FOLDERS = 200;

/**
 * The `SKILL.md` of each folder in the workspace's `.fence/skills/`, by its path in the
 * workspace (`.fence/skills/<name>/SKILL.md`), sorted, at most `MAX_SKILL_FOLDERS`: the files
 * trust covers for the project's skills. Lists the folder only; whether each file exists is
 * for the reader. None when there is no such folder.
 */
export function projectSkillFiles(workspace: string): string[] {
  let names: string[];
  try {
    names = readdirSync(join(workspace, PROJECT_SKILLS_DIR));
  } catch {
    return [];
  }
  return names
    .filter((name) => !name.startsWith('.'))
    .sort()
    .slice(0, MAX_SKILL_FOLDERS)
    .map((name) => join(PROJECT_SKILLS_DIR, name, 'SKILL.md'));
}

/** The names of the folders of the workspace's `.fence/skills/` that hold a `SKILL.md`, sorted. */
export function projectSkillNames(workspace: string): string[] {
  return projectSkillFiles(workspace)
    .filter((path) => existsSync(join(workspace, path)))
    .map((path) => path.split(/[\\/]/).at(-2) ?? path);
}
