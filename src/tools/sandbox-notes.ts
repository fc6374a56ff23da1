import { join } from 'node:path';
import type { SandboxPolicy } from '../os-sandbox/policy';
import { PACKAGE_MANAGER_REFUSED_WRITE, packageManagerNote } from './package-manager-notes';
import { gitRefusalNote } from './git-refusal-notes';

/**
 * What a refusal of the OS sandbox looks like in a failed command's output: a write to a
 * read-only mount, a rename onto or of a mount point ("busy": `git config`, `sed -i fence.toml`
 * and `mv .git` rename), or a protected path named in an error (a file over its placeholder
 * folder), as bash, Python and Node (npm's `EROFS: read-only file system`) word it.
 */
const REFUSED_WRITE =
  /[Rr]ead-only file system|\bEROFS\b|\brename\b.*: Device or resource busy|(?:^|[\s/'"`])(?:fence\.toml|\.fence|\.git)(?:\/[^\s'"`]*)?['"`]?:? .*(?:Is a directory|Not a directory|Permission denied|Operation not permitted|Device or resource busy)|(?:Is a directory|Not a directory|Permission denied|Operation not permitted|Device or resource busy)[^\n]*['"/](?:fence\.toml|\.fence|\.git)\b/m;
/** A refused write into the workspace's own `.git`, as `git init` and `git clone .` word it. */
const NO_REPOSITORY = /\.git\/?[^\s'"`]*['"`]?:? .*Read-only file system|\.git\b.*: (?:Is a directory|Device or resource busy)/;
const PROXY_REFUSED = /is not among the hosts this session may reach|an address of this machine or of a private network|CONNECT tunnel failed, response 403|Tunnel connection failed: 403/;
const NO_NETWORK = /Could not resolve host|Temporary failure in name resolution|Name or service not known|Network is unreachable|getaddrinfo (?:EAI_AGAIN|ENOTFOUND)|No address associated with hostname/;

/**
 * Notes for a command that failed the way the sandbox makes commands fail, so the model learns
 * the rule once instead of retrying: writes outside the writable paths, to the protected ones,
 * and the network when it is off or reached through the proxy.
 */
export function sandboxNotes(output: string, sandbox: SandboxPolicy | undefined): string[] {
  if (!sandbox || sandbox.mode === 'off') return [];
  const notes: string[] = [];
  if (REFUSED_WRITE.test(output) || PACKAGE_MANAGER_REFUSED_WRITE.test(output)) {
    // git's hooks and config, or the read-only git folder of the repository holding the workspace: its own note.
    const git = sandbox.mode === 'read-only' ? undefined : gitRefusalNote(output, sandbox);
    if (sandbox.mode === 'read-only') {
      notes.push('Note: this session runs in a read-only sandbox: commands cannot write files (but in /tmp). Say what you would change instead.');
    } else if (git !== undefined) {
      notes.push(git);
    } else if (NO_REPOSITORY.test(output) && sandbox.protected.includes(join(sandbox.workspace, '.git')) && sandbox.git?.repository === undefined) {
      notes.push('Note: the workspace has no git repository, and the sandbox keeps one from being made here: hooks and config written inside it would run outside the sandbox later, when the user runs git. Ask the user to run git init in the workspace, outside fence.');
    } else {
      notes.push(
        'Note: fence runs commands in a sandbox that lets them write only inside the workspace and /tmp; fence.toml, .fence/ and git\'s hooks and config stay read-only (an empty folder holds the place of one that does not exist). Write inside the workspace instead, or ask the user.',
      );
    }
  }
  // A package manager run offline for want of the network gets its own note, naming its registry.
  const packages = packageManagerNote(output, sandbox);
  if (packages !== undefined) notes.push(packages);
  else if (Array.isArray(sandbox.network)) {
    if (NO_NETWORK.test(output) || PROXY_REFUSED.test(output)) {
      notes.push(`Note: the sandbox lets this session reach only ${sandbox.network.join(', ')}, through a proxy (HTTP_PROXY): programs that ignore the proxy have no network. Other hosts are for the user to allow ([sandbox] network in their config.toml).`);
    }
  } else if (sandbox.network === true && (NO_NETWORK.test(output) || PROXY_REFUSED.test(output))) {
    notes.push('Note: the sandbox reaches the network only through a proxy (HTTP_PROXY), and only public addresses: programs that ignore the proxy (Node\'s fetch, ssh, raw sockets) have no network, and this machine\'s or a private network\'s addresses are for the user to allow ([sandbox] network in their config.toml).');
  } else if (sandbox.network === false && NO_NETWORK.test(output)) {
    notes.push('Note: the sandbox has no network in this session. Work offline, or ask the user to allow it ([sandbox] network in their config.toml).');
  }
  return notes;
}
