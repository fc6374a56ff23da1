import type { RunStop } from '../agent/run-stop';
import { latestPlan } from '../conversation/latest-plan';
import type { Message, PlanItem } from '../conversation/message';
import { openItems } from '../tools/plan';
import { plural } from '../tools/text-file';

/** The `plan` field of a run's JSON result: the checklist the session's log ends with, when the model made one. */
export function planSummary(log: readonly Message[]): { plan?: PlanItem[] } {
  const plan = latestPlan(log);
  return plan ? { plan } : {};
}

/**
 * The line for stderr when a run ended by `complete` with plan items not done (the model was
 * reminded once and called `complete` again); undefined otherwise.
 */
export function unfinishedPlanWarning(stop: RunStop, plan: readonly PlanItem[] | undefined): string | undefined {
  const open = stop === 'complete' ? openItems(plan ?? []) : [];
  if (open.length === 0) return undefined;
  return `fence: the run ended with ${plural(open.length, 'plan item')} not done`;
}
