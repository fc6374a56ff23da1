import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { block, bubblewrapMissing, script, toolResults, useSandboxRig } from '../support/sandbox-rig';
import { KEYS, startTerminalSession } from '../support/terminal-session';

/**
 * Ctrl-C on a running Python cell in the chat, through the built CLI in a real terminal: the
 * cell ends with KeyboardInterrupt and the next cell still has the variables set before, in
 * each sandbox mode and with it off.
 */

const rig = useSandboxRig();

const modes = [
  { mode: 'workspace-write', skip: bubblewrapMissing },
  { mode: 'read-only', skip: bubblewrapMissing },
  { mode: 'off', skip: false },
];

/**
 * The cell's marker file, once it wrote it in its /tmp: the host's with the sandbox off, the
 * session's own folder (`<host tmp>/fence-sandbox-*\/tmp`) in one. The chat shows a cell's
 * output only at its end, so the file is how the test knows the cell runs.
 */
function markerWritten(name: string): string | undefined {
  const sandboxes = readdirSync('/tmp').filter((entry) => entry.startsWith('fence-sandbox-'));
  return [`/tmp/${name}`, ...sandboxes.map((entry) => `/tmp/${entry}/tmp/${name}`)].find((path) => existsSync(path));
}

async function untilMarker(name: string): Promise<string> {
  for (;;) {
    const found = markerWritten(name);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const { mode, skip } of modes) {
  describe.skipIf(skip)(`Ctrl-C on a Python cell in the chat, sandbox ${mode}`, () => {
    it('interrupts the cell and keeps the kernel with its variables', async () => {
      const marker = `fence-cell-running-${randomBytes(6).toString('hex')}`;
      script(rig(), [
        block('python', 'kept = 41'),
        'Set.',
        block('python', `open("/tmp/${marker}", "w").close()\nimport time\nfor _ in range(3000):\n    time.sleep(0.01)`),
        block('python', 'print("kept is", kept + 1)'),
        'Still there.',
      ]);
      const chat = startTerminalSession({ args: ['-m', 'local/test', '-y', '--sandbox', mode], cwd: rig().workspace, env: rig().env });
      let found: string | undefined;
      try {
        await chat.waitFor('tools run without asking (-y)', 30_000);
        chat.type(`set it${KEYS.enter}`);
        await chat.waitFor('Set.', 30_000);
        chat.type(`sleep a while${KEYS.enter}`);
        found = await untilMarker(marker);
        chat.type(KEYS.ctrlC);
        await chat.waitFor('■ interrupted', 30_000);
        chat.type(`go on${KEYS.enter}`);
        await chat.waitFor('Still there.', 30_000);
        chat.type(`/exit${KEYS.enter}`);
        expect(await chat.exited).toBe(0);
      } finally {
        chat.kill();
        if (found) rmSync(found, { force: true });
      }
      const [, interrupted, next] = toolResults(rig()).map((message) => String(message.content));
      expect(interrupted).toContain('KeyboardInterrupt');
      expect(interrupted).not.toContain('started again');
      expect(next).toContain('kept is 42');
      expect(next).not.toContain('NameError');
    }, 120_000);
  });
}
