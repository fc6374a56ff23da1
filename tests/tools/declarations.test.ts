import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { jsonSchemaToTypeScript, toolDeclarations } from '../../src/tools/declarations';
import { defineTool, type ToolSpec } from '../../src/tools/define-tool';
import { globTool } from '../../src/tools/glob';
import { grepTool } from '../../src/tools/grep';
import { readTool } from '../../src/tools/read';
import { saveTool } from '../../src/tools/save';

function fakeTool(name: string, parameters: z.ZodObject, extra: Partial<ToolSpec> = {}): ToolSpec {
  return defineTool({
    name,
    description: `The ${name} tool.`,
    instructions: '',
    example: {},
    blockTypes: [name],
    parameters,
    block: {},
    callers: ['program'],
    mutating: false,
    execute: async () => ({ output: '' }),
    ...extra,
  }) as ToolSpec;
}

describe('toolDeclarations', () => {
  it('declares the built-in program tools', () => {
    expect(toolDeclarations([readTool, globTool, grepTool] as ToolSpec[])).toMatchSnapshot();
  });

  it('declares one function per program tool, with its description and return type', () => {
    const tool = fakeTool('get_members', z.object({ department: z.string() }), { returns: '{ id: string }[]' });
    expect(toolDeclarations([tool])).toBe(
      '/** The get_members tool. */\ndeclare function get_members(args: { department: string }): Promise<{ id: string }[]>;',
    );
  });

  it('leaves out every comment of the tools the reader has described already, and only theirs', () => {
    const described = fakeTool('count', z.object({ path: z.string().describe('The file to count'), limit: z.number().default(10) }), { returns: 'number' });
    const other = fakeTool('sum', z.object({ a: z.number().describe('The first number') }));
    expect(toolDeclarations([described, other], { described: (tool) => tool.name === 'count' })).toBe(
      [
        'declare function count(args: { path: string; limit?: number }): Promise<number>;',
        '',
        '/** The sum tool. */\ndeclare function sum(args: {\n  /** The first number */\n  a: number;\n}): Promise<unknown>;',
      ].join('\n'),
    );
  });

  it('declares every tool given, in the given order, whoever its callers are', () => {
    const tools = [fakeTool('zeta', z.object({})), saveTool as ToolSpec, fakeTool('alpha', z.object({}))];
    const text = toolDeclarations(tools);
    expect(text.split('\n\n').map((part) => /declare function (\w+)/.exec(part)?.[1])).toEqual(['zeta', 'save', 'alpha']);
    expect(text).toContain('/** The zeta tool. */\ndeclare function zeta(args: {}): Promise<unknown>;\n\n');
    expect(text).toContain('declare function save(args: {\n');
  });

  it('declares nothing for no tools', () => {
    expect(toolDeclarations([])).toBe('');
  });

  it('writes the input side of the schema: a default makes a property optional, and is noted', () => {
    const tool = fakeTool('page', z.object({ limit: z.number().int().default(20).describe('Rows per page') }));
    expect(toolDeclarations([tool])).toContain('/** Rows per page (default: 20) */\n  limit?: number;');
  });

  it('declares tools whose names are not identifiers as members of tools', () => {
    const text = toolDeclarations([fakeTool('fetch-page', z.object({ url: z.string() })), fakeTool('delete', z.object({}))]);
    expect(text).toBe(
      [
        '/** Tools whose names are not identifiers: call them as tools["name"]({ ... }). */',
        'declare const tools: {',
        '  /** The fetch-page tool. */',
        '  "fetch-page"(args: { url: string }): Promise<unknown>;',
        '  /** The delete tool. */',
        '  "delete"(args: {}): Promise<unknown>;',
        '};',
      ].join('\n'),
    );
  });

  it('gives the same text on every call', () => {
    const tools = [readTool, globTool, grepTool] as ToolSpec[];
    expect(toolDeclarations(tools)).toBe(toolDeclarations(tools));
  });
});

