import { latestSession, readSession, sessionsStartingWith } from '../conversation/session-store';
import { resolveWorkspace } from '../session/workspace';

/**
 * The session that `-r` / `--resume` names. Without a value (`true`): the latest session of the
 * workspace that no fence process holds. With one: the session whose id is exactly that value.
 * A value that names no session is an error, never a guess: `-r` takes the word after it, so
 * `fence -n -r "please continue"` hands it the prompt, and reading that as a prompt, or a short
 * word as an id prefix, would at times run something other than what was meant. The error
 * names the sessions whose ids the value begins, and shows how to write a prompt after `-r`.
 * Only reads.
 */
export function resumeTarget(home: string, resume: string | true, workspaceDir: string | undefined): { id: string } | { error: string } {
  if (resume === true) return latestSessionId(home, workspaceDir);
  const named = readSession(home, resume);
  if (named?.info.programsOnly) return { error: `session ${resume} holds program runs (${named.info.model}), not a conversation: there is nothing to resume. fence trace list shows its runs.` };
  if (named) return { id: resume };
  const word = quoted(resume);
  const hint = `To give the latest session a prompt, put -- before it: -r -- ${word} (or name the session: --resume <id> ${word}). fence sessions list shows the sessions.`;
  const begun = sessionsStartingWith(home, resume).map((info) => info.id);
  if (begun.length === 0) return { error: `no session "${resume}" to resume. ${hint}` };
  const shown = begun.length > 5 ? `${begun.slice(0, 5).join(', ')} and ${begun.length - 5} more` : begun.join(', ');
  return { error: `no session "${resume}" to resume; it begins the id${begun.length === 1 ? '' : 's'} of ${shown}: give the whole id. ${hint}` };
}

/** The latest session of the workspace (for `-r` without an id), or why there is none. */
function latestSessionId(home: string, dir: string | undefined): { id: string } | { error: string } {
  const workspace = resolveWorkspace(dir);
  if ('error' in workspace) return workspace;
  const latest = latestSession(home, workspace.path);
  return latest ? { id: latest.id } : { error: `no earlier session in ${workspace.path} to resume (fence sessions list shows them all)` };
}

/** A word as it may be typed in a shell: bare when safe, else in single quotes. */
function quoted(word: string): string {
  return /^[\w./=:,@+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
