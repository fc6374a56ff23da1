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

/** How long standard input may stay silent before fence says it is waiting for it. */
export const STDIN_NOTICE_MS = 3000;

/**
 * Adds piped standard input to the prompts: appended to the first prompt, or the whole prompt
 * when the command line gave none. Standard input is read only when it is not a terminal. A
 * pipe left open without data (a script that never closes it) would be a silent wait: after
 * `noticeAfterMs` with nothing read, `notice` is told once how to end it.
 */
export async function withPipedInput(
  prompts: string[],
  stdin: NodeJS.ReadStream = process.stdin,
  options: { notice?: (text: string) => void; noticeAfterMs?: number } = {},
): Promise<string[]> {
  if (stdin.isTTY) return prompts;
  const chunks: Buffer[] = [];
  const notice = options.notice ?? ((text: string) => process.stderr.write(text));
  const timer = setTimeout(() => {
    if (chunks.length === 0) notice('fence: waiting for standard input to end (it is not a terminal); close it, or run fence with </dev/null\n');
  }, options.noticeAfterMs ?? STDIN_NOTICE_MS);
  timer.unref();
  try {
    for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  } finally {
    clearTimeout(timer);
  }
  const piped = Buffer.concat(chunks).toString('utf8').trim();
  if (!piped) return prompts;
  if (prompts.length === 0) return [piped];
  const [first, ...rest] = prompts;
  return [`${first}\n\n${piped}`, ...rest];
}
