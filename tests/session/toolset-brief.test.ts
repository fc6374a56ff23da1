import { describe, expect, it } from 'vitest';
import { buildSystemPrompt, toolSchemas } from '../../src/agent/system-prompt';
import type { FenceConfig } from '../../src/config/config';
import { DEFAULT_PTC_CONFIG, type CommandToolConfig } from '../../src/config/config-schema';
import type { ProgramRun } from '../../src/ptc/run-program';
import type { McpToolInfo } from '../../src/processes/mcp-connection';
import { buildToolset, sessionTools } from '../../src/session/toolset';
import { ToolRegistry } from '../../src/tools/registry';
import { runToolUse } from '../../src/tools/run-tool-use';
import type { ToolSpec } from '../../src/tools/define-tool';
import { createMcpTools, type McpCaller } from '../../src/tools/mcp-tool';
import { useTempSession } from '../support/temp-session';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-toolset-brief-');
const session = useTempSession();
const sessionRef = () => ({ id: session().id, dir: session().dir });
const now = new Date('2026-03-04T05:06:07Z');

function config(fields: { tools?: Record<string, CommandToolConfig>; briefToolsAboveTokens?: number; hideToolsAboveTokens?: number } = {}): FenceConfig {
  return { toolFormat: 'markdown', models: {}, mcpServers: {}, tools: fields.tools ?? {}, policy: [], ptc: DEFAULT_PTC_CONFIG, sandbox: { writable: [], denyRead: [], network: false, passEnv: [], ignored: [] }, sources: [], ...fields };
}

/** Whether the toolset lists its registered tools briefly: then it offers `describe`. */
const offersDescribe = (toolset: { tools: readonly ToolSpec[] }) => toolset.tools.some((tool) => tool.name === 'describe');

/** A server that answers each call with the arguments it got, as JSON. */
const echoes: McpCaller = { callTool: async (_name, args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] }) };

/** `count` MCP tools of one server, of the kind public servers list: a sentence or two and three described parameters. */
function mcpTools(count: number): ToolSpec[] {
  const listed: McpToolInfo[] = Array.from({ length: count }, (_, i) => ({
    name: `search_${i}`,
    description: `Search the records of kind ${i} by their fields. Results are sorted by the time they last changed, newest first.`,
    inputSchema: {
      type: 'object',
      properties: {
        project: { type: 'string', description: `The project that owns the records of kind ${i}, as owner/name` },
        query: { type: 'string', description: 'Words to look for in the title and body' },
        limit: { type: 'integer', description: 'How many to return, at most 100 (default 20)' },
      },
      required: ['project', 'query'],
    },
  }));
  return createMcpTools('tracker', { command: 'tracker-mcp' }, echoes, listed);
}

const names = (tools: readonly ToolSpec[]) => tools.map((tool) => tool.name);
const prompt = (tools: readonly ToolSpec[], format: 'markdown' | 'tool') => buildSystemPrompt({ tools, workspace: '/w', format, now });

describe('a session with a few registered tools', () => {
  it('lists them in full and offers no describe tool', () => {
    const toolset = buildToolset(config(), sessionRef(), mcpTools(3));
    expect(offersDescribe(toolset)).toBe(false);
    expect(names(toolset.tools)).toEqual(['shell', 'python', 'save', 'append', 'patch', 'read', 'glob', 'grep', 'fetch', 'plan', 'tracker_search_0', 'tracker_search_1', 'tracker_search_2', 'ptc']);
    expect(toolset.tools.some((tool) => tool.brief)).toBe(false);
    const markdown = prompt(toolset.tools, 'markdown');
    expect(markdown).toContain('declare function tracker_search_2(args: {');
    expect(markdown).not.toContain('describe');
    const native = toolSchemas(toolset.tools).find((tool) => tool.name === 'tracker_search_0');
    expect(native?.parameters).toMatchObject({ properties: { project: { type: 'string' } }, required: ['project', 'query'] });
  });
});

