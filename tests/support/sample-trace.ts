import type { ProgramTrace } from '../../src/ptc/trace';
import { DEFAULT_VM_LIMITS } from '../../src/program-vm/run-in-vm';

/**
 * A hand-made trace of a finished run with no calls, as `runProgram` would write it; fields
 * in `overrides` replace the defaults whole.
 */
export function sampleTrace(overrides: Partial<ProgramTrace> = {}): ProgramTrace {
  return {
    id: '20260301-120000-aaaaaa',
    sessionId: 'session-1',
    createdAt: '2026-03-01T12:00:00.000Z',
    code: 'print("hi");',
    sha256: 'c0ffee'.padEnd(64, '0'),
    principal: 'program:c0ffee000000',
    limits: { ...DEFAULT_VM_LIMITS },
    calls: [],
    stdout: 'hi\n',
    droppedOutputBytes: 0,
    ok: true,
    stats: { cpuTimeMs: 3, wallTimeMs: 5, toolCalls: 0 },
    ...overrides,
  };
}
