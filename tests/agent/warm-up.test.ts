import { describe, expect, it } from 'vitest';
import { warmUpReplyPath } from '../../src/agent/warm-up';
import { MarkdownStreamScanner } from '../../src/parse/stream-scanner';
import type { ToolUse } from '../../src/parse/tool-use';
import { XmlStreamScanner } from '../../src/parse/xml-stream-scanner';
import { builtinTools } from '../../src/tools/builtin-tools';
import type { ToolSpec } from '../../src/tools/define-tool';

describe('warmUpReplyPath', () => {
  it('reads the sample call with the format’s own scanner, and runs no tool', async () => {
    const found: ToolUse[] = [];
    const executed: string[] = [];
    const tools = builtinTools().map((tool): ToolSpec => ({
      ...tool,
      execute: async () => {
        executed.push(tool.name);
        return { output: '' };
      },
    }));
    const isTool = (tag: string) => tools.some((tool) => tool.blockTypes.includes(tag));
    const scanner = () => {
      const real = new MarkdownStreamScanner(isTool);
      return {
        get text() {
          return real.text;
        },
        push: (text: string) => {
          const use = real.push(text);
          if (use) found.push(use);
          return use;
        },
        finish: () => real.finish(),
      };
    };
    await warmUpReplyPath({ format: 'markdown', tools, scanner });
    expect(found.map((use) => [use.tool, use.content])).toEqual([['shell', 'npm install && npm test']]);
    expect(executed).toEqual([]);
  });

  it('settles in the XML and native formats too, and with no tool the model can call', async () => {
    const tools = builtinTools();
    await expect(warmUpReplyPath({ format: 'xml', tools, scanner: () => new XmlStreamScanner() })).resolves.toBeUndefined();
    await expect(warmUpReplyPath({ format: 'tool', tools })).resolves.toBeUndefined();
    await expect(warmUpReplyPath({ format: 'markdown', tools: [] })).resolves.toBeUndefined();
  });

  it('runs no step once its signal is aborted', async () => {
    const checked: unknown[] = [];
    const tools = builtinTools().map((tool): ToolSpec => ({
      ...tool,
      parameters: Object.assign(Object.create(tool.parameters), { safeParse: (input: unknown) => (checked.push(input), tool.parameters.safeParse(input)) }),
    }));
    await warmUpReplyPath({ format: 'tool', tools });
    expect(checked).toHaveLength(1);
    const stopped = new AbortController();
    const pending = warmUpReplyPath({ format: 'tool', tools, signal: stopped.signal });
    stopped.abort();
    await pending;
    expect(checked).toHaveLength(1);
  });
});
