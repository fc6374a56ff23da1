import { isIP } from 'node:net';

/** One file's `[web]` table. */
export interface WebFileConfig {
  /** Hosts the `fetch` tool reads without asking, written as `[sandbox] network`'s entries. */
  allow?: string[];
  /** Offer the provider's hosted web search to the model. */
  search?: boolean;
  /** Most seconds one fetch may take, redirects included. */
  timeout_seconds?: number;
}

/** The `[web]` settings of a session, the project's narrowing the user's. */
export interface WebConfig {
  allow: string[];
  search: boolean;
  /** Absent: the default (30 s). */
  timeoutSeconds?: number;
}

/**
 * The user's `[web]` narrowed by a trusted project's: the project's `allow` keeps only the
 * entries the user's list already covers (the same entry, a name under a user's `*.suffix` or
 * `*`, one port of a user's portless name; an address or `private:` entry only when the user's
 * list has it as such), so a project can shorten the list but never add a host or reach a
 * private network; a project can turn `search` off, not on, and lower `timeout_seconds`, not raise it. What it asked for in vain goes to
 * `ignored`, one line each, naming `file`.
 */
export function mergeWebConfig(user: WebFileConfig, project: WebFileConfig, file: string, ignored: string[]): WebConfig {
  const userAllow = user.allow ?? [];
  let allow = userAllow;
  if (project.allow !== undefined) {
    const parsedUser = userAllow.map(parseHostEntry);
    allow = project.allow.filter((entry) => parsedUser.some((owned) => covers(owned, parseHostEntry(entry))));
    const refused = project.allow.filter((entry) => !allow.includes(entry));
    if (refused.length > 0) ignored.push(`${file}: [web] allow: ${refused.join(', ')} ignored: not among the hosts your own config.toml allows`);
  }
  let search = user.search ?? false;
  if (project.search === false) search = false;
  else if (project.search === true && !search) ignored.push(`${file}: [web] search = true ignored: only your own config.toml (or --web-search) turns web search on`);
  const timeouts = [user.timeout_seconds, project.timeout_seconds].filter((value) => value !== undefined);
  const timeoutSeconds = timeouts.length > 0 ? Math.min(...timeouts) : undefined;
  return { allow: [...allow], search, ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }) };
}

interface HostEntry {
  host: string;
  port?: number;
  /** May reach addresses that are not public: `private:`, or an address. */
  private: boolean;
  address: boolean;
}

function parseHostEntry(text: string): HostEntry {
  const lower = text.trim().toLowerCase();
  const marked = lower.startsWith('private:');
  const rest = marked ? lower.slice('private:'.length) : lower;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  const [host, port] = bracketed ? [bracketed[1] ?? '', bracketed[2]] : isIP(rest) === 6 ? [rest, undefined] : (rest.split(':') as [string, string | undefined]);
  const address = isIP(host) !== 0;
  return { host, ...(port === undefined ? {} : { port: Number(port) }), private: marked || address, address };
}

/** Whether the user's entry `owned` allows at least everything the project's `wanted` would. */
function covers(owned: HostEntry, wanted: HostEntry): boolean {
  if (owned.port !== undefined && owned.port !== wanted.port) return false;
  if (wanted.private && !owned.private) return false;
  if (wanted.address || owned.address) return owned.host === wanted.host;
  if (owned.host === wanted.host) return true;
  if (owned.host === '*') return true;
  return owned.host.startsWith('*.') && wanted.host.endsWith(owned.host.slice(1)) && wanted.host.length > owned.host.length - 1;
}
