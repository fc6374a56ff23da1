import { z } from 'zod';
import type { ToolSpec } from './define-tool';

/** How a rendered type binds: a union or intersection needs parentheses inside `T[]` or `A & B`. */
type Binding = 'atom' | 'intersection' | 'union';

interface TypeText {
  text: string;
  binding: Binding;
}

/** What rendering one schema carries along: the root (for `$ref`), the refs being expanded, the indentation, whether properties get their comments. */
interface RenderScope {
  root: unknown;
  expanding: ReadonlySet<string>;
  indent: string;
  comments: boolean;
}

const INDENT = '  ';

/** An object type is written on one line when it has no comments and is at most this long. */
const INLINE_OBJECT_CHARS = 60;

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

const RESERVED_WORDS = new Set(
  ('break case catch class const continue debugger default delete do else enum export extends false finally for function ' +
    'if import in instanceof new null return super switch this throw true try typeof var void while with ' +
    'await implements interface let package private protected public static yield').split(' '),
);

const UNKNOWN: TypeText = { text: 'unknown', binding: 'atom' };

/**
 * TypeScript declarations of the tools a program may call, for the model to read: for each
 * tool given (the caller decides which are eligible; see `eligibleTools`), in the given order,
 * its description as a JSDoc comment and
 * `declare function <name>(args: <parameters>): Promise<<returns>>;`, the
 * parameter type built from the tool's zod `parameters` (input side: defaults make a property
 * optional) and the result type taken verbatim from `returns` (`unknown` when absent). Tools
 * whose names are not JavaScript identifiers are declared as members of `declare const tools`.
 * Declarations are separated by a blank line; the text has no final line break. The output
 * depends on nothing but the tools (and `options`), so it is the same on every call.
 * `options.described` leaves out the comments (the tool's description, its parameters') of the
 * tools it returns true for: those the reader has just above in their own section of the
 * prompt, whose instructions say what the parameters mean.
 */
export function toolDeclarations(tools: readonly ToolSpec[], options: { described?: (tool: ToolSpec) => boolean } = {}): string {
  const plain = tools.filter((tool) => isBindingName(tool.name));
  const quoted = tools.filter((tool) => !isBindingName(tool.name));
  const comment = (tool: ToolSpec, indent: string) => (options.described?.(tool) ? '' : docComment(tool.description, indent));
  const bare = (tool: ToolSpec) => options.described?.(tool) === true;
  const parts = plain.map((tool) => `${comment(tool, '')}declare function ${tool.name}${signature(tool, '', !bare(tool))};`);
  if (quoted.length > 0) {
    const members = quoted.map((tool) => `${comment(tool, INDENT)}${INDENT}${JSON.stringify(tool.name)}${signature(tool, INDENT, !bare(tool))};`);
    const note = docComment('Tools whose names are not identifiers: call them as tools["name"]({ ... }).', '');
    parts.push(`${note}declare const tools: {\n${members.join('\n')}\n};`);
  }
  return parts.join('\n\n');
}

/**
 * A TypeScript type text for a JSON schema (draft 2020-12 or draft 7), as a tool's arguments
 * would be declared: `string`, `number` (also for `integer`), `boolean`, `null`; `enum` and
 * `const` as literal unions; `anyOf`/`oneOf` as unions, `allOf` as intersections; arrays
 * (`T[]`, tuples from `prefixItems`); objects with `?` for properties not `required`,
 * `description` (and `default`) as `/** *\/` comments, and `additionalProperties` as an index
 * signature. An object schema without `properties` is open (`{ [key: string]: unknown }`);
 * beside named properties, only a typed index signature is written (`additionalProperties:
 * { type: "number" }`), never an `unknown` one, which would tell a caller nothing. Local `$ref`s
 * (`#/...`) are followed; a recursive one, a boolean `true`, an empty schema and whatever is
 * not understood become `unknown` (`false` becomes `never`). Multi-line object types are
 * indented by `indent` plus two spaces a level. Never throws, whatever `schema` is.
 */
export function jsonSchemaToTypeScript(schema: unknown, indent = ''): string {
  return render(schema, { root: schema, expanding: new Set(), indent, comments: true }).text;
}

function signature(tool: ToolSpec, indent: string, comments: boolean): string {
  const parameters = z.toJSONSchema(tool.parameters, { io: 'input', unrepresentable: 'any' });
  const type = render(parameters, { root: parameters, expanding: new Set(), indent, comments }).text;
  return `(args: ${type}): Promise<${tool.returns ?? 'unknown'}>`;
}

function render(schema: unknown, scope: RenderScope): TypeText {
  if (schema === false) return { text: 'never', binding: 'atom' };
  if (!isRecord(schema)) return UNKNOWN;
  if (typeof schema.$ref === 'string') return renderRef(schema.$ref, scope);
  if ('const' in schema) return literal(schema.const);
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal));
  const choices = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (choices) return union(choices.map((choice) => render(choice, scope)));
  if (Array.isArray(schema.allOf)) return intersection(schema.allOf.map((part) => render(part, scope)));
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? inferTypes(schema) : [schema.type];
  if (types.length === 0) return UNKNOWN;
  const rendered = union(types.map((type) => renderType(type, schema, scope)));
  return schema.nullable === true ? union([rendered, literal(null)]) : rendered;
}

function inferTypes(schema: Record<string, unknown>): unknown[] {
  if ('properties' in schema || 'additionalProperties' in schema) return ['object'];
  if ('items' in schema || 'prefixItems' in schema) return ['array'];
  return [];
}

