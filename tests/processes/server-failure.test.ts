import { describe, expect, it } from 'vitest';
import { failureHint, stderrTail } from '../../src/processes/server-failure';

const inside = { command: 'npx', args: ['-y', 'pkg'], inside: true, fromProject: false };

describe('stderrTail', () => {
  it('keeps the last five non-empty lines, without escape sequences', () => {
    const stderr = ['one', 'two', '', 'three', 'four \u001b[31mred\u001b[0m', 'five', 'six', '   ', ''].join('\n');
    expect(stderrTail(stderr)).toBe('two\nthree\nfour red\nfive\nsix');
    expect(stderrTail('\n\n')).toBe('');
  });

  it('leads with the line that states the error when a stack trace came after it', () => {
    const node = [
      'node:internal/modules/cjs/loader:1210',
      '  throw err;',
      '  ^',
      '',
      "Error: Cannot find module '/srv/mcp/server.mjs'",
      '    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)',
      '    at Module._load (node:internal/modules/cjs/loader:1038:27)',
      '    at node:internal/main/run_main_module:28:49 {',
      "  code: 'MODULE_NOT_FOUND',",
      '  requireStack: []',
      '}',
      '',
      'Node.js v20.20.2',
    ].join('\n');
    expect(stderrTail(node)).toBe("Error: Cannot find module '/srv/mcp/server.mjs'\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\nNode.js v20.20.2");
    const npx = ['npm error code E404', 'npm error 404 Not Found - GET https://registry.npmjs.org/nope', ...Array.from({ length: 6 }, (_, n) => `npm notice line ${n}`)].join('\n');
    expect(stderrTail(npx)).toBe('npm error 404 Not Found - GET https://registry.npmjs.org/nope\n…\nnpm notice line 3\nnpm notice line 4\nnpm notice line 5');
    const python = ['Traceback (most recent call last):', '  File "/srv/s.py", line 1, in <module>', '    import mcp', "ModuleNotFoundError: No module named 'mcp'"].join('\n');
    expect(stderrTail(python)).toBe("Traceback (most recent call last):\n    import mcp\nModuleNotFoundError: No module named 'mcp'");
  });
});

describe('failureHint', () => {
  it('names a program that was not found, on either side', () => {
    expect(failureHint('bwrap: execvp npx: No such file or directory', inside)).toBe('npx was not found: install it, or give its full path as command.');
    expect(failureHint('spawn fence-x ENOENT', { ...inside, command: 'fence-x', inside: false })).toContain('fence-x was not found');
    expect(failureHint('sh: 1: uvx: not found', { ...inside, command: 'uvx' })).toContain('uvx was not found');
  });

  it('says inside the sandbox there is no network, a private /tmp and read-only caches, and how to move the server', () => {
    expect(failureHint('npm error code EAI_AGAIN', inside)).toBe(
      'Inside the sandbox it has no network (a package runner such as npx fetches the package each start). To run it outside, remove sandbox = true from its entry, and keep what it runs out of the folders the sandbox can write.',
    );
    expect(failureHint("Error: Cannot find module '/tmp/x/server.js'\ncode: 'MODULE_NOT_FOUND'", { command: 'node', args: ['/tmp/x/server.js'], inside: true, fromProject: true })).toBe(
      "It names a path under /tmp, and the sandbox has a /tmp of its own where that path does not exist. A project's server always runs in the sandbox; to run it outside, copy its entry into your own config.toml.",
    );
    expect(failureHint("npm error code EROFS\nnpm error syscall mkdir", inside)).toContain('caches are read-only');
  });

  it('gives no hint outside the sandbox but for a missing program, nor for a cause it does not know', () => {
    expect(failureHint('npm error code EAI_AGAIN', { ...inside, inside: false })).toBeUndefined();
    expect(failureHint('panic: ledger corrupted', inside)).toBeUndefined();
  });
});
