import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { offPolicy } from '../../src/os-sandbox/os-sandbox';
import {
  OFFLINE_SETTINGS,
  PACKAGE_CACHES,
  packageCacheRoot,
  packageManagerEnvironment,
  preparePackageCacheFolder,
  sandboxPackageSetup,
  workspaceCacheFolder,
} from '../../src/os-sandbox/package-caches';
import { seatbeltCommand } from '../../src/os-sandbox/seatbelt';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function tempFolder(): string {
  const folder = mkdtempSync('/var/tmp/package-caches-test-');
  folders.push(folder);
  return folder;
}

describe('packageManagerEnvironment', () => {
  it("points each cache at fence's folder, and with a network sets no offline setting", () => {
    const env = packageManagerEnvironment({ cacheFolder: '/c', network: true, env: {} });
    expect(env.npm_config_cache).toBe('/c/npm');
    expect(env.PIP_CACHE_DIR).toBe('/c/pip');
    expect(env.UV_CACHE_DIR).toBe('/c/uv');
    expect(env.CARGO_HOME).toBe('/c/cargo');
    expect(env.GOMODCACHE).toBe('/c/go/mod');
    expect(env.GOCACHE).toBe('/c/go/build');
    expect(env.GRADLE_USER_HOME).toBe('/c/gradle');
    expect(env.MAVEN_OPTS).toBe('-Dmaven.repo.local=/c/maven');
    for (const setting of OFFLINE_SETTINGS) expect(env).not.toHaveProperty(setting.variable);
    expect(Object.keys(env).sort()).toEqual(PACKAGE_CACHES.map((cache) => cache.variable).sort());
  });

  it("with no network sets the offline settings, and leaves cargo's and Go's downloads in the person's own read-only caches", () => {
    const env = packageManagerEnvironment({ cacheFolder: '/c', network: false, env: {} });
    expect(env).toMatchObject({ npm_config_offline: 'true', PIP_NO_INDEX: '1', UV_OFFLINE: '1', CARGO_NET_OFFLINE: 'true', GOPROXY: 'off', MAVEN_ARGS: '--offline' });
    expect(env).not.toHaveProperty('CARGO_HOME');
    expect(env).not.toHaveProperty('GOMODCACHE');
    expect(env.GOCACHE).toBe('/c/go/build');
  });

  it('a host list counts as a network: the tools stay online, through the proxy', () => {
    const env = packageManagerEnvironment({ cacheFolder: '/c', network: ['registry.npmjs.org'], env: {} });
    expect(env).not.toHaveProperty('npm_config_offline');
    expect(env.CARGO_HOME).toBe('/c/cargo');
  });

  it('leaves a variable the person passes on (pass_env, and set) as theirs, and adds to JVM options rather than replacing them', () => {
    const env = packageManagerEnvironment({
      cacheFolder: '/c',
      network: false,
      passEnv: ['npm_config_cache', 'PIP_NO_INDEX', 'GOCACHE'],
      env: { npm_config_cache: '/mine/npm', PIP_NO_INDEX: '0', MAVEN_OPTS: '-Xmx2g', MAVEN_ARGS: '-B' },
    });
    expect(env).not.toHaveProperty('npm_config_cache');
    expect(env).not.toHaveProperty('PIP_NO_INDEX');
    // Named in pass_env but not set: fence's value.
    expect(env.GOCACHE).toBe('/c/go/build');
    expect(env.MAVEN_OPTS).toBe('-Xmx2g -Dmaven.repo.local=/c/maven');
    expect(env.MAVEN_ARGS).toBe('-B --offline');
  });

  it("does not bring back a value the shell's environment withholds when adding to it", () => {
    const env = packageManagerEnvironment({ cacheFolder: '/c', network: true, env: { MAVEN_OPTS: '-Dhttps.proxy=http://me:hunter2@proxy.corp:3128' } });
    expect(env.MAVEN_OPTS).toBe('-Dmaven.repo.local=/c/maven');
  });

  it('without a cache folder sets only the offline settings', () => {
    expect(packageManagerEnvironment({ network: false, env: {} })).toEqual(Object.fromEntries(OFFLINE_SETTINGS.map((setting) => [setting.variable, setting.value])));
    expect(packageManagerEnvironment({ network: true, env: {} })).toEqual({});
  });
});

