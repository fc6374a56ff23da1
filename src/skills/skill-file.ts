import { parseSimpleFrontMatter } from './simple-front-matter';

/**
 * A skill's `SKILL.md`, as the Agent Skills format has it: YAML front matter between two `---`
 * lines, then the instructions in markdown. Only the front matter is read here; the body is
 * for the model, which reads the file itself when it uses the skill.
 */

/** Longest name the format allows. */
export const MAX_NAME_CHARS = 64;
/** Longest description the format allows. */
export const MAX_DESCRIPTION_CHARS = 1024;
/** Longest `compatibility` the format allows. */
export const MAX_COMPATIBILITY_CHARS = 500;

/** Lowercase letters and digits in runs joined by single hyphens: no hyphen first, last or doubled. */
const NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** What a valid front matter says. Fields of the format fence does not use are kept for `fence skills show`. */
export interface SkillFields {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  /** `allowed-tools`: the tools the skill expects, as written (fence grants nothing by it). */
  allowedTools?: string;
  metadata?: Record<string, string>;
}

/**
 * A `SKILL.md` read: its fields, with `notes` on what it does not follow of the format yet
 * can be used with; or the one reason it cannot be used (sentence parts, no file name).
 */
export type SkillFileReading = { kind: 'skill'; fields: SkillFields; notes?: string[] } | { kind: 'problem'; problem: string };

/**
 * The YAML text of `text`'s front matter: what lies between a first line `---` and the next
 * line `---`. A byte order mark and CRLF line endings are allowed. Never throws.
 */
export function frontMatterOf(text: string): { yaml: string } | { problem: string } {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (lines[0]?.trimEnd() !== '---') return { problem: 'it does not start with front matter (a --- line, then name and description, then ---)' };
  const end = lines.findIndex((line, i) => i > 0 && line.trimEnd() === '---');
  if (end === -1) return { problem: 'its front matter has no closing --- line' };
  return { yaml: lines.slice(1, end).join('\n') };
}

/**
 * Checks front matter already parsed from YAML (`data`) against the format, for a skill in the
 * folder `folderName`: `name` (lowercase letters, digits and single hyphens, at most
 * `MAX_NAME_CHARS`, the folder's name) and `description` (text) are required; `license`,
 * `compatibility`, `allowed-tools` and `metadata` are checked when present; other keys are
 * left alone. Gives the first problem found. A description over `MAX_DESCRIPTION_CHARS` is
 * kept with a note: published skills exceed it, and listings cut descriptions anyway.
 */
export function checkFields(data: unknown, folderName: string): SkillFileReading {
  const problem = (text: string): SkillFileReading => ({ kind: 'problem', problem: text });
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return problem('its front matter is not a set of key: value lines');
  const fields = data as Record<string, unknown>;
  const name = fields.name;
  if (name === undefined || name === null) return problem('its front matter has no name');
  if (typeof name !== 'string') return problem('its name is not text');
  if (name.length > MAX_NAME_CHARS) return problem(`its name is longer than ${MAX_NAME_CHARS} characters`);
  if (!NAME_PATTERN.test(name)) return problem(`its name ${JSON.stringify(name)} is not lowercase letters, digits and single hyphens`);
  if (name !== folderName) return problem(`its name ${JSON.stringify(name)} is not its folder's name ${JSON.stringify(folderName)}`);
  const description = fields.description;
  if (description === undefined || description === null) return problem('its front matter has no description');
  if (typeof description !== 'string') return problem('its description is not text');
  if (description.trim() === '') return problem('its description is empty');
  const notes = description.length > MAX_DESCRIPTION_CHARS ? [`its description is longer than ${MAX_DESCRIPTION_CHARS} characters, the format's limit`] : [];
  const skill: SkillFields = { name, description: description.trim() };
  for (const key of ['license', 'compatibility'] as const) {
    const value = fields[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') return problem(`its ${key} is not text`);
    skill[key] = value;
  }
  if (skill.compatibility !== undefined && skill.compatibility.length > MAX_COMPATIBILITY_CHARS) {
    return problem(`its compatibility is longer than ${MAX_COMPATIBILITY_CHARS} characters`);
  }
  const allowed = fields['allowed-tools'];
  if (typeof allowed === 'string') skill.allowedTools = allowed;
  else if (Array.isArray(allowed) && allowed.every((tool) => typeof tool === 'string')) skill.allowedTools = allowed.join(' ');
  else if (allowed !== undefined && allowed !== null) return problem('its allowed-tools is not a list of tool names');
  const metadata = fields.metadata;
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object' || Array.isArray(metadata)) return problem('its metadata is not a set of key: value lines');
    skill.metadata = Object.fromEntries(Object.entries(metadata).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)]));
  }
  return notes.length > 0 ? { kind: 'skill', fields: skill, notes } : { kind: 'skill', fields: skill };
}

/**
 * Reads the text of a `SKILL.md` in the folder `folderName`: its front matter split off,
 * read as plain `key: text` lines when it is only that (see `parseSimpleFrontMatter`), else
 * parsed as YAML (the `yaml` package, loaded only then), and checked (see `checkFields`). A YAML error is given by its first line. Never throws.
 */
export async function readSkillText(text: string, folderName: string): Promise<SkillFileReading> {
  const front = frontMatterOf(text);
  if ('problem' in front) return { kind: 'problem', problem: front.problem };
  const simple = parseSimpleFrontMatter(front.yaml);
  if (simple) return checkFields(simple, folderName);
  const { parse } = await import('yaml');
  let data: unknown;
  try {
    data = parse(front.yaml, { prettyErrors: false });
  } catch (error) {
    const first = (error instanceof Error ? error.message : String(error)).split('\n')[0]?.trim() ?? '';
    return { kind: 'problem', problem: `its front matter is not valid YAML (${first})` };
  }
  return checkFields(data, folderName);
}
