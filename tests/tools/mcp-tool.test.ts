import { afterEach, describe, expect, it } from 'vitest';
import type { PolicyRule } from '../../src/policy/admit';
import type { ProgramRun } from '../../src/ptc/run-program';
import { McpConnection, type McpCallResult, type McpToolInfo } from '../../src/processes/mcp-connection';
import { toolDeclarations } from '../../src/tools/declarations';
import type { ToolSpec } from '../../src/tools/define-tool';
import { createMcpTools, mcpToolName, type McpCaller } from '../../src/tools/mcp-tool';
import { createPtcTool } from '../../src/tools/ptc';
import { mcpTestServer } from '../support/mcp-test-config';
import { useTempSession } from '../support/temp-session';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-mcp-tool-');
const session = useTempSession();

/** A connection that answers every call with `result` and keeps the calls. */
function fakeConnection(result: McpCallResult = { content: [{ type: 'text', text: 'ok' }] }) {
  const calls: { name: string; args: Record<string, unknown> }[] = [];
  const connection: McpCaller = {
    async callTool(name, args) {
      calls.push({ name, args });
      return result;
    },
  };
  return { connection, calls };
}

const sumTool: McpToolInfo = {
  name: 'get-sum',
  description: 'Adds two numbers.\nBoth must be finite.',
  inputSchema: {
    type: 'object',
    properties: { a: { type: 'number', description: 'the first number' }, b: { type: 'number' } },
    required: ['a', 'b'],
  },
  outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
};

function one(tool: McpToolInfo, result?: McpCallResult, callers?: ('direct' | 'program')[]): { spec: ToolSpec; calls: ReturnType<typeof fakeConnection>['calls'] } {
  const { connection, calls } = fakeConnection(result);
  const [spec] = createMcpTools('everything', { command: 'x', ...(callers ? { callers } : {}) }, connection, [tool]);
  if (!spec) throw new Error('no tool made');
  return { spec, calls };
}

function run(spec: ToolSpec, input: Record<string, unknown>) {
  return spec.execute(spec.parameters.parse(input), makeToolContext(workspace()));
}

describe('mcpToolName', () => {
  it('joins server and tool, replacing what cannot be in an identifier', () => {
    expect(mcpToolName('everything', 'get-sum')).toBe('everything_get_sum');
    expect(mcpToolName('my-docs', 'search.pages v2')).toBe('my_docs_search_pages_v2');
    expect(mcpToolName('3d', 'render')).toBe('_3d_render');
    expect(mcpToolName('a', 'ünïcode')).toBe('a__n_code');
  });
});

