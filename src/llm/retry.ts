import type { Usage } from '../conversation/message';
import { completeUsage } from './estimate-tokens';
import { describeFailure, oneLine, type Failure } from './failure';
import type { StreamEvent, StreamRequest } from './provider';

/** How failed requests are sent again. Every field has a default. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 5). */
  maxAttempts?: number;
  /** Wait before the first retry; it doubles for each later one, with ±25% jitter (default 1000 ms). */
  baseDelayMs?: number;
  /** Longest wait between attempts that fence chooses itself (default 30 s). */
  maxDelayMs?: number;
  /** A server asking to wait longer than this ends the stream with an error instead (default 60 s). */
  maxRetryAfterMs?: number;
}

/**
 * What one attempt of an adapter yields. The adapter throws on failure; it yields `finish`
 * only when the API said the reply is complete (a stream that just stops is a dropped connection).
 */
export type AttemptEvent =
  | Extract<StreamEvent, { type: 'text' | 'tool_call' | 'thinking' | 'reasoning' | 'web_search' }>
  /** `complete`: the provider will not send better numbers for this reply. */
  | { type: 'usage'; usage: Usage; complete: boolean }
  | { type: 'finish'; stopReason: 'end' | 'max_tokens' | 'tool_use' | 'error'; error?: string };

/** One attempt: send the request and stream its reply, honouring `signal`. */
export type Attempt = (signal: AbortSignal) => AsyncIterable<AttemptEvent>;

const DEFAULTS = { maxAttempts: 5, baseDelayMs: 1000, maxDelayMs: 30_000, maxRetryAfterMs: 60_000 } satisfies Required<RetryOptions>;
const ABORTED = Symbol('aborted');

/** The wait before retry number `retry` (1 for the first): exponential, jittered, capped. */
export function backoffDelay(retry: number, options: RetryOptions = {}, random: () => number = Math.random): number {
  const { baseDelayMs, maxDelayMs } = { ...DEFAULTS, ...options };
  const exponential = baseDelayMs * 2 ** Math.max(0, retry - 1);
  return Math.round(Math.min(maxDelayMs, exponential * (0.75 + random() * 0.5)));
}

/**
 * Runs attempts until one completes, and turns everything into {@link StreamEvent}s. This is
 * the one place where fence retries model requests.
 *
 * - A retryable failure before any text or tool call: a `retry` event, an (abortable) wait, a new attempt.
 * - A retryable failure after some output: `restart`, then `retry`, then the request is sent again.
 * - Anything else, or no attempts left: `done` with stopReason `error` and a one-line message.
 * - `request.signal` aborted: `done` with stopReason `aborted`, promptly, even mid-read.
 * - When a reply finishes, is aborted, or fails after some output without complete usage from
 *   the provider, a `usage` event with `estimated: true` precedes `done`: what the provider
 *   sent, completed by local estimates (characters / 4 of the request and of the output).
 *
 * `retry.attempt` and `restart.attempt` number the attempt about to be made (2 for the first retry).
 * Never throws; `done` is always the last event. Breaking out of the iteration aborts the request.
 */
