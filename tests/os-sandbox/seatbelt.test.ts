import { describe, expect, it } from 'vitest';
import { quote, seatbeltCommand, seatbeltProfile } from '../../src/os-sandbox/seatbelt';
import type { SandboxPolicy } from '../../src/os-sandbox/policy';

const policy: SandboxPolicy = {
  mode: 'workspace-write',
  workspace: '/Users/me/project',
  writable: ['/Users/me/project', '/Users/me/.cache/pip'],
  denied: ['/Users/me/.ssh', '/Users/me/Library/Application Support/fence'],
  readable: ['/Users/me/Library/Application Support/fence/sessions/s1/tool-outputs'],
  protected: ['/Users/me/project/fence.toml', '/Users/me/project/.git/hooks'],
  network: false,
};

/** The profile's lines, each rule once. */
const rules = (text: string) => text.trim().split('\n');

describe('seatbeltProfile', () => {
  it('denies by default, lets writes into the writable paths and the session folder, then denies and protects over them', () => {
    const lines = rules(seatbeltProfile(policy, { tempDir: '/private/var/folders/x/fence-sandbox-1' }));
    expect(lines[0]).toBe('(version 1)');
    expect(lines[1]).toBe('(deny default)');
    const write = lines.findIndex((line) => line.startsWith('(allow file-write*'));
    expect(lines[write]).toContain('(subpath "/Users/me/project") (subpath "/Users/me/.cache/pip") (subpath "/private/var/folders/x/fence-sandbox-1")');
    const denied = lines.indexOf('(deny file-read* file-write* (subpath "/Users/me/.ssh") (subpath "/Users/me/Library/Application Support/fence"))');
    const readable = lines.indexOf('(allow file-read* (subpath "/Users/me/Library/Application Support/fence/sessions/s1/tool-outputs"))');
    const protectedRule = lines.indexOf('(deny file-write* (subpath "/Users/me/project/fence.toml") (subpath "/Users/me/project/.git/hooks"))');
    // Later rules win in Seatbelt: each exception comes after what it narrows.
    expect(write).toBeGreaterThan(0);
    expect(denied).toBeGreaterThan(write);
    expect(readable).toBeGreaterThan(denied);
    expect(protectedRule).toBeGreaterThan(write);
    expect(lines).toContain('(allow signal (target same-sandbox))');
    expect(lines.some((line) => line.startsWith('(allow network'))).toBe(false);
  });

  it("keeps a readable exception from writes even under a writable path (a skill folder in [sandbox] writable = [\"~/.agents\"])", () => {
    const skills = '/Users/me/.agents/skills';
    const lines = rules(seatbeltProfile({ ...policy, writable: [...policy.writable, '/Users/me/.agents'], readable: [skills] }, { tempDir: '/t' }));
    const write = lines.findIndex((line) => line.startsWith('(allow file-write*'));
    expect(lines[write]).toContain('(subpath "/Users/me/.agents")');
    expect(lines.indexOf(`(deny file-write* (subpath "${skills}"))`)).toBeGreaterThan(write);
    expect(lines.indexOf(`(allow file-read* (subpath "${skills}"))`)).toBeGreaterThan(write);
  });

  it('writes nothing writable in read-only mode but the session folder, and opens the network when allowed', () => {
    const readOnly = seatbeltProfile({ ...policy, mode: 'read-only', network: true }, { tempDir: '/t' });
    expect(readOnly).toContain('(allow file-write* (subpath "/t") (literal "/dev/null")');
    expect(readOnly).not.toContain('(subpath "/Users/me/project") (subpath');
    expect(readOnly).toContain('(allow network-outbound (remote ip "*:*"))');
    expect(seatbeltProfile({ ...policy, network: ['pypi.org'] }, { tempDir: '/t', proxyPort: 3128 })).toContain('(allow network-outbound (remote ip "localhost:3128"))');
    expect(rules(seatbeltProfile({ ...policy, network: ['pypi.org'] }, { tempDir: '/t' })).some((line) => line.startsWith('(allow network'))).toBe(false);
  });

  it('with the network on, reaches IP addresses but no Unix socket (a Docker socket would be a way out)', () => {
    const open = rules(seatbeltProfile({ ...policy, network: true }, { tempDir: '/t' }));
    expect(open).not.toContain('(allow network*)');
    expect(open.filter((line) => line.startsWith('(allow network-outbound')).every((line) => line.includes('(remote ip ') || line.includes('"/private/var/run/mDNSResponder"'))).toBe(true);
  });

  it('looks up only named Mach services, never the keychain, and every allowed one says why', () => {
    const lines = rules(seatbeltProfile(policy, { tempDir: '/t' }));
    const lookups = lines.filter((line) => line.includes('mach-lookup'));
    expect(lookups.length).toBeGreaterThan(3);
    for (const line of lookups) expect(line).toMatch(/^\(allow mach-lookup \(global-name "com\.apple\.[A-Za-z._]+"\)\) ; \S/);
    expect(lines).not.toContain('(allow mach-lookup)');
    expect(lines.join('\n')).not.toMatch(/SecurityServer|securityd|pasteboard|launchservicesd/);
  });

  it('lets only the shell on its own pty use terminals: other processes can neither open one nor make a terminal ioctl (TIOCSTI)', () => {
    const shell = rules(seatbeltProfile(policy, { tempDir: '/t', terminal: 'pty' }));
    expect(shell).toContain('(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))');
    expect(shell).toContain('(allow pseudo-tty)');
    const tool = rules(seatbeltProfile(policy, { tempDir: '/t', terminal: 'none' }));
    expect(tool.some((line) => line.includes('file-ioctl'))).toBe(false);
    expect(tool).not.toContain('(allow pseudo-tty)');
    expect(tool.find((line) => line.startsWith('(allow file-write*'))).not.toContain('tty');
    const closing = tool.indexOf('(deny file-read* file-write* (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$") (literal "/dev/ptmx"))');
    expect(closing).toBeGreaterThan(tool.indexOf('(allow file-read*)'));
  });

  it('quotes paths so that none can end its string and add a rule', () => {
    expect(quote('/a "b"\\c')).toBe('"/a \\"b\\"\\\\c"');
    const hostile = seatbeltProfile({ ...policy, writable: ['/w") (allow file-write* (subpath "/'] }, { tempDir: '/t' });
    expect(hostile).toContain('(subpath "/w\\") (allow file-write* (subpath \\"/")');
    expect(() => quote('/a\nb')).toThrow(/control character/);
  });

  it('runs the command under the profile with the session folder as TMPDIR', () => {
    expect(seatbeltCommand('(version 1)', '/t', 'bash', ['-i'])).toEqual({
      command: '/usr/bin/sandbox-exec',
      args: ['-p', '(version 1)', '/usr/bin/env', 'TMPDIR=/t', 'bash', '-i'],
    });
  });
});
