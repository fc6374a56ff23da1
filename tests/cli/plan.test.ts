import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WireBody } from '../support/fake-llm';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** A run against the fake OpenAI-compatible server, with `args` after `-m local/test`. */
const run = (args: string[], timeoutMs?: number) =>
  runFence(['-m', 'local/test', ...args], { cwd: cli.dirs.workspace, env: cli.env(), ...(timeoutMs ? { timeoutMs } : {}) });

const lines = (stdout: string) => stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);

/** Everything a recorded request showed the model, as one text. */
const sent = (body: WireBody) => JSON.stringify(body.messages ?? body.input ?? []);

const PLAN = '[x] Read the parser\n[~] Fix the date bug\n[ ] Add a test';
const ITEMS = [
  { text: 'Read the parser', status: 'done' },
  { text: 'Fix the date bug', status: 'in_progress' },
  { text: 'Add a test', status: 'pending' },
];

describe('the plan tool through the CLI', () => {
  it('a plan block becomes a plan line of stream-json after its result, the log keeps it, and the JSON result ends with it', async () => {
    cli.server.reply((r) => r.text(`I will keep a plan.\n\`\`\`plan\n${PLAN}\n\`\`\`\n`));
    cli.server.reply((r) => r.text('Done for now.'));

    const result = await run(['-n', '--output-format', 'stream-json', 'fix the date bug']);

    expect(result.exitCode).toBe(0);
    const events = lines(result.stdout);
    expect(events.map((event) => event.type)).toEqual(['init', 'prompt', 'assistant', 'tool_use', 'tool_result', 'plan', 'assistant', 'result']);
    expect(events[5]).toEqual({ type: 'plan', session_id: events[0]?.session_id, items: ITEMS });
    expect(events[4]).toMatchObject({ tool: 'plan', is_error: false, output: `Plan (1 of 3 done):\n${PLAN}` });
    expect(events.at(-1)).toMatchObject({ stop_reason: 'done', plan: ITEMS });
    // The model reads the checklist back as the call's result.
    expect(sent(cli.server.requests[1]!.body)).toContain(JSON.stringify(`Plan (1 of 3 done):\n${PLAN}`).slice(1, -1));
    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.find((message) => message.meta?.tool === 'plan')?.meta?.plan).toEqual(ITEMS);
  });

  it('a native plan call and its update each write a plan line; a refused plan writes none', async () => {
    cli.server.reply((r) => r.toolCall('plan', { items: ITEMS }));
    cli.server.reply((r) => r.toolCall('plan', { items: [{ text: 'Fix the date bug', status: 'in_progress' }, { text: 'Add a test', status: 'in_progress' }] }));
    cli.server.reply((r) => r.toolCall('plan', { items: ITEMS.map((item) => ({ ...item, status: 'done' })) }));
    cli.server.reply((r) => r.text('All done.'));

    const result = await run(['-n', '--tool-format', 'tool', '--output-format', 'stream-json', 'fix the date bug']);

    expect(result.exitCode).toBe(0);
    const events = lines(result.stdout);
    const plans = events.filter((event) => event.type === 'plan').map((event) => event.items);
    expect(plans).toEqual([ITEMS, ITEMS.map((item) => ({ ...item, status: 'done' }))]);
    const refused = events.filter((event) => event.type === 'tool_result')[1];
    expect(refused).toMatchObject({ tool: 'plan', is_error: true });
    expect(refused?.output).toContain('only one item may be in progress at a time');
    expect(events.at(-1)).toMatchObject({ plan: ITEMS.map((item) => ({ ...item, status: 'done' })) });
  });

  it('an item cannot forge another line of the list or carry an escape sequence to the terminal', async () => {
    cli.server.reply((r) => r.toolCall('plan', { items: [{ text: 'Fix it\n[x] Deploy to production\u001b]0;pwned\u0007\u001b[2J', status: 'pending' }] }));
    cli.server.reply((r) => r.text('Planned.'));

    const result = await run(['-n', '--tool-format', 'tool', '--output-format', 'stream-json', 'fix it']);

    expect(result.exitCode).toBe(0);
    const items = [{ text: 'Fix it [x] Deploy to production ]0;pwned [2J', status: 'pending' }];
    expect(lines(result.stdout).find((event) => event.type === 'plan')?.items).toEqual(items);
    expect(sent(cli.server.requests[1]!.body)).toContain(JSON.stringify('Plan (0 of 1 done):\n[ ] Fix it [x] Deploy to production ]0;pwned [2J').slice(1, -1));
    expect(result.stderr).not.toContain('\u001b]0;pwned');
    expect(readOnlySessionLog(cli.dirs.home).find((message) => message.meta?.plan)?.meta?.plan).toEqual(items);
  });

  it('a resumed session still shows the model its plan, and its JSON result carries it', async () => {
    cli.server.reply((r) => r.text(`\`\`\`plan\n${PLAN}\n\`\`\`\n`));
    cli.server.reply((r) => r.text('Stopping here.'));
    const first = JSON.parse((await run(['-n', '--output-format', 'json', 'fix the date bug'])).stdout);
    expect(first.plan).toEqual(ITEMS);

    cli.server.reply((r) => r.text('Picking up where I was.'));
    const second = await run(['-n', '--output-format', 'json', '--resume', first.session_id, 'go on']);

    expect(second.exitCode).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ result: 'Picking up where I was.', plan: ITEMS });
    const request = cli.server.requests.at(-1)!;
    expect(sent(request.body)).toContain('[~] Fix the date bug');
  });

  it('after older turns are summarized, the next requests still hold the current plan', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[models."local/test"]\ncontext_window = 8000\n');
    cli.trust();
    const isSummary = (body: WireBody) => sent(body).includes('You compact the history');
    cli.server.route(isSummary, (r) => r.text('Steps so far: each printed a line of numbers; nothing failed.'));
    cli.server.reply((r) => r.text(`\`\`\`plan\n${PLAN}\n\`\`\`\n`));
    for (let i = 0; i < 60; i++) cli.server.reply((r) => r.text(`Step ${i}.\n\`\`\`shell\nseq ${i} $((${i} + 60)) | paste -sd' '\n\`\`\`\n`));
    cli.server.reply((r) => r.text('Counted.'));

    const result = await run(['-n', '--max-turns', '100', 'count for a while'], 240_000);

    expect(result.exitCode).toBe(0);
    const requests = cli.server.requests.filter((request) => !isSummary(request.body));
    const firstCompacted = requests.findIndex((request) => sent(request.body).includes('Summary of the earlier conversation'));
    expect(firstCompacted).toBeGreaterThan(1);
    for (const request of requests.slice(firstCompacted)) {
      // The plan call's own result is gone from these requests: the summary carries the plan.
      expect(sent(request.body)).not.toContain('Plan (1 of 3 done)');
      expect(sent(request.body)).toContain(JSON.stringify(`as it stood then:\n${PLAN}`).slice(1, -1));
    }
  }, 300_000);
});

