import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_PLACEHOLDERS_NOTE } from '../../src/agent/system-prompt';
import { block, bubblewrapMissing, fenceIn, script, sessionLog, toolResults, useSandboxRig } from '../support/sandbox-rig';

const rig = useSandboxRig();

/** The text of each tool result of the run, in order. */
function results(): string[] {
  return toolResults(rig()).map((message) => message.content);
}

describe.skipIf(bubblewrapMissing)('the empty folders the sandbox holds protected paths with', () => {
  it('are left out of what the file tools show, and the system prompt says what they are', { timeout: 150_000 }, async () => {
    const r = rig();
    writeFileSync(join(r.workspace, 'README.md'), '# A project\nTODO: write it\n');
    script(r, [
      // The shell sees them: they are there while the session runs.
      block('shell', 'ls -a -1'),
      block('shell', 'mkdir made-by-me'),
      block('read', '.'),
      block('read', 'fence.toml'),
      block('glob', 'fence.toml'),
      block('grep .fence', 'TODO'),
      block('grep', 'TODO'),
      // A misspelt name is not answered with a placeholder's.
      block('read', 'fence.tom'),
      'Done.',
    ]);
    const run = await fenceIn(r, ['-n', 'look around']);
    expect(run.exitCode).toBe(0);
    const [ls, , listing, readToml, globToml, grepFence, grepAll, misspelt] = results();
    expect(ls).toMatch(/^fence\.toml$/m);
    expect(ls).toMatch(/^\.fence$/m);
    // read lists what is the workspace's, an empty folder the model made among it, and no placeholder.
    expect(listing).toContain('README.md');
    expect(listing).toContain('made-by-me/');
    expect(listing).toContain('.git/');
    expect(listing).not.toContain('fence.toml');
    expect(listing).not.toContain('.fence');
    expect(readToml).toBe('fence.toml does not exist');
    expect(globToml).toBe('no files match fence.toml');
    expect(grepFence).toBe('.fence does not exist');
    expect(grepAll).toContain('README.md:2: TODO: write it');
    expect(misspelt).toBe('fence.tom does not exist');
    expect(sessionLog(r)[0]?.content).toContain(SANDBOX_PLACEHOLDERS_NOTE);
  });

  it('are not made over what exists: a real fence.toml and .fence are shown and read as they are', { timeout: 150_000 }, async () => {
    const r = rig();
    writeFileSync(join(r.workspace, 'fence.toml'), '# settings\n');
    mkdirSync(join(r.workspace, '.fence'));
    script(r, [block('read', '.'), block('read', 'fence.toml'), block('read', '.fence'), 'Done.']);
    const run = await fenceIn(r, ['-n', 'look around']);
    expect(run.exitCode).toBe(0);
    const [listing, readToml, readFence] = results();
    expect(listing).toContain('fence.toml');
    expect(listing).toContain('.fence/');
    expect(readToml).toBe('# settings\n');
    expect(readFence).toBe('.fence/ is an empty folder');
  });
});
