import { fenceHome } from '../config/paths';
import { findTrace, listTraces, type ProgramTrace, type TraceCall, type TraceDecision } from '../ptc/trace';
import { visibleLine, visibleText } from '../processes/visible-text';

/** `fence trace list`: one line a program run, newest first. Returns the exit code. */
export function listTracesCommand(): number {
  const traces = listTraces(fenceHome());
  if (traces.length === 0) {
    process.stdout.write('no program runs yet\n');
    return 0;
  }
  for (const { trace } of traces) {
    const status = trace.ok ? 'ok' : `failed (${trace.error?.kind ?? 'error'})`;
    const intent = trace.intent ? `  ${visibleLine(trace.intent)}` : '';
    process.stdout.write(`${trace.id}  ${trace.createdAt.slice(0, 16).replace('T', ' ')}  ${status}  ${trace.calls.length} call${trace.calls.length === 1 ? '' : 's'}${intent}\n`);
  }
  return 0;
}

/** `fence trace show <id>`: a program run, readably. Returns the exit code. */
export function showTraceCommand(id: string): number {
  const found = findTrace(fenceHome(), id);
  if ('error' in found) {
    process.stderr.write(`fence: ${found.error}\n`);
    return 1;
  }
  // The program's code, output and errors came from the model and its tools: shown, never acted on by the terminal.
  process.stdout.write(visibleText(formatTrace(found.trace, found.path)));
  return 0;
}

/** A trace as text for people: header, status, each call with its decision, output, result, code. */
export function formatTrace(trace: ProgramTrace, path: string): string {
  const lines: string[] = [];
  lines.push(`trace ${trace.id} · session ${trace.sessionId} · ${trace.createdAt.replace('T', ' ').slice(0, 19)}`);
  lines.push(`file ${path}`);
  if (trace.program) lines.push(`program ${trace.program}`);
  lines.push(`principal ${trace.principal}${trace.intent ? ` · intent: ${trace.intent}` : ''}`);
  if (trace.admission) lines.push(`admitted: ${decisionText(trace.admission)}`);
  lines.push(`code sha256 ${trace.sha256}`);
  const { limits, stats } = trace;
  if (trace.runtime === 'python') lines.push('runtime: a Python cell');
  if (limits) {
    lines.push(
      `limits: memory ${mib(limits.memoryBytes)}, cpu ${limits.cpuTimeMs / 1000} s, wall ${limits.wallTimeMs / 1000} s, ` +
        `stack ${limits.stackBytes / 1024} KiB, ${limits.maxToolCalls} calls, ${limits.maxConcurrentCalls} at once, output ${mib(limits.maxOutputBytes)}`,
    );
  }
  const where = trace.error?.line === undefined ? '' : ` at line ${trace.error.line}`;
  lines.push(trace.ok ? 'status: ok' : `status: failed (${trace.error?.kind ?? 'error'})${where}: ${trace.error?.message ?? ''}`);
  if (stats) lines.push(`time: ${stats.wallTimeMs} ms wall, ${stats.cpuTimeMs} ms in the sandbox`);
  lines.push('', `calls (${trace.calls.length}):`);
  for (const call of trace.calls) lines.push(`  ${formatCall(call)}`);
  lines.push('', 'output:');
  lines.push(...(trace.stdout ? indent(trace.stdout) : ['  (none)']));
  if (trace.droppedOutputBytes > 0) lines.push(`  [${trace.droppedOutputBytes} bytes dropped]`);
  if (trace.result !== undefined) lines.push('', 'result:', ...indent(JSON.stringify(trace.result, null, 2)));
  lines.push('', 'code:');
  trace.code.split('\n').forEach((line, i) => lines.push(`  ${String(i + 1).padStart(3)} | ${line}`));
  return `${lines.join('\n')}\n`;
}

function formatCall(call: TraceCall): string {
  const args = short(JSON.stringify(call.args) ?? '', 80);
  const decision = !call.decision ? 'not decided' : decisionText(call.decision);
  const outcome = call.ok ? `ok${describeValue(call)}` : `error: ${short(call.error ?? '', 120)}`;
  return `#${call.seq} +${call.start} ms  ${call.tool} ${args}  [${decision}]  ${call.durationMs} ms  ${outcome}`;
}

/** `allow` (no rule matched), `allow by a policy rule`, `deny: the reason` (which names the rule). */
function decisionText(decision: TraceDecision): string {
  if (decision.action === 'allow') return decision.rule === undefined ? 'allow' : 'allow by a policy rule';
  return `${decision.action}: ${decision.reason ?? ''}`;
}

function describeValue(call: TraceCall): string {
  if (call.resultBytes !== undefined) return ` (${call.resultBytes} bytes, not kept)`;
  if (Array.isArray(call.result)) return ` → ${call.result.length} items`;
  if (typeof call.result === 'string') return ` → ${call.result.length} characters`;
  return call.result === undefined ? '' : ` → ${short(JSON.stringify(call.result), 60)}`;
}

function short(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

function indent(text: string): string[] {
  return text.replace(/\n$/, '').split('\n').map((line) => `  ${line}`);
}

function mib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round(bytes / 1024 / 1024)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}
