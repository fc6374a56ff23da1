import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { builtinTools } from '../../src/tools/builtin-tools';
import { defineTool, type ToolSpec } from '../../src/tools/define-tool';
import { ToolRegistry } from '../../src/tools/registry';

/** A do-nothing tool with the given name and tags. */
function stubTool(name: string, blockTypes: string[]): ToolSpec {
  return defineTool({
    name,
    description: `${name} does nothing.`,
    instructions: '',
    example: {},
    blockTypes,
    parameters: z.object({}),
    block: {},
    callers: ['direct'],
    mutating: false,
    execute: async () => ({ output: '' }),
  }) as ToolSpec;
}

describe('ToolRegistry', () => {
  const tools = builtinTools();
  const registry = new ToolRegistry(tools);
  const shell = tools.find((tool) => tool.name === 'shell');

  it('keeps the tools in the order given', () => {
    expect(registry.tools.map((tool) => tool.name)).toEqual(['shell', 'python', 'save', 'append', 'patch', 'read', 'glob', 'grep', 'fetch', 'plan']);
  });

  it('finds a tool by each of its tags', () => {
    expect(shell).toBeDefined();
    for (const tag of ['shell', 'bash', 'sh']) expect(registry.forTag(tag)).toBe(shell);
    expect(registry.forTag('read')?.name).toBe('read');
    expect(registry.forTag('ts')).toBeUndefined();
  });

  it('finds a tool by name only, not by its other tags', () => {
    expect(registry.get('shell')).toBe(shell);
    expect(registry.get('patch')?.name).toBe('patch');
    expect(registry.get('bash')).toBeUndefined();
    expect(registry.get('nope')).toBeUndefined();
  });

  it('tells tool tags from other language tags, also when detached from the registry', () => {
    const { isTool } = registry;
    expect(['shell', 'bash', 'sh', 'python', 'py', 'ipython', 'save', 'append', 'patch', 'read'].every(isTool)).toBe(true);
    expect(['ts', 'json', 'javascript', '', 'Shell'].some(isTool)).toBe(false);
  });

  it('refuses two tools with the same name', () => {
    expect(() => new ToolRegistry([stubTool('dup', ['a']), stubTool('dup', ['b'])])).toThrow('two tools are named "dup"');
  });

  it('refuses two tools answering to the same tag, naming both', () => {
    expect(() => new ToolRegistry([stubTool('first', ['x', 'common']), stubTool('second', ['common'])])).toThrow(
      'tools "first" and "second" both answer to `common`',
    );
  });

  it('holds nothing when given no tools', () => {
    const empty = new ToolRegistry([]);
    expect(empty.forTag('shell')).toBeUndefined();
    expect(empty.isTool('shell')).toBe(false);
  });
});
