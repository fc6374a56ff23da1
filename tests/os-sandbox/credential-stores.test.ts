import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREDENTIAL_STORES, credentialStorePaths } from '../../src/os-sandbox/credential-stores';
import { DENIED_IN_HOME } from '../../src/os-sandbox/policy';

describe('the credential stores', () => {
  it('are what the sandbox denies in the home folder: relative paths, each once', () => {
    expect(DENIED_IN_HOME).toEqual(CREDENTIAL_STORES.map((store) => store.path));
    expect(new Set(DENIED_IN_HOME).size).toBe(DENIED_IN_HOME.length);
    for (const path of DENIED_IN_HOME) expect(path, path).toMatch(/^[^/~][^~]*[^/]$/);
    for (const path of DENIED_IN_HOME) expect(path.split('/'), path).not.toContain('..');
  });

  it('leave the settings toolchains need readable', () => {
    for (const path of ['.gitconfig', '.config/git/config', '.cargo/config.toml', '.cargo', '.npm', '.cache', '.config', '.local/share', '.rustup', 'go']) {
      expect(DENIED_IN_HOME, path).not.toContain(path);
    }
  });

  it('are each named in docs/sandbox.md', () => {
    const docs = readFileSync(join(import.meta.dirname, '../../docs/sandbox.md'), 'utf8');
    for (const { path } of CREDENTIAL_STORES) expect(docs, path).toContain(`\`~/${path}\``);
  });

  it('are denied where XDG variables move them too, and only once where they do not', () => {
    const moved = credentialStorePaths('/h', { XDG_CONFIG_HOME: '/cfg', XDG_DATA_HOME: '/data', XDG_CACHE_HOME: 'relative/cache' });
    expect(moved).toEqual(expect.arrayContaining(['/h/.config/gh', '/cfg/gh', '/h/.local/share/keyrings', '/data/keyrings', '/h/.cache/huggingface/token', '/h/.ssh']));
    expect(moved).not.toContain('relative/cache/huggingface/token');
    expect(moved.filter((path) => path.startsWith('/cfg/'))).toHaveLength(CREDENTIAL_STORES.filter((store) => store.path.startsWith('.config/')).length);
    expect(credentialStorePaths('/h', { XDG_CONFIG_HOME: '/h/.config' })).toEqual(CREDENTIAL_STORES.map((store) => `/h/${store.path}`));
  });
});
