import { visibleLine } from '../processes/visible-text';

/** What the tree needs of a session: its id, the session that started it, and its task. */
export interface TreeSession {
  id: string;
  parent?: string;
  firstPrompt?: string;
}

/** Longest task shown on a line of the tree. */
const TASK_WIDTH = 100;

/**
 * The lines `fence sessions show` adds about a session's place among subagents: its parent,
 * when it is a subagent, then each session it started, and theirs, indented one step a level,
 * each with its id and its task (its first prompt, on one line, cut). Empty when the session
 * has neither. A loop in the recorded parents (a hand-edited `session.json`) is shown once.
 */
export function sessionTreeLines(sessions: readonly TreeSession[], id: string): string[] {
  const byParent = new Map<string, TreeSession[]>();
  for (const session of sessions) {
    if (session.parent === undefined) continue;
    byParent.set(session.parent, [...(byParent.get(session.parent) ?? []), session]);
  }
  const self = sessions.find((session) => session.id === id);
  const lines: string[] = [];
  if (self?.parent !== undefined) lines.push(`subagent of ${visibleLine(self.parent)}`);
  const seen = new Set<string>([id]);
  const walk = (parent: string, depth: number) => {
    for (const child of [...(byParent.get(parent) ?? [])].sort((a, b) => a.id.localeCompare(b.id))) {
      if (seen.has(child.id)) continue;
      seen.add(child.id);
      lines.push(`${'  '.repeat(depth)}${visibleLine(child.id)}  ${task(child.firstPrompt)}`);
      walk(child.id, depth + 1);
    }
  };
  const before = lines.length;
  walk(id, 1);
  if (lines.length > before) lines.splice(before, 0, 'subagents:');
  return lines;
}

function task(prompt: string | undefined): string {
  const line = visibleLine((prompt ?? '').replace(/\s+/g, ' ').trim());
  return line.length > TASK_WIDTH ? `${line.slice(0, TASK_WIDTH - 1)}…` : line;
}