describe('jsonSchemaToTypeScript', () => {
  it.each([
    [{ type: 'string' }, 'string'],
    [{ type: 'number' }, 'number'],
    [{ type: 'integer' }, 'number'],
    [{ type: 'boolean' }, 'boolean'],
    [{ type: 'null' }, 'null'],
    [{ type: ['string', 'null'] }, 'string | null'],
    [{ type: 'string', nullable: true }, 'string | null'],
    [{ enum: ['a', 'b c', 3, null] }, '"a" | "b c" | 3 | null'],
    [{ const: 'only' }, '"only"'],
    [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, 'string | number'],
    [{ oneOf: [{ type: 'string' }, { type: 'string' }] }, 'string'],
    [{ type: 'array', items: { type: 'string' } }, 'string[]'],
    [{ type: 'array', items: { type: ['string', 'number'] } }, '(string | number)[]'],
    [{ type: 'array' }, 'unknown[]'],
    [{ type: 'array', items: { type: 'array', items: { type: 'integer' } } }, 'number[][]'],
    [{ type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false }, '[string, number]'],
    [{ type: 'array', prefixItems: [{ type: 'string' }], items: { type: 'number' } }, '[string, ...number[]]'],
    [{ type: 'array', items: [{ type: 'boolean' }] }, '[boolean]'],
    [{ allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'object', properties: { b: { type: 'number' } } }] }, '{ a: string } & { b?: number }'],
  ])('%j → %s', (schema, expected) => {
    expect(jsonSchemaToTypeScript(schema)).toBe(expected);
  });

  it.each([
    [true, 'unknown'],
    [{}, 'unknown'],
    [false, 'never'],
    [{ type: 'date' }, 'unknown'],
    [{ not: { type: 'string' } }, 'unknown'],
    [{ anyOf: [{ type: 'string' }, {}] }, 'unknown'],
    [{ const: { a: 1 } }, 'unknown'],
    ['not a schema', 'unknown'],
    [null, 'unknown'],
    [{ $ref: 'https://example.com/schema.json' }, 'unknown'],
  ])('%j, unsupported or open, → %s', (schema, expected) => {
    expect(jsonSchemaToTypeScript(schema)).toBe(expected);
  });

  it('writes objects with optional properties, quoting names that are not identifiers', () => {
    const schema = { type: 'object', properties: { name: { type: 'string' }, 'max-count': { type: 'integer' } }, required: ['name'] };
    expect(jsonSchemaToTypeScript(schema)).toBe('{ name: string; "max-count"?: number }');
  });

  it('writes additionalProperties as an index signature, an unknown one only when there are no named properties', () => {
    expect(jsonSchemaToTypeScript({ type: 'object', additionalProperties: { type: 'number' } })).toBe('{ [key: string]: number }');
    expect(jsonSchemaToTypeScript({ type: 'object' })).toBe('{ [key: string]: unknown }');
    expect(jsonSchemaToTypeScript({ type: 'object', properties: {} })).toBe('{}');
    expect(jsonSchemaToTypeScript({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: true })).toBe('{ a: string }');
    expect(jsonSchemaToTypeScript({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })).toBe('{ a: string }');
    expect(jsonSchemaToTypeScript({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: { type: 'number' } })).toBe(
      '{ a: string } & { [key: string]: number }',
    );
  });

  it('writes descriptions as doc comments, one object member a line, nested objects indented', () => {
    const schema = {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to look for' },
        filter: {
          type: 'object',
          description: 'Narrows the search.\nBoth fields are optional.',
          properties: { kind: { enum: ['file', 'folder'], description: 'Only this kind of entry' }, depth: { type: 'integer' } },
        },
        tags: { type: 'array', items: { type: 'string' }, description: 'No */ in here' },
      },
      required: ['query'],
    };
    expect(jsonSchemaToTypeScript(schema)).toBe(
      [
        '{',
        '  /** What to look for */',
        '  query: string;',
        '  /**',
        '   * Narrows the search.',
        '   * Both fields are optional.',
        '   */',
        '  filter?: {',
        '    /** Only this kind of entry */',
        '    kind?: "file" | "folder";',
        '    depth?: number;',
        '  };',
        '  /** No *\\/ in here */',
        '  tags?: string[];',
        '}',
      ].join('\n'),
    );
  });

  it('indents a multi-line object by the given indentation', () => {
    const schema = { type: 'object', properties: { a: { type: 'string', description: 'A' } } };
    expect(jsonSchemaToTypeScript(schema, '    ')).toBe('{\n      /** A */\n      a?: string;\n    }');
  });

  it('writes a long object without comments over several lines', () => {
    const properties = Object.fromEntries(['first', 'second', 'third', 'fourth', 'fifth', 'sixth'].map((name) => [name, { type: 'string' }]));
    expect(jsonSchemaToTypeScript({ type: 'object', properties }).split('\n')).toHaveLength(8);
  });

  it('follows local references, and stops at a recursive one', () => {
    const schema = {
      type: 'object',
      properties: { root: { $ref: '#/$defs/Node' } },
      required: ['root'],
      $defs: {
        Node: {
          type: 'object',
          properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } },
          required: ['name', 'children'],
        },
      },
    };
    expect(jsonSchemaToTypeScript(schema)).toBe('{ root: { name: string; children: unknown[] } }');
  });

  it('reads the schemas zod writes', () => {
    const schema = z.toJSONSchema(
      z.object({
        id: z.string(),
        when: z.string().nullable().optional(),
        mode: z.enum(['fast', 'slow']),
        scores: z.record(z.string(), z.number()),
        pair: z.tuple([z.string(), z.boolean()]),
      }),
      { io: 'input' },
    );
    expect(jsonSchemaToTypeScript(schema)).toBe(
      [
        '{',
        '  id: string;',
        '  when?: string | null;',
        '  mode: "fast" | "slow";',
        '  scores: { [key: string]: number };',
        '  pair: [string, boolean];',
        '}',
      ].join('\n'),
    );
  });
});
