// Makes the V8 code cache of the built program: one warm-up run of the built CLI does what most
// runs do (open a session, send a request, run a shell block, send its result, print the
// answer, exit) against a model server that lives in this script and answers at once, and the
// launcher writes the bytecode of every function that run compiled (FENCE_CODE_CACHE_OUT).
// Nothing here is needed for fence to work: if the run fails, the build goes on without a cache
// and fence compiles its code as it loads, as it would with another Node version.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const WARM_UP_TIMEOUT_MS = 60_000;

/** The replies of the warm-up run, in order: a shell block, then the answer. */
const REPLIES = ['Looking.\n```shell\necho warm\n```\n', 'Warm.'];

/** One streamed Chat Completions reply carrying `text`. */
function sse(text) {
  const chunk = (delta, finish = null) =>
    `data: ${JSON.stringify({ id: 'warm', object: 'chat.completion.chunk', created: 0, model: 'warm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  return [
    chunk({ role: 'assistant', content: '' }),
    chunk({ content: text }),
    chunk({}, 'stop'),
    `data: ${JSON.stringify({ id: 'warm', object: 'chat.completion.chunk', created: 0, model: 'warm', choices: [], usage })}\n\n`,
    'data: [DONE]\n\n',
  ].join('');
}

/**
 * Runs `launcher` once against a local server and has it write the code cache to `cacheFile`.
 * Returns an empty string when the cache was written, else why not (one line).
 */
export async function warmUpCodeCache({ launcher, cacheFile }) {
  const root = mkdtempSync(join(tmpdir(), 'fence-warm-up-'));
  let replies = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const text = REPLIES[Math.min(replies++, REPLIES.length - 1)];
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(sse(text));
    });
  });
  try {
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const workspace = join(root, 'work');
    mkdirSync(workspace);
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: root,
      LANG: 'C.UTF-8',
      FENCE_HOME: join(root, 'home'),
      OPENAI_BASE_URL: `http://127.0.0.1:${server.address().port}/v1`,
      FENCE_CODE_CACHE_OUT: cacheFile,
    };
    const code = await new Promise((resolve) => {
      const child = spawn(process.execPath, [launcher, '-n', '-m', 'local/warm-up', 'warm up'], { cwd: workspace, env, stdio: 'ignore' });
      const timer = setTimeout(() => child.kill('SIGKILL'), WARM_UP_TIMEOUT_MS);
      child.on('error', () => resolve(-1));
      child.on('exit', (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    if (!existsSync(cacheFile)) return `the warm-up run ended with ${code} and wrote no cache`;
    return replies === REPLIES.length ? '' : `the warm-up run made ${replies} requests instead of ${REPLIES.length}`;
  } finally {
    server.closeAllConnections();
    server.close();
    rmSync(root, { recursive: true, force: true });
  }
}
