import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm';
import { makeCliDirs, readOnlySessionLog, runFence, type CliDirs } from '../support/run-cli';

let server: FakeLlm;
let dirs: CliDirs;

beforeEach(async () => {
  server = await startFakeLlm();
  dirs = makeCliDirs();
});
afterEach(async () => {
  await server.close();
});

const shell = (code: string, args = '') => `\`\`\`shell${args ? ` ${args}` : ''}\n${code}\n\`\`\`\n`;

describe('an unattended run through awkward shell commands', () => {
  it('answers each block within seconds, finishes, and the log tells the story', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    server.reply((r) => r.text(shell('read -p "Name? " name; echo "hello $name"')));
    server.reply((r) => r.text(shell('fence', 'input')));
    server.reply((r) => r.text(shell('seq 1 200000')));
    server.reply((r) => r.text(shell('exit 3')));
    server.reply((r) => r.text(shell('echo still here')));
    server.reply((r) => r.text(shell(`python3 -m http.server ${port} --bind 127.0.0.1 > server.log 2>&1 &\necho started`)));
    server.reply((r) =>
      r.text(shell(`for i in $(seq 50); do curl -s -o /dev/null -w "%{http_code}\\n" http://127.0.0.1:${port}/ && break; sleep 0.1; done`)),
    );
    server.reply((r) => r.text('All done.'));

    const result = await runFence(['-n', '-m', 'local/test', 'go'], { cwd: dirs.workspace, env: { FENCE_HOME: dirs.home, OPENAI_BASE_URL: server.openaiBaseURL } });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('All done.');

    const results = readOnlySessionLog(dirs.home)
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
