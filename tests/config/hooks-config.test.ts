import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectCommandFiles } from '../../src/config/command-files';
import { mergeConfigFiles, parseConfigText } from '../../src/config/config';
import { unsandboxedCommands } from '../../src/session/unsandboxed-commands';

/** The error of a file holding `text`, or the hooks it gives. */
function parsed(text: string) {
  const result = parseConfigText(text, 'config.toml');
  return 'error' in result ? result.error : result.file.hooks;
}

describe('[[hooks]] in a configuration file', () => {
  it('reads each entry with its event, patterns, command, timeout and sandbox', () => {
    const text = [
      '[[hooks]]',
      'event = "pre_tool"',
      'tool = "shell"',
      'resource = "git push*"',
      'command = ["./scripts/no-push.sh", "--strict"]',
      'timeout = 5',
      '',
      '[[hooks]]',
      'event = "stop"',
      'command = ["npm", "test"]',
      'sandbox = false',
      '',
    ].join('\n');
    expect(parsed(text)).toEqual([
      { event: 'pre_tool', tool: 'shell', resource: 'git push*', command: ['./scripts/no-push.sh', '--strict'], timeout: 5 },
      { event: 'stop', command: ['npm', 'test'], sandbox: false },
    ]);
  });

  it('names the entry and the key of an unknown event, an empty command, a bad pattern or an unknown key', () => {
    expect(parsed('[[hooks]]\nevent = "before_tool"\ncommand = ["x"]\n')).toBe(
      'config.toml: hooks[0].event: expected "session_start", "prompt", "pre_tool", "post_tool" or "stop", got "before_tool"',
    );
    expect(parsed('[[hooks]]\nevent = "stop"\ncommand = ["a"]\n[[hooks]]\nevent = "stop"\ncommand = []\n')).toBe(
      'config.toml: hooks[1].command: must name the program to run, e.g. ["./scripts/check.sh"]',
    );
    expect(parsed('[[hooks]]\nevent = "stop"\n')).toBe('config.toml: hooks[0].command: missing (required)');
    expect(parsed('[[hooks]]\ncommand = ["x"]\n')).toBe('config.toml: hooks[0].event: missing (required: "session_start", "prompt", "pre_tool", "post_tool" or "stop")');
    const alternatives = `{${Array.from({ length: 300 }, (_, i) => `a${i}`).join(',')}}`;
    expect(parsed(`[[hooks]]\nevent = "pre_tool"\ntool = "${alternatives}"\ncommand = ["x"]\n`)).toMatch(/^config\.toml: hooks\[0\]\.tool: the pattern .* has more than \d+ alternatives$/);
    expect(parsed('[[hooks]]\nevent = "stop"\ntool = "shell"\ncommand = ["x"]\n')).toBe(
      'config.toml: hooks[0].tool: only pre_tool and post_tool hooks match a tool call; a stop hook runs at every stop',
    );
    expect(parsed('[[hooks]]\nevent = "stop"\ncommand = ["x"]\nmatcher = "Bash"\n')).toBe(
      'config.toml: hooks[0]: unknown key "matcher" (known keys: event, tool, resource, command, timeout, sandbox)',
    );
    expect(parsed('[[hooks]]\nevent = "stop"\ncommand = ["x"]\ntimeout = 0\n')).toBe('config.toml: hooks[0].timeout: expected a positive number, got 0');
  });

  it("keeps the user's hooks first, marks each with its file, and keeps a project's inside the sandbox", () => {
    const hook = (sandbox?: boolean) => ({ event: 'stop' as const, command: ['./check.sh'], ...(sandbox === undefined ? {} : { sandbox }) });
    const merged = mergeConfigFiles({ hooks: [hook(false)] }, { hooks: [hook(false), hook()] });
    expect(merged.hooks).toEqual([
      { ...hook(false), source: 'user' },
      { ...hook(), source: 'project' },
      { ...hook(), source: 'project' },
    ]);
    expect(merged.sandbox.ignored).toContain('fence.toml: hooks[0].sandbox = false ignored: it runs inside the sandbox (only your own config.toml can take a hook out)');
    expect(mergeConfigFiles({}, {}).hooks).toBeUndefined();
  });
});

describe('the files hooks run', () => {
  it("are covered by a project's trust: each workspace file a hook's command line names", () => {
    const workspace = realpathSync(mkdtempSync('/var/tmp/fence-hook-files-'));
    try {
      mkdirSync(join(workspace, 'scripts'));
      writeFileSync(join(workspace, 'scripts', 'check.sh'), '#!/bin/sh\n');
      writeFileSync(join(workspace, 'lint.py'), '');
      const text = '[[hooks]]\nevent = "stop"\ncommand = ["./scripts/check.sh"]\n\n[[hooks]]\nevent = "post_tool"\ncommand = ["python3", "lint.py", "--config=missing.toml"]\n';
      expect(projectCommandFiles(text, workspace)).toEqual(['lint.py', 'scripts/check.sh']);
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });

  it('are run outside the sandbox only for a hook that says sandbox = false', () => {
    const hooks = [
      { event: 'stop' as const, command: ['./inside.sh'] },
      { event: 'stop' as const, command: ['./outside.sh', 'arg'], sandbox: false },
    ];
    expect(unsandboxedCommands({ tools: {}, mcpServers: {}, hooks }, '/w')).toEqual([{ words: ['./outside.sh', 'arg'], cwd: '/w' }]);
  });
});
