import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildSystemPrompt } from '../../src/agent/system-prompt';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import { parseXmlToolUses } from '../../src/parse/xml';
import { callableByCall, createCallTool } from '../../src/tools/call';
import { defineTool, type Caller, type ToolSpec } from '../../src/tools/define-tool';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { runToolUse } from '../../src/tools/run-tool-use';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-call-');

/** A tool with no block form that reports the arguments it got. */
function registered(name: string, callers: readonly Caller[], mutating = false): ToolSpec {
  return defineTool({
    name,
    description: `The ${name} tool.`,
    instructions: `Call ${name} with a department.`,
    example: { department: 'sales' },
    blockTypes: [],
    parameters: z.object({ department: z.string(), limit: z.number().optional() }),
    block: {},
    callers,
    mutating,
    execute: async (input) => ({ output: `${name} got ${JSON.stringify(input)}`, value: input }),
  });
}

const both = registered('finance_get_members', ['direct', 'program']);
const directOnly = registered('pager_notify', ['direct'], true);
const programOnly = registered('finance_get_limits', ['program']);
const tools = [readTool, both, directOnly, programOnly];

function session(format: 'markdown' | 'xml' = 'markdown') {
  const call = createCallTool(tools);
  if (!call) throw new Error('no call tool');
  const registry = new ToolRegistry([...tools, call]);
  const run = async (reply: string) => {
    const [use] = format === 'xml' ? parseXmlToolUses(reply) : parseMarkdownToolUses(reply, registry.isTool);
    if (!use) throw new Error(`no tool use in ${reply}`);
    return runToolUse(use, registry, makeToolContext(workspace()), { outputsDir: workspace() });
  };
  return { call, registry, run };
}

describe('the call block', () => {
  it('reaches the tools the model may call that have no block of their own', () => {
    expect(callableByCall(tools).map((t) => t.name)).toEqual(['finance_get_members', 'pager_notify']);
    expect(createCallTool([readTool, programOnly])).toBeUndefined();
    expect(createCallTool(tools)?.mutating).toBe(true);
  });

  it('runs a markdown call block as the tool it names, with the JSON body as its input', async () => {
    const outcome = await session().run('```call finance_get_members\n{"department": "engineering", "limit": 3}\n```');
    expect(outcome.tool).toBe('finance_get_members');
    expect(outcome.result.isError).toBeFalsy();
    expect(outcome.result.output).toBe('finance_get_members got {"department":"engineering","limit":3}');
  });

  it('runs an XML call element the same way, and a slightly broken body after repair', async () => {
    const outcome = await session('xml').run('<tool-use><call args="pager_notify">{department: \'ops\'}</call></tool-use>');
    expect(outcome.tool).toBe('pager_notify');
    expect(outcome.result.output).toBe('pager_notify got {"department":"ops"}');
  });

  it('answers what cannot be called with an error that says what can', async () => {
    const { run } = session();
    const unknown = await run('```call nope\n{}\n```');
    expect(unknown.result.isError).toBe(true);
    expect(unknown.result.output).toBe('There is no tool named "nope" to call. The tools a call block reaches: finance_get_members, pager_notify.');
    expect((await run('```call\n{}\n```')).result.output).toContain('Name the tool after the tag');
    expect((await run('```call finance_get_limits\n{}\n```')).result.output).toBe('finance_get_limits can only be called from a program (a ptc block).');
    expect((await run('```call read\n{"path": "a"}\n```')).result.output).toBe('read has a block of its own: write it as ```read, not through call.');
    const array = await run('```call finance_get_members\n[1, 2]\n```');
    expect(array.result.output).toContain('The arguments of finance_get_members could not be read');
    expect(array.result.output).toContain('{"department":"sales"}');
  });

  it("checks the arguments against the tool's own parameters, showing the call block as the example", async () => {
    const outcome = await session().run('```call finance_get_members\n{"limit": 3}\n```');
    expect(outcome.result.isError).toBe(true);
    expect(outcome.result.output).toContain('department');
    expect(outcome.result.output).toContain('```call finance_get_members\n{"department":"sales"}\n```');
  });

  it('is described once in the prompt, declaring only the tools programs cannot call', () => {
    const { call } = session();
    const prompt = buildSystemPrompt({ tools: [...tools, call], workspace: '/w', format: 'markdown', now: new Date('2026-01-01') });
    expect(prompt).toContain('## call\nCall one tool that has no block of its own, with JSON arguments.');
    expect(prompt).toContain('Form: ```call <tool>\n[arguments]\n```');
    expect(prompt).toContain('declare function pager_notify(');
    expect(prompt.match(/declare function finance_get_members\(/g)).toBeNull();
    expect(prompt).not.toContain('## finance_get_members');
  });
});
