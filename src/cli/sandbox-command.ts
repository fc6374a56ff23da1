import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../config/config';
import { trustNotice } from '../config/trust';
import { fenceHome } from '../config/paths';
import { credentialStorePaths } from '../os-sandbox/credential-stores';
import { bubblewrapSandbox, sandboxSupport } from '../os-sandbox/os-sandbox';
import type { SandboxMode, SandboxPolicy } from '../os-sandbox/policy';
import { sessionPolicy } from '../session/session-sandbox';
import { resolveWorkspace } from '../session/workspace';

/** One probe: a line of bash run inside the sandbox, which exits 0 when the sandbox holds. */
interface Probe {
  name: string;
  script: string;
  /** What the failure means, when the probe printed nothing on stderr to say it. */
  failed: string;
}

/**
 * `fence sandbox check`: what the machine offers, the rules a session in the workspace would
 * get (mode, writable, denied and protected paths, network), and probes run inside such a
 * sandbox — each tries what the sandbox must allow or refuse and prints `ok` or `FAIL`.
 * Returns 0 when a sandbox can be had and every probe holds, 1 otherwise.
 */
export function sandboxCheckCommand(options: { workspace?: string; sandbox?: SandboxMode }, out: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): number {
  const workspace = resolveWorkspace(options.workspace);
  if ('error' in workspace) {
    out(`fence: ${workspace.error}`);
    return 1;
  }
  const loaded = loadConfig({ workspace: workspace.path, env: process.env });
  if ('error' in loaded) {
    out(`fence: ${loaded.error}`);
    return 1;
  }
  const support = sandboxSupport();
  const mode = options.sandbox ?? loaded.config.sandbox.mode ?? 'workspace-write';
  const home = homedir();
  const shown = (path: string) => (path === home ? '~' : path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path);
  const policy = sessionPolicy({ mode, config: loaded.config.sandbox, workspace: workspace.path, fenceHome: fenceHome(), sessionId: 'sandbox-check' });
  out(support.kind === 'none' ? `OS sandbox: none — ${support.reason}. To fix it: ${support.fix}` : `OS sandbox: ${support.kind} (${support.path})${support.kind === 'seatbelt' ? ', untested by fence on a Mac: no probes' : ''}`);
  out(`mode: ${mode}${options.sandbox ? ' (--sandbox)' : loaded.config.sandbox.mode ? ' (configuration)' : ' (default)'}`);
  if (support.kind === 'none' && mode !== 'off') out('without one, commands run with your full access and an --auto run is refused; the rules below are those a sandbox would hold');
  const untrusted = loaded.config.trust && trustNotice(loaded.config.trust);
  if (untrusted) out(`ignored: ${untrusted.replace(/^fence: /, '')}`);
  for (const line of loaded.config.sandbox.ignored) out(`ignored: ${line}`);
  if (mode === 'off') {
    out('commands run with your full access');
    return 0;
  }
  const ownTmp = support.kind === 'bubblewrap' ? "; /tmp is the session's own" : support.kind === 'seatbelt' ? "; TMPDIR is the session's own folder" : '';
  out(`writable: ${mode === 'read-only' ? 'nothing' : policy.writable.map(shown).join(', ')}${ownTmp}`);
  // The credential stores are many: those this machine has are named, the others counted.
  const absent = policy.denied.filter((path) => !existsSync(path));
  out(`denied: ${policy.denied.filter((path) => existsSync(path)).map(shown).join(', ') || 'nothing present here'}${absent.length > 0 ? `; and ${absent.length} more credential stores and paths, absent here (see docs/sandbox.md)` : ''}`);
  const inWorkspace = (path: string) => (path.startsWith(`${workspace.path}/`) ? path.slice(workspace.path.length + 1) : shown(path));
  out(`protected: ${policy.protected.map(inWorkspace).join(', ')}`);
  // The readable exceptions but this check's own outputs folder: the user's skill folders.
  const skills = policy.readable.filter((path) => !path.startsWith(`${resolve(fenceHome())}/`));
  if (skills.length > 0) out(`read-only, though denied or writable around them: ${skills.map(shown).join(', ')} (skills)`);
  out(`git: ${describeRepository(policy, shown)}`);
  out(`network: ${policy.network === true ? "on, through fence's proxy (public addresses only)" : policy.network === false ? 'off' : `only ${policy.network.join(', ')}, through fence's proxy`}`);
  if (support.kind !== 'bubblewrap') return support.kind === 'none' ? 1 : 0;

  const sandbox = bubblewrapSandbox({ ...policy, readable: [] }, support.path);
  try {
    const probeFile = join(workspace.path, `.fence-sandbox-probe-${process.pid}`);
    const ssh = join(home, '.ssh');
    const stores = credentialStorePaths(home, process.env).filter((path) => existsSync(path));
    const probes: Probe[] = [
      {
        name: mode === 'read-only' ? 'a write in the workspace is refused' : 'a write in the workspace works',
        script: mode === 'read-only' ? `! touch ${q(probeFile)} 2>/dev/null` : `touch ${q(probeFile)} && rm ${q(probeFile)}`,
        failed: mode === 'read-only' ? 'the write went through' : 'the write failed',
      },
      { name: 'a write outside the workspace is refused', script: `! touch ${q(join(home, `.fence-sandbox-probe-${process.pid}`))} 2>/dev/null`, failed: 'the write went through' },
      { name: '/tmp is writable', script: 'touch /tmp/probe && rm /tmp/probe', failed: 'the write failed' },
      { name: '~/.ssh cannot be read', script: `[ -z "$(ls -A ${q(ssh)} 2>/dev/null)" ]`, failed: 'its files are listed' },
      {
        name: `the ${stores.length} credential stores found here cannot be read`,
        // A denied folder is an empty one inside; a denied file cannot be opened.
        script: stores.map((path) => `if [ -d ${q(path)} ]; then [ -z "$(ls -A ${q(path)} 2>/dev/null)" ]; else [ -z "$(head -c 1 ${q(path)} 2>/dev/null)" ]; fi`).join(' && ') || 'true',
        failed: 'one of them can be read',
      },
      { name: `fence's data folder cannot be read`, script: `[ -z "$(ls -A ${q(fenceHome())} 2>/dev/null)" ]`, failed: 'its files are listed' },
      { name: `fence's process cannot be seen`, script: `! kill -0 ${process.pid} 2>/dev/null`, failed: `a signal reached fence's process ${process.pid}` },
      { name: `the host's sockets in /run cannot be reached`, script: `[ -z "$(find /run -type s 2>/dev/null | head -1)" ]`, failed: 'a socket is there' },
      {
        name: policy.network === false ? 'the network is off' : 'nothing gets out but through the proxy',
        script: '! (exec 3<>/dev/tcp/1.1.1.1/53) 2>/dev/null',
        failed: 'a connection to 1.1.1.1 port 53 was made',
      },
      { name: 'your terminal cannot be opened (/dev/tty)', script: '! (exec 3<>/dev/tty) 2>/dev/null', failed: '/dev/tty was opened' },
      {
        name: 'typing into a terminal is refused (ioctl TIOCSTI)',
        script: `command -v python3 >/dev/null || exit ${PROBE_SKIPPED}; python3 -c ${q(TYPING_PROBE)}`,
        failed: 'the ioctl was not refused by the filter',
      },
    ];
    let failed = 0;
    for (const probe of probes) {
      const line = sandbox.wrap('bash', ['-c', probe.script], { cwd: workspace.path, terminal: 'none' });
      const run = spawnSync(line.command, line.args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: PROBE_TIMEOUT_MS });
      if (run.status === PROBE_SKIPPED) {
        out(`skip ${probe.name}: python3 is not installed to try it`);
        continue;
      }
      const held = run.status === 0;
      if (!held) failed++;
      out(held ? `ok   ${probe.name}` : `FAIL ${probe.name}: ${failureReason(probe, run)}`);
    }
    return failed === 0 ? 0 : 1;
  } finally {
    sandbox.close();
  }
}

