import type { PlanItem } from '../conversation/message';
import { visibleLine } from '../processes/visible-text';
import { truncateToWidth, type Style } from './terminal-style';

/** The mark of each status: done ticked, the step under way pointed at, pending open. */
const MARKS: Record<PlanItem['status'], string> = { done: '✓', in_progress: '▸', pending: '○' };

/**
 * The model's checklist for the terminal, one line per item under a bar as tool output is
 * shown: done items dimmed, the item in progress bold, pending ones plain, each cut to the
 * width. Item texts are made visible first (see `visibleLine`), so a plan cannot drive the
 * terminal. An empty plan is one dim line saying it was cleared.
 */
export function planLines(plan: readonly PlanItem[], style: Style, width: number): string[] {
  const bar = style.dim('  │ ');
  if (plan.length === 0) return [bar + style.dim('(plan cleared)')];
  return plan.map((item) => {
    const line = truncateToWidth(`${MARKS[item.status]} ${visibleLine(item.text)}`, Math.max(10, width - 5));
    if (item.status === 'done') return bar + style.dim(line);
    if (item.status === 'in_progress') return bar + style.bold(style.cyan(line));
    return bar + line;
  });
}
