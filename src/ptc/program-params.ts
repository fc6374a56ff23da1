import { z } from 'zod';

/**
 * A program declares what it takes and gives in its leading comment lines, beside its intent:
 *
 *     // intent: find the staff of a department over their travel limit
 *     // param department: string = "engineering" — the department to check
 *     // param levels?: string[] — only these levels (default: all)
 *     // returns: string[]
 *
 * `param <name>[?]: <type> [= <JSON default>] [— <description>]` (the description may also
 * follow ` - ` or ` -- `). Types: `string`, `number`, `integer`, `boolean`, `object`,
 * `unknown`, a union of string literals (`"low" | "high"`), an object of typed properties
 * (`{ name: string; total?: number }`, `,` or `;` between them), and any of these followed
 * by `[]`. A parameter is required unless it has `?` or a default. `returns:` is a TypeScript
 * type shown to callers as is; when it is one of these types, it is also the checked shape of
 * the program's result (see `returnSchema`). The program reads its arguments as the global `args`.
 */
export interface ProgramParameter {
  name: string;
  /** The type as written, e.g. `string[]`. */
  type: string;
  optional: boolean;
  /** The JSON default, when one is given (absent otherwise). */
  default?: unknown;
  description?: string;
}

/** What a program's leading comments declare. */
export interface ProgramSignature {
  parameters: ProgramParameter[];
  returns?: string;
  /** One sentence per `param`/`returns` line that could not be read, with its line number. */
  errors: string[];
}

/** A `param` line: `param name?: rest`. Lines that do not look like this are plain comments. */
const PARAM_LINE = /^\/\/\s*param\s+([A-Za-z_$][\w$]*)(\?)?\s*:\s*(.*)$/i;
const RETURNS_LINE = /^\/\/\s*returns\s*:\s*(.*)$/i;
const BASE_SCHEMAS: Record<string, () => z.ZodType> = {
  string: () => z.string(),
  number: () => z.number(),
  integer: () => z.number().int(),
  boolean: () => z.boolean(),
  object: () => z.record(z.string(), z.unknown()),
  unknown: () => z.unknown(),
};

/**
 * Reads the `param` and `returns` lines among the program's leading comment lines (blank
 * lines and `//` comments before the first line of code, as for `// intent:`). Never throws:
 * what cannot be read is in `errors`.
 */
export function parseSignature(code: string): ProgramSignature {
  const signature: ProgramSignature = { parameters: [], errors: [] };
  const lines = code.split('\n');
  for (const [index, line] of lines.entries()) {
    const trimmed = line.trim();
    if (!trimmed) continue;
    if (!trimmed.startsWith('//')) break;
    const at = `line ${index + 1}`;
    const returns = RETURNS_LINE.exec(trimmed);
    if (returns) {
      if (returns[1]?.trim()) signature.returns = returns[1].trim();
      else signature.errors.push(`${at}: "returns:" needs a type`);
      continue;
    }
    const param = PARAM_LINE.exec(trimmed);
    if (!param) continue;
    const [, name = '', question, rest = ''] = param;
    // Every object has these (arguments too): such a parameter could never be left out or read.
    if (name in Object.prototype) {
      signature.errors.push(`${at}: parameter ${name}: every JavaScript object has a "${name}" already; choose another name`);
      continue;
    }
    const parsed = parseParameter(name, question === '?', rest);
    if ('error' in parsed) signature.errors.push(`${at}: parameter ${name}: ${parsed.error}`);
    else if (signature.parameters.some((p) => p.name === name)) signature.errors.push(`${at}: parameter ${name} is declared twice`);
    else signature.parameters.push(parsed);
  }
  return signature;
}

/** One parameter from the text after `name:`: the type, then `= default`, then the description. */
function parseParameter(name: string, question: boolean, rest: string): ProgramParameter | { error: string } {
  const [head, description] = splitDescription(rest);
  const equals = indexOutsideQuotes(head, '=');
  const type = (equals < 0 ? head : head.slice(0, equals)).trim();
  if (!type) return { error: 'a type is missing' };
  const schema = typeSchema(type);
  if (!schema) return { error: `unknown type "${type}" (use string, number, integer, boolean, object, unknown, "a" | "b", { name: type; … }, or one of these with [])` };
  const parameter: ProgramParameter = { name, type, optional: question };
  if (equals >= 0) {
    const text = head.slice(equals + 1).trim();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { error: `the default ${text || '(empty)'} is not JSON` };
    }
    if (!schema.safeParse(value).success) return { error: `the default ${text} is not a ${type}` };
    parameter.default = value;
    parameter.optional = true;
  }
  if (description) parameter.description = description;
  return parameter;
}

/** Splits `type = default — description` at the first ` — `, ` -- ` or ` - ` outside quotes. */
function splitDescription(text: string): [string, string | undefined] {
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '\\' && quoted) i++;
    else if (char === '"') quoted = !quoted;
    else if (!quoted && char === ' ') {
      const match = /^ (?:\u2014|--|-)(?: |$)/.exec(text.slice(i));
      if (match) return [text.slice(0, i), text.slice(i + match[0].length).trim() || undefined];
    }
  }
  return [text, undefined];
}

function indexOutsideQuotes(text: string, wanted: string): number {
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '\\' && quoted) i++;
    else if (char === '"') quoted = !quoted;
    else if (!quoted && char === wanted) return i;
  }
  return -1;
}

/**
 * `text` cut at each of `separators` outside double quotes, parentheses and braces (a literal
 * or an object type may hold one), each part trimmed. Undefined when the brackets do not pair.
 */
