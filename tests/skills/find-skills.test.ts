import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findSkills } from '../../src/skills/find-skills';
import { skillRoots, userSkillRoots } from '../../src/skills/skill-roots';
import { readOnlySkillFolders, unwrittenSkillFolders } from '../../src/skills/skill-sandbox-folders';
import { LISTED_SKILLS, skillsSection } from '../../src/skills/skills-prompt';

const PUBLISHED = join(import.meta.dirname, '..', 'fixtures', 'published-skills');

let root: string;
let home: string;
let env: NodeJS.ProcessEnv;
let workspace: string;

beforeEach(() => {
  root = mkdtempSync('/var/tmp/fence-skills-test-');
  home = join(root, 'home');
  workspace = join(root, 'work');
  env = { XDG_CONFIG_HOME: join(root, 'config') };
  mkdirSync(workspace, { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Writes a skill `name` in `folder` with a valid front matter (or `text`). */
function writeSkill(folder: string, name: string, text = `---\nname: ${name}\ndescription: The ${name} skill.\n---\nBody of ${name}.\n`): string {
  mkdirSync(join(folder, name), { recursive: true });
  writeFileSync(join(folder, name, 'SKILL.md'), text);
  return join(folder, name);
}

describe('findSkills', () => {
  it("takes a name from the project first, then fence's folder, ~/.agents, ~/.claude, and keeps the others as shadowed", async () => {
    const [fence, agents, claude] = userSkillRoots({ home, env }).map((r) => r.folder) as [string, string, string];
    expect(fence).toBe(join(root, 'config', 'fence', 'skills'));
    expect(agents).toBe(join(home, '.agents', 'skills'));
    expect(claude).toBe(join(home, '.claude', 'skills'));
    const project = join(workspace, '.fence', 'skills');
    writeSkill(claude, 'shared');
    writeSkill(agents, 'shared');
    writeSkill(fence, 'shared');
    writeSkill(project, 'shared');
    writeSkill(claude, 'only-claude');
    cpSync(join(PUBLISHED, 'webapp-testing'), join(agents, 'webapp-testing'), { recursive: true });

    const catalog = await findSkills(skillRoots({ workspace, project: true, home, env }), workspace);
    expect(catalog.problems).toEqual([]);
    expect(catalog.skills.map((s) => [s.name, s.scope])).toEqual([
      ['only-claude', 'claude'],
      ['shared', 'project'],
      ['webapp-testing', 'agents'],
    ]);
    expect(catalog.skills[2]?.file).toBe(join(agents, 'webapp-testing', 'SKILL.md'));
    expect(catalog.shadowed.map(({ skill, by }) => [skill.scope, by.scope])).toEqual([
      ['fence', 'project'],
      ['agents', 'project'],
      ['claude', 'project'],
    ]);

    const untrusted = await findSkills(skillRoots({ workspace, project: false, home, env }), workspace);
    expect(untrusted.skills.find((s) => s.name === 'shared')?.scope).toBe('fence');
  });

  it('leaves out a malformed skill with one line and still finds the others', async () => {
    const claude = join(home, '.claude', 'skills');
    writeSkill(claude, 'good-one');
    writeSkill(claude, 'no-description', '---\nname: no-description\n---\nBody\n');
    writeSkill(claude, 'Wrong-Case', '---\nname: Wrong-Case\ndescription: x\n---\n');
    mkdirSync(join(claude, 'folder-as-file', 'SKILL.md'), { recursive: true });
    mkdirSync(join(claude, 'no-skill-file'));
    writeFileSync(join(claude, 'README.md'), 'not a skill');
    const catalog = await findSkills(userSkillRoots({ home, env }));
    expect(catalog.skills.map((s) => s.name)).toEqual(['good-one']);
    expect(catalog.problems).toEqual([
      `skill ${join(claude, 'Wrong-Case', 'SKILL.md')} is left out: its name "Wrong-Case" is not lowercase letters, digits and single hyphens`,
      `skill ${join(claude, 'folder-as-file', 'SKILL.md')} is left out: it is a folder, not a regular file`,
      `skill ${join(claude, 'no-description', 'SKILL.md')} is left out: its front matter has no description`,
    ]);
  });

  it('keeps a skill whose description is over the limit, with a note', async () => {
    const agents = join(home, '.agents', 'skills');
    writeSkill(agents, 'wordy', `---\nname: wordy\ndescription: ${'long '.repeat(300)}\n---\n`);
    const catalog = await findSkills(userSkillRoots({ home, env }));
    expect(catalog.problems).toEqual([]);
    expect(catalog.skills.map((s) => [s.name, s.notes])).toEqual([['wordy', ["its description is longer than 1024 characters, the format's limit"]]]);
  });

  it("follows a link in the user's folders, but not a project's skill that leads outside the workspace", async () => {
    const elsewhere = writeSkill(join(root, 'elsewhere'), 'linked');
    mkdirSync(join(home, '.agents', 'skills'), { recursive: true });
    symlinkSync(elsewhere, join(home, '.agents', 'skills', 'linked'));
    const project = join(workspace, '.fence', 'skills');
    mkdirSync(join(project, 'outside-file'), { recursive: true });
    symlinkSync(join(elsewhere, 'SKILL.md'), join(project, 'outside-file', 'SKILL.md'));
    symlinkSync(elsewhere, join(project, 'outside-folder'));
    const inside = writeSkill(join(workspace, 'docs'), 'inside');
    symlinkSync(inside, join(project, 'inside'));

    const catalog = await findSkills(skillRoots({ workspace, project: true, home, env }), workspace);
    expect(catalog.skills.map((s) => [s.name, s.scope])).toEqual([
      ['inside', 'project'],
      ['linked', 'agents'],
    ]);
    expect(catalog.problems).toEqual([
      `skill ${join(project, 'outside-file', 'SKILL.md')} is left out: it leads outside the workspace`,
      `skill ${join(project, 'outside-folder', 'SKILL.md')} is left out: it leads outside the workspace`,
    ]);
  });

  it('reads at most 200 skill folders from one folder, and says how many it left', async () => {
    const agents = join(home, '.agents', 'skills');
    for (let i = 0; i < 205; i += 1) writeSkill(agents, `s-${String(i).padStart(3, '0')}`);
    const catalog = await findSkills(userSkillRoots({ home, env }));
    expect(catalog.skills).toHaveLength(200);
    expect(catalog.skills.at(-1)?.name).toBe('s-199');
    expect(catalog.problems).toEqual([`skills in ${agents} past the first 200 (of 205) are left out`]);
  });

  it('finds nothing, and reads nothing, where there are no skill folders', async () => {
    expect(await findSkills(skillRoots({ workspace, project: true, home, env }), workspace)).toEqual({ skills: [], shadowed: [], problems: [] });
  });
});

describe('skillsSection', () => {
  it('is absent without skills, and lists names, descriptions and paths, not bodies', async () => {
    expect(skillsSection([])).toBeUndefined();
    const claude = join(home, '.claude', 'skills');
    cpSync(join(PUBLISHED, 'brand-guidelines'), join(claude, 'brand-guidelines'), { recursive: true });
    const { skills } = await findSkills(userSkillRoots({ home, env }));
    const section = skillsSection(skills) ?? '';
    expect(section).toContain(`- brand-guidelines: Applies Anthropic's official brand colors and typography`);
    expect(section).toContain(`(${join(claude, 'brand-guidelines', 'SKILL.md')})`);
    expect(section).toContain('read its SKILL.md');
    expect(section).not.toContain('Anthropic Brand Styling');
  });

  it(`lists at most ${LISTED_SKILLS} skills with descriptions cut to one short line, and counts the rest`, async () => {
    const claude = join(home, '.claude', 'skills');
    for (let i = 0; i < LISTED_SKILLS + 7; i += 1) {
      const name = `skill-${String(i).padStart(3, '0')}`;
      writeSkill(claude, name, `---\nname: ${name}\ndescription: |\n  ${'word '.repeat(150)}\n  second line\n---\n`);
    }
    const { skills } = await findSkills(userSkillRoots({ home, env }));
    const section = skillsSection(skills) ?? '';
    const lines = section.split('\n');
    expect(lines.filter((line) => line.startsWith('- '))).toHaveLength(LISTED_SKILLS);
    expect(lines.at(-1)).toBe('7 more skills are not listed here (fence skills list shows all).');
    const first = lines[1] ?? '';
    expect(first.slice(0, first.indexOf(' ('))).toMatch(/^- skill-000: (word ){10,}.*…$/);
    expect(first.length).toBeLessThan(200 + 200);
  });
});

describe('readOnlySkillFolders', () => {
  const denied = () => [join(home, '.ssh'), join(home, '.claude'), join(root, 'config', 'fence')];

  it('is empty when no skill folder exists', () => {
    expect(readOnlySkillFolders({ home, env, workspace, denied: denied() })).toEqual([]);
  });

  it("gives the user's skill folders and where their linked skills lead, never a denied path", () => {
    const claude = join(home, '.claude', 'skills');
    const fence = join(root, 'config', 'fence', 'skills');
    writeSkill(claude, 'plain');
    writeSkill(fence, 'own');
    const elsewhere = writeSkill(join(root, 'elsewhere'), 'linked');
    symlinkSync(elsewhere, join(claude, 'linked'));
    mkdirSync(join(home, '.ssh', 'keys'), { recursive: true });
    symlinkSync(join(home, '.ssh', 'keys'), join(claude, 'into-ssh'));
    mkdirSync(join(home, '.agents'), { recursive: true });
    symlinkSync(home, join(home, '.agents', 'skills'));
    expect(readOnlySkillFolders({ home, env, workspace, denied: denied() }).sort()).toEqual([claude, join(claude, 'linked'), elsewhere, fence].sort());
  });

  it('leaves out a skill folder that holds the workspace', () => {
    const agents = join(home, '.agents', 'skills');
    writeSkill(agents, 'mine');
    expect(readOnlySkillFolders({ home, env, workspace: join(agents, 'mine'), denied: denied() })).toEqual([]);
  });
});

describe('unwrittenSkillFolders', () => {
  const denied = () => [join(home, '.claude'), join(root, 'config', 'fence')];

  it('gives a missing skill folder that a writable path holds, not one in a denied path nor one that exists', () => {
    mkdirSync(join(home, '.agents'), { recursive: true });
    expect(unwrittenSkillFolders({ home, env, writable: [workspace], denied: denied() })).toEqual([]);
    expect(unwrittenSkillFolders({ home, env, writable: [workspace, join(home, '.agents')], denied: denied() })).toEqual([join(home, '.agents', 'skills')]);
    expect(unwrittenSkillFolders({ home, env, writable: [home, root], denied: denied() })).toEqual([join(home, '.agents', 'skills')]);
    mkdirSync(join(home, '.agents', 'skills'));
    expect(unwrittenSkillFolders({ home, env, writable: [home], denied: denied() })).toEqual([]);
  });

  it('follows a writable path given through a link', () => {
    mkdirSync(join(home, '.agents'), { recursive: true });
    symlinkSync(join(home, '.agents'), join(root, 'agents-link'));
    expect(unwrittenSkillFolders({ home, env, writable: [join(root, 'agents-link')], denied: denied() })).toEqual([join(home, '.agents', 'skills')]);
  });
});