/**
 * The repository holding the workspace, for the `git:` line: where its root is, and whether
 * git may write its data in its git folder (in the workspace, or outside it: a monorepo's
 * package, a worktree, a submodule).
 */
function describeRepository(policy: SandboxPolicy, shown: (path: string) => string): string {
  const repository = policy.git?.repository;
  if (repository === undefined) return 'no repository holds the workspace (git init is for you to run, outside fence)';
  const root = repository.root === policy.workspace ? `${shown(repository.root)} (the workspace)` : shown(repository.root);
  const folders = repository.gitFolders.map(shown).join(' and ');
  if (!repository.access.writable) return `repository ${root}; its git folder ${folders || shown(repository.gitDir)} stays read-only: ${repository.access.reason}, so git add and commit fail in the sandbox`;
  const where = folders === '' ? 'in the workspace' : folders;
  if (policy.mode !== 'workspace-write') return `repository ${root}; its git folder ${where} is read-only in this mode`;
  return `repository ${root}; its git folder ${where} is writable for git's data (objects, refs, the index), its hooks and config read-only`;
}

/** How long one probe may take. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * Why `probe` failed: bwrap's own error when the sandbox did not start, a probe that ran out of
 * time, else what the probe printed on stderr, else what its failure means.
 */
function failureReason(probe: Probe, run: { status: number | null; stderr: string; error?: Error }): string {
  const lines = (run.stderr ?? '').split('\n').map((line) => line.trim()).filter(Boolean);
  const refused = lines.find((line) => line.startsWith('bwrap:'));
  if (refused) return `the sandbox did not start (${refused})`;
  if (run.error) return run.status === null && /ETIMEDOUT/.test(run.error.message) ? `it did not finish within ${PROBE_TIMEOUT_MS / 1000} s` : run.error.message;
  return lines.at(-1) ?? probe.failed;
}

/** The exit status of a probe that could not be tried here. */
const PROBE_SKIPPED = 3;

/**
 * Python that types one byte with `ioctl(TIOCSTI)` on its stdin (here /dev/null) and exits 0
 * only when the sandbox's filter refused it (EPERM); on a descriptor that is not a terminal the
 * kernel itself would answer ENOTTY, so the answer tells the filter is there.
 */
const TYPING_PROBE = [
  'import errno, fcntl, sys, termios',
  'try:',
  '    fcntl.ioctl(0, termios.TIOCSTI, b" ")',
  'except OSError as error:',
  '    sys.exit(0 if error.errno == errno.EPERM else 1)',
  'sys.exit(1)',
].join('\n');

/** `text` quoted for bash. */
function q(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
