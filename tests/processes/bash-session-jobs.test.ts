import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAlive, waitUntilDead, useBashSessions } from '../support/bash-sessions';

const bash = useBashSessions('fence-bash-jobs-test-');
const open = bash.open;



/** A TCP port on 127.0.0.1 that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const pids = (output: string): number[] => output.trim().split('\n').map(Number);

describe('BashSession background jobs', () => {
  it('does not wait for a background job, and keeps job notices out of the output', async () => {
    const session = await open();
    const started = await session.run('sleep 100 & echo "started $!"', { timeoutMs: 10_000 });
    expect(started).toMatchObject({ exitCode: 0, timedOut: false });
    expect(started.output).toMatch(/^started \d+\n$/);

    await session.run('sleep 0.2 &');
    expect(await session.run('sleep 0.6; echo after')).toMatchObject({ output: 'after\n', exitCode: 0 });
    expect((await session.run('false & wait $!; echo waited')).output).toBe('waited\n');
    expect((await session.run('sleep 50 & kill $!; wait $!; echo gone')).output).toBe('gone\n');
    expect((await session.run('sleep 50 & kill -9 $!; sleep 0.2; echo killed')).output).toBe('killed\n');
  });

  it('lets a background job that reads the terminal stop, without noise', async () => {
    const session = await open();
    expect(await session.run('cat & echo "$!" > reader.pid')).toMatchObject({ output: '', exitCode: 0 });
    expect((await session.run('sleep 0.3; echo next')).output).toBe('next\n');
    expect((await session.run('jobs -s | wc -l')).output.trim()).toBe('1');
  });

  it('serves from the background: output redirected to a log, read later, server gone on close', async () => {
    const session = await open();
    await writeFile(join(bash.dir(), 'hello.txt'), 'hello from the workspace\n');
    const port = await freePort();
    const started = await session.run(`python3 -m http.server ${port} --bind 127.0.0.1 > server.log 2>&1 & echo $!`);
    expect(started.exitCode).toBe(0);
    const [server = 0] = pids(started.output);
    expect(isAlive(server)).toBe(true);

    const fetch = [
      `for i in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:${port}/ && break; sleep 0.1; done`,
      `curl -s http://127.0.0.1:${port}/hello.txt`,
    ].join('\n');
    expect(await session.run(fetch, { timeoutMs: 30_000 })).toMatchObject({ output: 'hello from the workspace\n', exitCode: 0 });
    const log = await session.run('cat server.log');
    expect(log.output).toMatch(/"GET \/hello\.txt HTTP\/1\.1" 200/);

    await session.close();
    expect(await waitUntilDead([server])).toEqual([]);
  });

  it('kills on close the jobs that ignore SIGHUP, left the session or are stopped', async () => {
    const session = await open();
    const script = [
      "(trap '' HUP; exec sleep 1001) & echo $!",
      'nohup sleep 1002 >/dev/null 2>&1 & echo $!',
      // setsid forks when it leads a process group, as a job does: the pid comes from inside.
      "setsid sh -c 'echo $$ > setsid.pid; exec sleep 1003' >/dev/null 2>&1 &",
      'while [ ! -s setsid.pid ]; do sleep 0.02; done; cat setsid.pid',
      "(setsid sh -c 'echo $$; exec sleep 1004' &) | head -1",
      'disown -a',
      'cat & echo $!',
    ].join('\n');
    const started = pids((await session.run(script)).output);
    expect(started).toHaveLength(5);
    expect(started.every(isAlive)).toBe(true);
    await session.close();
    expect(await waitUntilDead([...started])).toEqual([]);
  });

  it('kills on an exiting close, without waiting for bash, the jobs that ignore SIGHUP or left the session', async () => {
    const session = await open();
    const script = [
      "(trap '' HUP; exec sleep 1011) & echo $!",
      'nohup sleep 1012 >/dev/null 2>&1 & echo $!',
      "setsid sh -c 'echo $$ > setsid.pid; exec sleep 1013' >/dev/null 2>&1 &",
      'while [ ! -s setsid.pid ]; do sleep 0.02; done; cat setsid.pid',
    ].join('\n');
    const started = pids((await session.run(script)).output);
    expect(started).toHaveLength(3);
    await session.close({ waitForExit: false });
    expect(await waitUntilDead([...started, session.pid])).toEqual([]);
  });

  it('kills the jobs of a bash that exited before starting the next one', async () => {
    const session = await open();
    const result = await session.run(
      "sleep 1005 & echo $!; setsid sh -c 'echo $$ > s.pid; exec sleep 1006' & while [ ! -s s.pid ]; do sleep 0.02; done; cat s.pid; exit 3",
    );
    expect(result.shellExited).toEqual({ code: 3 });
    const orphans = pids(result.output);
    expect(orphans).toHaveLength(2);
    expect(await waitUntilDead(orphans)).toEqual([]);
    expect((await session.run('echo fresh')).output).toBe('fresh\n');
  });
});
