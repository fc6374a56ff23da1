import { describe, expect, it } from 'vitest';
import { bubblewrapMissing, useSandboxRig } from '../support/sandbox-rig';
import { startTerminalSession } from '../support/terminal-session';

const rig = useSandboxRig();

/**
 * `fence sandbox check` run from a terminal: its probes start inside the sandbox as command
 * tools and servers do, and find neither the terminal nor a way to type into one.
 */
describe.skipIf(bubblewrapMissing)('fence sandbox check, in a terminal', () => {
  it('reports that the terminal cannot be opened nor typed into from inside', async () => {
    const session = startTerminalSession({ args: ['sandbox', 'check'], cwd: rig().workspace, env: rig().env });
    const exitCode = await session.exited;
    const lines = session.lines();
    expect(exitCode, lines.join('\n')).toBe(0);
    expect(lines).toContain('ok   your terminal cannot be opened (/dev/tty)');
    expect(lines).toContain('ok   typing into a terminal is refused (ioctl TIOCSTI)');
    expect(lines.filter((line) => line.startsWith('FAIL'))).toEqual([]);
  }, 60_000);
});
