import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appendTool } from '../../src/tools/append';
import { parsePatch } from '../../src/tools/patch-hunks';
import { patchTool } from '../../src/tools/patch';
import { readTool } from '../../src/tools/read';
import { saveTool } from '../../src/tools/save';

const tools = [saveTool, appendTool, patchTool, readTool];

/** The language tag and body of the single fenced block in an example. */
function exampleBlock(example: string): { tag: string; body: string } {
  const match = /^```(.+)\n([\s\S]*?)\n?```$/.exec(example.trim());
  if (match === null) throw new Error(`not a single fenced block: ${example}`);
  return { tag: match[1] ?? '', body: match[2] ?? '' };
}

describe('file tool specs', () => {
  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: prompt text and JSON schema', (_name, tool) => {
    expect({
      name: tool.name,
      description: tool.description,
      instructions: tool.instructions,
      examples: tool.examples,
      schema: z.toJSONSchema(tool.parameters),
    }).toMatchSnapshot();
  });

  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: one-line description, block named after the tool', (_name, tool) => {
    expect(tool.description).not.toContain('\n');
    expect(tool.blockTypes[0]).toBe(tool.name);
    const { tag } = exampleBlock(tool.examples);
    expect(tag.split(' ')[0]).toBe(tool.name);
    for (const field of [...(tool.block.args ?? []), tool.block.content]) {
      if (field !== undefined) expect(Object.keys(tool.parameters.shape)).toContain(field);
    }
  });

  it("patch's example is a patch it accepts", () => {
    const result = parsePatch(exampleBlock(patchTool.examples).body);
    expect(result.ok).toBe(true);
  });
});
