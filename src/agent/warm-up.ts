import { warmUpFetch } from '../llm/node-fetch';
import type { ToolFormat, ToolStreamScanner } from '../parse/tool-use';
import type { ToolSpec } from '../tools/define-tool';
import { modelTools, renderCall } from '../tools/notation';
import { LoopDetector } from './loop-detector';

/** What a warm-up walks through: the tools and how the model writes their calls. */
export interface WarmUpParts {
  format: ToolFormat;
  tools: readonly ToolSpec[];
  /** A new scanner of the format's blocks (markdown and XML). */
  scanner?: () => ToolStreamScanner;
  /** Aborted once the real reply arrives: the steps not yet run are skipped, not run in its way. */
  signal?: AbortSignal;
}

/**
 * Runs, once and with sample data, code that the step after a model's reply runs: reading a
 * response body (and leaving it early, as at a tool block), reading a tool call out of a reply,
 * the loop detector's look at a call (its digests and its view of an output), and checking a
 * tool's input against its schema. A process pays for the first run of each (modules load, V8
 * fills its caches, regular expressions compile); done while the first request is out, that
 * is paid while the model thinks instead of between its reply and the next request.
 *
 * The work is cut into small steps, each run from the event loop after the one before, so a
 * reply that arrives meanwhile waits for one step at most, and once `signal` is aborted (the
 * reply came) no further step runs. Nothing here touches a session: no log, no tool runs, no
 * request. Never throws; the promise settles once every step ran or was skipped.
 */
export function warmUpReplyPath(parts: WarmUpParts): Promise<void> {
  const callable = modelTools(parts.tools, parts.format);
  const sample = callable.find((tool) => tool.name === 'shell') ?? callable[0];
  const steps: (() => unknown)[] = [
    () => warmUpFetch(),
    () => sample && readCall(parts, sample),
    () => new LoopDetector().observe({ tool: 'shell', input: { command: 'make' }, output: 'done in 1.2s at 2026-01-01T12:00:00Z (pid 4242)\nExit code 0.', isError: false }),
    () => sample?.parameters.safeParse(sample.example),
  ];
  return new Promise((resolve) => {
    const next = (): void => {
      const step = parts.signal?.aborted ? undefined : steps.shift();
      if (!step) return resolve();
      Promise.resolve()
        .then(step)
        .catch(() => undefined)
        .then(() => setImmediate(next));
    };
    // A timer, then an immediate: the event loop passes its poll phase in between, where the
    // connection of the request being sent completes and the request goes out.
    setTimeout(() => setImmediate(next), 1);
  });
}

/** Finds the sample tool's call in a reply, as the stream scanner (or the native argument parser) does. */
async function readCall(parts: WarmUpParts, tool: ToolSpec): Promise<void> {
  const call = renderCall(tool, tool.example, parts.format);
  if (parts.format === 'tool') {
    const { parseToolArguments } = await import('../parse/native-call');
    parseToolArguments(call);
    return;
  }
  parts.scanner?.().push(`A sample reply.\n${call}\n\nText after it.\n`);
}