describe('the cache folder', () => {
  it('lives under $XDG_CACHE_HOME/fence/sandbox when that is absolute, else ~/.cache/fence/sandbox', () => {
    expect(packageCacheRoot({ XDG_CACHE_HOME: '/x/cache' }, '/home/me')).toBe('/x/cache/fence/sandbox');
    expect(packageCacheRoot({ XDG_CACHE_HOME: 'relative' }, '/home/me')).toBe('/home/me/.cache/fence/sandbox');
    expect(packageCacheRoot({}, '/home/me')).toBe('/home/me/.cache/fence/sandbox');
  });

  it('is one per workspace, by its real path', () => {
    const root = tempFolder();
    mkdirSync(join(root, 'a'));
    mkdirSync(join(root, 'b'));
    symlinkSync(join(root, 'a'), join(root, 'link-to-a'));
    const a = workspaceCacheFolder(join(root, 'a'), '/cache');
    expect(a).toMatch(/^\/cache\/a-[0-9a-f]{16}$/);
    expect(workspaceCacheFolder(join(root, 'b'), '/cache')).not.toBe(a);
    expect(workspaceCacheFolder(join(root, 'link-to-a'), '/cache')).toBe(a);
  });

  it('is made readable by its owner alone', () => {
    const home = tempFolder();
    const root = packageCacheRoot({}, home);
    const folder = workspaceCacheFolder(home, root);
    expect(preparePackageCacheFolder(folder, root, [])).toEqual({ folder });
    for (const path of [folder, root, join(root, '..')]) expect(statSync(path).mode & 0o777).toBe(0o700);
  });

  it('is refused when it, or a folder above it, is a link, or when a denied path holds it', () => {
    const home = tempFolder();
    const root = packageCacheRoot({}, home);
    const elsewhere = join(home, 'elsewhere');
    mkdirSync(elsewhere);
    mkdirSync(root, { recursive: true });
    const folder = workspaceCacheFolder(join(home, 'w'), root);
    symlinkSync(elsewhere, folder);
    expect(preparePackageCacheFolder(folder, root, [])).toEqual({ reason: `${folder} is not a folder` });

    const other = tempFolder();
    const otherRoot = packageCacheRoot({}, other);
    mkdirSync(join(otherRoot, '..', '..'), { recursive: true });
    symlinkSync(elsewhere, join(otherRoot, '..'));
    expect(preparePackageCacheFolder(join(otherRoot, 'w-1'), otherRoot, [])).toMatchObject({ reason: `${join(otherRoot, '..')} is not a folder` });

    const denied = tempFolder();
    const deniedRoot = packageCacheRoot({}, denied);
    expect(preparePackageCacheFolder(join(deniedRoot, 'w-1'), deniedRoot, [join(denied, '.cache', 'fence')])).toMatchObject({ reason: expect.stringContaining('denies') });
  });
});

describe('sandboxPackageSetup', () => {
  it("in workspace-write makes the workspace's cache folder writable and points the tools at it", () => {
    const home = tempFolder();
    const workspace = join(home, 'project');
    mkdirSync(workspace);
    const policy = { ...offPolicy(workspace), mode: 'workspace-write' as const, network: false as const };
    const setup = sandboxPackageSetup(policy, { env: {}, home });
    const folder = workspaceCacheFolder(workspace, packageCacheRoot({}, home));
    expect(setup.policy.writable).toEqual([workspace, folder]);
    expect(setup.environment.npm_config_cache).toBe(join(folder, 'npm'));
    expect(setup.environment.npm_config_offline).toBe('true');
    expect(setup.warning).toBeUndefined();
  });

  it('in read-only writes nothing and moves no cache, but still works offline', () => {
    const home = tempFolder();
    const policy = { ...offPolicy(join(home, 'project')), mode: 'read-only' as const, network: false as const };
    const setup = sandboxPackageSetup(policy, { env: {}, home });
    expect(setup.policy).toBe(policy);
    expect(setup.environment).not.toHaveProperty('npm_config_cache');
    expect(setup.environment.npm_config_offline).toBe('true');
    expect(() => statSync(join(home, '.cache'))).toThrow();
  });
});

describe('seatbeltCommand', () => {
  it('sets the variables it is given before TMPDIR', () => {
    const line = seatbeltCommand('(version 1)', '/tmp/s', 'bash', ['-i'], { npm_config_cache: '/c/npm', npm_config_offline: 'true' });
    expect(line.args).toEqual(['-p', '(version 1)', '/usr/bin/env', 'npm_config_cache=/c/npm', 'npm_config_offline=true', 'TMPDIR=/tmp/s', 'bash', '-i']);
  });
});
