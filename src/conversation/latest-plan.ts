import type { Message, PlanItem } from './message';

/**
 * The model's checklist as it stands at the end of `log`: the `meta.plan` of the last message
 * that has one (each `plan` call replaces the whole list). Undefined when the model never
 * made a plan. An empty list is a plan that was cleared. Derived from the log alone, so a
 * resumed or forked session has the plan its log ends with.
 */
export function latestPlan(log: readonly Message[]): PlanItem[] | undefined {
  for (let i = log.length - 1; i >= 0; i--) {
    const plan = log[i]?.meta?.plan;
    if (plan) return plan;
  }
  return undefined;
}
