/**
 * Splits the command line's prompt words into successive prompts at each lone `-`, and joins
 * the words between separators with spaces: `fence fix the bug - run the tests` gives two
 * prompts. Empty prompts are dropped.
 */
export function splitPrompts(words: readonly string[]): string[] {
  const prompts: string[] = [];
  let current: string[] = [];
  for (const word of words) {
    if (word === '-') {
      prompts.push(current.join(' '));
      current = [];
    } else {
      current.push(word);
    }
  }
  prompts.push(current.join(' '));
  return prompts.map((p) => p.trim()).filter(Boolean);
}

/**
 * Adds piped standard input to the prompts: appended to the first prompt, or the whole prompt
 * when the command line gave none. Standard input is read only when it is not a terminal.
 */
export async function withPipedInput(prompts: string[], stdin: NodeJS.ReadStream = process.stdin): Promise<string[]> {
  if (stdin.isTTY) return prompts;
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  const piped = Buffer.concat(chunks).toString('utf8').trim();
  if (!piped) return prompts;
  if (prompts.length === 0) return [piped];
  const [first, ...rest] = prompts;
  return [`${first}\n\n${piped}`, ...rest];
}
