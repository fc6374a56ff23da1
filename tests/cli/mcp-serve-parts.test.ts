import { afterEach, describe, expect, it, vi } from 'vitest';
import { clientPrincipal, progressReporter, PROGRESS_INTERVAL_MS } from '../../src/cli/mcp-serve';

afterEach(() => {
  vi.useRealTimers();
});

describe('clientPrincipal', () => {
  it('makes a client name a principal no policy glob can be smuggled through', () => {
    expect(clientPrincipal('Claude Code')).toBe('mcp:claude-code');
    expect(clientPrincipal('evil/*/name**')).toBe('mcp:evil-name');
    expect(clientPrincipal('..')).toBe('mcp:client');
    expect(clientPrincipal(undefined)).toBe('mcp:client');
    expect(clientPrincipal('x'.repeat(100))).toBe(`mcp:${'x'.repeat(64)}`);
  });
});

describe('progressReporter', () => {
  function reporter() {
    const sent: { progress: number; message: string }[] = [];
    const progress = progressReporter(async (params) => {
      sent.push(params);
    });
    return { sent, progress };
  }

  it('tells the first call at once and a run of quick calls once, by its last', () => {
    vi.useFakeTimers();
    const { sent, progress } = reporter();
    progress.called({ tool: 'read', ok: true });
    expect(sent).toEqual([{ progress: 1, message: 'read: ok (1 tool call so far)' }]);
    progress.called({ tool: 'glob', ok: true });
    progress.called({ tool: 'read', ok: false, decision: { action: 'deny' } });
    expect(sent).toHaveLength(1);
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS);
    expect(sent).toEqual([
      { progress: 1, message: 'read: ok (1 tool call so far)' },
      { progress: 3, message: 'read: denied (3 tool calls so far)' },
    ]);
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS * 5);
    expect(sent).toHaveLength(2);
  });

  it('never tells one count twice, when a call ends after the pending time came but before its timer ran', () => {
    vi.useFakeTimers();
    const { sent, progress } = reporter();
    progress.called({ tool: 'a', ok: true });
    progress.called({ tool: 'b', ok: true });
    // The clock passes the pending time without running timers, as a busy event loop would.
    vi.setSystemTime(Date.now() + PROGRESS_INTERVAL_MS + 1);
    progress.called({ tool: 'c', ok: false, decision: { action: 'ask' } });
    vi.runAllTimers();
    expect(sent.map((note) => note.progress)).toEqual([1, 3]);
    expect(sent[1]?.message).toBe('c: refused (needs a yes) (3 tool calls so far)');
  });

  it('sends nothing once stopped, and a failed send does not reach the call', async () => {
    vi.useFakeTimers();
    const { sent, progress } = reporter();
    progress.called({ tool: 'a', ok: true });
    progress.called({ tool: 'b', ok: false });
    progress.stop();
    progress.called({ tool: 'c', ok: true });
    vi.runAllTimers();
    expect(sent).toHaveLength(1);

    const failing = progressReporter(() => Promise.reject(new Error('the client went away')));
    expect(() => failing.called({ tool: 'a', ok: true })).not.toThrow();
    await Promise.resolve();
  });
});
