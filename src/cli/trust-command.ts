import { fenceHome } from '../config/paths';
import { describeProject } from '../config/project-summary';
import { revokeTrust, trustedWorkspaces, trustWorkspace, workspaceTrust, type TrustEntry } from '../config/trust';
import { visibleText } from '../processes/visible-text';
import { resolveWorkspace } from '../session/workspace';

/** Options of `fence trust`. */
export interface TrustOptions {
  list?: boolean;
  revoke?: boolean;
}

/**
 * `fence trust [dir]`: trusts the folder (the current one by default) on this machine, so
 * sessions there use its `fence.toml`, `AGENTS.md` and `.fence/programs/`, and prints what
 * that lets in (for a folder trusted before whose files changed, what changed). `--list` lists the trusted folders and where each stands; `--revoke [dir]`
 * withdraws trust. Returns the exit code: 0, or 1 with one line on stderr.
 */
export function trustCommand(dir: string | undefined, options: TrustOptions, out: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): number {
  const err = (line: string) => {
    process.stderr.write(`fence: ${line}\n`);
    return 1;
  };
  const home = fenceHome();
  if (options.list && options.revoke) return err('--list and --revoke do not go together');
  if (options.list) {
    if (dir !== undefined) return err('--list takes no folder');
    const entries = trustedWorkspaces(home);
    if (entries.length === 0) out('no folder is trusted (fence trust <dir> trusts one)');
    for (const entry of entries) out(`${entry.workspace}  ${standing(entry)}`);
    return 0;
  }
  if (options.revoke) {
    if (!revokeTrust(dir ?? process.cwd(), home)) return err(`${dir ?? 'this folder'} is not trusted (fence trust --list shows those that are)`);
    out(`no longer trusted: ${workspaceTrust(dir ?? process.cwd(), home).workspace}`);
    return 0;
  }
  const workspace = resolveWorkspace(dir);
  if ('error' in workspace) return err(workspace.error);
  // Read before trusting: a folder trusted before whose files changed shows what changed.
  const before = workspaceTrust(workspace.path, home);
  let trust;
  try {
    trust = trustWorkspace(workspace.path, home);
  } catch (error) {
    return err(`cannot record the trust in ${home}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  out(`trusted: ${trust.workspace}`);
  if (trust.state === 'plain') {
    out('it has no fence.toml, AGENTS.md, .fence/programs/ or .fence/skills/ now; if one appears, fence asks again');
    return 0;
  }
  out('sessions here now use:');
  // The lines quote the folder's own files: shown, never acted on by the terminal.
  for (const line of describeProject(before.state === 'changed' ? before : trust)) out(`  ${visibleText(line)}`);
  out('if fence.toml or AGENTS.md changes, fence asks again (fence trust --revoke withdraws it)');
  return 0;
}

/** How a trusted folder stands, for `--list`. */
function standing(entry: TrustEntry): string {
  const since = entry.trustedAt.slice(0, 10);
  if (entry.gone) return `trusted ${since}, folder gone`;
  if (entry.state === 'changed') return `trusted ${since}, changed since: ${(entry.changed ?? []).join(', ')} (not used until trusted again)`;
  return `trusted ${since}`;
}
