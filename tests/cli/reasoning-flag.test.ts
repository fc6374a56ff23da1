import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** A one-shot run against the fake server, with `args` after `-n`. */
const run = (args: string[], extra: Record<string, string> = {}) => runFence(['-n', ...args], { cwd: cli.dirs.workspace, env: { ...cli.env(), ...extra } });

/** The first line of stderr: the session, model and reasoning level. */
const sessionLine = (stderr: string) => stderr.split('\n').find((line) => line.startsWith('session ')) ?? '';

describe('--reasoning', () => {
  it('refuses a level it does not know with one line and exit code 2', async () => {
    const result = await run(['-m', 'local/test', '--reasoning', 'extreme', 'hi']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain("argument 'extreme' is invalid");
    expect(result.stderr).toContain('off, low, medium, high');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(cli.server.requests).toHaveLength(0);

    const json = await run(['-m', 'local/test', '--output-format', 'json', '--reasoning', 'max', 'hi']);
    expect(JSON.parse(json.stdout)).toMatchObject({ stop_reason: 'usage', is_error: true });
  });

  it('sends the level given to any model, says so, and puts it in the init line', async () => {
    cli.server.reply((r) => r.text('Hello.'));
    const result = await run(['-m', 'local/test', '--reasoning', 'high', '--output-format', 'stream-json', 'hi']);
    expect(result.exitCode).toBe(0);
    expect(sessionLine(result.stderr)).toContain('· reasoning high');
    const init = JSON.parse(result.stdout.split('\n')[0] ?? '{}');
    expect(init).toMatchObject({ type: 'init', reasoning: 'high' });
  });

  it("uses the model's default without a flag, and nothing for a model that does not reason", async () => {
    cli.server.reply((r) => r.text('Hello.')).reply((r) => r.text('Hello again.')).reply((r) => r.text('Unknown.'));
    const reasoning = await run(['-m', 'openai/gpt-5', 'hi']);
    expect(reasoning.stdout).toBe('Hello.');
    expect(sessionLine(reasoning.stderr)).toContain('· reasoning medium');
    const plain = await run(['-m', 'openai/gpt-4.1', 'hi']);
    expect(plain.exitCode).toBe(0);
    expect(sessionLine(plain.stderr)).not.toContain('reasoning');
    const unknown = await run(['-m', 'local/test', 'hi']);
    expect(sessionLine(unknown.stderr)).not.toContain('reasoning');
  });

  it("takes the configuration's reasoning key under the flag, and refuses a bad one clearly", async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), 'reasoning = "low"\n');
    cli.trust();
    cli.server.reply((r) => r.text('One.')).reply((r) => r.text('Two.')).reply((r) => r.text('Three.'));
    const fromConfig = await run(['-m', 'openai/gpt-test', 'hi']);
    expect(sessionLine(fromConfig.stderr)).toContain('· reasoning low');
    const fromFlag = await run(['-m', 'openai/gpt-test', '--reasoning', 'off', 'hi']);
    expect(sessionLine(fromFlag.stderr)).toContain('· reasoning off');
    // Not to a model that does not reason: OpenAI would refuse every request that carried it.
    const notSent = await run(['-m', 'openai/gpt-4.1', 'hi']);
    expect(notSent.exitCode).toBe(0);
    expect(notSent.stderr).toContain('fence: openai/gpt-4.1 does not reason, so the reasoning level low is not sent');
    expect(sessionLine(notSent.stderr)).not.toContain('reasoning');
    expect(cli.server.requests.at(-1)?.body).not.toHaveProperty('reasoning');

    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), 'reasoning = "max"\n');
    cli.trust();
    const bad = await run(['-m', 'local/test', 'hi']);
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toContain('reasoning: expected "off", "low", "medium" or "high"');
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  });

  it('keeps stdout for the answer alone when the model thinks', async () => {
    cli.server.reply((r) => r.thinking('Secret musings about the greeting.').text('Hello.'));
    const env = { ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key' };
    const result = await run(['-m', 'anthropic/claude-sonnet-4-6', 'hi'], env);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Hello.');
    expect(sessionLine(result.stderr)).toContain('· reasoning medium');
  });
});

describe('a model past its retirement date', () => {
  it('is named as retired on stderr, and the run goes on', async () => {
    cli.server.reply((r) => r.text('Still here.'));
    const run = await runFence(['-n', '-m', 'anthropic/claude-3-7-sonnet', 'hello'], {
      cwd: cli.dirs.workspace,
      env: { FENCE_HOME: cli.dirs.home, ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key' },
    });
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('Still here.');
    expect(run.stderr).toContain('fence: anthropic/claude-3-7-sonnet was retired on 2026-02-19: its API may refuse it');
    expect(cli.server.requests[0]?.body).not.toHaveProperty('thinking');
  });
});
