import type { Skill } from './find-skills';

/** Most skills listed in the system prompt; the rest are counted. */
export const LISTED_SKILLS = 50;

/** Longest description in the listing, in characters; a longer one is cut with `…`. */
export const LISTED_DESCRIPTION_CHARS = 200;

/**
 * The system prompt's section on skills, undefined when there are none: one sentence on how
 * to use one, then a line per skill (name, description on one line cut to
 * `LISTED_DESCRIPTION_CHARS`, and the path of its `SKILL.md`), at most `LISTED_SKILLS` of them,
 * with a line counting those left out. Only names and descriptions: the model reads a skill's
 * body when it uses it.
 */
export function skillsSection(skills: readonly Skill[]): string | undefined {
  if (skills.length === 0) return undefined;
  const lines = [
    'Skills are folders of instructions, scripts and resources for particular tasks. Before using one, read its SKILL.md (path below) and follow it; its scripts and resources are in the same folder.',
    ...skills.slice(0, LISTED_SKILLS).map((skill) => `- ${skill.name}: ${oneLine(skill.description)} (${skill.file})`),
  ];
  const more = skills.length - LISTED_SKILLS;
  if (more > 0) lines.push(`${more} more skill${more === 1 ? ' is' : 's are'} not listed here (fence skills list shows all).`);
  return lines.join('\n');
}

/** `text` on one line, cut to `LISTED_DESCRIPTION_CHARS`. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const chars = [...flat];
  return chars.length <= LISTED_DESCRIPTION_CHARS ? flat : `${chars.slice(0, LISTED_DESCRIPTION_CHARS - 1).join('').trimEnd()}…`;
}
