/**
 * `npm run bench`: fence's speed and memory, as medians over repeated runs, printed as a
 * markdown table (copy it into docs/benchmarks.md with the date and machine). Real parts
 * only: the built CLI, a real pty bash, the fake model server over loopback HTTP.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { BashSession } from '../src/processes/bash-session';
import { startFakeLlm } from '../tests/support/fake-llm';
import { keystrokeToRequest, renderCostPerChunk } from './chat';
import { contextGrowth, mcpPromptSize, promptOverhead } from './formats';
import { longRunFigures } from './long-run';
import { edgeAims, edgeFigures } from './edges';
import { everydayFigures } from './everyday';
import { subagentFigures } from './subagents';
import { mcpStartFigures } from './mcp';
import { mcpServeFigures } from './mcp-serve';
import { scanNestedSave, scanOneMegabyte } from './parse';
import { offeredProgramsMs, programsTestWallTime, replayFigures } from './programs';
import { financeFigures, median, sandboxFigures } from './ptc';
import { osSandboxFigures } from './os-sandbox';
import { reasoningFigures } from './reasoning';
import { pythonFigures, shellLargeOutputFigures } from './runtimes';
import { visibleColouredOutput, visibleUnterminatedStrings } from './visible-text';

const BIN = resolve(import.meta.dirname, '../bin/fence.js');
const root = mkdtempSync(join(tmpdir(), 'fence-bench-'));

/** Node start-up options that would distort the figures (extra CA files add 40–70 ms a start). */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, LANG: 'C.UTF-8', FENCE_HOME: join(root, 'home'), ...extra };
}


async function shellRoundTrip(): Promise<number> {
  const bash = await BashSession.start({ cwd: root });
  try {
    for (let i = 0; i < 20; i++) await bash.run('true');
    const times: number[] = [];
    for (let i = 0; i < 300; i++) {
      const t0 = performance.now();
      await bash.run('true');
      times.push(performance.now() - t0);
    }
    return median(times);
  } finally {
    await bash.close();
  }
}

/** A one-shot run against the fake server; returns timings taken on the server's side. */
async function oneShot(script: (server: Awaited<ReturnType<typeof startFakeLlm>>) => void, requests: number) {
  const server = await startFakeLlm();
  const workspace = mkdtempSync(join(root, 'ws-'));
  try {
    script(server);
    const t0 = performance.now();
    const run = execa('/usr/bin/time', ['-f', '%M', process.execPath, BIN, '-n', '-m', 'local/bench', 'hello'], {
      cwd: workspace,
      env: cleanEnv({ OPENAI_BASE_URL: server.openaiBaseURL }),
      extendEnv: false,
      input: '',
    });
    await server.waitForRequests(requests);
    const result = await run;
    const rssKb = Number(result.stderr.trim().split('\n').at(-1));
    return { t0, requests: server.requests, rssMb: rssKb / 1024 };
  } finally {
    await server.close();
  }
}

/** Peak resident memory of a one-turn run, median of 5. */
async function oneTurnRss(): Promise<number> {
  const rss: number[] = [];
  for (let i = 0; i < 5; i++) rss.push((await oneShot((s) => s.reply((r) => r.text('Hello.')), 1)).rssMb);
  return median(rss);
}

async function toolCallOverhead(): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 10; i++) {
    const { requests } = await oneShot((s) => {
      // A real model takes a few hundred ms to write a block; the shell starts meanwhile.
      s.reply((r) => r.delay(300).text('```shell\necho hi\n```\n\n').hang());
      s.reply((r) => r.text('Done.'));
    }, 2);
    const blockSent = requests[0]!.lastFrameAt;
    if (blockSent === undefined) throw new Error('the fake server did not record when the block was sent');
    times.push(requests[1]!.receivedAt - blockSent);
  }
  return median(times);
}

const fmt = (n: number, unit: string) => `${n < 10 ? n.toFixed(2) : n.toFixed(0)} ${unit}`;

