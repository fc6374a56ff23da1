import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { holdsPasswordUrl, isWithheld } from './child-env';
import { isWithin, pathsBothWays, realPathOf, type SandboxPolicy } from './policy';

/**
 * Package managers inside the OS sandbox. The home folder is read-only there, so each common
 * package manager is pointed, through its own variable, at a cache folder of fence's own for
 * the workspace (see `workspaceCacheFolder`), which the sandbox mounts writable: installs
 * work, and nothing written inside reaches the caches the person's own installs use later
 * (`~/.npm`, `~/.cache/pip`, `~/.cargo`, `~/go/pkg/mod`, `~/.gradle`, `~/.m2` stay read-only).
 * With no network, the tools that have one get their offline setting, so a miss fails at once
 * instead of after a minute of retries.
 */

/** One variable that points a package manager at fence's cache folder. */
export interface PackageCache {
  /** The tool, as the person knows it. */
  tool: string;
  variable: string;
  /** The folder under the workspace's cache folder. */
  folder: string;
  /**
   * `always`, or `online`: only when the sandbox has a network (on, or a host list). Without
   * one the tool keeps its own cache in the home folder, read-only, so what the person
   * already downloaded still builds offline; fence's folder would start empty.
   */
  when: 'always' | 'online';
  /** The value, `{}` standing for the folder; absent: the folder itself. */
  value?: string;
  /** The value is added to what the variable already holds (options for a JVM), not put in its place. */
  append?: boolean;
}

/**
 * The caches fence moves, one row per variable. Left alone, with the reason: CARGO_HOME and
 * GOMODCACHE offline (`when: 'online'`); pnpm 10 and earlier, whose `npm_config_store_dir`
 * would make npm warn on every command; uv's and cargo's installed tools and Pythons, which
 * are programs rather than caches.
 */
export const PACKAGE_CACHES: readonly PackageCache[] = [
  { tool: 'npm', variable: 'npm_config_cache', folder: 'npm', when: 'always' },
  // Yarn 1, and Yarn 2 and later with the global cache turned off.
  { tool: 'yarn', variable: 'YARN_CACHE_FOLDER', folder: 'yarn', when: 'always' },
  // Yarn 2 and later: the global cache and its metadata live in the global folder.
  { tool: 'yarn', variable: 'YARN_GLOBAL_FOLDER', folder: 'yarn-global', when: 'always' },
  // pnpm 11 reads its settings from pnpm_config_*.
  { tool: 'pnpm', variable: 'pnpm_config_store_dir', folder: 'pnpm/store', when: 'always' },
  { tool: 'pnpm', variable: 'pnpm_config_cache_dir', folder: 'pnpm/cache', when: 'always' },
  { tool: 'bun', variable: 'BUN_INSTALL_CACHE_DIR', folder: 'bun', when: 'always' },
  { tool: 'pip', variable: 'PIP_CACHE_DIR', folder: 'pip', when: 'always' },
  { tool: 'uv', variable: 'UV_CACHE_DIR', folder: 'uv', when: 'always' },
  // The registry's index and crates live in CARGO_HOME, with the config and credentials; fence's has neither.
  { tool: 'cargo', variable: 'CARGO_HOME', folder: 'cargo', when: 'online' },
  { tool: 'go', variable: 'GOMODCACHE', folder: 'go/mod', when: 'online' },
  { tool: 'go', variable: 'GOCACHE', folder: 'go/build', when: 'always' },
  // Also the home of gradle.properties (denied inside anyway) and init scripts, which fence's folder lacks.
  { tool: 'gradle', variable: 'GRADLE_USER_HOME', folder: 'gradle', when: 'always' },
  { tool: 'maven', variable: 'MAVEN_OPTS', folder: 'maven', when: 'always', value: '-Dmaven.repo.local={}', append: true },
];

/** A package manager's setting for working offline, and the hosts it would need online. */
export interface OfflineSetting {
  tool: string;
  variable: string;
  value: string;
  append?: boolean;
  /** The hosts of the tool's default registry: what the person would allow in `[sandbox] network`. */
  hosts: readonly string[];
}

