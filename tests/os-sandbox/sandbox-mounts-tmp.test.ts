import { mkdtempSync, rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { offPolicy, sandboxMounts } from '../../src/os-sandbox/os-sandbox';

/**
 * A workspace under the host's /tmp, which the sandbox's own /tmp hides: each mode mounts it
 * back at its place, after the /tmp mount — writable in workspace-write, read-only in read-only.
 */
describe('the mounts of a workspace under /tmp', () => {
  let workspace: string;
  beforeEach(() => {
    workspace = mkdtempSync('/tmp/fence-mounts-test-');
  });
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  const mountsOf = (mode: 'workspace-write' | 'read-only') =>
    sandboxMounts({ ...offPolicy(workspace), mode, network: false }, { tmp: '/var/tmp/unused-tmp', empty: '/var/tmp/unused-empty', placeholders: [] });

  /** The index of the mount `kind source target` in `args`, or -1. */
  const indexOf = (args: string[], kind: string, path: string) => args.findIndex((arg, i) => arg === kind && args[i + 1] === path && args[i + 2] === path);

  it('mounts it back read-only in read-only mode, after /tmp, and never writable', () => {
    const args = mountsOf('read-only');
    const tmp = args.findIndex((arg, i) => arg === '--bind' && args[i + 2] === '/tmp');
    expect(tmp).toBeGreaterThanOrEqual(0);
    expect(indexOf(args, '--ro-bind', workspace)).toBeGreaterThan(tmp);
    expect(indexOf(args, '--bind', workspace)).toBe(-1);
  });

  it('mounts it writable in workspace-write mode, once', () => {
    const args = mountsOf('workspace-write');
    expect(indexOf(args, '--bind', workspace)).toBeGreaterThan(0);
    expect(indexOf(args, '--ro-bind', workspace)).toBe(-1);
  });

  it('adds nothing for a workspace outside /tmp in read-only mode', () => {
    const outside = mkdtempSync('/var/tmp/fence-mounts-test-');
    try {
      const args = sandboxMounts({ ...offPolicy(outside), mode: 'read-only', network: false }, { tmp: '/var/tmp/unused-tmp', empty: '/var/tmp/unused-empty', placeholders: [] });
      expect(args).not.toContain(outside);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
