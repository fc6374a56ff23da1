import { describe, expect, it } from 'vitest';
import { buildSystemPrompt, toolSchemas } from '../../src/agent/system-prompt';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import { parseXmlToolUses } from '../../src/parse/xml';
import { completeTool, completionText } from '../../src/tools/complete';
import { renderCall } from '../../src/tools/notation';
import { ToolRegistry } from '../../src/tools/registry';
import { runToolUse } from '../../src/tools/run-tool-use';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const registry = new ToolRegistry([completeTool]);
const workspace = useTempWorkspace('fence-complete-');
const run = (use: Parameters<typeof runToolUse>[0]) => runToolUse(use, registry, makeToolContext(workspace()), { outputsDir: workspace() });

describe('complete', () => {
  it('is defined for native calls with result optional', () => {
    expect(toolSchemas([completeTool])).toEqual([
      {
        name: 'complete',
        description:
          'End the run: the task is done (or cannot be done), with a summary for the user.\nCall it once, when the work is finished and checked, or when you are blocked and cannot go on. `result` is your final answer: what you did, what you checked, what is left.',
        parameters: {
          type: 'object',
          properties: { result: { type: 'string', description: 'The final answer for the user: what was done, checked and left' } },
        },
      },
    ]);
  });

  it('shows result as optional in the block forms of the prompt, with its example', () => {
    const markdown = buildSystemPrompt({ tools: [completeTool], workspace: '/w', format: 'markdown', auto: true });
    expect(markdown).toContain('```complete\n[result]\n```');
    expect(markdown).toContain('```complete\nAdded the --verbose flag');
    const xml = buildSystemPrompt({ tools: [completeTool], workspace: '/w', format: 'xml', auto: true });
    expect(xml).toContain('<complete>[result]</complete>');
  });

  it('ends with its result as the value, in every format', async () => {
    const [block] = parseMarkdownToolUses(renderCall(completeTool, { result: 'Fixed the test.' }, 'markdown'), registry.isTool);
    const [element] = parseXmlToolUses(renderCall(completeTool, { result: 'Fixed the test.' }, 'xml'));
    const native = { tool: 'complete', args: [], content: '', kwargs: { result: 'Fixed the test.' }, format: 'tool' as const, start: 0, end: 0 };
    for (const use of [block, element, native]) {
      const outcome = await run(use!);
      expect(outcome.result).toEqual({ output: 'The run is complete.', value: { result: 'Fixed the test.' } });
    }
  });

  it('is no error with an empty block, an empty element, {} or a blank result: the value holds no answer', async () => {
    const uses = [
      ...parseMarkdownToolUses('All done.\n```complete\n```\n', registry.isTool),
      ...parseXmlToolUses('All done.\n<tool-use><complete></complete></tool-use>'),
      ...parseXmlToolUses('<tool-use><complete/></tool-use>'),
      { tool: 'complete', args: [], content: '', kwargs: {}, format: 'tool' as const, start: 0, end: 0 },
      { tool: 'complete', args: [], content: '', kwargs: { result: ' \n ' }, format: 'tool' as const, start: 0, end: 0 },
    ];
    expect(uses).toHaveLength(5);
    for (const use of uses) {
      const outcome = await run(use);
      expect(outcome.result.isError).toBeUndefined();
      expect(outcome.result.output).toBe('The run is complete.');
      expect(completionText(outcome.result.value)).toBe('');
    }
  });

  it('still refuses a result that is not text', async () => {
    const outcome = await run({ tool: 'complete', args: [], content: '', kwargs: { result: 42 }, format: 'tool', start: 0, end: 0 });
    expect(outcome.result.isError).toBe(true);
    expect(outcome.result.output).toContain('Invalid input for complete');
  });
});