describe('a session with many registered tools', () => {
  it('lists them by name and one line in the markdown prompt, with describe, and the built-ins in full', () => {
    const toolset = buildToolset(config(), sessionRef(), mcpTools(50));
    expect(offersDescribe(toolset)).toBe(true);
    expect(names(toolset.tools).slice(-3)).toEqual(['tracker_search_49', 'describe', 'ptc']);
    expect(toolset.eligible.filter((tool) => tool.brief)).toHaveLength(50);
    const markdown = prompt(toolset.tools, 'markdown');
    expect(markdown).toContain('\n## describe\n');
    expect(markdown).toContain('declare function read(args: {');
    expect(markdown).not.toContain('declare function tracker_');
    expect(markdown).toContain('\n- tracker_search_7 — Search the records of kind 7 by their fields. Results are sorted by the time they last changed, newest first.\n');
    expect(markdown.match(/^- tracker_search_\d+ — /gm)).toHaveLength(50);
  });

  it('gives each one a native definition with open parameters, beside the full built-ins and describe', () => {
    const toolset = buildToolset(config(), sessionRef(), mcpTools(50));
    const definitions = toolSchemas(toolset.tools);
    expect(definitions.map((d) => d.name)).toEqual(names(toolset.tools));
    const brief = definitions.filter((d) => d.name.startsWith('tracker_'));
    expect(brief).toHaveLength(50);
    expect(brief.every((d) => JSON.stringify(d.parameters) === '{"type":"object"}' && d.description.endsWith('\nCall describe with its name for its parameters.'))).toBe(true);
    expect(definitions.find((d) => d.name === 'read')?.parameters).toMatchObject({ properties: { path: { type: 'string' } } });
    expect(definitions.find((d) => d.name === 'describe')?.parameters).toMatchObject({ required: ['tools'] });
  });

  it('costs at most twice the prompt of five tools, in markdown and native', () => {
    const size = (tools: readonly ToolSpec[], format: 'markdown' | 'tool') =>
      prompt(tools, format).length + (format === 'tool' ? JSON.stringify(toolSchemas(tools)).length : 0);
    for (const format of ['markdown', 'tool'] as const) {
      const five = size(buildToolset(config(), sessionRef(), mcpTools(5)).tools, format);
      const fifty = size(buildToolset(config(), sessionRef(), mcpTools(50)).tools, format);
      expect(fifty).toBeLessThan(2 * five);
    }
  });

  it('describes a brief tool and runs it from a program like any other', async () => {
    const { tools } = buildToolset(config(), sessionRef(), mcpTools(50));
    const ctx = makeToolContext(workspace());
    const describe = tools.find((tool) => tool.name === 'describe');
    const ptc = tools.find((tool) => tool.name === 'ptc');
    if (!describe || !ptc) throw new Error('no describe or ptc tool');
    const described = await describe.execute(describe.parameters.parse({ tools: 'tracker_search_4' }), ctx);
    expect(described.output).toContain('await tracker_search_4({ project: "...", query: "..." })');
    const code = 'return await tracker_search_4({ project: "a/b", query: "late" });';
    const result = await ptc.execute(ptc.parameters.parse({ code }), ctx);
    expect(result.isError).toBe(false);
    expect(result.value).toEqual({ project: 'a/b', query: 'late' });
    expect((result.details as ProgramRun).trace.calls.map((call) => call.tool)).toEqual(['tracker_search_4']);
  });

  it('follows brief_tools_above_tokens: 0 lists even one command tool briefly', () => {
    const tools = { lookup: { description: 'Look up an employee by id', command: ['true'] } };
    expect(offersDescribe(buildToolset(config({ tools }), sessionRef()))).toBe(false);
    const toolset = buildToolset(config({ tools, briefToolsAboveTokens: 0 }), sessionRef());
    expect(offersDescribe(toolset)).toBe(true);
    expect(names(toolset.tools).slice(-3)).toEqual(['lookup', 'describe', 'ptc']);
    expect(toolset.tools.find((tool) => tool.name === 'read')?.brief).toBeUndefined();
  });

  it('keeps many tools in full when the threshold is above them', () => {
    const toolset = buildToolset(config({ briefToolsAboveTokens: 1_000_000 }), sessionRef(), mcpTools(50));
    expect(offersDescribe(toolset)).toBe(false);
    expect(names(toolset.tools)).not.toContain('describe');
  });
});

