import type { SandboxPolicy } from './sandbox-policy';

/**
 * The macOS form of the OS sandbox: a Seatbelt profile for `sandbox-exec`, made from the same
 * `SandboxPolicy` as bubblewrap's mounts on Linux. Untested on a Mac: the profile's text is
 * tested, not its effect (see docs/sandbox.md).
 *
 * Everything is denied, then allowed back: running programs, reading files, writing the
 * writable paths and the session's temporary folder, the terminal; then the denied paths are
 * denied again, reads and writes, and the protected ones for writes (later rules win in
 * Seatbelt). Paths need not exist: a rule on a missing `fence.toml` holds when it appears. The
 * network is allowed whole, not at all, or to fence's proxy only (`proxyPort` on the loopback).
 * There is no PID namespace on macOS: signals are allowed only within the sandbox, so fence and
 * the user's other processes cannot be killed from inside.
 */
export function seatbeltProfile(policy: SandboxPolicy, options: { tempDir: string; proxyPort?: number }): string {
  const writable = policy.mode === 'workspace-write' ? policy.writable : [];
  const lines = [
    '(version 1)',
    '(deny default)',
    '(allow process-exec)',
    '(allow process-fork)',
    '(allow signal (target same-sandbox))',
    '(allow process-info* (target same-sandbox))',
    '(allow sysctl-read)',
    '(allow mach-lookup)',
    '(allow ipc-posix-shm)',
    '(allow pseudo-tty)',
    '(allow file-read*)',
    `(allow file-write* ${[...writable, options.tempDir].map(subpath).join(' ')} (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$") (regex #"^/dev/fd/"))`,
    '(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))',
  ];
  if (policy.denied.length > 0) lines.push(`(deny file-read* file-write* ${policy.denied.map(subpath).join(' ')})`);
  if (policy.readable.length > 0) lines.push(`(allow file-read* ${policy.readable.map(subpath).join(' ')})`);
  if (policy.protected.length > 0) lines.push(`(deny file-write* ${policy.protected.map(subpath).join(' ')})`);
  if (policy.network === true) lines.push('(allow network*)');
  else if (Array.isArray(policy.network) && options.proxyPort !== undefined) {
    lines.push(`(allow network-outbound (remote ip "localhost:${options.proxyPort}"))`);
  }
  return `${lines.join('\n')}\n`;
}

/** A `subpath` filter for `path`, as a Seatbelt string literal. */
function subpath(path: string): string {
  return `(subpath ${quote(path)})`;
}

/** `text` as a Seatbelt (Scheme) string: backslashes and double quotes escaped, no control characters. */
export function quote(text: string): string {
  if (/[\u0000-\u001f]/.test(text)) throw new Error(`a path with a control character cannot go into a sandbox profile: ${JSON.stringify(text)}`);
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The command line that runs `command args` under `profile`, with `TMPDIR` set to the session's temporary folder. */
export function seatbeltCommand(profile: string, tempDir: string, command: string, args: readonly string[]): { command: string; args: string[] } {
  return { command: '/usr/bin/sandbox-exec', args: ['-p', profile, '/usr/bin/env', `TMPDIR=${tempDir}`, command, ...args] };
}
