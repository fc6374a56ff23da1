/**
 * Most skills' front matter is a few `key: text` lines. Reading those needs no YAML library,
 * whose loading costs tens of milliseconds at a session's start; anything else goes to it.
 */

/** A top-level `key: value` line: the key, and the value with surrounding blanks removed. */
const LINE = /^([A-Za-z_][A-Za-z0-9_-]*):[ \t]+(\S(?:.*\S)?)[ \t]*$/;

/** What YAML's core schema reads as something other than text: null, booleans, numbers. */
const NOT_TEXT = /^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE|[-+]?(?:\.inf|\.Inf|\.INF)|\.nan|\.NaN|\.NAN|[-+]?[0-9.].*)$/;

/** Characters that start something other than a plain scalar in YAML, when first. */
const INDICATORS = '-?:,[]{}#&*!|>\'"%@`';

/**
 * The front matter `yaml` as key → text when every line is a top-level `key: value` whose value
 * YAML reads as the same text without doubt: a plain scalar that is not null, a boolean or a
 * number, starts with no indicator and holds no `: ` or ` #`; a double-quoted one with no escape
 * but `\"` and `\\`; or a single-quoted one. Blank lines and comment lines are passed over.
 * Undefined for anything else (block scalars, nested maps, lists, a key twice, other escapes):
 * the caller reads that with a YAML library. Never throws.
 */
export function parseSimpleFrontMatter(yaml: string): Record<string, string> | undefined {
  const fields: Record<string, string> = {};
  for (const line of yaml.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) return undefined;
    const [, key, raw] = match as unknown as [string, string, string];
    if (Object.hasOwn(fields, key)) return undefined;
    const value = scalarText(raw);
    if (value === undefined) return undefined;
    fields[key] = value;
  }
  return Object.keys(fields).length > 0 ? fields : undefined;
}

/** The text of one scalar written on one line, when it is plainly text; else undefined. */
function scalarText(raw: string): string | undefined {
  // Control characters: YAML has its own rules for them.
  if (/[\u0000-\u001f\u007f]/.test(raw)) return undefined;
  if (raw.startsWith('"')) {
    const match = /^"((?:[^"\\]|\\["\\])*)"$/.exec(raw);
    return match ? (match[1] as string).replace(/\\(["\\])/g, '$1') : undefined;
  }
  if (raw.startsWith("'")) {
    const match = /^'((?:[^']|'')*)'$/.exec(raw);
    return match ? (match[1] as string).replace(/''/g, "'") : undefined;
  }
  if (INDICATORS.includes(raw[0] as string) || raw.includes(': ') || raw.includes(' #') || raw.endsWith(':')) return undefined;
  if (NOT_TEXT.test(raw)) return undefined;
  return raw;
}
