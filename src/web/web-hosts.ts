import { addressAllowed, networkRules } from '../os-sandbox/network-rules';

/**
 * Which hosts the `fetch` tool may read, from `[web] allow`. The list is written as
 * `[sandbox] network`'s (see `networkRules`): `docs.example.org`, `*.python.org` (subdomains,
 * not the name itself), `example.org:8080` (one port), `*` (every public host), an address
 * (`127.0.0.1:8080`, `[::1]`) or `private:name` for a name that resolves to this machine or a
 * private network. A name, a wildcard included, never reaches an address that is not public
 * unless its entry is `private:` or the address itself.
 */
export interface WebHosts {
  /** Whether an entry names the host and port of `url` (before its addresses are known). */
  listed(url: URL): boolean;
  /**
   * Why `url`'s host may not be reached at `addresses` (what it resolved to), or undefined
   * when it may: a listed host as its entry says, an unlisted one (a person said yes to it)
   * only at public addresses.
   */
  addressRefusal(url: URL, addresses: readonly string[]): string | undefined;
}

/** Parses `allow` once. */
export function webHosts(allow: readonly string[]): WebHosts {
  const rules = networkRules(allow);
  return {
    listed: (url) => rules.hostAllowed(hostOf(url), portOf(url)),
    addressRefusal(url, addresses) {
      const host = hostOf(url);
      const port = portOf(url);
      if (addresses.length === 0) return `${host} has no address`;
      if (rules.hostAllowed(host, port)) {
        const decision = rules.decide(host, port, addresses);
        return decision.allowed ? undefined : privateRefusal(host, decision.address);
      }
      const hidden = addresses.find((address) => !addressAllowed(address));
      return hidden === undefined ? undefined : privateRefusal(host, hidden);
    },
  };
}

/** A URL's host without IPv6 brackets, in lower case. */
export function hostOf(url: URL): string {
  return url.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
}

/** A URL's port, the scheme's default when it names none. */
export function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

function privateRefusal(host: string, address: string | undefined): string {
  const where = address === undefined ? 'has no address' : `resolves to ${address}, an address of this machine or of a private network`;
  return `${host} ${where}; fence reaches one only when [web] allow lists it as "private:${host}" or by its address`;
}