mkdirSync(join(root, 'home'), { recursive: true });
const edges = await edgeFigures(mkdtempSync(join(root, 'edges-')));
console.log(`| edges of a one-shot run (medians of ${edges.rounds} interleaved rounds; load ${edges.load[0].toFixed(2)} → ${edges.load[1].toFixed(2)}) | fence | aim | |\n|---|---|---|---|`);
for (const aim of edgeAims(edges)) console.log(`| ${aim.measure} | ${aim.value} | ${aim.aim} | ${aim.aim ? (aim.met ? 'met' : '**missed**') : ''} |`);

const rows: [string, string, string][] = [];
rows.push(['shell `true` round trip', fmt(await shellRoundTrip(), 'ms'), '≤ 2 ms']);
rows.push(['scan a 1 MB reply in 16-byte chunks', fmt(scanOneMegabyte(), 'ms'), '≤ 50 ms']);
rows.push(['scan a 100,000-line save with nested blocks in 64-byte chunks', fmt(scanNestedSave(100_000), 'ms'), '≤ 100 ms']);
rows.push(['make 10 MB of coloured tool output visible', fmt(visibleColouredOutput(), 'ms'), '≤ 200 ms']);
rows.push(['make 6 MB of unterminated escape strings visible', fmt(visibleUnterminatedStrings(), 'ms'), '≤ 2000 ms']);
rows.push(['tool-call overhead (`echo`, block complete → next request, model waits 300 ms)', fmt(await toolCallOverhead(), 'ms'), '≤ 15 ms']);
rows.push(['peak RSS of a one-turn run', fmt(await oneTurnRss(), 'MB'), '≤ 100 MB']);

console.log('\n| measure (median) | fence | aim |\n|---|---|---|');
for (const [name, value, aim] of rows) console.log(`| ${name} | ${value} | ${aim} |`);

const reasoning = await reasoningFigures(root);
console.log('\n| 50-step native tool loop, reasoning on | request at step 10 | step 25 | step 50 (≈ tokens) | harness per step |\n|---|---|---|---|---|');
for (const run of reasoning) {
  const [a, b, c] = run.chars.map((chars) => `${chars.toLocaleString('en')} chars`);
  console.log(`| ${run.api === 'responses' ? 'Responses API (reasoning items sent back)' : 'Chat Completions (reasoning dropped)'} | ${a} | ${b} | ${c} (${Math.round(run.chars[2] / 4).toLocaleString('en')}) | ${fmt(run.stepMs, 'ms')} |`);
}

const keystroke = await keystrokeToRequest();
const render = renderCostPerChunk();
console.log('\n| chat | fence | aim |\n|---|---|---|');
console.log(`| Enter → request leaves, first prompt of a session | ${fmt(keystroke.firstMs, 'ms')} | |`);
console.log(`| Enter → request leaves, later prompts | ${fmt(keystroke.medianMs, 'ms')} | ≤ 20 ms |`);
console.log(`| render one streamed chunk (12 characters, ${render.chunks} chunks of markdown) | ${render.perChunkUs.toFixed(1)} µs | ≤ 1 ms |`);

const python = await pythonFigures();
const large = await shellLargeOutputFigures();
console.log('\n| runtimes | fence | aim |\n|---|---|---|');
console.log(`| Python kernel start | ${fmt(python.startMs, 'ms')} | ≤ 300 ms |`);
console.log(`| Python cell round trip (\`1+1\`) | ${fmt(python.cellMs, 'ms')} | ≤ 2 ms |`);
console.log(`| shell command printing 5 MB | ${fmt(large.ms, 'ms')} | ≤ 1 s |`);
console.log(`| host RSS growth after five 5 MB commands | ${fmt(large.rssGrowthMb, 'MB')} | back to its level |`);

