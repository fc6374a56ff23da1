import { describe, expect, it } from 'vitest';
import { runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

describe('what a one-shot run says of the provider', () => {
  it("passes the SDK's own warning on as one fence: line, once however many requests are made", async () => {
    cli.server.reply((r) => r.text('```shell\necho checked\n```')).reply((r) => r.text('All checked.'));
    // A model the Anthropic SDK (at the version fence pins) warns about as deprecated.
    const result = await runFence(['-n', '-m', 'anthropic/claude-sonnet-4-5', 'check'], {
      cwd: cli.dirs.workspace,
      env: { FENCE_HOME: cli.dirs.home, ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key' },
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('All checked.');
    expect(cli.server.requests).toHaveLength(2);
    const warnings = result.stderr.split('\n').filter((line) => /deprecat|migrate/i.test(line));
    expect(warnings).toEqual([expect.stringMatching(/^fence: Anthropic SDK: The model 'claude-sonnet-4-5' is deprecated and will reach end-of-life on .+$/)]);
  });

  it.each([
    { model: 'anthropic/claude-test', env: () => ({ ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'bad' }), variable: 'ANTHROPIC_API_KEY' },
    { model: 'openai/gpt-test', env: () => ({ OPENAI_BASE_URL: cli.server.openaiBaseURL, OPENAI_API_KEY: 'bad' }), variable: 'OPENAI_API_KEY' },
    { model: 'openrouter/x/y', env: () => ({ OPENROUTER_BASE_URL: cli.server.openaiBaseURL, OPENROUTER_API_KEY: 'bad' }), variable: 'OPENROUTER_API_KEY' },
  ])('names the variable to check when the server refuses the key of $model', async ({ model, env, variable }) => {
    cli.server.reply((r) => r.status(401, { message: 'invalid api key' }));
    const result = await runFence(['-n', '-m', model, 'hello'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home, ...env() } });
    expect(result.exitCode).toBe(9);
    expect(result.stderr).toMatch(new RegExp(`^fence: HTTP 401 from \\w+: invalid api key \\(check ${variable}\\)`, 'm'));
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
