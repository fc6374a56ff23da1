import { isDeepStrictEqual } from 'node:util';
import { DEFAULT_VM_LIMITS, runInVm, type HostFunction, type VmResult } from '../program-vm/run-in-vm';
import type { ProgramTest, RecordedCall } from './saved-programs';

/** What replaying one recorded test came to. */
export interface ReplayOutcome {
  passed: boolean;
  /** One sentence per difference from the recording, in the order found. */
  problems: string[];
  /** What the code did this time. */
  run: VmResult;
}

/**
 * Runs `code` in a fresh sandbox with the test's arguments, where every tool is the recording:
 * a call gets the recorded outcome of the first unused recorded call to the same tool with
 * JSON-equal arguments, key order aside (so calls made in parallel may come in any order). No
 * real tool, server or model is involved; `store()` starts empty. The test passes when every call was recorded, every recorded call was
 * made, and the run ends the same: ok or not, stdout, result, and error kind and message.
 */
export async function replayTest(code: string, test: ProgramTest, options: { tools: readonly string[]; signal?: AbortSignal }): Promise<ReplayOutcome> {
  const problems: string[] = [];
  const used = new Set<number>();
  // The recorded calls by tool and arguments, each queue in recorded order: a lookup per call.
  const waiting = new Map<string, number[]>();
  test.calls.forEach((call, i) => {
    const key = callKey(call.tool, call.args);
    const queue = waiting.get(key);
    if (queue) queue.push(i);
    else waiting.set(key, [i]);
  });
  const kept = new Map<string, unknown>();
  const functions: Record<string, HostFunction> = {};
  const names = new Set([...options.tools, ...test.calls.map((call) => call.tool)]);
  for (const tool of names) {
    functions[tool] = async (args) => {
      const index = waiting.get(callKey(tool, args))?.shift();
      if (index === undefined) {
        problems.push(`the code called ${describeCall(tool, args)}, which the recording does not have`);
        throw new Error(`no recorded result for ${describeCall(tool, args)}`);
      }
      used.add(index);
      const recorded = test.calls[index] as RecordedCall;
      if (!recorded.ok) throw new Error(recorded.error ?? 'failed');
      return recorded.result;
    };
  }
  const run = await runInVm({
    code,
    functions,
    limits: { ...DEFAULT_VM_LIMITS, ...test.limits },
    // Programs that keep values between runs start with an empty store, as in a fresh session.
    store: { get: (key) => kept.get(key), set: (key, value) => void (value === undefined ? kept.delete(key) : kept.set(key, value)) },
    ...(test.args !== undefined ? { globals: { args: test.args } } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  test.calls.forEach((call, i) => {
    if (!used.has(i)) problems.push(`the recorded call #${i + 1} ${describeCall(call.tool, call.args)} was not made`);
  });
  const expected = test.expect;
  if (run.ok !== expected.ok) {
    problems.push(run.ok ? 'the run worked where the recorded one failed' : `the run failed (${run.error?.kind}: ${run.error?.message})`);
  } else if (!run.ok && (run.error?.kind !== expected.error?.kind || run.error?.message !== expected.error?.message)) {
    problems.push(`the run failed with ${run.error?.kind}: ${run.error?.message}, the recorded one with ${expected.error?.kind}: ${expected.error?.message}`);
  }
  if (run.stdout !== expected.stdout) problems.push(`the output differs:\n${outputDifference(expected.stdout, run.stdout)}`);
  if (!isDeepStrictEqual(normalize(run.result), normalize(expected.result))) {
    problems.push(`the result differs: recorded ${short(JSON.stringify(expected.result))}, now ${short(JSON.stringify(run.result))}`);
  }
  return { passed: problems.length === 0, problems, run };
}

/** A call as the recording is looked up by: the tool and its arguments as JSON with sorted keys. */
function callKey(tool: string, args: unknown): string {
  return `${tool}\u0000${canonicalJson(normalize(args))}`;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/** A value as JSON would carry it, so `undefined` properties and key order do not count. */
function normalize(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}

function describeCall(tool: string, args: unknown): string {
  return `${tool}(${short(JSON.stringify(args) ?? '')})`;
}

function short(text = 'undefined', max = 120): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The first line where two outputs part, with its number: enough to see what changed. */
function outputDifference(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  let line = 0;
  while (line < a.length && line < b.length && a[line] === b[line]) line++;
  const show = (text: string | undefined) => (text === undefined ? '(no line)' : JSON.stringify(short(text)));
  return `  line ${line + 1}: recorded ${show(a[line])}\n  line ${line + 1}: now      ${show(b[line])}`;
}