function splitTopLevel(text: string, separators: string): string[] | undefined {
  const parts: string[] = [];
  const open: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] ?? '';
    if (char === '\\' && quoted) i++;
    else if (char === '"') quoted = !quoted;
    else if (quoted) continue;
    else if (char === '(' || char === '{') open.push(char === '(' ? ')' : '}');
    else if (char === ')' || char === '}') {
      if (open.pop() !== char) return undefined;
    } else if (open.length === 0 && separators.includes(char)) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (open.length > 0 || quoted) return undefined;
  parts.push(text.slice(start));
  return parts.map((part) => part.trim());
}

/** A property of an object type: `name: type`, `name?: type`, `"a name": type`. */
const PROPERTY = /^("(?:[^"\\]|\\.)*"|[A-Za-z_$][\w$]*)(\?)?\s*:\s*([^]*)$/;

/** The schema of an object type `{ name: string; total?: number }`, or undefined when it is not one fence reads. */
function objectSchema(body: string, depth: number): z.ZodType | undefined {
  const members = splitTopLevel(body, ';,');
  if (!members) return undefined;
  const shape: Record<string, z.ZodType> = {};
  for (const member of members) {
    if (!member) continue;
    const match = PROPERTY.exec(member);
    if (!match) return undefined;
    const [, key = '', question, type = ''] = match;
    const name = key.startsWith('"') ? stringLiteral(key) : key;
    const schema = typeSchema(type.trim(), depth + 1);
    if (name === undefined || !schema || Object.hasOwn(shape, name)) return undefined;
    shape[name] = question ? schema.optional() : schema;
  }
  // Properties it does not name are let through, as TypeScript lets a wider object through.
  return z.looseObject(shape);
}

/** The most a declared type may nest (arrays, parentheses, objects), and its longest text: past them it is not read. */
const MAX_TYPE_DEPTH = 16;
const MAX_TYPE_CHARS = 4096;

/**
 * The zod schema of a declared type, or undefined when the type is not one fence reads
 * (among them, one nested deeper than `MAX_TYPE_DEPTH` or longer than `MAX_TYPE_CHARS`: a
 * program's comments may come from a repository, and must not overflow the stack). `|`
 * binds loosest, as in TypeScript: `"a" | "b"[]` is `"a"` or an array of `"b"`, which is not
 * a union of literals and so not read; `("a" | "b")[]` is an array of either.
 */
function typeSchema(type: string, depth = 0): z.ZodType | undefined {
  if (depth > MAX_TYPE_DEPTH || type.length > MAX_TYPE_CHARS) return undefined;
  const alternatives = splitTopLevel(type, '|');
  if (!alternatives) return undefined;
  if (alternatives.length > 1) {
    const values = alternatives.map(stringLiteral);
    return values.every((value) => value !== undefined) ? z.enum(values as [string, ...string[]]) : undefined;
  }
  if (type.endsWith('[]')) {
    const item = typeSchema(type.slice(0, -2).trim(), depth + 1);
    return item && z.array(item);
  }
  if (type.startsWith('(') && type.endsWith(')')) return typeSchema(type.slice(1, -1).trim(), depth + 1);
  if (type.startsWith('{') && type.endsWith('}')) return objectSchema(type.slice(1, -1), depth);
  if (Object.hasOwn(BASE_SCHEMAS, type)) return BASE_SCHEMAS[type]?.();
  const literal = stringLiteral(type);
  return literal === undefined ? undefined : z.enum([literal]);
}

/** The value of a double-quoted JSON string literal, or undefined when `text` is not one. */
function stringLiteral(text: string): string | undefined {
  if (!/^"(?:[^"\\]|\\.)*"$/.test(text)) return undefined;
  try {
    return JSON.parse(text) as string;
  } catch {
    return undefined;
  }
}

/**
 * The zod object of a program's parameters, as a tool's `parameters`: each declared type with
 * its description, `?` parameters optional, defaults filled in when absent.
 */
export function parametersSchema(parameters: readonly ProgramParameter[]): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const parameter of parameters) {
    let schema = typeSchema(parameter.type) ?? z.unknown();
    if (parameter.description) schema = schema.describe(parameter.description);
    if (parameter.default !== undefined) schema = schema.default(parameter.default as never);
    else if (parameter.optional) schema = schema.optional();
    shape[parameter.name] = schema;
  }
  return z.object(shape);
}

/**
 * The checked shape of what a program returns, from its `returns:` type: undefined when it
 * declares none, or one fence does not read (`Map<string, number>`), or `unknown`, which says
 * nothing. The object types (`object`, `{ … }`) are the ones whose values are objects.
 */
export function returnSchema(returns: string | undefined): ReturnSchema | undefined {
  const type = returns?.trim();
  if (!type || type === 'unknown') return undefined;
  const schema = typeSchema(type);
  if (!schema) return undefined;
  return { type, schema, object: schema instanceof z.ZodObject || schema instanceof z.ZodRecord };
}

/** A declared return type fence checks (see `returnSchema`). */
export interface ReturnSchema {
  /** As written. */
  type: string;
  schema: z.ZodType;
  /** Whether its values are objects (not arrays). */
  object: boolean;
}

/** The arguments a program runs with when nobody gives any: the declared defaults. */
export function defaultArguments(parameters: readonly ProgramParameter[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const parameter of parameters) if (parameter.default !== undefined) args[parameter.name] = parameter.default;
  return args;
}
