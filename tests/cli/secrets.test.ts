import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

const shell = (code: string) => `\`\`\`shell\n${code}\n\`\`\`\n`;

describe('a model that runs env', () => {
  it('never gets the API key or a credential, in any request or in the session log; pass_env still passes one', async () => {
    const key = 'sk-test-do-not-leak-7f3a9c';
    const secret = 'my-secret-do-not-leak-41b2';
    const passed = 'ghp-passed-through-88d1';
    const xdg = join(cli.dirs.home, '..', 'xdg');
    mkdirSync(join(xdg, 'fence'), { recursive: true });
    writeFileSync(join(xdg, 'fence', 'config.toml'), '[sandbox]\npass_env = ["GITHUB_TOKEN"]\n');
    cli.server.reply((r) => r.text(shell('env; echo "key=$OPENAI_API_KEY"')));
    cli.server.reply((r) => r.text('Done.'));

    const result = await runFence(['-n', '-m', 'local/test', 'show me the environment'], {
      cwd: cli.dirs.workspace,
      env: { ...cli.env(), XDG_CONFIG_HOME: xdg, OPENAI_API_KEY: key, MY_SECRET: secret, DB_PASSWORD: secret, GITHUB_TOKEN: passed },
    });
    expect(result.exitCode).toBe(0);
    // The progress on stderr shows the first lines of the output only: what passed is checked in the request below.
    expect(result.stderr).toContain('[running shell]');
    expect(result.stderr).not.toContain(key);
    expect(result.stdout).toBe('Done.');

    // The key does reach the server, in the header fence authenticates with: that is its use.
    expect(cli.server.requests[0]?.headers.authorization).toBe(`Bearer ${key}`);
    const bodies = cli.server.requests.map((request) => JSON.stringify(request.body));
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toContain('PATH=');
    expect(bodies[1]).toContain(`GITHUB_TOKEN=${passed}`);
    for (const body of bodies) {
      expect(body).not.toContain(key);
      expect(body).not.toContain(secret);
    }

    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.some((m) => m.meta?.toolResult && m.content.includes('key=\n'))).toBe(true);
    const sessions = join(cli.dirs.home, 'sessions');
    for (const id of readdirSync(sessions)) {
      for (const file of readdirSync(join(sessions, id), { recursive: true, withFileTypes: true })) {
        if (!file.isFile()) continue;
        const text = readFileSync(join(file.parentPath, file.name), 'utf8');
        expect(text, file.name).not.toContain(key);
        expect(text, file.name).not.toContain(secret);
      }
    }
  });
});
