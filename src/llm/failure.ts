/**
 * Turns whatever an SDK or the network threw into one line for the user and a verdict on
 * whether sending the request again may help. Errors are read by their shape (status, headers,
 * body, cause chain), so this file needs neither SDK loaded.
 */

/** What went wrong with one attempt. */
export interface Failure {
  /** One line fit for a user: no stack trace, no line breaks. */
  message: string;
  /** Sending the same request again may succeed. */
  retryable: boolean;
  /** The connection failed or dropped (as opposed to an error answer from the server). */
  connection: boolean;
  /** How long the server asked to wait (`retry-after-ms` / `retry-after`), when it said so. */
  retryAfterMs?: number;
  /** The kinds a run reports apart: the key was refused (401, 403), or the rate limit (429). */
  kind?: FailureKind;
}

/** Failures a run ends with a reason of their own for (see `RunStop`). */
export type FailureKind = 'auth' | 'rate_limited';

const RETRYABLE_STATUS = new Set([408, 409, 429]);
/** Error types an API may send inside a stream that are worth another attempt. */
const RETRYABLE_TYPES = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'server_error', 'timeout_error']);
const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);
const MAX_MESSAGE = 300;

/** Reads an error of any shape thrown while talking to `provider`. Never throws. */
export function describeFailure(error: unknown, provider: string): Failure {
  const status = field(error, 'status');
  if (typeof status === 'number') return describeHttpError(error, status, provider);

  const type = errorType(error);
  if (type !== undefined) {
    const detail = bodyMessage(error);
    return {
      message: oneLine(`${provider} stream error: ${type}${detail ? `: ${detail}` : ''}`),
      retryable: RETRYABLE_TYPES.has(type),
      connection: false,
      ...(type === 'rate_limit_error' ? { kind: 'rate_limited' as const } : {}),
    };
  }

  const chain = causeChain(error);
  const codes = chain.map((link) => field(link, 'code')).filter((code): code is string => typeof code === 'string');
  const deepest = chain.at(-1);
  const detail = deepest instanceof Error ? deepest.message : String(deepest);
  const names = chain.map((link) => field(link, 'name'));
  if (names.includes('APIConnectionTimeoutError')) {
    return { message: `request to ${provider} timed out`, retryable: true, connection: true };
  }
  if (codes.includes('ENOTFOUND')) {
    return { message: oneLine(`cannot reach ${provider}: ${detail}`), retryable: false, connection: true };
  }
  const isConnection =
    codes.some((code) => CONNECTION_CODES.has(code)) ||
    names.includes('APIConnectionError') ||
    /socket hang up|other side closed|terminated/i.test(detail);
  if (isConnection) {
    return { message: oneLine(`connection to ${provider} failed: ${detail}`), retryable: true, connection: true };
  }
  if (error instanceof SyntaxError) {
    return { message: oneLine(`${provider} sent data that is not valid JSON: ${error.message}`), retryable: false, connection: false };
  }
  return { message: oneLine(`${provider}: ${detail}`), retryable: false, connection: false };
}

function describeHttpError(error: unknown, status: number, provider: string): Failure {
  const headers = field(error, 'headers');
  const header = (name: string): string | undefined => {
    const get = field(headers, 'get');
    if (typeof get !== 'function') return undefined;
    const value: unknown = get.call(headers, name);
    return typeof value === 'string' ? value : undefined;
  };
  const shouldRetry = header('x-should-retry');
  const code = field(field(error, 'error'), 'code') ?? field(error, 'code');
  const retryable =
    shouldRetry === 'true' ? true
    : shouldRetry === 'false' ? false
    : code === 'insufficient_quota' ? false
    : RETRYABLE_STATUS.has(status) || status >= 500;
  const detail = bodyMessage(error) ?? stripStatus(field(error, 'message'), status);
  const failure: Failure = {
    message: oneLine(`HTTP ${status} from ${provider}${detail ? `: ${detail}` : ''}`),
    retryable,
    connection: false,
  };
  if (status === 401 || status === 403) failure.kind = 'auth';
  // An exhausted quota is a 429 too, but no wait will lift it: a plain error.
  if (status === 429 && code !== 'insufficient_quota') failure.kind = 'rate_limited';
  const retryAfterMs = parseRetryAfter(header('retry-after-ms'), header('retry-after'));
  if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
  return failure;
}

/**
 * The wait a server asked for: `retry-after-ms` (milliseconds) wins over `retry-after`
 * (seconds, or an HTTP date). Undefined when neither is present and valid.
 */
export function parseRetryAfter(retryAfterMs: string | undefined, retryAfter: string | undefined, now = Date.now()): number | undefined {
  if (retryAfterMs !== undefined) {
    const ms = Number.parseFloat(retryAfterMs);
    if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  }
  if (retryAfter === undefined || retryAfter.trim() === '') return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(retryAfter);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** The server's own words: `{error: {message}}` (Anthropic's whole body) or `{message}` (OpenAI's inner error). */
function bodyMessage(error: unknown): string | undefined {
  const body = field(error, 'error');
  const message = field(field(body, 'error'), 'message') ?? field(body, 'message');
  if (typeof message === 'string' && message.trim() !== '') return message;
  if (typeof body === 'string' && body.trim() !== '') return body;
  return undefined;
}

/** The error type an API put in a stream's error event, when the error has no HTTP status. */
function errorType(error: unknown): string | undefined {
  const body = field(error, 'error');
  const type = field(error, 'type') ?? field(field(body, 'error'), 'type') ?? field(body, 'type');
  return typeof type === 'string' && type !== 'error' ? type : undefined;
}

function stripStatus(message: unknown, status: number): string | undefined {
  if (typeof message !== 'string') return undefined;
  const stripped = message.replace(new RegExp(`^${status}\\s*`), '').replace(/^status code \(no body\)$/, '');
  return stripped.trim() === '' ? undefined : stripped;
}

function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [error];
  let current = field(error, 'cause');
  while (current !== undefined && current !== null && chain.length < 8 && !chain.includes(current)) {
    chain.push(current);
    current = field(current, 'cause');
  }
  return chain;
}

function field(value: unknown, key: string): unknown {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  return (value as Record<string, unknown>)[key];
}

/** Collapses whitespace to single spaces and keeps the line short. */
export function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_MESSAGE ? `${flat.slice(0, MAX_MESSAGE - 1)}…` : flat;
}
