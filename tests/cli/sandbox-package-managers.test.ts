import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { packageCacheRoot, workspaceCacheFolder } from '../../src/os-sandbox/package-caches';
import { snapshot } from '../support/sandbox-machine';
import type { Message } from '../../src/conversation/message';
import { block, bubblewrapMissing, fenceIn, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * Package managers in the sandbox, through the built CLI: they write to a cache folder of
 * fence's own for the workspace, never to the person's (`~/.npm` stays as it was, and the
 * host's npm still uses it), and with no network they run offline, so a miss fails at once
 * with a note naming the setting the user would change. No test reaches the internet: the
 * registry is a small server of the test's own, reached through fence's proxy.
 */

const rig = useSandboxRig();
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const PACKAGE = 'fence-test-pkg';
const PACKAGE_TEXT = 'fence-test-package-installed-5d2a';
/** Where the test's registry listens: an address of the host's loopback, allowed as itself in `[sandbox] network`. */
const REGISTRY_ADDRESS = '127.0.0.2';

/** fence's cache folder for the rig's workspace, as a session there finds it. */
const cacheFolder = (rig: SandboxRig, workspace = rig.workspace) => workspaceCacheFolder(workspace, packageCacheRoot({}, rig.home));

/** The sessions of fence's data folder now. */
const sessions = (rig: SandboxRig) => new Set(readdirSync(join(rig.fenceHome, 'sessions')));

/** The tool results of the one session made since `before` (for a test that runs fence twice). */
function newSessionResults(rig: SandboxRig, before: Set<string>): string[] {
  const made = [...sessions(rig)].filter((id) => !before.has(id));
  if (made.length !== 1) throw new Error(`expected one new session, found ${made.length}`);
  return readFileSync(join(rig.fenceHome, 'sessions', made[0] as string, 'conversation.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Message)
    .filter((message) => message.meta?.toolResult)
    .map((message) => message.content);
}

/**
 * A registry serving one package, `fence-test-pkg@1.0.0`, on the host's 127.0.0.2; counts its
 * requests. Not 127.0.0.1 nor localhost: the sandbox leaves those out of the proxy (NO_PROXY,
 * which npm's agent heeds over a `noproxy` of its own), and this registry is on the host.
 */
async function fakeRegistry(rig: SandboxRig): Promise<{ url: string; requests: string[] }> {
  const folder = join(rig.root, 'registry-package');
  mkdirSync(join(folder, 'package'), { recursive: true });
  writeFileSync(join(folder, 'package', 'package.json'), JSON.stringify({ name: PACKAGE, version: '1.0.0', main: 'index.js' }));
  writeFileSync(join(folder, 'package', 'index.js'), `module.exports = '${PACKAGE_TEXT}';\n`);
  const tarballFile = join(folder, 'package.tgz');
  execFileSync('tar', ['czf', tarballFile, '-C', folder, 'package']);
  const tarball = readFileSync(tarballFile);
  const requests: string[] = [];
  const registry = { url: '', requests };
  const server = createServer((request, response) => {
    requests.push(request.url ?? '');
    if (request.url === `/${PACKAGE}`) {
      const dist = {
        tarball: `${registry.url}${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`,
        integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
        shasum: createHash('sha1').update(tarball).digest('hex'),
      };
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ name: PACKAGE, 'dist-tags': { latest: '1.0.0' }, versions: { '1.0.0': { name: PACKAGE, version: '1.0.0', main: 'index.js', dist } } }));
    } else if (request.url === `/${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`) {
      response.setHeader('content-type', 'application/octet-stream');
      response.end(tarball);
    } else {
      response.statusCode = 404;
      response.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, REGISTRY_ADDRESS, resolve));
  registry.url = `http://${REGISTRY_ADDRESS}:${(server.address() as AddressInfo).port}/`;
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return registry;
}

/** A workspace that depends on `fence-test-pkg` from `registry`, named in its own `.npmrc`. */
function dependOnTestPackage(rig: SandboxRig, registry: string): void {
  writeFileSync(join(rig.workspace, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', dependencies: { [PACKAGE]: '^1.0.0' } }));
  writeFileSync(join(rig.workspace, '.npmrc'), `registry=${registry}\naudit=false\nfund=false\nupdate-notifier=false\n`);
}

/** The person's own npm cache, with one entry: it must stay as it is. */
function personsNpmCache(rig: SandboxRig): string {
  const folder = join(rig.home, '.npm');
  mkdirSync(join(folder, '_cacache'), { recursive: true });
  writeFileSync(join(folder, '_cacache', 'persons-entry'), 'the person\'s own cache\n');
  return folder;
}

/** Runs `command`, shows the end of its output and its status, and fails as it did (the notes are for failed commands). */
const lastLines = (command: string) => `${command} > /tmp/out.txt 2>&1; status=$?; tail -n 15 /tmp/out.txt; echo "exit=$status"; (exit $status)`;

const npmInstall = lastLines('npm install --no-audit --no-fund');
const requireTestPackage = `node -e "console.log(require('${PACKAGE}'))"`;

describe.skipIf(bubblewrapMissing)('package managers in the sandbox', () => {
  it('npm with the network off fails at once with ENOTCACHED and a note naming the registry to allow', { timeout: 180_000 }, async () => {
    writeFileSync(join(rig().workspace, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', dependencies: { 'left-pad': '^1.3.0' } }));
    script(rig(), [block('shell', npmInstall), 'Done.']);
    const run = await fenceIn(rig(), ['-n', 'install']);
    expect(run.exitCode).toBe(0);
    const result = toolResults(rig())[0]?.content ?? '';
    expect(result).toContain('ENOTCACHED');
    expect(result).toMatch(/exit=[1-9]/);
    expect(result).toContain('fence runs npm offline (npm_config_offline=true)');
    expect(result).toContain('[sandbox] network = ["registry.npmjs.org"]');
    expect(result).not.toContain('EAI_AGAIN');
  });

  it('npm with its registry allowed installs through the proxy into fence\'s cache, and then offline from it; ~/.npm stays as it was', { timeout: 240_000 }, async () => {
    const registry = await fakeRegistry(rig());
    dependOnTestPackage(rig(), registry.url);
    const persons = personsNpmCache(rig());
    const before = await snapshot(persons);
    appendFileSync(rig().userConfig, `[sandbox]\nnetwork = ["${REGISTRY_ADDRESS}"]\n`);

    script(rig(), [block('shell', `${npmInstall}\n${requireTestPackage}`), 'Done.']);
    const online = await fenceIn(rig(), ['-n', 'install']);
    expect(online.exitCode).toBe(0);
    const installed = toolResults(rig())[0]?.content ?? '';
    expect(installed).toContain('exit=0');
    expect(installed).toContain(PACKAGE_TEXT);
    expect(registry.requests).toContain(`/${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`);
    // Written to fence's cache for the workspace, not to the person's.
    expect(existsSync(join(cacheFolder(rig()), 'npm', '_cacache'))).toBe(true);
    expect(await snapshot(persons)).toEqual(before);

    // The same workspace with the network off: installed again from fence's cache, the registry not asked.
    writeFileSync(rig().userConfig, '# no network\n');
    execFileSync('rm', ['-rf', join(rig().workspace, 'node_modules')]);
    const asked = registry.requests.length;
    const first = sessions(rig());
    script(rig(), [block('shell', `${npmInstall}\n${requireTestPackage}`), 'Done.']);
    const offline = await fenceIn(rig(), ['-n', 'install again']);
    expect(offline.exitCode).toBe(0);
    const again = newSessionResults(rig(), first)[0] ?? '';
    expect(again).toContain('exit=0');
    expect(again).toContain(PACKAGE_TEXT);
    expect(registry.requests.length).toBe(asked);
    expect(await snapshot(persons)).toEqual(before);
  });

  it('pip with the network off fails at once with a note naming the index to allow', { timeout: 180_000 }, async () => {
    const python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
    script(rig(), [block('shell', lastLines(`"${python}" -m pip download fence-test-no-such-dist-7c1e -d /tmp/dl`)), 'Done.']);
    const run = await fenceIn(rig(), ['-n', 'download']);
    expect(run.exitCode).toBe(0);
    const result = toolResults(rig())[0]?.content ?? '';
    expect(result).toContain('No matching distribution found for fence-test-no-such-dist-7c1e');
    expect(result).toContain('fence runs pip offline (PIP_NO_INDEX=1)');
    expect(result).toContain('[sandbox] network = ["pypi.org", "files.pythonhosted.org"]');
    expect(result).not.toMatch(/Retrying|NewConnectionError/);
  });

  it("the model can write fence's cache but not the person's ~/.npm or ~/.cache/pip, and the host's npm keeps its own cache", { timeout: 180_000 }, async () => {
    const persons = personsNpmCache(rig());
    mkdirSync(join(rig().home, '.cache', 'pip'), { recursive: true });
    const before = await snapshot(join(rig().home));
    const attack = [
      'echo planted > ~/.npm/_cacache/planted; echo "npm home=$?"',
      'echo planted > ~/.cache/pip/planted; echo "pip home=$?"',
      'mkdir -p "$npm_config_cache/_npx/planted" && echo planted > "$npm_config_cache/_npx/planted/index.js"; echo "fence cache=$?"',
      'echo "npm cache is $npm_config_cache"',
    ].join('\n');
    script(rig(), [block('shell', attack), 'Done.']);
    const run = await fenceIn(rig(), ['-n', 'plant']);
    expect(run.exitCode).toBe(0);
    const result = toolResults(rig())[0]?.content ?? '';
    expect(result).toContain('npm home=1');
    expect(result).toContain('pip home=1');
    expect(result).toContain('fence cache=0');
    expect(result).toContain(`npm cache is ${join(cacheFolder(rig()), 'npm')}`);
    expect(readFileSync(join(cacheFolder(rig()), 'npm', '_npx', 'planted', 'index.js'), 'utf8')).toBe('planted\n');
    // Nothing of the person's home changed but fence's own cache folder.
    const after = Object.fromEntries(Object.entries(await snapshot(rig().home)).filter(([path]) => !path.startsWith('.cache/fence')));
    expect(after).toEqual(Object.fromEntries(Object.entries(before).filter(([path]) => !path.startsWith('.cache/fence'))));
    // The host's npm, run by the person afterwards, still uses ~/.npm.
    const hostCache = execFileSync('npm', ['config', 'get', 'cache'], { cwd: rig().workspace, env: { PATH: process.env.PATH ?? '', HOME: rig().home }, encoding: 'utf8' }).trim();
    expect(hostCache).toBe(persons);
  });

  it("a session of another workspace does not see what one workspace's session left in its cache", { timeout: 180_000 }, async () => {
    script(rig(), [block('shell', 'mkdir -p "$npm_config_cache/_npx/planted" && echo planted > "$npm_config_cache/_npx/planted/index.js"; echo "planted=$?"'), 'Done.']);
    expect((await fenceIn(rig(), ['-n', 'plant'])).exitCode).toBe(0);
    expect(toolResults(rig())[0]?.content).toContain('planted=0');

    const other = join(rig().root, 'other-project');
    execFileSync('git', ['init', '-q', other]);
    const first = sessions(rig());
    script(rig(), [block('shell', 'echo "npm cache is $npm_config_cache"; ls "$npm_config_cache/_npx" 2>&1; echo listed'), 'Done.']);
    const second = await fenceIn(rig(), ['-n', '-w', other, 'look']);
    expect(second.exitCode).toBe(0);
    const seen = newSessionResults(rig(), first)[0] ?? '';
    expect(seen).toContain(`npm cache is ${join(cacheFolder(rig(), other), 'npm')}`);
    expect(seen).not.toContain('planted');
  });

  it('refuses a cache folder that is a link (planted where the cache home was writable), and says so', { timeout: 180_000 }, async () => {
    const folder = cacheFolder(rig());
    mkdirSync(join(folder, '..'), { recursive: true });
    symlinkSync(rig().outside, folder);
    script(rig(), [block('shell', 'echo "cache=[$npm_config_cache]"; echo planted > ' + join(folder, 'planted') + '; echo "write=$?"'), 'Done.']);
    const run = await fenceIn(rig(), ['-n', 'plant']);
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toContain('package managers keep their own caches in this session');
    const result = toolResults(rig())[0]?.content ?? '';
    expect(result).toContain('cache=[]');
    expect(result).toContain('write=1');
    expect(existsSync(join(rig().outside, 'planted'))).toBe(false);
  });
});
