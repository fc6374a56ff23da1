import type { ToolFormat } from '../parse/tool-use';
import type { Caller, ToolSpec } from './define-tool';

/**
 * How a tool call is written: in one of the model's three tool formats, as a call in a
 * program (`await read({ path: "a.txt" })`) or in the Python kernel (`read(path="a.txt")`).
 */
export type Notation = ToolFormat | 'program' | 'python';

/** The tag of the block that calls a tool without a block form of its own (see `createCallTool`). */
export const CALL_TAG = 'call';

/**
 * The tools the model may call itself in a format: in markdown and XML those with a block
 * form, natively every tool callable directly.
 */
export function modelTools(tools: readonly ToolSpec[], format: ToolFormat): ToolSpec[] {
  return tools.filter((tool) => tool.callers.includes('direct') && (format === 'tool' || tool.blockTypes.length > 0));
}

/** A tool's positional words and body for one call, as a markdown block or an XML element holds them. */
interface BlockParts {
  tag: string;
  words: string[];
  body: string;
}

/**
 * Writes one call of `spec` with `input` the way `notation` spells it, for examples in the
 * prompt and in error results. Markdown and XML map `input` onto the tool's block form (the
 * `block.args` words after the tag, the `block.content` parameter as the body); the native
 * format writes the arguments object as JSON; a program call is JavaScript. In markdown and
 * XML, a tool without a block form is written as a `call` block with its JSON arguments when
 * the model may call it, else as a program call (that is how it is reached).
 */
export function renderCall(spec: ToolSpec, input: Record<string, unknown>, notation: Notation): string {
  if (notation === 'tool') return JSON.stringify(input);
  if (notation === 'python') return pythonCall(spec.name, input);
  if (notation !== 'program' && spec.blockTypes.length === 0 && spec.callers.includes('direct')) {
    const parts = { tag: CALL_TAG, words: [spec.name], body: JSON.stringify(input) };
    return notation === 'xml' ? xmlCall(parts) : markdownCall(parts);
  }
  if (notation === 'program' || spec.blockTypes.length === 0) return programCall(spec.name, input);
  const parts = blockParts(spec, input);
  return notation === 'xml' ? xmlCall(parts) : markdownCall(parts);
}

/**
 * The shape of a call in a block format, each parameter a placeholder, optional ones in
 * brackets: a ```` ```save <path> ```` block with `<content>` as its body in markdown,
 * `<save args="{path}">{content}</save>` in XML (inside `<tool-use>`, as the example shows).
 * Undefined for the native and program notations (the parameters say it) and for tools
 * without a block form.
 */
export function callForm(spec: ToolSpec, notation: Notation): string | undefined {
  if ((notation !== 'markdown' && notation !== 'xml') || spec.blockTypes.length === 0) return undefined;
  const optional = new Set(Object.entries(spec.parameters.shape).filter(([, field]) => field.safeParse(undefined).success).map(([name]) => name));
  const [open, close] = notation === 'xml' ? ['{', '}'] : ['<', '>'];
  const placeholder = (name: string) => (optional.has(name) ? `[${name}]` : `${open}${name}${close}`);
  const words = (spec.block.args ?? []).map(placeholder);
  const content = spec.block.content;
  const body = content !== undefined && !(spec.block.args ?? []).includes(content) ? placeholder(content) : '';
  const parts = { tag: spec.blockTypes[0] ?? spec.name, words, body };
  return notation === 'xml' ? xmlElement(parts, { raw: true }) : markdownCall(parts);
}

function blockParts(spec: ToolSpec, input: Record<string, unknown>): BlockParts {
  const names = spec.block.args ?? [];
  const words: string[] = [];
  for (const name of names) {
    const value = input[name];
    if (value === undefined) break; // a later word cannot stand without this one
    words.push(String(value));
  }
  const content = spec.block.content;
  const body = content !== undefined && !names.includes(content) && input[content] !== undefined ? String(input[content]) : '';
  return { tag: spec.blockTypes[0] ?? spec.name, words, body };
}

function markdownCall({ tag, words, body }: BlockParts): string {
  // A fence longer than any backtick run at a line start of the body, so the body cannot close it.
  const longest = Math.max(2, ...[...body.matchAll(/^ {0,3}(`{3,})/gm)].map((match) => match[1]?.length ?? 0));
  const fence = '`'.repeat(longest + 1);
  const lines = [`${fence}${[tag, ...words].join(' ')}`];
  if (body !== '') lines.push(body.replace(/\r?\n$/, ''));
  lines.push(fence);
  return lines.join('\n');
}

function xmlCall(parts: BlockParts): string {
  return `<tool-use>${xmlElement(parts)}</tool-use>`;
}

/** The tool's element; `raw` leaves placeholders unescaped. A body of several lines starts on its own line. */
function xmlElement({ tag, words, body }: BlockParts, options: { raw?: boolean } = {}): string {
  const args = words.length > 0 ? ` args="${options.raw ? words.join(' ') : escapeAttribute(words.join(' '))}"` : '';
  if (body === '') return `<${tag}${args}/>`;
  const text = body.replace(/\r?\n$/, '');
  const shown = options.raw ? text : xmlBody(text, tag);
  return text.includes('\n') ? `<${tag}${args}>\n${shown}\n</${tag}>` : `<${tag}${args}>${shown}</${tag}>`;
}

/** A body as XML: as written when it reads back the same, else in a CDATA section. */
function xmlBody(text: string, tag: string): string {
  const safe =
    !text.includes(`</${tag}`) && !text.includes('</tool-use') && !text.includes('<![CDATA[') && !/&(#\d+|#x[0-9a-f]+|lt|gt|amp|quot|apos);/i.test(text);
  if (safe || text.includes(']]>')) return safe ? text : text.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
  return `<![CDATA[${text}]]>`;
}

function escapeAttribute(value: string): string {
  return value.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;');
}

/**
 * How to call a registered tool (a command or MCP tool), for its instructions: from a program
 * with placeholder arguments (`await get_expenses({ id: "..." })`), adding that it can also be
 * called directly, or, for a tool only the model calls, its JSON arguments; then what it returns.
 */
export function registeredCallHint(name: string, callers: readonly Caller[], example: Record<string, unknown>, returns: string | undefined): string {
  const result = returns ? ` It returns ${returns}.` : '';
  if (!callers.includes('program')) return `Call it as a tool with a JSON object of arguments: ${JSON.stringify(example)}.${result}`;
  const direct = callers.includes('direct') ? ' It can also be called directly as a tool with the same JSON arguments.' : '';
  return `Call it from a program: ${programCall(name, example)}.${result}${direct}`;
}

/** `await name({ key: "value" })`, with plain keys unquoted as a person would write them. */
export function programCall(name: string, input: Record<string, unknown>): string {
  const fields = Object.entries(input).map(([key, value]) => `${/^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key)}: ${JSON.stringify(value)}`);
  return `await ${name}(${fields.length === 0 ? '{}' : `{ ${fields.join(', ')} }`})`;
}

/** `name(key="value")`: keyword arguments, with JSON values as Python literals. */
function pythonCall(name: string, input: Record<string, unknown>): string {
  const literal = (value: unknown) =>
    JSON.stringify(value).replace(/("(?:[^"\\]|\\.)*")|\b(true|false|null)\b/g, (match, text: string | undefined, word: string) =>
      text ?? ({ true: 'True', false: 'False', null: 'None' } as Record<string, string>)[word] ?? match,
    );
  return `${name}(${Object.entries(input).map(([key, value]) => `${key}=${literal(value)}`).join(', ')})`;
}