const os = await osSandboxFigures(mkdtempSync(join(root, 'os-sandbox-')));
if (os) {
  const ratio = (f: { sandboxed: number; off: number }) => `${fmt(f.sandboxed, 'ms')} / ${fmt(f.off, 'ms')}`;
  console.log('\n| OS sandbox: sandboxed / off (medians, interleaved) | fence | aim |\n|---|---|---|');
  console.log(`| shell \`true\` round trip | ${ratio(os.roundTrip)} (${(os.roundTrip.sandboxed / os.roundTrip.off).toFixed(2)}×) | ≤ 1.5× (+ a few ms) |`);
  console.log(`| spawn → first request, \`fence -n\` | ${ratio(os.firstRequest)} (+${fmt(os.firstRequest.sandboxed - os.firstRequest.off, 'ms')}) | ≤ +30 ms |`);
  console.log(`| spawn → first shell block's result sent, model answers at once | ${ratio(os.firstShellResult)} (+${fmt(os.firstShellResult.sandboxed - os.firstShellResult.off, 'ms')}) | ≤ +30 ms |`);
} else console.log('\n(no OS sandbox on this machine: its figures are left out)');

const sandbox = await sandboxFigures();
console.log('\n| program sandbox | fence | aim |\n|---|---|---|');
console.log(`| first sandbox of a process | ${fmt(sandbox.firstMs, 'ms')} | ≤ 150 ms |`);
console.log(`| each later sandbox | ${fmt(sandbox.laterMs, 'ms')} | ≤ 30 ms |`);
console.log(`| one tool call from a program (host round trip) | ${sandbox.perCallUs.toFixed(1)} µs | ≤ 200 µs |`);

console.log('\n| finance task | engineers | conventional: round trips | bytes sent | ~tokens | program: round trips | bytes sent | ~tokens |');
console.log('|---|---|---|---|---|---|---|---|');
for (const count of [10, 100, 1000]) {
  const f = await financeFigures(count);
  const c = f.conventional;
  const p = f.program;
  console.log(`| N = ${count} | ${f.engineers} | ${c.roundTrips} | ${c.bytesSent} | ${c.tokensSent} | ${p.roundTrips} | ${p.bytesSent} | ${p.tokensSent} |`);
}

console.log('\n| tool format | system prompt | tool definitions | tokens per request (o200k) | aim |\n|---|---|---|---|---|');
for (const f of promptOverhead()) console.log(`| ${f.format} | ${f.systemTokens} | ${f.toolTokens} | ${f.total} | ≤ 2,000 |`);

const mcp5 = mcpPromptSize(5);
const mcp50 = mcpPromptSize(50);
console.log('\n| MCP tools in the prompt | format | 5 tools: added / request | 50 tools: added / request | 50 ÷ 5 request | aim |\n|---|---|---|---|---|---|');
for (const [i, five] of mcp5.entries()) {
  const fifty = mcp50[i]!;
  console.log(`| one server | ${five.format} | ${five.added} / ${five.total} | ${fifty.added} / ${fifty.total} | ${(fifty.total / five.total).toFixed(2)}× | ≤ 2× |`);
}
console.log('\n| 300 MCP tools (counted, not listed) | format | added / request |\n|---|---|---|');
for (const many of mcpPromptSize(300)) console.log(`| one server | ${many.format} | ${many.added} / ${many.total} |`);

console.log('\n| saved programs | fence | aim |\n|---|---|---|');
for (const calls of [17, 200, 999]) {
  const replay = await replayFigures(calls);
  console.log(`| replay a recorded test of ${calls} calls (in-process) | ${fmt(replay.ms, 'ms')} | linear in calls |`);
}
console.log(`| \`fence programs test over_limit\` (17 recorded calls), wall | ${fmt(await programsTestWallTime(), 'ms')} | no server started |`);
console.log(`| find the offered programs at session start (100 programs × 5 versions) | ${fmt(offeredProgramsMs(), 'ms')} | |`);

const mcpStart = await mcpStartFigures();
console.log('\n| MCP server at session start (finance example) | fence | aim |\n|---|---|---|');
console.log(`| start-up to first request, server started and listed | ${fmt(mcpStart.listedMs, 'ms')} | |`);
console.log(`| start-up to first request, tools from the cache (server not started) | ${fmt(mcpStart.cachedMs, 'ms')} | as without a server |`);

