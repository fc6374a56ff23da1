import { BlockList, isIP } from 'node:net';

/**
 * Which hosts a sandbox's network proxy lets through, decided apart from the proxy that moves
 * the bytes. The host list of `[sandbox] network` is parsed once:
 *
 * - `example.com` allows that host on any port, `*.example.com` its subdomains (not itself),
 *   `example.com:443` one port; names compare without case.
 * - `*` allows every host (what `network = true` means).
 * - An address (`10.0.0.5`, `[fd00::1]:8080`) allows that address.
 * - `private:name` (`private:git.corp.example:443`) allows a name that resolves to an address
 *   of the machine or of a private network.
 *
 * A name is allowed only where it resolves to public addresses: one that resolves to loopback,
 * link-local, a private network, carrier-grade NAT, an unspecified, multicast or broadcast
 * address (IPv4-mapped IPv6 forms included) is refused unless its entry is `private:` or the
 * address itself. Without that check, an allowed name a hostile DNS server points at
 * `127.0.0.1` or `169.254.169.254` would open the machine's own services and a cloud's
 * metadata service to the sandbox.
 */

/** The parsed host list: what a proxy asks before it connects. */
export interface NetworkRules {
  /** Whether some entry allows `host` on `port` (before its addresses are known). */
  hostAllowed(host: string, port: number): boolean;
  /**
   * Whether the proxy may connect to `host` on `port` at `addresses` (what `host` resolved to,
   * or the address itself): allowed when an entry allows the host and every address is public,
   * or the entry allows private addresses (`private:`, or the address listed).
   */
  decide(host: string, port: number, addresses: readonly string[]): NetworkDecision;
}

/** What the rules say of one connection. */
export type NetworkDecision =
  | { allowed: true }
  /** `host`: no entry allows the host and port; `address`: it resolves to an address kept from the sandbox. */
  | { allowed: false; rule: 'host' | 'address'; host: string; address?: string };

interface Entry {
  /** `*`, a name, `*.suffix`, or an address. */
  pattern: string;
  port?: number;
  /** The entry may reach addresses that are not public. */
  private: boolean;
}

/** Parses `allowed` (`[sandbox] network`'s list; `true` for every host) once. */
export function networkRules(allowed: readonly string[] | true): NetworkRules {
  const entries = allowed === true ? [{ pattern: '*', private: false }] : allowed.map(parseEntry);
  const matching = (host: string, port: number) => {
    const name = bare(host);
    return entries.filter((entry) => (entry.port === undefined || entry.port === port) && matches(entry.pattern, name));
  };
  return {
    hostAllowed: (host, port) => matching(host, port).length > 0,
    decide(host, port, addresses) {
      const found = matching(host, port);
      if (found.length === 0) return { allowed: false, rule: 'host', host };
      const mayBePrivate = found.some((entry) => entry.private);
      for (const address of addresses) {
        if (mayBePrivate || addressAllowed(address)) continue;
        return { allowed: false, rule: 'address', host, address };
      }
      return addresses.length > 0 ? { allowed: true } : { allowed: false, rule: 'address', host };
    },
  };
}

/** A host as written in a URL or a `CONNECT` line, without IPv6 brackets, in lower case. */
function bare(host: string): string {
  return host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
}

function parseEntry(text: string): Entry {
  const lower = text.trim().toLowerCase();
  const marked = lower.startsWith('private:');
  const rest = marked ? lower.slice('private:'.length) : lower;
  const { host, port } = splitEntry(rest);
  const pattern = isIP(host) ? canonicalAddress(host) : host;
  return { pattern, ...(port === undefined ? {} : { port }), private: marked || isIP(host) !== 0 };
}

/** `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 address (no port). */
function splitEntry(text: string): { host: string; port?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) return { host: bracketed[1] ?? '', ...(bracketed[2] ? { port: Number(bracketed[2]) } : {}) };
  if (isIP(text) === 6) return { host: text };
  const [host = '', port] = text.split(':');
  return { host, ...(port === undefined ? {} : { port: Number(port) }) };
}

function matches(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1;
  if (isIP(name)) return isIP(pattern) !== 0 && canonicalAddress(name) === pattern;
  return name === pattern;
}

/** An address written one way for comparison: IPv6 in its shortest form, an IPv4-mapped one as IPv4. */
function canonicalAddress(address: string): string {
  if (isIP(address) !== 6) return address;
  const hostname = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  return mappedIpv4(hostname) ?? hostname;
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:7f00:1` → `127.0.0.1`), in canonical form. */
function mappedIpv4(canonical: string): string | undefined {
  const match = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!match) return undefined;
  const high = Number.parseInt(match[1] ?? '0', 16);
  const low = Number.parseInt(match[2] ?? '0', 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** Addresses that are not on the public internet. */
const NOT_PUBLIC = (() => {
  const list = new BlockList();
  const v4: [string, number][] = [
    ['0.0.0.0', 8], // "this network", 0.0.0.0 included
    ['10.0.0.0', 8],
    ['100.64.0.0', 10], // carrier-grade NAT
    ['127.0.0.0', 8],
    ['169.254.0.0', 16], // link-local, cloud metadata services
    ['172.16.0.0', 12],
    ['192.0.0.0', 24], // IETF protocol assignments
    ['192.168.0.0', 16],
    ['198.18.0.0', 15], // benchmarking
    ['224.0.0.0', 4], // multicast
    ['240.0.0.0', 4], // reserved, and the broadcast address
  ];
  for (const [net, prefix] of v4) list.addSubnet(net, prefix, 'ipv4');
  const v6: [string, number][] = [
    ['::', 128], // unspecified
    ['::1', 128],
    ['64:ff9b::', 96], // NAT64: an IPv4 address behind it may be private
    ['fc00::', 7], // unique local
    ['fe80::', 10], // link-local
    ['ff00::', 8], // multicast
  ];
  for (const [net, prefix] of v6) list.addSubnet(net, prefix, 'ipv6');
  return list;
})();

/**
 * Whether `address` is a public one a sandbox may reach through an entry that names a host:
 * not loopback (127/8, ::1), link-local (169.254/16, fe80::/10), private (10/8, 172.16/12,
 * 192.168/16, fc00::/7), carrier-grade NAT (100.64/10), unspecified (0.0.0.0/8, ::),
 * multicast or reserved, nor the IPv4-mapped IPv6 form of one of these. Anything that is not
 * an address is not allowed.
 */
export function addressAllowed(address: string): boolean {
  const kind = isIP(address);
  if (kind === 0) return false;
  const canonical = canonicalAddress(address);
  const family = isIP(canonical) === 4 ? 'ipv4' : 'ipv6';
  return !NOT_PUBLIC.check(canonical, family);
}