describe('createMcpTools', () => {
  it('makes a tool from the listed schema, description and annotations', () => {
    const { spec } = one(sumTool);
    expect(spec.name).toBe('everything_get_sum');
    expect(spec.description).toBe('Adds two numbers.');
    expect(spec.parameters.safeParse({ a: 1, b: 2 }).success).toBe(true);
    expect(spec.parameters.safeParse({ a: 'one', b: 2 }).success).toBe(false);
    expect(spec.example).toEqual({ a: 1, b: 1 });
    expect(spec.blockTypes).toEqual([]);
    expect(spec.callers).toEqual(['direct', 'program']);
    expect(spec.mutating).toBe(false);
    expect(spec.returns).toBe('{ sum: number }');
    expect(spec.resource?.({ a: 1, b: 2 }, makeToolContext(workspace()))).toBe('{"a":1,"b":2}');
    // The arguments travel as the schema or the declaration, never twice.
    expect(spec.instructions).toBe(
      'Call it from a program: await everything_get_sum({ a: 1, b: 1 }). It returns { sum: number }. It can also be called directly as a tool with the same JSON arguments.\n\nAdds two numbers.\nBoth must be finite.',
    );
    expect(toolDeclarations([spec])).toContain('declare function everything_get_sum(args: {\n  /** the first number */\n  a: number;\n  b: number;\n}): Promise<{ sum: number }>;');
  });

  it('takes callers from the config, and marks only destructive tools mutating', () => {
    const { spec } = one({ name: 'wipe', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } }, undefined, ['direct']);
    expect(spec.callers).toEqual(['direct']);
    expect(spec.mutating).toBe(true);
    expect(spec.instructions).toContain('Call it as a tool with a JSON object of arguments: {}.');
    expect(one({ name: 'peek', inputSchema: { type: 'object' }, annotations: { readOnlyHint: false } }).spec.mutating).toBe(false);
  });

  it('falls back to an object with any keys, and cuts a long description', () => {
    const odd = one({ name: 'odd', description: `  \n${'word '.repeat(60)}`, inputSchema: { type: 'object', properties: { x: { type: 'mystery' } } } as never });
    expect(odd.spec.parameters.parse({ anything: [1] })).toEqual({ anything: [1] });
    expect(odd.spec.description.length).toBeLessThanOrEqual(120);
    expect(odd.spec.description.endsWith('…')).toBe(true);
    expect(one({ name: 'bare', inputSchema: { type: 'object' } }).spec.description).toBe('Tool bare of MCP server everything');
  });

  it('calls the server with the MCP name and gives structured content as the value', async () => {
    const { spec, calls } = one(sumTool, { content: [{ type: 'text', text: 'The sum is 3' }], structuredContent: { sum: 3 } });
    const result = await run(spec, { a: 1, b: 2 });
    expect(calls).toEqual([{ name: 'get-sum', args: { a: 1, b: 2 } }]);
    expect(result).toMatchObject({ output: 'The sum is 3', value: { sum: 3 } });
    expect(result.isError).toBeUndefined();
  });

  it('parses text that is JSON as the value, else gives the text; names other content', async () => {
    const json = await run(one(sumTool, { content: [{ type: 'text', text: '[{"id":"e1"}]' }] }).spec, { a: 1, b: 2 });
    expect(json.value).toEqual([{ id: 'e1' }]);
    // Images go to the model as images (see mcp-tool-images.test.ts); other content is named.
    const plain = await run(one(sumTool, { content: [{ type: 'text', text: 'hello' }, { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' }] }).spec, { a: 1, b: 2 });
    expect(plain).toMatchObject({ output: 'hello\n[audio audio/wav]', value: 'hello\n[audio audio/wav]' });
    const structuredOnly = await run(one(sumTool, { content: [], structuredContent: { sum: 1 } }).spec, { a: 1, b: 0 });
    expect(structuredOnly.output).toBe('{\n  "sum": 1\n}');
  });

  it('turns isError and failed calls into error results', async () => {
    const error = await run(one(sumTool, { content: [{ type: 'text', text: 'the ledger is locked' }], isError: true }).spec, { a: 1, b: 2 });
    expect(error).toMatchObject({ output: 'the ledger is locked', isError: true });
    const failed = await run(one(sumTool, { content: [{ type: 'text', text: 'x' }], isError: true, failure: 'server everything exited (code 1) during get-sum' }).spec, { a: 1, b: 2 });
    expect(failed).toMatchObject({ output: 'server everything exited (code 1) during get-sum', isError: true });
  });
});

describe('MCP tools against a real server', () => {
  const opened: McpConnection[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((c) => c.close()));
  });

  async function serverTools(): Promise<ToolSpec[]> {
    const config = mcpTestServer();
    const connection = new McpConnection({ name: 'finance', config, cwd: workspace() });
    opened.push(connection);
    const listed = await connection.listTools();
    if (!listed.ok) throw new Error(listed.error);
    return createMcpTools('finance', config, connection, listed.tools);
  }

  it('answers a call, an isError and a crash, then works again', async () => {
    const tools = await serverTools();
    const byName = (name: string) => tools.find((t) => t.name === name) as ToolSpec;
    expect(tools.map((t) => t.name)).toContain('finance_get_sum');
    expect(byName('finance_delete_all').mutating).toBe(true);
    expect(await run(byName('finance_get_sum'), { a: 2, b: 5 })).toMatchObject({ output: 'The sum is 7', value: { sum: 7 } });
    expect(await run(byName('finance_fail'), {})).toMatchObject({ output: 'the ledger is locked', isError: true });
    expect(await run(byName('finance_crash'), {})).toMatchObject({ output: 'server finance exited (code 1) during crash: panic: ledger corrupted', isError: true });
    expect(await run(byName('finance_echo'), { text: 'back again' })).toMatchObject({ output: 'back again', value: 'back again' });
  });

  it('is called from a program through admission, with a trace', async () => {
    const tools = await serverTools();
    const rules: PolicyRule[] = [{ tool: 'finance_echo', principal: 'program:*', action: 'deny', reason: 'no echoes from programs' }];
    const ptc = createPtcTool({ tools, rules, session: { id: session().id, dir: session().dir } });
    expect(ptc.instructions).toContain('declare function finance_get_sum(args: {');
    const code = [
      '// intent: add up two pairs',
      'const sums = await gather([finance_get_sum({ a: 1, b: 2 }), finance_get_sum({ a: 3, b: 4 })]);',
      'let refused = "";',
      'try { await finance_echo({ text: "hi" }); } catch (e) { refused = e.message; }',
      'print(refused);',
      'return sums.map((s) => s.sum);',
    ].join('\n');
    const result = await ptc.execute(ptc.parameters.parse({ code }), makeToolContext(workspace()));
    const programRun = result.details as ProgramRun;
    expect(result.isError).toBe(false);
    expect(result.value).toEqual([3, 7]);
    expect(programRun.trace.stdout).toContain('no echoes from programs');
    expect(programRun.trace.calls.map((c) => [c.tool, c.resource, c.ok])).toEqual([
      ['finance_get_sum', '{"a":1,"b":2}', true],
      ['finance_get_sum', '{"a":3,"b":4}', true],
      ['finance_echo', '{"text":"hi"}', false],
    ]);
    expect(programRun.trace.calls[0]?.result).toEqual({ sum: 3 });
  });
});