function renderType(type: unknown, schema: Record<string, unknown>, scope: RenderScope): TypeText {
  switch (type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'null':
      return { text: type, binding: 'atom' };
    case 'integer':
      return { text: 'number', binding: 'atom' };
    case 'array':
      return renderArray(schema, scope);
    case 'object':
      return renderObject(schema, scope);
    default:
      return UNKNOWN;
  }
}

function renderRef(ref: string, scope: RenderScope): TypeText {
  if (scope.expanding.has(ref)) return UNKNOWN;
  const target = resolvePointer(scope.root, ref);
  if (target === undefined) return UNKNOWN;
  return render(target, { ...scope, expanding: new Set([...scope.expanding, ref]) });
}

/** The part of `root` a local reference (`#`, `#/$defs/Name`) points at, if any. */
function resolvePointer(root: unknown, ref: string): unknown {
  if (ref !== '#' && !ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isRecord(node)) node = node[key];
    else return undefined;
  }
  return node;
}

function renderArray(schema: Record<string, unknown>, scope: RenderScope): TypeText {
  const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : undefined;
  if (tuple) {
    const members = tuple.map((item) => render(item, scope).text);
    const rest = Array.isArray(schema.items) ? schema.additionalItems : schema.items;
    if (rest !== undefined && rest !== false) members.push(`...${arrayOf(render(rest, scope))}`);
    return { text: `[${members.join(', ')}]`, binding: 'atom' };
  }
  if (schema.items === undefined) return { text: 'unknown[]', binding: 'atom' };
  return { text: arrayOf(render(schema.items, scope)), binding: 'atom' };
}

function arrayOf(item: TypeText): string {
  return item.binding === 'atom' ? `${item.text}[]` : `(${item.text})[]`;
}

function renderObject(schema: Record<string, unknown>, scope: RenderScope): TypeText {
  const inner: RenderScope = { ...scope, indent: scope.indent + INDENT };
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((name) => typeof name === 'string') : []);
  const members: { comment: string | undefined; text: string }[] = [];
  for (const [name, property] of Object.entries(properties ?? {})) {
    const optional = required.has(name) ? '' : '?';
    members.push({ comment: scope.comments ? propertyComment(property) : undefined, text: `${propertyKey(name)}${optional}: ${render(property, inner).text}` });
  }
  const extra = schema.additionalProperties ?? (properties === undefined ? true : false);
  const index = extra === false ? undefined : render(extra, inner);
  if (index !== undefined && members.length === 0) {
    return { text: layoutObject([{ comment: undefined, text: `[key: string]: ${index.text}` }], scope.indent), binding: 'atom' };
  }
  const named = { text: layoutObject(members, scope.indent), binding: 'atom' as const };
  // Other keys of any type beside named ones tell a caller nothing it can use: left out.
  if (index === undefined || index.text === 'unknown') return named;
  // Named properties beside a narrower index signature do not type-check in one literal type.
  return intersection([named, { text: layoutObject([{ comment: undefined, text: `[key: string]: ${index.text}` }], scope.indent), binding: 'atom' }]);
}

function layoutObject(members: readonly { comment: string | undefined; text: string }[], indent: string): string {
  if (members.length === 0) return '{}';
  const inline = `{ ${members.map((member) => member.text).join('; ')} }`;
  const fitsOnOneLine = members.every((member) => member.comment === undefined && !member.text.includes('\n'));
  if (fitsOnOneLine && inline.length <= INLINE_OBJECT_CHARS) return inline;
  const inner = indent + INDENT;
  const lines = members.map((member) => `${member.comment === undefined ? '' : docComment(member.comment, inner)}${inner}${member.text};`);
  return `{\n${lines.join('\n')}\n${indent}}`;
}

function propertyComment(property: unknown): string | undefined {
  if (!isRecord(property)) return undefined;
  const description = typeof property.description === 'string' ? property.description.trim() : '';
  const fallback = 'default' in property ? ` (default: ${JSON.stringify(property.default)})` : '';
  const text = `${description}${fallback}`.trim();
  return text === '' ? undefined : text;
}

/** A JSDoc comment of `text` at `indent`, ending with a line break; one line when the text is. */
function docComment(text: string, indent: string): string {
  const lines = text.replace(/\*\//g, '*\\/').split(/\r?\n/);
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((line) => `${indent} *${line === '' ? '' : ` ${line}`}`).join('\n')}\n${indent} */\n`;
}

function propertyKey(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

function isBindingName(name: string): boolean {
  return IDENTIFIER.test(name) && !RESERVED_WORDS.has(name);
}

function literal(value: unknown): TypeText {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return { text: JSON.stringify(value), binding: 'atom' };
  }
  return UNKNOWN;
}

/** `A | B`, without repeats; `unknown` swallows the rest and an empty list is `never`. */
function union(members: readonly TypeText[]): TypeText {
  const texts = [...new Set(members.map((member) => member.text))].filter((text) => text !== 'never');
  if (texts.includes('unknown')) return UNKNOWN;
  if (texts.length === 0) return { text: 'never', binding: 'atom' };
  if (texts.length === 1) return members.find((member) => member.text === texts[0]) ?? UNKNOWN;
  return { text: texts.join(' | '), binding: 'union' };
}

/** `A & B`, parenthesising unions; `unknown` parts are dropped (they add nothing). */
function intersection(members: readonly TypeText[]): TypeText {
  const parts = members.filter((member) => member.text !== 'unknown');
  if (parts.length === 0) return UNKNOWN;
  if (parts.length === 1 && parts[0]) return parts[0];
  const text = parts.map((part) => (part.binding === 'union' ? `(${part.text})` : part.text)).join(' & ');
  return { text, binding: 'intersection' };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