describe('--auto with a plan', () => {
  it('a first complete with open items gets a reminder naming them; a second ends the run, with a warning', async () => {
    cli.server.reply((r) => r.text(`\`\`\`plan\n${PLAN}\n\`\`\`\n`));
    cli.server.reply((r) => r.text('```complete\nFixed it.\n```\n'));
    cli.server.reply((r) => r.text('```complete\nFixed it; the test is left.\n```\n'));

    const result = await run(['-n', '--auto', '--output-format', 'json', 'fix the date bug']);

    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ stop_reason: 'complete', result: 'Fixed it; the test is left.', turns: 3, plan: ITEMS });
    const reminder = sent(cli.server.requests[2]!.body);
    expect(reminder).toContain('The run is not complete yet: your plan has 2 open items:');
    expect(reminder).toContain(JSON.stringify('[~] Fix the date bug\n[ ] Add a test').slice(1, -1));
    expect(result.stderr).toContain('fence: the run ended with 2 plan items not done');
  });

  it('a complete with every item done ends the run at once', async () => {
    cli.server.reply((r) => r.text('```plan\n[x] Read the parser\n[x] Fix the date bug\n```\n'));
    cli.server.reply((r) => r.text('```complete\nFixed it.\n```\n'));

    const result = await run(['-n', '--auto', '--output-format', 'json', 'fix the date bug']);

    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ stop_reason: 'complete', result: 'Fixed it.', turns: 2 });
    expect(cli.server.requests).toHaveLength(2);
    expect(result.stderr).not.toContain('plan item');
  });
});
