import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  foregroundProcessGroup,
  killSession,
  killSessionNow,
  listProcesses,
  processesWithEnvironment,
  sessionMembers,
  signalProcess,
  type ProcessInfo,
} from '../../src/processes/process-tree';
import { isAlive } from '../support/bash-sessions';

describe('process tree', () => {
  it('lists this process with its parent and a child with its group', async () => {
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    await once(child, 'spawn');
    try {
      const processes = await listProcesses();
      const self = processes.find((p) => p.pid === process.pid);
      const sleeper = processes.find((p) => p.pid === child.pid);
      expect(self?.ppid).toBe(process.ppid);
      expect(sleeper).toMatchObject({ ppid: process.pid, pgid: child.pid });
      if (process.platform === 'linux') expect(sleeper?.sid).toBe(child.pid);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('knows no foreground group for a process that does not exist', async () => {
    expect(await foregroundProcessGroup(2 ** 22 + 12345)).toBeUndefined();
  });

  it('finds the members of a session by session id, or else by descent', () => {
    const withSessions: ProcessInfo[] = [
      { pid: 10, ppid: 1, pgid: 10, sid: 10 },
      { pid: 11, ppid: 10, pgid: 11, sid: 10 },
      { pid: 12, ppid: 1, pgid: 11, sid: 10 }, // reparented after a double fork
      { pid: 13, ppid: 10, pgid: 13, sid: 13 }, // left with setsid
      { pid: 14, ppid: 1, pgid: 14, sid: 14 },
    ];
    expect(sessionMembers(withSessions, 10).sort()).toEqual([11, 12]);

    const withoutSessions = withSessions.map((p) => ({ ...p, sid: undefined }));
    expect(sessionMembers(withoutSessions, 10).sort()).toEqual([11, 13]);
  });

  it('signals a process, and quietly reports one that is gone', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    await once(child, 'spawn');
    const exited = once(child, 'exit');
    expect(signalProcess(child.pid ?? 0, 'SIGTERM')).toBe(true);
    expect((await exited)[1]).toBe('SIGTERM');
    expect(signalProcess(2 ** 22 + 12345, 'SIGKILL')).toBe(false);
  });

  it.runIf(process.platform === 'linux')('finds and kills the processes marked in their environment, wherever they went', async () => {
    const marker = `FENCE_TEST_MARK=${randomBytes(8).toString('hex')}`;
    const [name = '', value = ''] = marker.split('=');
    // Detached: its own session, so only the environment ties it to the marker.
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore', env: { ...process.env, [name]: value } });
    const other = spawn('sleep', ['30'], { detached: true, stdio: 'ignore', env: { ...process.env, [name]: `${value}0` } });
    await Promise.all([once(child, 'spawn'), once(other, 'spawn')]);
    try {
      expect(await processesWithEnvironment(marker)).toEqual([child.pid]);
      const exited = once(child, 'exit');
      await killSession(2 ** 22 + 12345, marker);
      expect((await exited)[1]).toBe('SIGKILL');
      expect(other.exitCode).toBeNull();
      expect(await processesWithEnvironment(marker)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      other.kill('SIGKILL');
    }
  });

  it.runIf(process.platform === 'linux')('sweeps at once for an exiting process: marked processes and the members of the session, not others', async () => {
    const marker = `FENCE_TEST_MARK=${randomBytes(8).toString('hex')}`;
    const [name = '', value = ''] = marker.split('=');
    const marked = spawn('sleep', ['30'], { detached: true, stdio: 'ignore', env: { ...process.env, [name]: value } });
    // A session of its own, whose member the sweep of that leader finds by session id.
    const leader = spawn('sh', ['-c', 'sleep 30 & wait'], { detached: true, stdio: 'ignore' });
    const other = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    await Promise.all([once(marked, 'spawn'), once(leader, 'spawn'), once(other, 'spawn')]);
    try {
      let members: number[] = [];
      while (members.length === 0) {
        members = sessionMembers(await listProcesses(), leader.pid ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await killSessionNow(leader.pid ?? 0, marker);
      expect(await processesWithEnvironment(marker)).toEqual([]);
      expect(sessionMembers(await listProcesses(), leader.pid ?? 0)).toEqual([]);
      expect(isAlive(other.pid ?? 0)).toBe(true);
    } finally {
      for (const child of [marked, leader, other]) child.kill('SIGKILL');
    }
  });
});
