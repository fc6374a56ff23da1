import { encode } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { toolSchemas, toolSection } from '../../src/agent/system-prompt';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import type { ToolUse } from '../../src/parse/tool-use';
import { parseXmlToolUses } from '../../src/parse/xml';
import type { ToolSpec } from '../../src/tools/define-tool';
import { renderCall } from '../../src/tools/notation';
import { checklistText, MAX_PLAN_ITEMS, parseChecklist, planOfResult, planTool } from '../../src/tools/plan';
import { ToolRegistry } from '../../src/tools/registry';
import { runToolUse } from '../../src/tools/run-tool-use';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const registry = new ToolRegistry([planTool as ToolSpec]);
const workspace = useTempWorkspace('fence-plan-');
const run = (use: Parameters<typeof runToolUse>[0]) => runToolUse(use, registry, makeToolContext(workspace()), { outputsDir: workspace() });
const native = (kwargs: Record<string, unknown>) => ({ tool: 'plan', args: [], content: '', kwargs, format: 'tool' as const, start: 0, end: 0 });
const block = (body: string) => {
  const [use] = parseMarkdownToolUses(`\`\`\`plan\n${body}\n\`\`\`\n`, registry.isTool);
  if (!use) throw new Error('no plan block');
  return use;
};

const ITEMS = [
  { text: 'Find where dates are parsed', status: 'done' },
  { text: 'Fix the time zone bug', status: 'in_progress' },
  { text: 'Add a test', status: 'pending' },
] as const;

describe('parseChecklist', () => {
  it('reads one item per line with its marker, after an optional bullet or number, skipping blank lines', () => {
    const text = '[x] Find where dates are parsed\n\n- [~] Fix the time zone bug\r\n1. [ ] Add a test\n* [X] Upper-case done\n[>] Arrow under way\n[] Empty marker';
    expect(parseChecklist(text)).toEqual({
      items: [
        ...ITEMS,
        { text: 'Upper-case done', status: 'done' },
        { text: 'Arrow under way', status: 'in_progress' },
        { text: 'Empty marker', status: 'pending' },
      ],
    });
  });

  it('names the first line without a status marker', () => {
    const parsed = parseChecklist('[x] Read the code\nFix the bug\n[ ] Test');
    expect(parsed).toEqual({ error: expect.stringContaining('line 2 ("Fix the bug") has no status') });
    expect(parseChecklist('[?] Maybe')).toEqual({ error: expect.stringContaining('start each item with [ ] (pending), [~] (in progress) or [x] (done)') });
  });

  it('writes back what it reads', () => {
    expect(checklistText(ITEMS)).toBe('[x] Find where dates are parsed\n[~] Fix the time zone bug\n[ ] Add a test');
    expect(parseChecklist(checklistText(ITEMS))).toEqual({ items: ITEMS });
  });
});

describe('plan', () => {
  it('takes the same checklist as a markdown block, an XML element and a native call, and shows it back', async () => {
    const [element] = parseXmlToolUses(renderCall(planTool as ToolSpec, { items: checklistText(ITEMS) }, 'xml'));
    for (const use of [block(checklistText(ITEMS)), element!, native({ items: ITEMS })]) {
      const outcome = await run(use);
      expect(outcome.result.isError).toBeUndefined();
      expect(outcome.result.output).toBe('Plan (1 of 3 done):\n[x] Find where dates are parsed\n[~] Fix the time zone bug\n[ ] Add a test');
      expect(planOfResult(outcome.tool, outcome.result)).toEqual(ITEMS);
    }
  });

  it('keeps each item to one line of plain text: a line break cannot forge an item, a control character cannot reach a terminal', async () => {
    const outcome = await run(native({ items: [{ text: 'Fix it\n[x] Ship to production\u001b]0;owned\u0007', status: 'pending' }] }));
    expect(outcome.result.output).toBe('Plan (0 of 1 done):\n[ ] Fix it [x] Ship to production ]0;owned');
    expect(planOfResult(outcome.tool, outcome.result)).toEqual([{ text: 'Fix it [x] Ship to production ]0;owned', status: 'pending' }]);
  });

  it('clears the plan with an empty list', async () => {
    const outcome = await run(native({ items: [] }));
    expect(outcome.result.output).toBe('The plan is cleared.');
    expect(planOfResult(outcome.tool, outcome.result)).toEqual([]);
  });

  it('refuses bad checklists with a clear error result, and sets no plan', async () => {
    const cases: [ToolUse, string][] = [
      [block('[~] One\n[~] Two'), 'only one item may be in progress at a time'],
      [block('[ ] Fine\nNo marker here'), 'line 2 ("No marker here") has no status'],
      [native({ items: [{ text: '   ', status: 'done' }] }), 'items.0.text: an item needs some text'],
      [native({ items: [{ text: 'Ship', status: 'shipped' }] }), 'items.0.status'],
      [native({ items: [{ text: 'x'.repeat(201), status: 'pending' }] }), 'keep each item to one short line'],
      [native({ items: Array.from({ length: MAX_PLAN_ITEMS + 1 }, (_, i) => ({ text: `Step ${i}`, status: 'pending' })) }), 'at most 30 items'],
      [native({}), 'items'],
    ];
    for (const [use, message] of cases) {
      const outcome = await run(use);
      expect(outcome.result.isError).toBe(true);
      expect(outcome.result.output).toContain('Invalid input for plan');
      expect(outcome.result.output).toContain(message);
      expect(planOfResult(outcome.tool, outcome.result)).toBeUndefined();
    }
  });

  it('gives no plan for the result of another tool', () => {
    expect(planOfResult('read', { output: 'x', details: { plan: ITEMS } })).toBeUndefined();
  });

  it('costs under 150 tokens of the first request in every format', () => {
    const tool = planTool as ToolSpec;
    const sizes = {
      markdown: encode(toolSection(tool, 'markdown')).length,
      xml: encode(toolSection(tool, 'xml')).length,
      tool: encode(JSON.stringify(toolSchemas([tool]))).length,
    };
    for (const size of Object.values(sizes)) expect(size).toBeLessThan(150);
  });

  it('is a direct tool only, changing nothing outside fence', () => {
    expect(planTool.callers).toEqual(['direct']);
    expect(planTool.mutating).toBe(false);
    expect(planTool.resource).toBeUndefined();
  });
});
