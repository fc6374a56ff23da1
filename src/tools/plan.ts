import { z } from 'zod';
import { defineTool, type ToolResult } from './define-tool';

/** The name of the tool that keeps the run's checklist. */
export const PLAN_TOOL = 'plan';

/** Most items a plan may hold: a checklist, not a backlog. */
export const MAX_PLAN_ITEMS = 30;

/** Most characters of one item's text: one short line. */
export const MAX_PLAN_ITEM_CHARS = 200;

/** Where an item stands. */
export type PlanStatus = 'pending' | 'in_progress' | 'done';

/** The marker each status is written with in a block body, and in the checklist the model reads back. */
const MARKERS: Record<PlanStatus, string> = { pending: '[ ]', in_progress: '[~]', done: '[x]' };

/**
 * Markers read from a block body, beside the ones fence writes: `[X]` and `[>]` are what
 * models also write for done and under way.
 */
const STATUS_OF_MARK: Record<string, PlanStatus> = { ' ': 'pending', '': 'pending', x: 'done', X: 'done', '~': 'in_progress', '>': 'in_progress' };

/** One item line: an optional list bullet or number, a `[?]` marker, the text. */
const ITEM_LINE = /^\s*(?:[-*+]\s+|\d+[.)]\s+)?\[([ xX~>]?)\]\s*(.*)$/;

const planItem = z.object({
  // One line of plain text: line breaks would read back as items of their own, control characters could drive a terminal.
  text: z
    .string()
    .overwrite((text) => text.replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, ' ').trim())
    .min(1, 'an item needs some text')
    .max(MAX_PLAN_ITEM_CHARS, `keep each item to one short line (at most ${MAX_PLAN_ITEM_CHARS} characters)`),
  status: z.enum(['pending', 'in_progress', 'done']),
});

/** One item of the checklist, as the tool returns it and the session log keeps it (`meta.plan`). */
export type PlanItem = z.output<typeof planItem>;

/**
 * Reads a checklist written as text, one item per line (a block's body): `[ ] pending`,
 * `[~] in progress` (or `[>]`), `[x] done`, each perhaps after a list bullet (`- [ ] …`, as
 * GitHub task lists are written). Blank lines are skipped. A line without a marker is an error
 * naming it, so a plan never silently loses or invents a status.
 */
export function parseChecklist(text: string): { items: PlanItem[] } | { error: string } {
  const items: PlanItem[] = [];
  const lines = text.split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const match = ITEM_LINE.exec(line);
    const status = match ? STATUS_OF_MARK[match[1] ?? ''] : undefined;
    if (!match || !status) {
      return { error: `line ${index + 1} ("${line.trim().slice(0, 60)}") has no status: start each item with [ ] (pending), [~] (in progress) or [x] (done)` };
    }
    items.push({ text: (match[2] ?? '').trim(), status });
  }
  return { items };
}

/** The checklist as the model writes it in a block and reads it back: one `[?] text` line per item. */
export function checklistText(items: readonly PlanItem[]): string {
  return items.map((item) => `${MARKERS[item.status]} ${item.text}`).join('\n');
}

/** The items not done yet (pending or in progress), in order. */
export function openItems<T extends { status: string }>(items: readonly T[]): T[] {
  return items.filter((item) => item.status !== 'done');
}

/**
 * The whole list: a block body (text) is read line by line first (see `parseChecklist`), so
 * markdown, XML and native calls meet the same checks. The JSON schema shows the array.
 */
const items = z.preprocess(
  (input, ctx) => {
    if (typeof input !== 'string') return input;
    const parsed = parseChecklist(input);
    if ('items' in parsed) return parsed.items;
    ctx.addIssue({ code: 'custom', message: parsed.error, input });
    return z.NEVER;
  },
  z
    .array(planItem)
    .max(MAX_PLAN_ITEMS, `a plan holds at most ${MAX_PLAN_ITEMS} items: merge small steps`)
    .refine((list) => list.filter((item) => item.status === 'in_progress').length <= 1, {
      message: 'only one item may be in progress at a time: mark the others pending or done',
    }),
);

/**
 * `plan`: the model's checklist for a longer task. Each call replaces the whole list (simplest
 * for models: no ids to keep, no partial updates to merge), and the result repeats the list as
 * it now stands. The list lives in the session log (the result's `meta.plan`, see `planOfResult`),
 * so resume, fork and compaction carry it without state of its own. Changes nothing outside
 * fence: not mutating, no admission resource, not callable from programs.
 */
export const planTool = defineTool({
  name: PLAN_TOOL,
  description: 'Keep a checklist for a task of several steps, updated as you go.',
  instructions: 'Each call replaces the whole list; keep one item in progress.',
  example: { items: '[x] Find the bug\n[~] Fix it\n[ ] Add a test' },
  blockTypes: ['plan'],
  parameters: z.object({ items }),
  block: { content: 'items' },
  callers: ['direct'],
  mutating: false,
  async execute({ items }) {
    const plan = items.map((item) => ({ ...item }));
    if (plan.length === 0) return { output: 'The plan is cleared.', value: plan, details: { plan } };
    const done = plan.length - openItems(plan).length;
    return { output: `Plan (${done} of ${plan.length} done):\n${checklistText(plan)}`, value: plan, details: { plan } };
  },
});

/** The checklist a `plan` call set, from its tool name and result; undefined for any other call or a failed one. */
export function planOfResult(tool: string, result: ToolResult): PlanItem[] | undefined {
  if (tool !== PLAN_TOOL || result.isError) return undefined;
  const { details } = result;
  if (typeof details !== 'object' || details === null || !('plan' in details) || !Array.isArray(details.plan)) return undefined;
  return details.plan as PlanItem[];
}
