/**
 * An error in a tool's input that the model can fix. Its message is written for the model:
 * it says what was wrong and, where it helps, what to write instead. Whoever runs a tool
 * turns a thrown `ToolInputError` into an error result the model reads; it never ends a turn.
 */
export class ToolInputError extends Error {
  override readonly name = 'ToolInputError';
}
