import { describe, expect, it } from 'vitest';
import { DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS } from '../../src/config/config-schema';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import { parseXmlToolUses } from '../../src/parse/xml';
import type { McpToolInfo } from '../../src/processes/mcp-connection';
import { createCommandTool } from '../../src/tools/command-tool';
import { toolDeclarations } from '../../src/tools/declarations';
import type { ToolSpec } from '../../src/tools/define-tool';
import {
  briefLine,
  createDescribeTool,
  DESCRIBE_LIMIT,
  describeTerms,
  fullDescription,
  fullListingTokens,
  listsBriefly,
  markBrief,
  matchTools,
} from '../../src/tools/describe';
import { createMcpTools, type McpCaller } from '../../src/tools/mcp-tool';
import { createPtcTool } from '../../src/tools/ptc';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { runToolUse } from '../../src/tools/run-tool-use';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-describe-');

/** A server connection that answers every call with "ok". */
const answersOk: McpCaller = { callTool: async () => ({ content: [{ type: 'text', text: 'ok' }] }) };

const finance: McpToolInfo[] = [
  {
    name: 'get_members',
    description: 'List the members of a department.\nMembers are sorted by name.',
    inputSchema: { type: 'object', properties: { department: { type: 'string', description: 'The department id' } }, required: ['department'] },
  },
  {
    name: 'get_expenses',
    description: 'Expense records of one employee',
    inputSchema: { type: 'object', properties: { employee: { type: 'string' }, year: { type: 'integer' } }, required: ['employee'] },
  },
  { name: 'get_budget', description: 'The budget of a department for a year', inputSchema: { type: 'object', properties: { department: { type: 'string' } } } },
];

/** The finance server's tools, as fence makes them. */
const financeTools = (): ToolSpec[] => createMcpTools('finance', { command: 'finance-mcp' }, answersOk, finance);

/** `count` tools of one server, each with a described parameter: what a large server lists. */
function manyTools(count: number, server = 'tracker'): ToolSpec[] {
  const listed: McpToolInfo[] = Array.from({ length: count }, (_, i) => ({
    name: `list_issues_${i}`,
    description: `List the issues of project number ${i}, newest first, paged by the time they last changed.`,
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', description: 'Words to look for in the title and body of each issue' }, limit: { type: 'integer' } },
      required: ['query'],
    },
  }));
  return createMcpTools(server, { command: `${server}-mcp` }, answersOk, listed);
}

const names = (tools: readonly ToolSpec[]) => tools.map((tool) => tool.name);

describe('listsBriefly', () => {
  it('lists a few tools in full and many briefly, by the estimated size of their full listing', () => {
    expect(listsBriefly(financeTools())).toBe(false);
    expect(listsBriefly(manyTools(3))).toBe(false);
    expect(listsBriefly(manyTools(50))).toBe(true);
    expect(fullListingTokens(manyTools(50))).toBeGreaterThan(DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS);
  });

  it('counts the declaration, description and instructions of each tool, four characters a token', () => {
    const [tool] = financeTools();
    if (!tool) throw new Error('no tool');
    const chars = toolDeclarations([tool]).length + tool.description.length + tool.instructions.length;
    expect(fullListingTokens([tool])).toBe(Math.ceil(chars / 4));
  });

  it('follows the threshold it is given, and never lists an empty set briefly', () => {
    const tools = financeTools();
    expect(listsBriefly(tools, 0)).toBe(true);
    expect(listsBriefly(tools, fullListingTokens(tools))).toBe(false);
    expect(listsBriefly(tools, fullListingTokens(tools) - 1)).toBe(true);
    expect(listsBriefly([], 0)).toBe(false);
  });
});

describe('markBrief', () => {
  it('marks copies and leaves the tools given as they were', () => {
    const tools = financeTools();
    const marked = markBrief(tools);
    expect(marked.map((tool) => tool.brief)).toEqual([true, true, true]);
    expect(tools.map((tool) => tool.brief)).toEqual([undefined, undefined, undefined]);
    expect(marked[0]?.execute).toBe(tools[0]?.execute);
    expect(briefLine(marked[0] as ToolSpec)).toBe('finance_get_members — List the members of a department.');
  });
});

describe('describeTerms', () => {
  it('splits on spaces, commas and line breaks, without repeats', () => {
    expect(describeTerms('finance_get_members, finance_*\n  budget budget')).toEqual(['finance_get_members', 'finance_*', 'budget']);
    expect(describeTerms(['a b', 'c'])).toEqual(['a', 'b', 'c']);
    expect(describeTerms(' ,\n')).toEqual([]);
  });
});