export async function* streamWithRetries(
  provider: string,
  request: StreamRequest,
  attempt: Attempt,
  options: RetryOptions = {},
): AsyncGenerator<StreamEvent, void, undefined> {
  const settings = { ...DEFAULTS, ...options };
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  request.signal?.addEventListener('abort', onAbort, { once: true });
  if (request.signal?.aborted) controller.abort();
  const signal = controller.signal;
  try {
    for (let number = 1; ; number++) {
      if (signal.aborted) {
        yield { type: 'done', stopReason: 'aborted' };
        return;
      }
      const tally = new Tally();
      let finish: Extract<AttemptEvent, { type: 'finish' }> | undefined;
      let failure: unknown;
      let iterator: AsyncIterator<AttemptEvent> | undefined;
      try {
        iterator = attempt(signal)[Symbol.asyncIterator]();
        for (;;) {
          const next = await nextOrAbort(iterator, signal);
          if (next === ABORTED || next.done === true) break;
          const event = next.value;
          if (event.type === 'finish') {
            finish = event;
            break;
          }
          tally.add(event);
          yield event.type === 'usage' ? { type: 'usage', usage: event.usage } : event;
        }
      } catch (error) {
        failure = error;
      } finally {
        // Lets the adapter close its SDK stream (and so the HTTP request) whatever happened.
        iterator?.return?.().catch(() => undefined);
      }

      const estimate = tally.estimate(request);
      if (signal.aborted) {
        if (estimate) yield { type: 'usage', usage: estimate };
        yield { type: 'done', stopReason: 'aborted' };
        return;
      }
      if (finish) {
        if (estimate) yield { type: 'usage', usage: estimate };
        yield finish.error === undefined ? { type: 'done', stopReason: finish.stopReason } : { type: 'done', stopReason: finish.stopReason, error: finish.error };
        return;
      }

      const verdict: Failure =
        failure === undefined
          ? { message: `the ${provider} stream ended before the reply was complete`, retryable: true, connection: true }
          : describeFailure(failure, provider);
      const waitMs = verdict.retryAfterMs ?? backoffDelay(number, settings);
      const waitTooLong = verdict.retryAfterMs !== undefined && verdict.retryAfterMs > settings.maxRetryAfterMs;
      if (!verdict.retryable || waitTooLong || number >= settings.maxAttempts) {
        if (estimate && tally.sawOutput) yield { type: 'usage', usage: estimate };
        const error = finalError(verdict, number, tally.sawOutput, waitTooLong ? waitMs : undefined);
        yield { type: 'done', stopReason: 'error', error, ...(verdict.kind ? { errorKind: verdict.kind } : {}) };
        return;
      }
      if (tally.sawOutput) yield { type: 'restart', attempt: number + 1, reason: verdict.message };
      yield { type: 'retry', attempt: number + 1, delayMs: waitMs, reason: verdict.message };
      await sleep(waitMs, signal);
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    yield { type: 'done', stopReason: signal.aborted ? 'aborted' : 'error', error: oneLine(`${provider}: ${message}`) };
  } finally {
    request.signal?.removeEventListener('abort', onAbort);
    controller.abort();
  }
}

/** The message of the `done` that ends a stream after its last failed attempt. */
function finalError(verdict: Failure, attempts: number, sawOutput: boolean, refusedWaitMs: number | undefined): string {
  if (refusedWaitMs !== undefined) return oneLine(`${verdict.message} (the server asks to wait ${Math.ceil(refusedWaitMs / 1000)} s)`);
  if (sawOutput && verdict.connection && verdict.retryable) return `connection lost mid-reply after ${attempts} attempts`;
  return oneLine(attempts > 1 ? `${verdict.message} (after ${attempts} attempts)` : verdict.message);
}

/** What one attempt has produced so far, for the usage estimate. */
class Tally {
  sawOutput = false;
  private outputChars = 0;
  private usage: Usage | undefined;
  private complete = false;

  add(event: Exclude<AttemptEvent, { type: 'finish' }>): void {
    switch (event.type) {
      case 'text':
        this.sawOutput = true;
        this.outputChars += event.text.length;
        break;
      case 'tool_call':
        this.sawOutput = true;
        this.outputChars += event.argumentsDelta.length + (event.name?.length ?? 0);
        break;
      case 'thinking':
        // Thinking is output too: a retry after it must tell the caller to discard it.
        this.sawOutput = true;
        this.outputChars += event.text.length;
        break;
      case 'reasoning':
      case 'web_search':
        // Reasoning state and searches of a failed attempt must be dropped too: a restart says so.
        this.sawOutput = true;
        break;
      case 'usage':
        this.usage = event.usage;
        this.complete = event.complete;
        break;
    }
  }

  /** Reported usage completed by estimates, or undefined when the provider's numbers are complete. */
  estimate(request: StreamRequest): Usage | undefined {
    if (this.complete) return undefined;
    return completeUsage(this.usage, request.messages, this.outputChars);
  }

}

/** The iterator's next result, or {@link ABORTED} as soon as `signal` aborts. */
function nextOrAbort<T>(iterator: AsyncIterator<T>, signal: AbortSignal): Promise<IteratorResult<T> | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    iterator.next().then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

