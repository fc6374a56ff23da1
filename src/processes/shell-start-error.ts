/**
 * Why bash did not start: the shell never became ready, with what it printed. fence's own
 * set-up line (which the terminal may echo before bash turns echo off) is not part of it.
 */
export class ShellStartError extends Error {
  constructor(
    /** The folder bash was to start in. */
    readonly cwd: string,
    /** What went wrong, in the words of whatever printed it (bwrap's error line, bash's), or how it ended. */
    readonly reason: string,
  ) {
    super(`bash did not start in ${cwd}: ${reason}`);
    this.name = 'ShellStartError';
  }
}

/**
 * The lines of `output` a person should see about a failed start: those that hold `nonce`
 * (fence's own set-up line, echoed) left out, blank ones too.
 */
export function startOutputReason(output: string, nonce: string): string {
  return output
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '' && !line.includes(nonce))
    .join('\n')
    .trim();
}
