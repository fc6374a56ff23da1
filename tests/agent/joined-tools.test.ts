import { describe, expect, it } from 'vitest';
import { JoinedTools } from '../../src/agent/joined-tools';
import type { ToolSpec } from '../../src/tools/define-tool';
import { ToolRegistry } from '../../src/tools/registry';
import { fakeTool } from '../support/fake-tool';

/** A registered tool as an MCP server's would be: no block of its own, callable directly and by programs. */
function serverTool(name: string, marks: Partial<ToolSpec> = {}): ToolSpec {
  return { ...fakeTool({ name }).spec, blockTypes: [], group: 'MCP server calc', ...marks };
}

const shell = fakeTool({ name: 'shell' }).spec;

describe('telling the model of tools that joined', () => {
  it('says nothing until a change is noted, then names the server and lists the new tools once', () => {
    const registry = new ToolRegistry([shell]);
    const joined = new JoinedTools(registry, 'markdown');
    expect(joined.take()).toBeUndefined();
    registry.replace([shell, serverTool('calc_sum')]);
    joined.note({ server: 'calc', kind: 'joined' });
    const notice = joined.take() ?? '';
    expect(notice).toMatch(/^MCP server calc finished starting: the tools below can be called from now on\./);
    expect(notice).toContain('declare function calc_sum');
    expect(notice).toContain('```call calc_sum\n{"path":"a.txt"}\n```');
    expect(joined.take()).toBeUndefined();
  });

  it('lists tools of a brief toolset one line each, and counts hidden ones', () => {
    const registry = new ToolRegistry([shell]);
    const joined = new JoinedTools(registry, 'xml');
    registry.replace([shell, serverTool('calc_sum', { brief: true }), serverTool('calc_mul', { brief: true, hidden: true })]);
    joined.note({ server: 'calc', kind: 'joined' });
    const notice = joined.take() ?? '';
    expect(notice).toContain('- calc_sum — The calc_sum tool, for tests.');
    expect(notice).not.toContain('declare function');
    expect(notice).toContain('- MCP server calc: 1 tool (calc_mul)');
    expect(notice).toContain('<call args="calc_sum">');
  });

  it('names the tools a server no longer lists, and natively leaves the telling to the tool definitions', () => {
    const registry = new ToolRegistry([shell, serverTool('calc_sum'), serverTool('calc_mul')]);
    const markdown = new JoinedTools(registry, 'markdown');
    const native = new JoinedTools(registry, 'tool');
    registry.replace([shell, serverTool('calc_sum')]);
    markdown.note({ server: 'calc', kind: 'relisted' });
    native.note({ server: 'calc', kind: 'relisted' });
    expect(markdown.take()).toBe('MCP server calc changed its tools.\n\nNo longer offered, not to be called: calc_mul.');
    expect(native.take()).toBeUndefined();
  });
});

describe('a registry whose tools join later', () => {
  it('waits for a server that may list a name, then finds the tool; explains a name it cannot have', async () => {
    let arrive: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => (arrive = resolve));
    const registry = new ToolRegistry([shell], {
      arrival: (name) => (name.startsWith('calc_') ? arrived : undefined),
      whyAbsent: (name) => (name.startsWith('gone_') ? `${name} is no longer offered.` : undefined),
    });
    const found = registry.arriving('calc_sum', new AbortController().signal);
    registry.replace([shell, serverTool('calc_sum')]);
    arrive();
    expect((await found)?.name).toBe('calc_sum');
    expect(registry.version).toBe(1);
    expect(await registry.arriving('other', new AbortController().signal)).toBeUndefined();
    expect(registry.whyAbsent('gone_x')).toBe('gone_x is no longer offered.');
    expect(registry.whyAbsent('calc_sum')).toBeUndefined();
  });

  it('keeps its tools when a new list has two tools of one name', () => {
    const registry = new ToolRegistry([shell]);
    expect(() => registry.replace([shell, serverTool('shell')])).toThrow('two tools are named "shell"');
    expect(registry.tools).toEqual([shell]);
    expect(registry.version).toBe(0);
  });
});
