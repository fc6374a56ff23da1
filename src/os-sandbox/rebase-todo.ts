import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * An interactive rebase left in progress keeps its remaining steps in
 * `<git folder>/rebase-merge/git-rebase-todo`, and an `exec` (or `x`) step there is a shell
 * command that git runs when the person types `git rebase --continue` — on the host, after the
 * session. The sandbox must let git write that file (a rebase stopped on a conflict is ordinary
 * work), so the git guard reads it at the end instead: `exec` steps that were not in the todo
 * at the start are turned into comments, which git skips, and the rebase goes on without them.
 */

/** Where a git folder keeps an interactive rebase's remaining steps. */
export function rebaseTodoPath(gitFolder: string): string {
  return join(gitFolder, 'rebase-merge', 'git-rebase-todo');
}

/** A todo line git would run as a command: `exec <command>` or `x <command>`, after any blanks. */
const EXEC_LINE = /^[ \t]*(?:exec|x)(?:[ \t]|$)/;

/** What marks a step the guard disabled; git reads the line as a comment. */
const DISABLED_MARK = '# disabled by fence, written in the sandbox: ';

/** A digest of the git folder's rebase todo as it is now, or undefined when it has none. */
export function rebaseTodoDigest(gitFolder: string): string | undefined {
  const text = readTodo(rebaseTodoPath(gitFolder));
  return text === undefined ? undefined : createHash('sha256').update(text).digest('hex');
}

/**
 * Comments out the `exec` steps of the git folder's rebase todo unless the todo is what it was
 * at the start (`digestBefore`), and says how many it disabled (0 when none, when there is no
 * todo, or when it could not be rewritten). Never throws.
 */
export function disableNewExecSteps(gitFolder: string, digestBefore: string | undefined): number {
  const path = rebaseTodoPath(gitFolder);
  const text = readTodo(path);
  if (text === undefined) return 0;
  if (digestBefore !== undefined && createHash('sha256').update(text).digest('hex') === digestBefore) return 0;
  let disabled = 0;
  const lines = text.split('\n').map((line) => {
    if (!EXEC_LINE.test(line)) return line;
    disabled += 1;
    return `${DISABLED_MARK}${line.trimStart()}`;
  });
  if (disabled === 0) return 0;
  try {
    // A todo that is a link is replaced by a file of its own: the guard writes nothing through a link.
    if (!lstatSync(path).isFile()) rmSync(path, { force: true });
    writeFileSync(path, lines.join('\n'), { flag: 'w' });
  } catch {
    return 0;
  }
  return disabled;
}

function readTodo(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
