import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREDENTIAL_STORES } from '../../src/runtime/credential-stores';
import { DENIED_IN_HOME } from '../../src/runtime/sandbox-policy';

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
});