/**
 * Set when the sandbox has no network. Not here: Gradle, which has only its `--offline` option,
 * and Go's `GOFLAGS=-mod=mod`, which changes how go.mod is read rather than the network.
 */
export const OFFLINE_SETTINGS: readonly OfflineSetting[] = [
  { tool: 'npm', variable: 'npm_config_offline', value: 'true', hosts: ['registry.npmjs.org'] },
  { tool: 'pnpm', variable: 'pnpm_config_offline', value: 'true', hosts: ['registry.npmjs.org'] },
  // Yarn 2 and later.
  { tool: 'yarn', variable: 'YARN_ENABLE_NETWORK', value: '0', hosts: ['registry.yarnpkg.com'] },
  { tool: 'pip', variable: 'PIP_NO_INDEX', value: '1', hosts: ['pypi.org', 'files.pythonhosted.org'] },
  { tool: 'uv', variable: 'UV_OFFLINE', value: '1', hosts: ['pypi.org', 'files.pythonhosted.org'] },
  { tool: 'cargo', variable: 'CARGO_NET_OFFLINE', value: 'true', hosts: ['index.crates.io', 'static.crates.io'] },
  { tool: 'go', variable: 'GOPROXY', value: 'off', hosts: ['proxy.golang.org', 'sum.golang.org'] },
  // Maven 3.9 and later read MAVEN_ARGS.
  { tool: 'maven', variable: 'MAVEN_ARGS', value: '--offline', append: true, hosts: ['repo.maven.apache.org'] },
];

/** What `packageManagerEnvironment` needs to know of the session. */
export interface PackageEnvironmentOptions {
  /** The workspace's cache folder, writable inside (see `preparePackageCacheFolder`); absent: no cache is moved. */
  cacheFolder?: string;
  /** The sandbox's network: `false` turns the offline settings on. */
  network: boolean | string[];
  /** `[sandbox] pass_env` of the person's own config.toml: a variable named there and set in `env` is theirs, left as it is. */
  passEnv?: readonly string[];
  /** fence's environment: what a variable fence adds to already holds. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The variables to set in every process of the sandbox: each cache of `PACKAGE_CACHES` at its
 * folder under `cacheFolder`, and with no network the `OFFLINE_SETTINGS`. A variable the person
 * passes on (`pass_env`, and set) is theirs; one that adds to a value (`MAVEN_OPTS`) keeps
 * what `env` holds before fence's part, unless the shell would not get that value (see
 * `childEnvironment`: a password in a URL), which it must not get this way either. Never meant
 * for a session without a sandbox.
 */
export function packageManagerEnvironment(options: PackageEnvironmentOptions): Record<string, string> {
  const env = options.env ?? process.env;
  const theirs = new Set((options.passEnv ?? []).filter((name) => env[name] !== undefined));
  const online = options.network !== false;
  const result: Record<string, string> = {};
  const put = (variable: string, value: string, append: boolean | undefined) => {
    if (theirs.has(variable)) return;
    const own = env[variable];
    const shown = own !== undefined && !isWithheld(variable) && !holdsPasswordUrl(own) ? own : '';
    const before = append ? (result[variable] ?? shown).trim() : '';
    result[variable] = before === '' ? value : `${before} ${value}`;
  };
  const folder = options.cacheFolder;
  if (folder !== undefined) {
    for (const cache of PACKAGE_CACHES) {
      if (cache.when === 'online' && !online) continue;
      const path = join(folder, cache.folder);
      put(cache.variable, cache.value === undefined ? path : cache.value.replace('{}', path), cache.append);
    }
  }
  if (!online) for (const setting of OFFLINE_SETTINGS) put(setting.variable, setting.value, setting.append);
  return result;
}

/**
 * Where fence keeps the package caches of the sandbox: `$XDG_CACHE_HOME/fence/sandbox` when
 * that is an absolute path, else `~/.cache/fence/sandbox`.
 */
export function packageCacheRoot(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const xdg = env.XDG_CACHE_HOME;
  return xdg && isAbsolute(xdg) ? join(resolve(xdg), 'fence', 'sandbox') : join(resolve(home), '.cache', 'fence', 'sandbox');
}

/**
 * The cache folder of one workspace: `<root>/<name>-<hash>`, the hash taken of the
 * workspace's real path. One per workspace, not one for all: what a session writes there can
 * be read back as code by the next session in the same workspace only (npx runs `_npx` as it
 * finds it; cargo and Go build the sources they unpacked), so a hostile repository cannot leave
 * code for the sessions of another project.
 */
export function workspaceCacheFolder(workspace: string, root: string): string {
  const real = realPathOf(resolve(workspace));
  const hash = createHash('sha256').update(real).digest('hex').slice(0, 16);
  const name = basename(real).replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40) || 'root';
  return join(root, `${name}-${hash}`);
}

