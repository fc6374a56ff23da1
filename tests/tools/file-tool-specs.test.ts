import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import { appendTool } from '../../src/tools/append';
import type { ToolSpec } from '../../src/tools/define-tool';
import { renderCall } from '../../src/tools/notation';
import { parsePatch } from '../../src/tools/patch-hunks';
import { patchTool } from '../../src/tools/patch';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { blockInput } from '../../src/tools/run-tool-use';
import { saveTool } from '../../src/tools/save';

const tools = [saveTool, appendTool, patchTool, readTool] as ToolSpec[];
const registry = new ToolRegistry(tools);

/** The tool's example written as a markdown block, read back by the real parser and mapped onto its parameters. */
function exampleFromBlock(tool: ToolSpec): { tag: string; input: Record<string, unknown> } {
  const uses = parseMarkdownToolUses(renderCall(tool, tool.example, 'markdown'), registry.isTool);
  expect(uses).toHaveLength(1);
  const use = uses[0]!;
  return { tag: use.tool, input: blockInput(tool, use) };
}

describe('file tool specs', () => {
  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: prompt text and JSON schema', (_name, tool) => {
    expect({
      name: tool.name,
      description: tool.description,
      instructions: tool.instructions,
      example: tool.example,
      schema: z.toJSONSchema(tool.parameters),
    }).toMatchSnapshot();
  });

  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: one-line description, block named after the tool', (_name, tool) => {
    expect(tool.description).not.toContain('\n');
    expect(tool.blockTypes[0]).toBe(tool.name);
    const { tag, input } = exampleFromBlock(tool);
    expect(tag).toBe(tool.name);
    expect(tool.parameters.safeParse(input).success).toBe(true);
    expect(tool.parameters.safeParse(tool.example).success).toBe(true);
    expect(input.path).toBe(tool.example.path);
    for (const field of [...(tool.block.args ?? []), tool.block.content]) {
      if (field !== undefined) expect(Object.keys(tool.parameters.shape)).toContain(field);
    }
  });

  it("patch's example is a patch it accepts, also once written as a block and read back", () => {
    expect(parsePatch(patchTool.example.patch).ok).toBe(true);
    const { input } = exampleFromBlock(patchTool as ToolSpec);
    expect(input).toEqual(patchTool.example);
    expect(parsePatch(String(input.patch)).ok).toBe(true);
  });
});
