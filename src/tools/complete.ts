import { z } from 'zod';
import { defineTool } from './define-tool';

/** The name of the tool that ends an autonomous run. */
export const COMPLETE_TOOL = 'complete';

/**
 * `complete`: offered only in autonomous runs (`--auto`), where nobody reads a reply without a
 * tool call. Calling it ends the run; its `result` is the run's final answer. It changes
 * nothing, so it is not mutating and needs no admission resource.
 */
export const completeTool = defineTool({
  name: COMPLETE_TOOL,
  description: 'End the run: the task is done (or cannot be done), with a summary for the user.',
  instructions:
    'Call it once, when the work is finished and checked, or when you are blocked and cannot go on. `result` is your final answer: what you did, what you checked, what is left.',
  example: { result: 'Added the --verbose flag to src/cli.ts and its test; npm test passes (48 tests).' },
  blockTypes: ['complete'],
  parameters: z.object({ result: z.string().describe('The final answer for the user: what was done, checked and left') }),
  block: { content: 'result' },
  callers: ['direct'],
  mutating: false,
  async execute({ result }) {
    if (!result.trim()) return { output: 'Write the summary of the run in `result`.', isError: true };
    return { output: 'The run is complete.', value: { result } };
  },
});

/** The final answer a `complete` call carried (its tool value). */
export function completionText(value: unknown): string {
  return typeof value === 'object' && value !== null && 'result' in value && typeof value.result === 'string' ? value.result : '';
}