const serve = await mcpServeFigures();
console.log('\n| `fence mcp serve` (a program reading a file, default sandbox) | stdio | streamable HTTP |\n|---|---|---|');
console.log(`| one served call, client → fence → program → tool → client (median of 200) | ${fmt(serve.callMs.stdio, 'ms')} | ${fmt(serve.callMs.http, 'ms')} |`);
console.log(`| spawn → first \`tools/list\` answered (median of 5) | ${fmt(serve.startMs.stdio, 'ms')} | ${fmt(serve.startMs.http, 'ms')} |`);
console.log(`| one call of \`read\` served with \`--tools\` (median of 200) | ${fmt(serve.toolCallMs, 'ms')} | |`);

const everyday = await everydayFigures(mkdtempSync(join(root, 'everyday-')));
console.log('\n| images, pages, skills (in fence\'s process) | fence | aim |\n|---|---|---|');
console.log(`| prepare a 3000×2000 PNG screenshot, first of the process (sharp loaded) | ${fmt(everyday.imageFirstMs, 'ms')} | ≤ 1 s |`);
console.log(`| prepare it again (median of 20) → bytes sent | ${fmt(everyday.imageLaterMs, 'ms')} → ${(everyday.imageSentBytes / 1024).toFixed(0)} kB | |`);
console.log(`| RSS growth over 40 more | ${fmt(everyday.imageRssGrowthMb, 'MB')} | ≤ 10 MB |`);
console.log(`| docs page of ${'~'}120 kB HTML → markdown, first (libraries loaded) / later | ${fmt(everyday.pageFirstMs, 'ms')} / ${fmt(everyday.pageLaterMs, 'ms')} | ≤ 1 s |`);
console.log(`| 1 MB article → markdown | ${fmt(everyday.largePageMs, 'ms')} | ≤ 3 s |`);
console.log(`| find skills at start: no skill folders / 50 skills | ${fmt(everyday.noSkillsMs, 'ms')} / ${fmt(everyday.fiftySkillsMs, 'ms')} | ≤ 5 ms / ≤ 20 ms |`);

const sub = await subagentFigures(mkdtempSync(join(root, 'subagents-')), BIN, cleanEnv());
console.log('\n| subagents (a program calling agent, model answering at once) | fence | aim |\n|---|---|---|');
console.log(`| \`agent\` call sent → the child's first request, against spawn → first request of \`fence -n\` | ${fmt(sub.childStartMs, 'ms')} / ${fmt(sub.processStartMs, 'ms')} (${(sub.childStartMs / sub.processStartMs).toFixed(2)}×) | ≤ 1.5× |`);
console.log(`| program block sent → parent's next request: 1 child / 8 children at once | ${fmt(sub.oneChildMs, 'ms')} / ${fmt(sub.eightChildrenMs, 'ms')} (${(sub.eightChildrenMs / sub.oneChildMs).toFixed(2)}×) | ≤ 2× |`);
console.log(`| 20 children each reading a 2 kB file: characters added to the parent / in the files | ${sub.fanOutAddedChars} / ${sub.filesChars} | < 2,048 added |`);

console.log('\n| 200-step session | format | tokens sent over the run | last request |\n|---|---|---|---|');
for (const g of contextGrowth()) console.log(`| ${g.scenario} | ${g.format} | ${g.totalTokens.toLocaleString('en')} | ${g.lastTokens.toLocaleString('en')} |`);

const long = await longRunFigures(500);
console.log('\n| 500-step run (markdown, real shell) | fence | aim |\n|---|---|---|');
console.log(`| harness time per step, steps 5–20 | ${fmt(long.earlyStepMs, 'ms')} | |`);
console.log(`| harness time per step, steps 485–500 | ${fmt(long.lateStepMs, 'ms')} | ≤ 1.2× early (${long.ratio.toFixed(2)}×) |`);
console.log(`| peak RSS growth | ${fmt(long.rssGrowthMb, 'MB')} | ≤ 50 MB |`);
console.log(`| bytes written per message, early / late | ${long.bytesPerMessageEarly.toFixed(0)} / ${long.bytesPerMessageLate.toFixed(0)} | constant |`);
console.log(`| last request: characters / ~tokens / body bytes | ${long.lastRequestChars} / ${long.lastRequestTokens} / ${long.lastRequestBytes} | |`);
