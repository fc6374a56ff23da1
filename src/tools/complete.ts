import { z } from 'zod';
import { defineTool } from './define-tool';

/** The name of the tool that ends an autonomous run. */
export const COMPLETE_TOOL = 'complete';

/**
 * `complete`: offered only in autonomous runs (`--auto`), where nobody reads a reply without a
 * tool call. Calling it ends the run, with or without a `result`: models often write their
 * summary as prose and then an empty `complete` block (or call it with `{}`), so an empty or
 * missing `result` is no error, and the step loop takes the model's own words as the answer
 * (see `Agent.run`). It changes nothing, so it is not mutating and needs no admission resource.
 */
export const completeTool = defineTool({
  name: COMPLETE_TOOL,
  description: 'End the run: the task is done (or cannot be done), with a summary for the user.',
  instructions:
    'Call it once, when the work is finished and checked, or when you are blocked and cannot go on. `result` is your final answer: what you did, what you checked, what is left.',
  example: { result: 'Added the --verbose flag to src/cli.ts and its test; npm test passes (48 tests).' },
  blockTypes: ['complete'],
  parameters: z.object({ result: z.string().optional().describe('The final answer for the user: what was done, checked and left') }),
  block: { content: 'result' },
  callers: ['direct'],
  mutating: false,
  async execute({ result = '' }) {
    return { output: 'The run is complete.', value: { result } };
  },
});

/** The final answer a `complete` call carried (its tool value); '' when it carried none or only blanks. */
export function completionText(value: unknown): string {
  const result = typeof value === 'object' && value !== null && 'result' in value && typeof value.result === 'string' ? value.result : '';
  return result.trim() ? result : '';
}
