import { latestPlan } from '../conversation/latest-plan';
import type { Message } from '../conversation/message';
import { COMPLETE_TOOL } from '../tools/complete';
import { checklistText, openItems } from '../tools/plan';
import type { ToolRunOutcome } from '../tools/run-tool-use';
import { plural } from '../tools/text-file';

/**
 * What a summary of the log up to index `through` adds so the model keeps its checklist: the
 * plan as it stood there, when it has items. Compaction replaces the `plan` results it stands
 * for, so without this the model would lose the list. '' when there is no plan to carry.
 */
export function summaryPlanNote(log: readonly Message[], through: number): string {
  const plan = latestPlan(log.slice(0, through + 1));
  if (!plan?.length) return '';
  return `\n\nYour plan (the checklist of your last plan call) as it stood then:\n${checklistText(plan)}`;
}

/**
 * In an autonomous run, the answer to a `complete` call made while the plan still has open
 * items: in place of its result, a reminder naming them (the run goes on). Undefined when the
 * call is not a successful `complete` or every item is done; the caller gives it once per run.
 */
export function completeReminder(outcome: ToolRunOutcome, log: readonly Message[]): ToolRunOutcome | undefined {
  if (outcome.tool !== COMPLETE_TOOL || outcome.result.isError) return undefined;
  const open = openItems(latestPlan(log) ?? []);
  if (open.length === 0) return undefined;
  const output = [
    `The run is not complete yet: your plan has ${plural(open.length, 'open item')}:`,
    checklistText(open),
    'Finish them, or update the plan (mark them done, or drop what no longer applies), then call complete again.',
  ].join('\n');
  return { tool: outcome.tool, result: { output }, ...(outcome.decision ? { decision: outcome.decision } : {}) };
}
