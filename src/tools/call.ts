import { z } from 'zod';
import type { ToolFormat } from '../parse/tool-use';
import { toolDeclarations } from './declarations';
import { defineTool, type ToolSpec } from './define-tool';
import { briefLine, hiddenGroups } from './describe';
import { CALL_TAG } from './notation';
import type { ToolRegistry } from './registry';
import { isRecord } from './schema-example';

/** The tag of the block that calls a tool with no block form of its own. */
export const CALL_TOOL = CALL_TAG;

/**
 * The tools `call` reaches in a format: in markdown and XML those the model may call directly
 * that have no block of their own (MCP tools, command tools, saved programs); natively those
 * the model may call that are hidden (they have no definition of their own).
 */
export function callableByCall(tools: readonly ToolSpec[], format: ToolFormat = 'markdown'): ToolSpec[] {
  const reached = (tool: ToolSpec) => (format === 'tool' ? tool.hidden === true : tool.blockTypes.length === 0);
  return tools.filter((tool) => tool.callers.includes('direct') && reached(tool));
}

/**
 * `call`: how the model reaches, outside a program, a tool it cannot call by itself. In
 * markdown and XML it is a block — the tool's name after the tag, its JSON arguments as the
 * body — for the tools without a block form; natively it is a tool of its own (`tool`,
 * `arguments`) for the hidden tools, which have no definitions. Undefined when there is no
 * such tool. The instructions point to `ptc`'s listing for the tools programs may call too,
 * and list the others (declared, by one line, or counted, as they are listed). `runToolUse`
 * runs a call as the tool it names (see `resolveCall`); `execute` is reached only when
 * something runs `call` by itself. In markdown and XML, while MCP servers are still starting
 * (`starting`, their names) and no tool needs `call` yet, it is there all the same: a model
 * told of their tools (or that knows them) writes a call block, which must be read as one.
 */
export function createCallTool(tools: readonly ToolSpec[], format: ToolFormat = 'markdown', starting: readonly string[] = []): ToolSpec | undefined {
  const targets = callableByCall(tools, format);
  const first = targets[0];
  const native = format === 'tool';
  if (!first) return native || starting.length === 0 ? undefined : startingServersCall(starting);
  const others = native ? targets : targets.filter((tool) => !tool.callers.includes('program'));
  const full = others.filter((tool) => !tool.brief);
  const brief = others.filter((tool) => tool.brief && !tool.hidden);
  const hidden = others.filter((tool) => tool.hidden);
  const lines = [
    native
      ? 'Use it to call a tool that is not among your tool definitions: the registered tools are too many to define each, and describe finds them. Give the tool name and its arguments object.'
      : 'Use it for a single call of a tool that has no block of its own: the tools listed for programs under ptc, and those below. Put the tool name after the tag and its arguments, a JSON object, in the body. For several calls, a loop or large results, write a program instead.',
  ];
  const only = native ? 'Tools only this can call' : 'Tools only this block can call';
  if (full.length > 0) lines.push(`${only}:`, '```ts', toolDeclarations(full), '```');
  if (brief.length > 0) lines.push(`${only}, by name (describe gives their parameters):`, ...brief.map((tool) => `- ${briefLine(tool)}`));
  if (hidden.length > 0) lines.push(`${only}, not listed (describe finds them by name, pattern or words):`, ...hiddenGroups(hidden));
  return defineTool({
    name: CALL_TOOL,
    description: native ? 'Call a registered tool that has no definition of its own.' : 'Call one tool that has no block of its own, with JSON arguments.',
    instructions: lines.join('\n'),
    example: { tool: first.name, arguments: native ? first.example : JSON.stringify(first.example) },
    blockTypes: native ? [] : [CALL_TOOL],
    parameters: z.object({
      tool: z.string().describe('The name of the tool to call'),
      arguments: z
        .union([z.string(), z.record(z.string(), z.unknown())])
        .default('{}')
        .describe('Its arguments: a JSON object'),
    }),
    block: native ? {} : { args: ['tool'], content: 'arguments' },
    callers: ['direct'],
    mutating: targets.some((tool) => tool.mutating),
    async execute() {
      return { output: 'call runs the tool it names; it has nothing to run by itself.', isError: true };
    },
  });
}

/** `call` before any tool needs it: for the tools of MCP servers still starting, which it waits for. */
function startingServersCall(starting: readonly string[]): ToolSpec {
  const servers = starting.join(', ');
  return defineTool({
    name: CALL_TOOL,
    description: 'Call one tool that has no block of its own, with JSON arguments.',
    instructions: [
      `MCP servers still starting (${servers}) add their tools to this session when they are ready, and you are told of them then.`,
      'A call of one of those tools (named after its server: <server>_<tool>) waits for its server. Put the tool name after the tag and its arguments, a JSON object, in the body.',
    ].join('\n'),
    example: { tool: `${starting[0] ?? 'server'}_tool`, arguments: '{}' },
    blockTypes: [CALL_TOOL],
    parameters: z.object({
      tool: z.string().describe('The name of the tool to call'),
      arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).default('{}').describe('Its arguments: a JSON object'),
    }),
    block: { args: ['tool'], content: 'arguments' },
    callers: ['direct'],
    mutating: true,
    async execute() {
      return { output: 'call runs the tool it names; it has nothing to run by itself.', isError: true };
    },
  });
}

/**
 * The tool a call names and its arguments: an object as given (natively), or read from the
 * body (the same lenient JSON reading as native calls: a small repair is fine, an array or a
 * string is not). A tool of an MCP server still starting is waited for (until `signal`
 * aborts). Or the error the model gets: no such tool (or why its server has none), a tool
 * only for programs or (in markdown and XML) with a block of its own, or JSON that cannot be
 * read.
 */
export async function resolveCall(
  input: Record<string, unknown>,
  registry: ToolRegistry,
  format: ToolFormat,
  signal: AbortSignal = new AbortController().signal,
): Promise<{ spec: ToolSpec; input: Record<string, unknown> } | { error: string }> {
  const name = typeof input.tool === 'string' ? input.tool.trim() : '';
  const targets = callableByCall(registry.tools, format);
  const names = targets.map((tool) => tool.name).join(', ');
  if (!name) return { error: `Name the tool after the tag: ${CALL_TOOL} <tool>, then its JSON arguments in the body. The tools: ${names}.` };
  // A tool of an MCP server still starting: the call waits for the server.
  const spec = await registry.arriving(name, signal);
  if (!spec) return { error: registry.whyAbsent(name) ?? `There is no tool named "${name}" to call. The tools a ${CALL_TOOL} block reaches: ${names}.` };
  if (!spec.callers.includes('direct')) return { error: `${name} can only be called from a program (a ptc block).` };
  if (format !== 'tool' && spec.blockTypes.length > 0) {
    return { error: `${name} has a block of its own: write it as ${format === 'xml' ? `<${spec.blockTypes[0]}>` : `\`\`\`${spec.blockTypes[0]}`}, not through ${CALL_TOOL}.` };
  }
  if (isRecord(input.arguments)) return { spec, input: input.arguments };
  const { parseToolArguments } = await import('../parse/native-call');
  const parsed = parseToolArguments(typeof input.arguments === 'string' ? input.arguments : '');
  if (!parsed.ok) return { error: `The arguments of ${name} could not be read: ${parsed.error}. Write them as a JSON object, e.g. ${JSON.stringify(spec.example)}.` };
  return { spec, input: parsed.value };
}