describe('matchTools', () => {
  const tools = financeTools();

  it('finds tools by name, case-insensitively, in the order asked', () => {
    const match = matchTools(tools, ['finance_get_budget', 'FINANCE_GET_MEMBERS']);
    expect(names(match.tools)).toEqual(['finance_get_budget', 'finance_get_members']);
    expect(match.unmatched).toEqual([]);
  });

  it('finds tools by patterns over their names', () => {
    expect(names(matchTools(tools, ['finance_*']).tools)).toEqual(['finance_get_members', 'finance_get_expenses', 'finance_get_budget']);
    expect(names(matchTools(tools, ['*_get_?udget']).tools)).toEqual(['finance_get_budget']);
    expect(matchTools(tools, ['docs_*'])).toEqual({ tools: [], unmatched: ['docs_*'] });
  });

  it('searches other words in names and descriptions, tools with more of the words first', () => {
    expect(names(matchTools(tools, ['Department']).tools)).toEqual(['finance_get_members', 'finance_get_budget']);
    expect(names(matchTools(tools, ['department', 'year']).tools)).toEqual(['finance_get_budget', 'finance_get_members']);
    expect(names(matchTools(tools, ['expense']).tools)).toEqual(['finance_get_expenses']);
  });

  it('shows each tool once, named ones first, and says which terms matched nothing', () => {
    const match = matchTools(tools, ['department', 'finance_get_budget', 'invoices']);
    expect(names(match.tools)).toEqual(['finance_get_budget', 'finance_get_members']);
    expect(match.unmatched).toEqual(['invoices']);
  });
});

describe('fullDescription', () => {
  it("gives a command tool's declaration, instructions and an example call as a program writes it", () => {
    const lookup = createCommandTool('lookup', {
      description: 'Look up an employee by id',
      command: ['true'],
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      returns: '{ id: string; name: string }',
    });
    const saved = { ...lookup, instructions: 'Looks in the staff list.' };
    expect(fullDescription(saved)).toBe(
      [
        '## lookup',
        '```ts',
        '/** Look up an employee by id */',
        'declare function lookup(args: { id: string }): Promise<{ id: string; name: string }>;',
        '```',
        'Looks in the staff list.',
        'Example (in a program): await lookup({ id: "..." })',
      ].join('\n'),
    );
    // Its own instructions already show the call: it is not repeated.
    expect(fullDescription(lookup)).toBe(['## lookup', '```ts', toolDeclarations([lookup]), '```', lookup.instructions].join('\n'));
  });

  it("gives a direct-only tool's example as its JSON arguments", () => {
    const ping = { ...createCommandTool('ping', { description: 'Ping a host', command: ['true'], callers: ['direct'] }), instructions: 'Pings.' };
    expect(fullDescription(ping).split('\n').at(-1)).toBe('Example arguments of a direct call: {}');
  });

  it("gives an MCP tool's declaration, then its instructions with the call and the server's whole text", () => {
    const [members] = financeTools();
    if (!members) throw new Error('no tool');
    const text = fullDescription(members);
    expect(text).toBe(['## finance_get_members', '```ts', toolDeclarations([members]), '```', members.instructions].join('\n'));
    expect(text).toContain('/** The department id */');
    expect(text).toContain('await finance_get_members({ department: "..." })');
    expect(text).toContain('Members are sorted by name.');
  });
});

