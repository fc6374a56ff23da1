import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkToolCallPairing } from '../support/fake-llm';
import { inputItems } from '../support/fake-llm-wire';
import { runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

describe('an openai/ model over the Responses API', () => {
  it('runs a tool loop through /v1/responses to its answer, the answer alone on stdout', async () => {
    cli.server.reply((r) => r.text('Looking.').toolCall('shell', { command: 'echo from-the-shell' }, 'call_one'));
    cli.server.reply((r) => r.text('The shell said from-the-shell.'));

    const result = await runFence(['-n', '-m', 'openai/gpt-test', '--tool-format', 'tool', 'what does the shell say?'], {
      cwd: cli.dirs.workspace,
      env: cli.env(),
    });

    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('The shell said from-the-shell.');
    const requests = cli.server.requests;
    expect(requests.map((request) => request.path)).toEqual(['/v1/responses', '/v1/responses']);
    expect(requests[0]?.body).toMatchObject({ store: false, stream: true });
    // A model the table does not know gets no reasoning level, so no encrypted reasoning is asked for.
    expect(requests[0]?.body).not.toHaveProperty('include');
    expect(typeof requests[0]?.body.instructions).toBe('string');
    const second = requests[1]!;
    expect(checkToolCallPairing(second)).toEqual([]);
    const items = inputItems(second.body);
    expect(items.find((item) => item.type === 'function_call')).toMatchObject({ call_id: 'call_one', name: 'shell' });
    const output = items.find((item) => item.type === 'function_call_output');
    expect(output).toMatchObject({ call_id: 'call_one' });
    expect(String(output?.output)).toContain('from-the-shell');
  });

  it('asks gpt-5 for its encrypted reasoning and not gpt-4o, which would refuse the whole request', async () => {
    cli.server.reply((r) => r.text('From gpt-4o.'));
    const old = await runFence(['-n', '-m', 'openai/gpt-4o', 'hello'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(old.stderr).not.toContain('Encrypted content');
    expect(old.exitCode).toBe(0);
    expect(old.stdout).toBe('From gpt-4o.');
    cli.server.reply((r) => r.text('From gpt-5.'));
    const reasoning = await runFence(['-n', '-m', 'openai/gpt-5', 'hello'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(reasoning.exitCode).toBe(0);
    expect(cli.server.requests.at(-1)?.body).toMatchObject({ model: 'gpt-5', include: ['reasoning.encrypted_content'], reasoning: { effort: 'medium' } });
  });

  it('keeps Chat Completions when the configuration says api = "chat", and with --reasoning sends the effort', async () => {
    const xdg = join(dirname(cli.dirs.workspace), 'xdg');
    mkdirSync(join(xdg, 'fence'), { recursive: true });
    writeFileSync(join(xdg, 'fence', 'config.toml'), '[providers.openai]\napi = "chat"\n');
    cli.server.reply((r) => r.text('By chat.'));
    const chat = await runFence(['-n', '-m', 'openai/gpt-test', 'hello'], { cwd: cli.dirs.workspace, env: { ...cli.env(), XDG_CONFIG_HOME: xdg } });
    expect(chat.exitCode).toBe(0);
    expect(chat.stdout).toBe('By chat.');
    expect(cli.server.requests[0]?.path).toBe('/v1/chat/completions');

    cli.server.reply((r) => r.text('By responses.'));
    const responses = await runFence(['-n', '-m', 'openai/gpt-test', '--reasoning', 'high', 'hello'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(responses.exitCode).toBe(0);
    expect(cli.server.requests[1]?.path).toBe('/v1/responses');
    expect(cli.server.requests[1]?.body).toMatchObject({ reasoning: { effort: 'high', summary: 'auto' } });
  });
});
