import { z } from 'zod';
import { defineTool, type Caller, type ToolContext, type ToolResult, type ToolSpec } from '../../src/tools/define-tool';

/** One call a fake tool received: its parsed input and the context it was given. */
export interface FakeToolCall {
  input: Record<string, unknown>;
  ctx: ToolContext;
}

/** What a fake tool is made of; everything has a default. */
export interface FakeToolOptions {
  name?: string;
  /** Default: `{ path: string }`. */
  parameters?: z.ZodObject;
  /** The input of its example call. Default: `{ path: 'a.txt' }`. */
  example?: Record<string, unknown>;
  callers?: readonly Caller[];
  mutating?: boolean;
  /** Default: the `path` input, when there is one. */
  resource?: (input: Record<string, unknown>, ctx: ToolContext) => string | undefined;
  /** Default: `{ output: 'done', value: { input } }`. */
  execute?: (input: Record<string, unknown>, ctx: ToolContext) => Promise<ToolResult>;
}

/** A tool that records every call that reached its `execute`. */
export interface FakeTool {
  spec: ToolSpec;
  calls: FakeToolCall[];
}

/**
 * A small tool for tests of what surrounds `execute` (validation, admission, program calls):
 * it keeps each call it receives, so a test can tell whether the tool really ran.
 */
export function fakeTool(options: FakeToolOptions = {}): FakeTool {
  const calls: FakeToolCall[] = [];
  const name = options.name ?? 'fake';
  const spec = defineTool({
    name,
    description: `The ${name} tool, for tests.`,
    instructions: `Call ${name}.`,
    example: options.example ?? { path: 'a.txt' },
    blockTypes: [name],
    parameters: options.parameters ?? z.object({ path: z.string() }),
    block: {},
    callers: options.callers ?? ['direct', 'program'],
    mutating: options.mutating ?? false,
    resource: (input: Record<string, unknown>, ctx: ToolContext) =>
      options.resource ? options.resource(input, ctx) : typeof input.path === 'string' ? input.path : undefined,
    async execute(input: Record<string, unknown>, ctx: ToolContext) {
      calls.push({ input, ctx });
      return options.execute ? options.execute(input, ctx) : { output: 'done', value: { input } };
    },
  }) as ToolSpec;
  return { spec, calls };
}
