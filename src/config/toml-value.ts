/** Longest text of a value a message shows before it is cut with `…`. */
const SHOWN_CHARS = 60;

/**
 * A value read from a TOML file, written back as TOML for a message: `"yaml"`, `-5`, `1.5`,
 * `true`, `1979-05-27`, `["model"]`, `{ A = 1 }`. Long text is cut with `…`; an array or a
 * table too long to show whole is named by its size (`an array of 40 items`, `a table of 3
 * keys`). Never throws.
 */
export function describeTomlValue(value: unknown): string {
  if (typeof value === 'string') return describeString(value);
  const written = writeValue(value);
  if (written.length <= SHOWN_CHARS) return written;
  if (Array.isArray(value)) return `an array of ${count(value.length, 'item')}`;
  if (isTable(value)) return `a table of ${count(Object.keys(value).length, 'key')}`;
  return `${written.slice(0, SHOWN_CHARS - 1)}…`;
}

function describeString(text: string): string {
  const quoted = JSON.stringify(text);
  if (quoted.length <= SHOWN_CHARS) return quoted;
  // Cut the text, not its escapes, so that the quoted form stays well formed.
  return `${JSON.stringify(text.slice(0, SHOWN_CHARS - 3)).slice(0, -1)}…"`;
}

function writeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'nan';
    if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
    return String(value);
  }
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `[${value.map(writeValue).join(', ')}]`;
  if (isTable(value)) {
    const entries = Object.entries(value).map(([key, item]) => `${writeTomlKey(key)} = ${writeValue(item)}`);
    return entries.length === 0 ? '{}' : `{ ${entries.join(', ')} }`;
  }
  return String(value);
}

/** A key as TOML writes it: bare when it can be (`get_expenses`), quoted otherwise (`"openai/gpt-5"`). */
export function writeTomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