describe('the describe tool', () => {
  const run = (tool: ToolSpec, input: Record<string, unknown>) => tool.execute(tool.parameters.parse(input), makeToolContext(workspace()));

  it('is a direct, read-only tool with a block form, whose example names a real tool', () => {
    const tool = createDescribeTool(financeTools());
    expect(tool).toMatchObject({ name: 'describe', blockTypes: ['describe'], callers: ['direct'], mutating: false, example: { tools: 'finance_get_members' } });
    expect(tool.instructions).toContain('finance_*');
  });

  it('gives the full description of each tool its terms match', async () => {
    const tools = markBrief(financeTools());
    const result = await run(createDescribeTool(tools), { tools: 'finance_get_expenses, budget' });
    expect(result.isError).toBeUndefined();
    expect(result.output).toBe([fullDescription(tools[1] as ToolSpec), fullDescription(tools[2] as ToolSpec)].join('\n\n'));
    expect(result.value).toEqual(['finance_get_expenses', 'finance_get_budget']);
  });

  it('takes a list of terms as well as one string', async () => {
    const result = await run(createDescribeTool(financeTools()), { tools: ['finance_get_budget', 'nothing_here'] });
    expect(result.value).toEqual(['finance_get_budget']);
    expect(result.output.endsWith('\n\nNo tool matches "nothing_here".')).toBe(true);
  });

  it(`shows at most ${DESCRIBE_LIMIT} tools a call and names the others`, async () => {
    const result = await run(createDescribeTool(manyTools(25)), { tools: 'tracker_*' });
    expect(result.value).toHaveLength(DESCRIBE_LIMIT);
    expect(result.output.match(/^## /gm)).toHaveLength(DESCRIBE_LIMIT);
    expect(result.output).toContain(
      `5 more tools matched and are not shown (at most ${DESCRIBE_LIMIT} a call): tracker_list_issues_20, tracker_list_issues_21, tracker_list_issues_22, tracker_list_issues_23, tracker_list_issues_24. Name them, or narrow the search.`,
    );
    const many = await run(createDescribeTool(manyTools(80)), { tools: 'issues' });
    expect(many.output).toContain('60 more tools matched and are not shown');
    expect(many.output).toContain('tracker_list_issues_49, and 30 more. Name them, or narrow the search.');
  });

  it('answers a term that matches nothing with an error that names some of the tools', async () => {
    const result = await run(createDescribeTool(manyTools(12, 'docs')), { tools: 'invoices' });
    expect(result.isError).toBe(true);
    expect(result.output).toBe(
      'No tool matches "invoices". Some of the tools: docs_list_issues_0, docs_list_issues_1, docs_list_issues_2, docs_list_issues_3, docs_list_issues_4, ' +
        'docs_list_issues_5, docs_list_issues_6, docs_list_issues_7, docs_list_issues_8, docs_list_issues_9, … (12 in all). ' +
        "Give a name, a pattern such as docs_* or a word of a tool's description.",
    );
  });

  it('answers an empty call with what to write', async () => {
    const result = await run(createDescribeTool(financeTools()), { tools: ' ' });
    expect(result).toEqual({ output: 'Name the tools to describe: names, patterns such as finance_*, or words to search for.', isError: true });
  });

  it('is called as a markdown block, with the terms after the tag or in the body, and as XML', async () => {
    const registry = new ToolRegistry([readTool, createDescribeTool(financeTools())] as ToolSpec[]);
    const ctx = makeToolContext(workspace());
    const call = async (use: Parameters<typeof runToolUse>[0] | undefined) => {
      if (!use) throw new Error('no tool use');
      return (await runToolUse(use, registry, ctx, { outputsDir: workspace() })).result.value;
    };
    expect(await call(parseMarkdownToolUses('```describe\nfinance_get_members\nfinance_get_budget\n```', registry.isTool)[0])).toEqual([
      'finance_get_members',
      'finance_get_budget',
    ]);
    expect(await call(parseMarkdownToolUses('```describe finance_get_budget finance_get_members\n```', registry.isTool)[0])).toEqual([
      'finance_get_budget',
      'finance_get_members',
    ]);
    expect(await call(parseXmlToolUses('<tool-use><describe args="finance_get_expenses"/></tool-use>')[0])).toEqual(['finance_get_expenses']);
  });
});

describe('a brief tool', () => {
  it('is still checked against its real parameters, and a wrong call is shown the example', async () => {
    const [members] = markBrief(financeTools());
    if (!members) throw new Error('no tool');
    const registry = new ToolRegistry([members]);
    const use = { tool: 'finance_get_members', args: [], content: '', kwargs: { dept: 'x' }, format: 'tool' as const, start: 0, end: 0 };
    const { result } = await runToolUse(use, registry, makeToolContext(workspace()), { outputsDir: workspace() });
    expect(result.isError).toBe(true);
    expect(result.output).toContain('Invalid input for finance_get_members:');
    expect(result.output).toContain('Write it like this:\n{"department":"..."}');
  });

  it("is one line of ptc's instructions, after the declarations of the tools listed in full", () => {
    const brief = markBrief(financeTools());
    const ptc = createPtcTool({ tools: [readTool as ToolSpec, ...brief], rules: [], session: { id: 's', dir: '/nowhere' } });
    expect(ptc.instructions).toContain('declare function read(');
    expect(ptc.instructions).not.toContain('declare function finance_');
    expect(ptc.instructions).toContain(
      [
        '```',
        "More tools, listed by name only: the describe tool gives a tool's parameters and result; describe one before a program calls it.",
        '- finance_get_members — List the members of a department.',
        '- finance_get_expenses — Expense records of one employee',
        '- finance_get_budget — The budget of a department for a year',
      ].join('\n'),
    );
  });

  it("is listed alone when no tool is listed in full", () => {
    const ptc = createPtcTool({ tools: markBrief(financeTools()), rules: [], session: { id: 's', dir: '/nowhere' } });
    expect(ptc.instructions).not.toContain('```ts');
    expect(ptc.instructions).toContain("The tools programs can call:\nTools, listed by name only: the describe tool gives a tool's parameters and result");
  });
});
