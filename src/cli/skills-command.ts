import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fenceHome } from '../config/paths';
import { PROJECT_SKILLS_DIR, projectSkillFiles } from '../config/project-skill-files';
import { describeUnread, readRegularFile } from '../config/regular-file';
import { isUsable, workspaceTrust } from '../config/trust';
import { visibleLine, visibleText } from '../processes/visible-text';
import { findSkills, SKILL_FILE_LIMIT_BYTES, type Skill, type SkillCatalog } from '../skills/find-skills';
import { skillRoots } from '../skills/skill-roots';
import { resolveWorkspace } from '../session/workspace';

/** Options of `fence skills list` and `show`: the workspace whose `.fence/skills/` counts when trusted. */
export interface SkillsOptions {
  workspace?: string;
}

/** Longest description shown on a line of `fence skills list`. */
const LISTED_CHARS = 160;

/** Most files beside a `SKILL.md` that `fence skills show` names. */
const SHOWN_FILES = 200;

type Out = (line: string) => void;

const stdout: Out = (line) => process.stdout.write(`${line}\n`);

/**
 * `fence skills list [-w dir]`: every skill a session in the workspace would list (name,
 * folder, description on one line), those shadowed by a skill of the same name found first,
 * the skills left out and why, and a line when the project's skills wait for trust. Exit code
 * 0, or 1 with one line on stderr when the workspace is unusable.
 */
export async function listSkillsCommand(options: SkillsOptions, out: Out = stdout): Promise<number> {
  const found = await catalogFor(options);
  if ('error' in found) return fail(found.error);
  const { catalog, waiting } = found;
  if (catalog.skills.length === 0 && catalog.shadowed.length === 0) {
    out(`no skills (fence looks in ${found.roots.join(', ')})`);
  }
  for (const skill of catalog.skills) {
    out(`${skill.name}  ${visibleLine(skill.root)}`);
    out(`  ${visibleLine(cut(skill.description.replace(/\s+/g, ' '), LISTED_CHARS))}`);
    for (const note of skill.notes ?? []) out(`  note: ${note}`);
  }
  for (const { skill, by } of catalog.shadowed) {
    out(`${skill.name}  ${visibleLine(skill.root)}  (shadowed by the one in ${visibleLine(by.root)})`);
  }
  if (catalog.problems.length > 0) {
    out('problems:');
    for (const problem of catalog.problems) out(`  ${visibleLine(problem)}`);
  }
  if (waiting) out(waiting);
  return 0;
}

/**
 * `fence skills show <name> [-w dir]`: the skill's `SKILL.md` whole, then the files beside it
 * (its scripts and resources, up to `SHOWN_FILES`). A name that no skill has is one line on
 * stderr and exit code 1.
 */
export async function showSkillCommand(name: string, options: SkillsOptions, out: Out = stdout): Promise<number> {
  const found = await catalogFor(options);
  if ('error' in found) return fail(found.error);
  const skill = found.catalog.skills.find((candidate) => candidate.name === name);
  if (!skill) {
    const known = found.waiting ? ` ${found.waiting}` : '';
    return fail(`no skill is named ${JSON.stringify(name)} (fence skills list shows them).${known}`);
  }
  const read = readRegularFile(skill.file, SKILL_FILE_LIMIT_BYTES, 'follow');
  if (read.kind !== 'read') return fail(`cannot show ${skill.file}: ${describeUnread(read)}`);
  out(`${visibleLine(skill.file)}`);
  out('');
  // The file is someone's text: shown, never acted on by the terminal.
  out(visibleText(read.bytes.toString('utf8')).trimEnd());
  const files = filesBeside(skill);
  if (files.length > 0) {
    out('');
    out(`files beside it in ${visibleLine(skill.folder)}:`);
    for (const file of files.slice(0, SHOWN_FILES)) out(`  ${visibleLine(file)}`);
    if (files.length > SHOWN_FILES) out(`  … and ${files.length - SHOWN_FILES} more`);
  }
  return 0;
}

/** The skills of the workspace's session, the folders looked in, and a line when the project's skills wait for trust. */
async function catalogFor(options: SkillsOptions): Promise<{ catalog: SkillCatalog; roots: string[]; waiting?: string } | { error: string }> {
  const workspace = resolveWorkspace(options.workspace);
  if ('error' in workspace) return workspace;
  const trust = workspaceTrust(workspace.path, fenceHome());
  const project = isUsable(trust);
  const roots = skillRoots({ workspace: workspace.path, project });
  const catalog = await findSkills(roots, workspace.path);
  const waiting =
    !project && projectSkillFiles(workspace.path).length > 0
      ? `the project's ${PROJECT_SKILLS_DIR}/ is not used: ${trust.state === 'changed' ? 'its files changed since you trusted this folder' : 'this folder is not trusted'} (fence trust lets it in)`
      : undefined;
  return { catalog, roots: roots.map((root) => root.folder), ...(waiting ? { waiting } : {}) };
}

/** The files in a skill's folder but its `SKILL.md`, by their path in it, sorted. Links are not followed into. */
function filesBeside(skill: Skill): string[] {
  try {
    return readdirSync(skill.folder, { recursive: true, withFileTypes: true })
      .filter((entry) => !entry.isDirectory())
      .map((entry) => relative(skill.folder, join(entry.parentPath, entry.name)))
      .filter((path) => path !== 'SKILL.md')
      .sort();
  } catch {
    return [];
  }
}

/** `text` cut to `chars` characters, with `…`. */
function cut(text: string, chars: number): string {
  const all = [...text.trim()];
  return all.length <= chars ? all.join('') : `${all.slice(0, chars - 1).join('').trimEnd()}…`;
}

function fail(line: string): number {
  process.stderr.write(`fence: ${visibleLine(line)}\n`);
  return 1;
}
