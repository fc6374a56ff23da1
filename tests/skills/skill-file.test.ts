import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkFields, frontMatterOf, readSkillText } from '../../src/skills/skill-file';

const PUBLISHED = join(import.meta.dirname, '..', 'fixtures', 'published-skills');

/** A SKILL.md with the given front matter lines and a body. */
const skillText = (...lines: string[]) => ['---', ...lines, '---', '', '# Body', 'Do the thing.'].join('\n');

describe('a SKILL.md', () => {
  it('of each published skill is read with its name, description and license', async () => {
    const names = readdirSync(PUBLISHED, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    expect(names.length).toBeGreaterThanOrEqual(2);
    for (const name of names) {
      const reading = await readSkillText(readFileSync(join(PUBLISHED, name, 'SKILL.md'), 'utf8'), name);
      expect(reading).toMatchObject({ kind: 'skill', fields: { name, license: 'Complete terms in LICENSE.txt' } });
      if (reading.kind === 'skill') expect(reading.fields.description.length).toBeGreaterThan(50);
    }
  });

  it('keeps the optional fields of the format', async () => {
    const text = skillText('name: pdf-forms', 'description: Fills PDF forms.', 'license: MIT', 'compatibility: needs python3', 'allowed-tools: Bash(python3:*) Read', 'metadata:', '  author: someone', '  version: 2');
    expect(await readSkillText(text, 'pdf-forms')).toEqual({
      kind: 'skill',
      fields: { name: 'pdf-forms', description: 'Fills PDF forms.', license: 'MIT', compatibility: 'needs python3', allowedTools: 'Bash(python3:*) Read', metadata: { author: 'someone', version: '2' } },
    });
  });

  it('may start with a byte order mark and use CRLF line endings', async () => {
    const text = `\uFEFF${skillText('name: crlf-skill', 'description: Written on Windows.').replace(/\n/g, '\r\n')}`;
    expect(await readSkillText(text, 'crlf-skill')).toEqual({ kind: 'skill', fields: { name: 'crlf-skill', description: 'Written on Windows.' } });
  });

  it('takes a multi-line description as YAML folds it', async () => {
    const text = skillText('name: folded', 'description: >', '  First part,', '  second part.');
    expect(await readSkillText(text, 'folded')).toMatchObject({ kind: 'skill', fields: { description: 'First part, second part.' } });
  });

  it.each([
    ['no front matter', '# Just markdown\nname: x', 'it does not start with front matter (a --- line, then name and description, then ---)'],
    ['an unclosed front matter', '---\nname: x\ndescription: y\n', 'its front matter has no closing --- line'],
    ['no name', skillText('description: Something.'), 'its front matter has no name'],
    ['no description', skillText('name: the-skill'), 'its front matter has no description'],
    ['an empty description', skillText('name: the-skill', 'description: "  "'), 'its description is empty'],
    ['a name that is not text', skillText('name: 42', 'description: x'), 'its name is not text'],
    ['a list for front matter', '---\n- a\n- b\n---\n', 'its front matter is not a set of key: value lines'],
    ['an empty front matter', '---\n---\nbody', 'its front matter is not a set of key: value lines'],
    ['capitals in the name', skillText('name: The-Skill', 'description: x'), 'its name "The-Skill" is not lowercase letters, digits and single hyphens'],
    ['a doubled hyphen', skillText('name: the--skill', 'description: x'), 'its name "the--skill" is not lowercase letters, digits and single hyphens'],
    ['a leading hyphen', skillText('name: -the-skill', 'description: x'), 'its name "-the-skill" is not lowercase letters, digits and single hyphens'],
    ['a name unlike its folder', skillText('name: other-name', 'description: x'), 'its name "other-name" is not its folder\'s name "the-skill"'],
    ['metadata that is a list', skillText('name: the-skill', 'description: x', 'metadata: [a, b]'), 'its metadata is not a set of key: value lines'],
    ['a license that is a map', skillText('name: the-skill', 'description: x', 'license: {a: 1}'), 'its license is not text'],
  ])('with %s gives one clear problem', async (_case, text, problem) => {
    expect(await readSkillText(text, 'the-skill')).toEqual({ kind: 'problem', problem });
  });

  it('with a name too long gives a problem, with a description too long a note', async () => {
    const long = 'a'.repeat(65);
    expect(await readSkillText(skillText(`name: ${long}`, 'description: x'), long)).toEqual({ kind: 'problem', problem: 'its name is longer than 64 characters' });
    // Over the format's limit, a description is kept with a note: a published skill (claude-api) has one.
    expect(await readSkillText(skillText('name: s', `description: ${'d'.repeat(1025)}`), 's')).toEqual({
      kind: 'skill',
      fields: { name: 's', description: 'd'.repeat(1025) },
      notes: ["its description is longer than 1024 characters, the format's limit"],
    });
    expect(await readSkillText(skillText('name: s', `description: ${'d'.repeat(1024)}`), 's')).toEqual({ kind: 'skill', fields: { name: 's', description: 'd'.repeat(1024) } });
  });

  it('with YAML that does not parse gives its first line, never a throw', async () => {
    const reading = await readSkillText(skillText('name: the-skill', 'description: Use when: the user asks'), 'the-skill');
    expect(reading.kind).toBe('problem');
    if (reading.kind === 'problem') {
      expect(reading.problem).toMatch(/^its front matter is not valid YAML \(.+\)$/);
      expect(reading.problem).not.toContain('\n');
    }
    const unclosed = await readSkillText(skillText('name: "the-skill', 'description: x'), 'the-skill');
    expect(unclosed).toMatchObject({ kind: 'problem', problem: expect.stringMatching(/^its front matter is not valid YAML/) });
  });

  it('front matter ends at the first --- line, so a --- in the body is the body', () => {
    expect(frontMatterOf('---\nname: a\n---\ntext\n---\nmore')).toEqual({ yaml: 'name: a' });
  });

  it('fields are checked whatever YAML gave', () => {
    expect(checkFields(null, 'x')).toEqual({ kind: 'problem', problem: 'its front matter is not a set of key: value lines' });
    expect(checkFields({ name: 'x', description: 'y', 'allowed-tools': ['Read', 'Bash'] }, 'x')).toEqual({ kind: 'skill', fields: { name: 'x', description: 'y', allowedTools: 'Read Bash' } });
  });
});
