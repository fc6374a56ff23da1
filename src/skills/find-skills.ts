import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { MAX_SKILL_FOLDERS } from '../config/project-skill-files';
import { describeUnread, readRegularFile } from '../config/regular-file';
import { readSkillText, type SkillFields } from './skill-file';
import type { SkillRoot, SkillScope } from './skill-roots';

/** Largest `SKILL.md` read; a larger one is left out with a problem. */
export const SKILL_FILE_LIMIT_BYTES = 1024 * 1024;

/** A skill found in one of the skill folders. */
export interface Skill extends SkillFields {
  scope: SkillScope;
  /** The skill folder it was found in (see `SkillRoot`). */
  root: string;
  /** Its own folder, `<root>/<name>`, as found (not resolved). */
  folder: string;
  /** Its `SKILL.md`, `<folder>/SKILL.md`: what the model reads to use it. */
  file: string;
  /** What it does not follow of the format, though it is used (see `SkillFileReading`). */
  notes?: string[];
}

/** A skill left out because one of the same name comes first. */
export interface ShadowedSkill {
  skill: Skill;
  /** The skill used in its place. */
  by: Skill;
}

/** What the skill folders hold: the skills used (sorted by name), those shadowed, and a line per skill left out. */
export interface SkillCatalog {
  skills: Skill[];
  shadowed: ShadowedSkill[];
  /** One line each, `skill <path> is left out: <why>` (no `fence:` prefix). */
  problems: string[];
}

/**
 * Finds the skills of `roots` (first taken first, see `skillRoots`): each folder in a root
 * that holds a `SKILL.md` whose front matter is valid (see `readSkillText`). A folder without
 * `SKILL.md`, or an entry that is not a folder, is not a skill and is passed over in silence;
 * a `SKILL.md` that is not a regular file, is over `SKILL_FILE_LIMIT_BYTES`, or whose front
 * matter is wrong is left out with one line in `problems`. In the user's folders a skill's
 * folder may be a link (an installed skill linked in); in the project's, a folder or
 * `SKILL.md` that leads outside the workspace is left out, since trust covers the workspace's
 * files only. A name already taken by an earlier root is recorded in `shadowed`. At most
 * `MAX_SKILL_FOLDERS` folders are read from each root, with a line for the rest. Never
 * throws.
 */
export async function findSkills(roots: readonly SkillRoot[], workspace?: string): Promise<SkillCatalog> {
  const catalog: SkillCatalog = { skills: [], shadowed: [], problems: [] };
  const taken = new Map<string, Skill>();
  const realWorkspace = workspace === undefined ? undefined : realPath(workspace);
  for (const root of roots) {
    const names = listFolder(root.folder);
    if (names.length > MAX_SKILL_FOLDERS) {
      catalog.problems.push(`skills in ${root.folder} past the first ${MAX_SKILL_FOLDERS} (of ${names.length}) are left out`);
    }
    for (const name of names.slice(0, MAX_SKILL_FOLDERS)) {
      const folder = join(root.folder, name);
      if (!isFolder(folder)) continue;
      const file = join(folder, 'SKILL.md');
      const leftOut = (why: string) => catalog.problems.push(`skill ${file} is left out: ${why}`);
      if (root.scope === 'project' && realWorkspace !== undefined && [folder, file].some((path) => leadsOutside(path, realWorkspace))) {
        leftOut('it leads outside the workspace');
        continue;
      }
      const read = readRegularFile(file, SKILL_FILE_LIMIT_BYTES, 'follow');
      if (read.kind === 'absent') continue;
      if (read.kind !== 'read') {
        leftOut(describeUnread(read));
        continue;
      }
      const reading = await readSkillText(read.bytes.toString('utf8'), name);
      if (reading.kind === 'problem') {
        leftOut(reading.problem);
        continue;
      }
      const skill: Skill = { ...reading.fields, scope: root.scope, root: root.folder, folder, file, ...(reading.notes ? { notes: reading.notes } : {}) };
      const first = taken.get(skill.name);
      if (first) catalog.shadowed.push({ skill, by: first });
      else taken.set(skill.name, skill);
    }
  }
  catalog.skills = [...taken.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return catalog;
}

/** The entries of `folder` that do not start with a dot, sorted; none when it cannot be listed. */
function listFolder(folder: string): string[] {
  try {
    return readdirSync(folder)
      .filter((name) => !name.startsWith('.'))
      .sort();
  } catch {
    return [];
  }
}

/** Whether `path` is a folder, following links. */
function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function realPath(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

/** Whether `path` exists and its real path lies outside `realRoot`. */
function leadsOutside(path: string, realRoot: string): boolean {
  let real: string;
  try {
    real = realpathSync.native(path);
  } catch {
    return false;
  }
  return !isWithin(real, realRoot);
}

function isWithin(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}
