import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { frontMatterOf } from '../../src/skills/skill-file';
import { parseSimpleFrontMatter } from '../../src/skills/simple-front-matter';

const PUBLISHED = join(import.meta.dirname, '..', 'fixtures', 'published-skills');

/** What YAML makes of `text`, or the error's name when it refuses it. */
function yamlOf(text: string): unknown {
  try {
    return parse(text);
  } catch (error) {
    return (error as Error).name;
  }
}

describe('parseSimpleFrontMatter', () => {
  it("reads each published skill's front matter as YAML does, without YAML", () => {
    for (const name of readdirSync(PUBLISHED).filter((entry) => !entry.includes('.'))) {
      const front = frontMatterOf(readFileSync(join(PUBLISHED, name, 'SKILL.md'), 'utf8'));
      if (!('yaml' in front)) throw new Error(`${name} has no front matter`);
      const simple = parseSimpleFrontMatter(front.yaml);
      expect(simple).toBeDefined();
      expect(simple).toEqual(yamlOf(front.yaml));
    }
  });

  it.each([
    'name: my-skill\ndescription: Does things, well.',
    "description: Applies Anthropic's colors (and more) to artifacts; use it when asked.",
    'description: "Quoted: with a colon, a \\"quote\\" and a \\\\ backslash"',
    "description: 'Single: it''s quoted'",
    'description: a:b and c#d and 50% off',
    'name: x\n\n# a comment\ndescription: y   ',
    'description: yes',
    'description: on the table',
  ])('answers like YAML for %j', (text) => {
    const simple = parseSimpleFrontMatter(text);
    expect(simple).toBeDefined();
    expect(simple).toEqual(yamlOf(text));
  });

  it.each([
    ['a block scalar', 'description: >\n  folded\n  text'],
    ['a nested map', 'metadata:\n  author: me'],
    ['a flow list', 'allowed-tools: [Read, Bash]'],
    ['a number', 'name: 42'],
    ['a float', 'description: 1.5'],
    ['null', 'description: null'],
    ['a tilde', 'description: ~'],
    ['a boolean', 'description: true'],
    ['a colon and a space', 'description: Use when: the user asks'],
    ['a comment after the value', 'description: text # comment'],
    ['an escape other than a quote or backslash', 'description: "line\\nbreak"'],
    ['an alias', 'description: *anchor'],
    ['a tag', 'description: !!str text'],
    ['a key twice', 'name: a\nname: b'],
    ['an indented line', 'name: a\n  description: b'],
    ['a key without a value', 'name:'],
    ['a quoted key', '"name": a'],
    ['a tab inside', 'description: a\tb'],
    ['nothing', ''],
  ])('leaves %s to YAML', (_case, text) => {
    expect(parseSimpleFrontMatter(text)).toBeUndefined();
  });
});
