import { describe, expect, it } from 'vitest';
import { offPolicy } from '../../src/os-sandbox/os-sandbox';
import { packageManagerNote } from '../../src/tools/package-manager-notes';
import { sandboxNotes } from '../../src/tools/sandbox-notes';

const offline = { ...offPolicy('/w'), mode: 'workspace-write' as const, network: false as const };

/** Each tool's own words when it could not fetch offline (from the tools, or their sources), and what the note must name. */
const FAILURES: { tool: string; output: string; setting: string; hosts: string }[] = [
  {
    tool: 'npm',
    output: "npm error code ENOTCACHED\nnpm error request to https://registry.npmjs.org/left-pad failed: cache mode is 'only-if-cached' but no cached response is available.",
    setting: 'npm_config_offline=true',
    hosts: '["registry.npmjs.org"]',
  },
  {
    tool: 'npm',
    output: 'npm error code EAI_AGAIN\nnpm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org',
    setting: 'npm_config_offline=true',
    hosts: '["registry.npmjs.org"]',
  },
  {
    tool: 'pnpm',
    output: ' ERR_PNPM_NO_OFFLINE_META  Failed to resolve left-pad@^1.3.0 in package mirror /c/pnpm/cache/metadata/registry.npmjs.org/left-pad.json',
    setting: 'pnpm_config_offline=true',
    hosts: '["registry.npmjs.org"]',
  },
  {
    tool: 'yarn',
    output: "➤ YN0001: │ Error: Request to 'https://registry.yarnpkg.com/left-pad' has been blocked because of your configuration settings",
    setting: 'YARN_ENABLE_NETWORK=0',
    hosts: '["registry.yarnpkg.com"]',
  },
  {
    tool: 'pip',
    output: 'ERROR: Could not find a version that satisfies the requirement requests (from versions: none)\nERROR: No matching distribution found for requests',
    setting: 'PIP_NO_INDEX=1',
    hosts: '["pypi.org", "files.pythonhosted.org"]',
  },
  {
    tool: 'uv',
    output: '  × No solution found when resolving dependencies:\n  ╰─▶ Because requests was not found in the cache and you require requests, we can conclude that your requirements are unsatisfiable.\n\n      hint: Packages were unavailable because the network was disabled. When the network is disabled, registry packages may only be read from the cache.',
    setting: 'UV_OFFLINE=1',
    hosts: '["pypi.org", "files.pythonhosted.org"]',
  },
  {
    tool: 'cargo',
    output:
      "error: no matching package named `serde` found\nlocation searched: crates.io index\nrequired by package `cr v0.1.0 (/w)`\nAs a reminder, you're using offline mode (--offline) which can sometimes cause surprising resolution failures, if this error is too confusing you may wish to retry without `--offline`.",
    setting: 'CARGO_NET_OFFLINE=true',
    hosts: '["index.crates.io", "static.crates.io"]',
  },
  {
    tool: 'go',
    output: 'go: github.com/pkg/errors@v0.9.1: module lookup disabled by GOPROXY=off',
    setting: 'GOPROXY=off',
    hosts: '["proxy.golang.org", "sum.golang.org"]',
  },
  {
    tool: 'maven',
    output:
      '[ERROR] Plugin org.apache.maven.plugins:maven-resources-plugin:2.6 or one of its dependencies could not be resolved: Cannot access central (https://repo.maven.apache.org/maven2) in offline mode and the artifact org.apache.maven.plugins:maven-resources-plugin:jar:2.6 has not been downloaded from it before. -> [Help 1]',
    setting: 'MAVEN_ARGS=--offline',
    hosts: '["repo.maven.apache.org"]',
  },
];

describe('packageManagerNote', () => {
  it.each(FAILURES)("names the setting fence gave $tool and the hosts to allow, from the tool's own words", ({ tool, output, setting, hosts }) => {
    const note = packageManagerNote(output, offline);
    expect(note).toContain(`fence runs ${tool} offline (${setting})`);
    expect(note).toContain(`[sandbox] network = [${hosts.slice(1, -1)}] in their config.toml`);
  });

  it('says nothing where the sandbox has a network, is off, or the output is another failure', () => {
    const npm = FAILURES[0]?.output ?? '';
    expect(packageManagerNote(npm, { ...offline, network: true })).toBeUndefined();
    expect(packageManagerNote(npm, { ...offline, network: ['registry.npmjs.org'] })).toBeUndefined();
    expect(packageManagerNote(npm, { ...offline, mode: 'off' })).toBeUndefined();
    expect(packageManagerNote(npm, undefined)).toBeUndefined();
    expect(packageManagerNote('npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nope', offline)).toBeUndefined();
  });

  it("gives the sandbox's note to a write refused as each package manager words it", () => {
    const refusals = [
      "npm error code EROFS\nnpm error rofs EROFS: read-only file system, mkdir '/home/me/.npm/_cacache'",
      " ERR_PNPM_EROFS  EROFS: read-only file system, mkdir '/home/me/.local/share/pnpm/store'",
      "error An unexpected error occurred: \"EROFS: read-only file system, mkdir '/home/me/.cache/yarn'\".",
      "OSError: [Errno 30] Read-only file system: '/home/me/.cache/pip/http'",
      'error: failed to create directory `/home/me/.cache/uv`\n  Caused by: Read-only file system (os error 30)',
      'error: failed to create directory `/home/me/.cargo/registry/cache/index.crates.io-6f17d22bba15001f`\n\nCaused by:\n  Read-only file system (os error 30)',
      'go: could not create module cache: mkdir /home/me/go/pkg/mod: read-only file system',
      'failed to initialize build cache at /home/me/.cache/go-build: mkdir /home/me/.cache/go-build: read-only file system',
      'java.io.FileNotFoundException: /home/me/.gradle/wrapper/dists/gradle-8.5-bin.zip.lck (Read-only file system)',
      '[ERROR] Could not create local repository at /home/me/.m2/repository -> [Help 1]',
      'error: ReadOnlyFileSystem installing zod',
    ];
    for (const output of refusals) expect(sandboxNotes(output, { ...offline, mode: 'read-only' }), output).toEqual([expect.stringContaining('read-only sandbox')]);
  });

  it("takes the place of the general no-network note, so the model reads one note", () => {
    const npm = FAILURES[1]?.output ?? '';
    expect(sandboxNotes(npm, offline)).toEqual([expect.stringContaining('fence runs npm offline')]);
    expect(sandboxNotes('curl: (6) Could not resolve host: example.com', offline)).toEqual([expect.stringContaining('no network')]);
  });
});
