import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

const anthropic = () => ({ FENCE_HOME: cli.dirs.home, ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key' });
const openai = () => ({ FENCE_HOME: cli.dirs.home, OPENAI_BASE_URL: cli.server.openaiBaseURL, OPENAI_API_KEY: 'test-key' });

/** The user's config.toml with `text`, in an XDG folder beside the workspace. */
function userConfig(text: string): Record<string, string> {
  const xdg = join(dirname(cli.dirs.workspace), 'xdg');
  mkdirSync(join(xdg, 'fence'), { recursive: true });
  writeFileSync(join(xdg, 'fence', 'config.toml'), text);
  return { XDG_CONFIG_HOME: xdg };
}

describe('hosted web search', () => {
  it('offers Anthropic its web_search server tool, shows the searches and counts them; the answer is the reply', async () => {
    cli.server.reply((r) => r.webSearch('python 3.13 release date').webSearch('python 3.13 changelog').text('Python 3.13 came out on 7 October 2024.'));
    const result = await runFence(['-n', '-m', 'anthropic/claude-test', '--web-search', '--output-format', 'json', 'when did python 3.13 come out?'], {
      cwd: cli.dirs.workspace,
      env: anthropic(),
    });
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.result).toBe('Python 3.13 came out on 7 October 2024.');
    expect(summary.usage.web_searches).toBe(2);
    // In markdown the request has no other tools: the server tool alone.
    expect(cli.server.requests).toHaveLength(1);
    expect(cli.server.requests[0]?.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);
    expect(result.stderr).toContain('[web search: python 3.13 release date]\n[web search: python 3.13 changelog]');
    expect(result.stderr).toMatch(/· web search\n/);
    const reply = readOnlySessionLog(cli.dirs.home).find((m) => m.role === 'assistant');
    expect(reply?.meta?.webSearches).toEqual(['python 3.13 release date', 'python 3.13 changelog']);
    expect(reply?.meta?.usage?.webSearches).toBe(2);
  });

  it('adds the server tool beside the native tools, and never runs a search as a tool call', async () => {
    cli.server.reply((r) => r.webSearch('vitest config').text('Use defineConfig.'));
    const result = await runFence(['-n', '-m', 'anthropic/claude-test', '--tool-format', 'tool', '--web-search', 'how do I configure vitest?'], {
      cwd: cli.dirs.workspace,
      env: anthropic(),
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Use defineConfig.');
    const tools = cli.server.requests[0]?.body.tools as { name: string; type?: string }[];
    expect(tools.at(-1)).toEqual({ type: 'web_search_20250305', name: 'web_search' });
    expect(tools.map((tool) => tool.name)).toContain('fetch');
    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.filter((m) => m.meta?.toolResult)).toEqual([]);
    expect(log.find((m) => m.role === 'assistant')?.meta?.toolCalls).toBeUndefined();
  });

  it("offers OpenAI's Responses API its web_search tool and counts the web_search_call items", async () => {
    cli.server.reply((r) => r.webSearch('node 24 release').text('Node 24 was released in May 2025.'));
    const result = await runFence(['-n', '-m', 'openai/gpt-test', '--web-search', '--output-format', 'json', 'when was node 24 released?'], {
      cwd: cli.dirs.workspace,
      env: openai(),
    });
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.result).toBe('Node 24 was released in May 2025.');
    expect(summary.usage.web_searches).toBe(1);
    expect(cli.server.requests[0]?.path).toMatch(/\/responses$/);
    expect(cli.server.requests[0]?.body.tools).toEqual([{ type: 'web_search' }]);
    expect(readOnlySessionLog(cli.dirs.home).find((m) => m.role === 'assistant')?.meta?.webSearches).toEqual(['node 24 release']);
  });

  it('writes a stream-json line for each search, before the reply that used it', async () => {
    cli.server.reply((r) => r.webSearch('zod 4 migration').text('Use z.object as before.'));
    const result = await runFence(['-n', '-m', 'anthropic/claude-test', '--web-search', '--output-format', 'stream-json', 'how do I move to zod 4?'], {
      cwd: cli.dirs.workspace,
      env: anthropic(),
    });
    const lines = result.stdout.split('\n').map((line) => JSON.parse(line) as { type: string; query?: string; usage?: { web_searches?: number } });
    const types = lines.map((line) => line.type);
    expect(types.indexOf('web_search')).toBeGreaterThan(-1);
    expect(types.indexOf('web_search')).toBeLessThan(types.indexOf('assistant'));
    expect(lines.find((line) => line.type === 'web_search')?.query).toBe('zod 4 migration');
    expect(lines.find((line) => line.type === 'assistant')?.usage?.web_searches).toBe(1);
    expect(lines.at(-1)?.usage?.web_searches).toBe(1);
  });

  it('refuses --web-search at the start, with one line, for a model without hosted search', async () => {
    const result = await runFence(['-n', '-m', 'local/test', '--web-search', 'search something'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toBe("fence: --web-search: local/test has no hosted web search (Anthropic models and OpenAI's Responses API have one)");
    expect(cli.server.requests).toEqual([]);
  });

  it('is off by default, on with [web] search = true, and left off with a note for a model without it', async () => {
    cli.server.reply((r) => r.text('plain'));
    await runFence(['-n', '-m', 'anthropic/claude-test', 'hello'], { cwd: cli.dirs.workspace, env: anthropic() });
    expect(cli.server.requests[0]?.body.tools).toBeUndefined();

    const config = userConfig('[web]\nsearch = true\n');
    cli.server.reply((r) => r.text('searched'));
    await runFence(['-n', '-m', 'anthropic/claude-test', 'hello'], { cwd: cli.dirs.workspace, env: { ...anthropic(), ...config } });
    expect(cli.server.requests[1]?.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);

    cli.server.reply((r) => r.text('local answer'));
    const local = await runFence(['-n', '-m', 'local/test', 'hello'], { cwd: cli.dirs.workspace, env: { ...cli.env(), ...config } });
    expect(local.exitCode).toBe(0);
    expect(local.stdout).toBe('local answer');
    expect(local.stderr).toContain("fence: [web] search left off: local/test has no hosted web search (Anthropic models and OpenAI's Responses API have one)\n");
    expect(JSON.stringify(cli.server.requests[2]?.body)).not.toContain('web_search');
  });
});
