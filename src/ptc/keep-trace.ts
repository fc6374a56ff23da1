import { parseSignature, type ProgramParameter } from './program-params';
import type { ReplayOutcome } from './replay-test';
import { programLabel, saveProgram, testFromTrace, unreplayable, type ProgramRoot, type SavedProgram } from './saved-programs';
import type { ProgramTrace } from './trace';

/**
 * Saves a trace's program as the next version of `name`, with the trace as its recorded test,
 * once that test replays: the user's programs, or the project's with `project`. Gives the lines
 * that say what was kept and what comes next, or why nothing was. `known` are the tools the trace's
 * session had (see `saveProgram`). Shared by `fence programs save` and the chat's
 * `/save-program`.
 */
export async function keepTrace(
  roots: readonly ProgramRoot[],
  name: string,
  trace: ProgramTrace,
  project: boolean,
  known: readonly string[],
): Promise<{ saved: SavedProgram; lines: string[] } | { error: string }> {
  const root = roots.find((r) => r.scope === (project ? 'project' : 'user')) as ProgramRoot;
  // The test is replayed before anything is written: a run that cannot be reproduced is not kept.
  if (trace.ok && !unreplayable(trace)) {
    const { replayTest } = await import('./replay-test');
    const replay = await replayTest(trace.code, testFromTrace(trace), { tools: [] });
    if (!replay.passed) return { error: `trace ${trace.id} cannot be saved: replaying it gives another run:\n${problemLines(replay)}` };
  }
  const saved = saveProgram(roots, root, name, trace, known);
  if ('error' in saved) return saved;
  const label = programLabel(saved.record);
  const params = parseSignature(saved.code).parameters;
  const lines = [
    `saved ${label} in ${saved.dir} (${saved.scope} programs)`,
    `  intent: ${saved.record.intent ?? '(none: add a "// intent:" line to say what it is for)'}`,
    `  calls: ${saved.record.tools.join(', ') || 'no tools'}`,
    `  parameters: ${params.length > 0 ? params.map(parameterText).join(', ') : 'none'}`,
    `  1 recorded test (${trace.calls.length} tool call${trace.calls.length === 1 ? '' : 's'}), replayed: passed`,
    `next: fence programs approve ${label} offers it to the model as the tool ${saved.record.name}`,
  ];
  return { saved, lines };
}

/** A parameter as declared: `department: string = "engineering"`, `levels?: string[]`. */
export function parameterText(p: ProgramParameter): string {
  const value = p.default !== undefined ? ` = ${JSON.stringify(p.default)}` : '';
  return `${p.name}${p.optional && p.default === undefined ? '?' : ''}: ${p.type}${value}`;
}

/** A failed replay's problems, indented under the line that names the test. */
export function problemLines(result: ReplayOutcome): string {
  return result.problems.map((problem) => `    ${problem.replace(/\n/g, '\n    ')}`).join('\n');
}