describe('ptc in the native format', () => {
  it('names the tools the model has definitions of, with their result types, and declares only the others', () => {
    const programOnly = createMcpTools('ledger', { command: 'ledger-mcp', callers: ['program'] }, echoes, [
      { name: 'totals', description: 'Totals of a ledger.', inputSchema: { type: 'object', properties: { year: { type: 'integer' } } } },
    ]);
    const toolset = buildToolset(config(), sessionRef(), [...mcpTools(2), ...programOnly]);
    const native = sessionTools(toolset, 'tool').find((tool) => tool.name === 'ptc')?.instructions ?? '';
    expect(native).toContain('Your tools, with the arguments their definitions give (→ what a program gets back): read → string | string[], glob → string[], grep → ');
    expect(native).toContain(', tracker_search_0, tracker_search_1.');
    expect(native).not.toContain('declare function read(');
    expect(native).not.toContain('declare function tracker_search_0(');
    expect(native).toContain('And these:\n```ts\n');
    expect(native).toContain('declare function ledger_totals(args: {');
    // The block formats keep every declaration.
    const markdown = sessionTools(toolset, 'markdown').find((tool) => tool.name === 'ptc')?.instructions ?? '';
    expect(markdown).toContain('declare function read(');
    expect(markdown).toContain('declare function tracker_search_0(');
  });
});

describe('a session with hundreds of registered tools', () => {
  const registryFor = (tools: readonly ToolSpec[]) => new ToolRegistry(tools);

  it('counts them by server instead of listing them, in markdown, and reaches them with describe and call', async () => {
    const toolset = buildToolset(config(), sessionRef(), mcpTools(300));
    const tools = sessionTools(toolset, 'markdown');
    expect(toolset.eligible.filter((tool) => tool.hidden)).toHaveLength(300);
    const markdown = prompt(tools, 'markdown');
    expect(markdown).not.toMatch(/^- tracker_search_\d+ — /m);
    expect(markdown).toContain('300 more tools are too many to list; the describe tool finds them by name, pattern or words');
    expect(markdown).toContain('- MCP server tracker: 300 tools (tracker_search_0, tracker_search_1, tracker_search_2, …)');
    expect(markdown).toContain('\n## call\n');
    const described = await tools.find((t) => t.name === 'describe')?.execute({ tools: 'tracker_search_123' }, makeToolContext(workspace()));
    expect(described?.output).toContain('## tracker_search_123');
    const use = { tool: 'call', args: ['tracker_search_123'], content: '{"project": "a/b", "query": "x"}', format: 'markdown' as const, start: 0, end: 0 };
    const outcome = await runToolUse(use, registryFor(tools), makeToolContext(workspace()), { outputsDir: workspace() });
    expect(outcome.tool).toBe('tracker_search_123');
    expect(outcome.result.output).toBe('{"project":"a/b","query":"x"}');
  });

  it('gives them no native definitions, and a native call tool for them', async () => {
    const toolset = buildToolset(config(), sessionRef(), mcpTools(300));
    const tools = sessionTools(toolset, 'tool');
    const definitions = toolSchemas(tools);
    expect(definitions.some((d) => d.name.startsWith('tracker_'))).toBe(false);
    const call = definitions.find((d) => d.name === 'call');
    expect(call?.description).toContain('- MCP server tracker: 300 tools');
    const use = { tool: 'call', args: [], content: '', kwargs: { tool: 'tracker_search_7', arguments: { project: 'a/b', query: 'y' } }, format: 'tool' as const, callId: 'c1', start: 0, end: 0 };
    const outcome = await runToolUse(use, registryFor(tools), makeToolContext(workspace()), { outputsDir: workspace() });
    expect(outcome.tool).toBe('tracker_search_7');
    expect(outcome.result.output).toBe('{"project":"a/b","query":"y"}');
    // Five tools still have their definitions and no call.
    expect(sessionTools(buildToolset(config(), sessionRef(), mcpTools(5)), 'tool').some((t) => t.name === 'call')).toBe(false);
  });

  it('keeps the whole request of 300 tools under that of 50 listed by one line', () => {
    const size = (count: number, format: 'markdown' | 'tool') => {
      const tools = sessionTools(buildToolset(config(), sessionRef(), mcpTools(count)), format);
      return prompt(tools, format).length + (format === 'tool' ? JSON.stringify(toolSchemas(tools)).length : 0);
    };
    for (const format of ['markdown', 'tool'] as const) expect(size(300, format)).toBeLessThan(size(50, format));
  });

  it('follows hide_tools_above_tokens', () => {
    expect(buildToolset(config({ hideToolsAboveTokens: 0 }), sessionRef(), mcpTools(3)).tools.filter((t) => t.hidden)).toHaveLength(3);
    expect(buildToolset(config({ hideToolsAboveTokens: 1_000_000 }), sessionRef(), mcpTools(300)).tools.filter((t) => t.hidden)).toHaveLength(0);
  });
});