/** The cache folder ready for a session, or why it cannot be one. */
export type PreparedCacheFolder = { folder: string } | { reason: string };

/**
 * Makes `folder` (see `workspaceCacheFolder`) and the folders above it up to `root`'s parent
 * that are missing, readable by the person alone, and checks that each of them, from `root`'s
 * parent down, is a folder of the person's own and no link: the folder is mounted writable
 * inside, and a link planted in its place (by a session that had the cache home writable)
 * would mount wherever it leads. Refused too when a denied path holds it (a `$FENCE_HOME`
 * under the cache home), which the sandbox would hide.
 */
export function preparePackageCacheFolder(folder: string, root: string, denied: readonly string[]): PreparedCacheFolder {
  const realFolder = realPathOf(folder);
  if (pathsBothWays(denied).some((path) => isWithin(folder, path) || isWithin(realFolder, path))) {
    return { reason: `${folder} lies in a path the sandbox denies` };
  }
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
  } catch (error) {
    return { reason: `${folder} could not be made (${(error as Error).message})` };
  }
  const uid = process.getuid?.();
  for (let path = folder; isWithin(path, dirname(root)); path = dirname(path)) {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (stat === undefined || stat.isSymbolicLink() || !stat.isDirectory()) return { reason: `${path} is not a folder` };
    if (uid !== undefined && stat.uid !== uid) return { reason: `${path} is not the user's own` };
    if (path === dirname(root)) break;
  }
  return { folder };
}

/** What a session's sandbox takes from its package managers: its policy with the cache folder writable, and the variables. */
export interface SandboxPackageSetup {
  policy: SandboxPolicy;
  environment: Record<string, string>;
  /** Why the caches stay where they are in this session, for stderr. */
  warning?: string;
}

/**
 * The package caches of a session's sandbox with `policy`: in `workspace-write`, the
 * workspace's cache folder is made (see `preparePackageCacheFolder`) and added to the
 * writable paths, and the variables of `packageManagerEnvironment` point at it; in
 * `read-only`, where nothing outside `/tmp` is written, only the offline settings apply.
 */
export function sandboxPackageSetup(policy: SandboxPolicy, options: { env?: NodeJS.ProcessEnv; home?: string; passEnv?: readonly string[] } = {}): SandboxPackageSetup {
  const env = options.env ?? process.env;
  const base = { network: policy.network, env, ...(options.passEnv ? { passEnv: options.passEnv } : {}) };
  if (policy.mode !== 'workspace-write') return { policy, environment: packageManagerEnvironment(base) };
  const root = packageCacheRoot(env, options.home);
  const prepared = preparePackageCacheFolder(workspaceCacheFolder(policy.workspace, root), root, policy.denied);
  if ('reason' in prepared) {
    return { policy, environment: packageManagerEnvironment(base), warning: `package managers keep their own caches in this session, read-only in the sandbox: ${prepared.reason}` };
  }
  return { policy: { ...policy, writable: [...policy.writable, prepared.folder] }, environment: packageManagerEnvironment({ ...base, cacheFolder: prepared.folder }) };
}
