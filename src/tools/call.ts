import { z } from 'zod';
import type { ToolFormat } from '../parse/tool-use';
import { toolDeclarations } from './declarations';
import { defineTool, type ToolSpec } from './define-tool';
import { briefLine } from './describe';
import { CALL_TAG } from './notation';
import type { ToolRegistry } from './registry';

/** The tag of the block that calls a tool with no block form of its own. */
export const CALL_TOOL = CALL_TAG;

/**
 * The tools a `call` block reaches: those the model may call directly that have no block of
 * their own (MCP tools, command tools, saved programs).
 */
export function callableByCall(tools: readonly ToolSpec[]): ToolSpec[] {
  return tools.filter((tool) => tool.blockTypes.length === 0 && tool.callers.includes('direct'));
}

/**
 * The `call` block of the markdown and XML formats: the tool's name after the tag, its JSON
 * arguments as the body. It is how the model reaches, outside a program, a tool that has no
 * block form (in the native format every tool is called directly, so there is no `call`).
 * Undefined when there is no such tool. The instructions point to `ptc`'s declarations for
 * the tools programs may call too, and declare the others (briefly when they are listed so).
 * `runToolUse` runs a call block as the tool it names (see `resolveCall`); `execute` is
 * reached only when something runs `call` by itself.
 */
export function createCallTool(tools: readonly ToolSpec[]): ToolSpec | undefined {
  const targets = callableByCall(tools);
  const first = targets[0];
  if (!first) return undefined;
  const directOnly = targets.filter((tool) => !tool.callers.includes('program'));
  const full = directOnly.filter((tool) => !tool.brief);
  const brief = directOnly.filter((tool) => tool.brief);
  const lines = [
    'Use it for a single call of a tool that has no block of its own: the tools declared for programs under ptc, and those below. Put the tool name after the tag and its arguments, a JSON object, in the body. For several calls, a loop or large results, write a program instead.',
  ];
  if (full.length > 0) lines.push('Tools only this block can call:', '```ts', toolDeclarations(full), '```');
  if (brief.length > 0) lines.push('Tools only this block can call, by name (describe gives their parameters):', ...brief.map((tool) => `- ${briefLine(tool)}`));
  return defineTool({
    name: CALL_TOOL,
    description: 'Call one tool that has no block of its own, with JSON arguments.',
    instructions: lines.join('\n'),
    example: { tool: first.name, arguments: JSON.stringify(first.example) },
    blockTypes: [CALL_TOOL],
    parameters: z.object({
      tool: z.string().describe('The name of the tool to call'),
      arguments: z.string().default('{}').describe('Its arguments: a JSON object'),
    }),
    block: { args: ['tool'], content: 'arguments' },
    callers: ['direct'],
    mutating: targets.some((tool) => tool.mutating),
    async execute() {
      return { output: 'call runs the tool it names; it has nothing to run by itself.', isError: true };
    },
  });
}

/**
 * The tool a `call` block names and its arguments read from the body (the same lenient JSON
 * reading as native calls: a small repair is fine, an array or a string is not), or the error
 * the model gets: no such tool, a tool with a block of its own or only for programs, or JSON
 * that cannot be read.
 */
export async function resolveCall(
  input: Record<string, unknown>,
  registry: ToolRegistry,
  format: ToolFormat,
): Promise<{ spec: ToolSpec; input: Record<string, unknown> } | { error: string }> {
  const name = typeof input.tool === 'string' ? input.tool.trim() : '';
  const targets = callableByCall(registry.tools);
  const names = targets.map((tool) => tool.name).join(', ');
  if (!name) return { error: `Name the tool after the tag: ${CALL_TOOL} <tool>, then its JSON arguments in the body. The tools: ${names}.` };
  const spec = registry.get(name);
  if (!spec) return { error: `There is no tool named "${name}" to call. The tools a ${CALL_TOOL} block reaches: ${names}.` };
  if (!spec.callers.includes('direct')) return { error: `${name} can only be called from a program (a ptc block).` };
  if (spec.blockTypes.length > 0) {
    return { error: `${name} has a block of its own: write it as ${format === 'xml' ? `<${spec.blockTypes[0]}>` : `\`\`\`${spec.blockTypes[0]}`}, not through ${CALL_TOOL}.` };
  }
  const { parseToolArguments } = await import('../parse/native-call');
  const parsed = parseToolArguments(typeof input.arguments === 'string' ? input.arguments : '');
  if (!parsed.ok) return { error: `The arguments of ${name} could not be read: ${parsed.error}. Write them as a JSON object, e.g. ${JSON.stringify(spec.example)}.` };
  return { spec, input: parsed.value };
}
