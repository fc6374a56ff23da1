import type { SandboxPolicy } from './policy';

/**
 * The Mach services a sandboxed process may look up, each named for what needs it. Everything
 * else is refused: a Mach service is a way around the file rules (the keychain's
 * `com.apple.SecurityServer`, a pasteboard, launchd's services that start programs outside).
 */
const MACH_SERVICES: readonly { name: string; why: string }[] = [
  { name: 'com.apple.system.opendirectoryd.libinfo', why: 'user and group names (getpwuid, id, ls -l)' },
  { name: 'com.apple.system.notification_center', why: 'notify(3), which libc uses for time zone and resolver changes' },
  { name: 'com.apple.system.logger', why: 'syslog(3)' },
  { name: 'com.apple.logd', why: 'os_log, written by most system libraries' },
  { name: 'com.apple.cfprefsd.daemon', why: 'reading preferences (CoreFoundation)' },
  { name: 'com.apple.cfprefsd.agent', why: 'reading preferences (CoreFoundation)' },
  { name: 'com.apple.SystemConfiguration.configd', why: 'the proxy and network settings' },
  { name: 'com.apple.trustd.agent', why: 'checking TLS certificates' },
];

/** What a sandboxed process does with a terminal (see `OsSandbox.wrap`). */
export type SeatbeltTerminal = 'pty' | 'none';

/**
 * The macOS form of the OS sandbox: a Seatbelt profile for `sandbox-exec`, made from the same
 * `SandboxPolicy` as bubblewrap's mounts on Linux. Untested on a Mac: the profile's text is
 * tested, not its effect (see docs/sandbox.md).
 *
 * Everything is denied, then allowed back: running programs, reading files, writing the
 * writable paths and the session's temporary folder, the Mach services of `MACH_SERVICES`;
 * then the denied paths are denied again, reads and writes, and the protected ones for writes
 * (later rules win in Seatbelt). Paths need not exist: a rule on a missing `fence.toml` holds
 * when it appears.
 *
 * Terminals: with `terminal: 'pty'` (the shell, on a pty of its own) the terminals may be
 * opened and their `ioctl`s used; with `'none'` (the Python kernel, command tools, MCP
 * servers) no terminal may be opened nor any terminal `ioctl` made, so a process whose
 * controlling terminal is the person's cannot read it, write to it, or push keys into it with
 * `TIOCSTI`. Seatbelt has no documented filter on an `ioctl`'s request, so `TIOCSTI` is not
 * refused on its own; macOS refuses it on any terminal but the caller's controlling one.
 *
 * The network is allowed to IP addresses (not to Unix sockets such as Docker's) when on, to
 * fence's proxy only (`proxyPort` on the loopback) for a host list, or not at all. There is no
 * PID namespace on macOS: signals are allowed only within the sandbox, so fence and the user's
 * other processes cannot be killed from inside.
 */
export function seatbeltProfile(policy: SandboxPolicy, options: { tempDir: string; proxyPort?: number; terminal?: SeatbeltTerminal }): string {
  const writable = policy.mode === 'workspace-write' ? policy.writable : [];
  const pty = options.terminal === 'pty';
  const terminals = pty ? ' (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$")' : '';
  const lines = [
    '(version 1)',
    '(deny default)',
    '(allow process-exec)',
    '(allow process-fork)',
    '(allow signal (target same-sandbox))',
    '(allow process-info* (target same-sandbox))',
    '(allow sysctl-read)',
    ...MACH_SERVICES.map((service) => `(allow mach-lookup (global-name ${quote(service.name)})) ; ${service.why}`),
    '(allow ipc-posix-shm)',
    '(allow ipc-posix-sem)',
    ...(pty ? ['(allow pseudo-tty)'] : []),
    '(allow file-read*)',
    `(allow file-write* ${[...writable, options.tempDir].map(subpath).join(' ')} (literal "/dev/null")${terminals} (regex #"^/dev/fd/"))`,
    ...(pty ? ['(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))'] : ['(deny file-read* file-write* (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$") (literal "/dev/ptmx"))']),
  ];
  if (policy.denied.length > 0) lines.push(`(deny file-read* file-write* ${policy.denied.map(subpath).join(' ')})`);
  // Readable exceptions are never written, even under a writable path (the user's skill folders).
  if (policy.readable.length > 0) lines.push(`(allow file-read* ${policy.readable.map(subpath).join(' ')})`, `(deny file-write* ${policy.readable.map(subpath).join(' ')})`);
  if (policy.protected.length > 0) lines.push(`(deny file-write* ${policy.protected.map(subpath).join(' ')})`);
  if (policy.network === true) {
    lines.push('(allow network-outbound (remote ip "*:*"))', '(allow network-inbound (local ip "*:*"))', '(allow network-bind (local ip "*:*"))');
    lines.push('(allow network-outbound (literal "/private/var/run/mDNSResponder")) ; name lookups');
    lines.push('(allow mach-lookup (global-name "com.apple.dnssd.service")) ; name lookups');
  } else if (Array.isArray(policy.network) && options.proxyPort !== undefined) {
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

/**
 * The command line that runs `command args` under `profile`, with `TMPDIR` set to the
 * session's temporary folder and the variables of `environment` set.
 */
export function seatbeltCommand(profile: string, tempDir: string, command: string, args: readonly string[], environment: Readonly<Record<string, string>> = {}): { command: string; args: string[] } {
  const variables = Object.entries(environment).map(([name, value]) => `${name}=${value}`);
  return { command: '/usr/bin/sandbox-exec', args: ['-p', profile, '/usr/bin/env', ...variables, `TMPDIR=${tempDir}`, command, ...args] };
}
