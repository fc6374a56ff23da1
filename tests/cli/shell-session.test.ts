import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

const shell = (code: string, args = '') => `\`\`\`shell${args ? ` ${args}` : ''}\n${code}\n\`\`\`\n`;

describe('an unattended run through awkward shell commands', () => {
  it('answers each block within seconds, finishes, and the log tells the story', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    cli.server.reply((r) => r.text(shell('read -p "Name? " name; echo "hello $name"')));
    cli.server.reply((r) => r.text(shell('fence', 'input')));
    cli.server.reply((r) => r.text(shell('seq 1 200000')));
    cli.server.reply((r) => r.text(shell('exit 3')));
    cli.server.reply((r) => r.text(shell('echo still here')));
    cli.server.reply((r) => r.text(shell(`python3 -m http.server ${port} --bind 127.0.0.1 > cli.server.log 2>&1 &\necho started`)));
    cli.server.reply((r) =>
      r.text(shell(`for i in $(seq 50); do curl -s -o /dev/null -w "%{http_code}\\n" http://127.0.0.1:${port}/ && break; sleep 0.1; done`)),
    );
    cli.server.reply((r) => r.text('All done.'));

    const result = await runFence(['-n', '-m', 'local/test', 'go'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('All done.');

    const results = readOnlySessionLog(cli.dirs.home)
      .filter((m) => m.meta?.toolResult)
      .map((m) => m.content);
    expect(results).toHaveLength(7);
    const [asked, answered, flood, exited, after, started, fetched] = results;
    expect(asked).toContain('Name?');
    expect(asked).toMatch(/waiting for input/);
    expect(answered).toContain('hello fence');
    expect(flood).toMatch(/lines \(\d+ characters\) left out/);
    expect(flood).toContain('200000');
    expect(exited).toMatch(/bash exited \(code 3\) and was started again/);
    expect(after).toContain('still here');
    expect(started).toContain('started');
    expect(started).not.toMatch(/\[1\]/);
    expect(fetched).toContain('200');
  });
});
