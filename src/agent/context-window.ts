import type { Message, PlanItem } from '../conversation/message';
import { messageImageTokens } from '../llm/image-tokens';
import { checklistText } from '../tools/plan';
import { truncateOutput } from '../tools/truncate-output';

/** How {@link fitToWindow} measures a request and what it may leave out. */
export interface FitOptions {
  /** Tokens the request may hold: the context window minus the reply's reserve. */
  budget: number;
  /**
   * Counts the tokens of a text (a real tokenizer, or an estimate). Called as little as
   * possible: each message's count is cached for this function, keyed by the message object.
   */
  countTokens: (text: string) => number;
  /** Tokens added per message for the chat format (default 4). */
  perMessage?: number;
  /** The most recent messages that are never shrunk or dropped (default 6). */
  keepRecent?: number;
  /** Tool results longer than this (tokens) are shrunk first, oldest first (default 1000). */
  shrinkAbove?: number;
}

/** The messages of one request, and what was done to make them fit. */
export interface FitResult {
  /** What to send. The input is never mutated: shrunk messages and the note on left-out ones are new objects. */
  messages: Message[];
  /** Their count: each message's text plus `perMessage`. */
  tokens: number;
  /** Tool results in `messages` that were cut to head and tail. */
  shrunk: number;
  /** Messages of the log left out. */
  dropped: number;
  /** False only when even the pinned messages and the kept recent ones exceed the budget. */
  fits: boolean;
}

/** The defaults of the optional {@link FitOptions}. */
export const DEFAULT_FIT_OPTIONS: Readonly<Required<Pick<FitOptions, 'perMessage' | 'keepRecent' | 'shrinkAbove'>>> = {
  perMessage: 4,
  keepRecent: 6,
  shrinkAbove: 1000,
};

/** Lines and characters a shrunk tool result keeps from each end (whichever limit is reached first). */
const SHRINK_LINES = 40;
const SHRINK_CHARS = 2000;

/**
 * Chooses the messages of one request so that they fit `budget` tokens, from a session log
 * that may be far longer than the model's context window. Pure: no I/O, no clock; the same
 * log and options always give the same result.
 *
 * A message costs `countTokens(content) + perMessage` tokens (an assistant's native calls are
 * counted through their `@name(id): {json}` lines in its text), plus its images' tokens
 * (`meta.images`, see `imageTokens`).
 *
 * 1. **Under budget**, the log is returned as it is (a new array of the same message objects).
 * 2. **Never touched**: the system prompt (the run of system messages at the start that are
 *    not tool results), any message marked `pinned`, the first user message (the task) and
 *    the last `keepRecent` messages. If the last `keepRecent` start inside a step, the whole
 *    step is kept, so no result loses its call.
 * 3. **Shrink**: tool results outside those, longer than `shrinkAbove` tokens, are cut,
 *    oldest first, to their first and last 40 lines (at most 2,000 characters each way) with
 *    the marker of `truncateOutput` between them saying how much was left out and, when
 *    `meta.fullOutput` is set, a last line naming the file that holds the whole output; a
 *    result with images keeps its text whole and loses its images instead, with a line
 *    naming them. It
 *    stops as soon as the request fits. A result that would not get shorter is left as it is.
 * 4. **Drop**: then whole steps are left out, oldest first, until the request fits. A step is
 *    an assistant message with the system messages that follow it (its tool results and any
 *    notices); every other message is a step on its own. Steps holding a never-touched
 *    message stay. So native calls keep their results and results their calls. A summary of
 *    earlier turns (`meta.compaction`; the caller puts it in place of the turns it stands
 *    for) is left out last, only once every other step that may go is gone. One system
 *    message, `[<n> earlier messages were left out to fit the context window; the full log is
 *    kept in the session.]`, stands where the first left-out message was (with its
 *    timestamp), and is counted. Results shrunk in step 3 and dropped here are not counted in
 *    `shrunk`. If the note lands right after the system prompt, a history planner reads it
 *    as part of that prompt.
 * 5. **Cannot fit**: when even the never-touched messages exceed the budget, every step that
 *    may go is left out and `fits` is false, so the caller can decide (compact, or stop).
 *
 * Work is linear in the log's length. `countTokens` is called once per message object for
 * the life of that object (cached per `countTokens` function in a WeakMap, so a log that only
 * grows costs one count per new message), once per shrunk copy (which is cached too, per
 * original), and for the note on left-out messages once per distinct note text. The note is
 * counted at each number of left-out messages where it could fit (a few at most, as its
 * count shifts by whole steps); those texts are cached too, so a log growing by a step per
 * call usually adds one note count per call. Messages must not be mutated after they were
 * counted: a changed text keeps its old count.
 *
 * Never throws: a `countTokens` that throws or returns something other than a finite number
 * from 0 is replaced, for that text, by an estimate of one token per four characters. A
 * budget that is not a number counts as 0; an option that is not a number from 0 (for
 * `perMessage`, a finite one) takes its default, and a fractional `keepRecent` is rounded down.
 */
export function fitToWindow(log: readonly Message[], options: FitOptions): FitResult {
  const budget = Number.isNaN(options.budget) ? 0 : options.budget;
  const perMessage = finiteFromZero(options.perMessage) ?? DEFAULT_FIT_OPTIONS.perMessage;
  const keepRecent = Math.floor(numberFromZero(options.keepRecent) ?? DEFAULT_FIT_OPTIONS.keepRecent);
  const shrinkAbove = numberFromZero(options.shrinkAbove) ?? DEFAULT_FIT_OPTIONS.shrinkAbove;
  const cache = countsFor(options.countTokens);
  const contentTokens = (message: Message): number => {
    const known = cache.get(message);
    if (known !== undefined) return known;
    const count = safeCount(options.countTokens, message.content) + messageImageTokens(message.meta?.images);
    cache.set(message, count);
    return count;
  };

  const costs = log.map((message) => contentTokens(message) + perMessage);
  let total = costs.reduce((sum, cost) => sum + cost, 0);
  if (total <= budget) return { messages: log.slice(), tokens: total, shrunk: 0, dropped: 0, fits: true };

  const shape = shapeOf(log, keepRecent);
  const copies = new Map<number, Message>();

  // Step one: shrink long tool results outside the kept parts, oldest first.
  for (let index = shape.promptEnd; index < shape.recentFrom && total > budget; index++) {
    const message = log[index];
    if (message === undefined || message.meta?.toolResult !== true || message.pinned === true) continue;
    if (contentTokens(message) <= shrinkAbove) continue;
    const copy = shrunkCopy(message);
    if (copy === undefined) continue;
    const cost = contentTokens(copy) + perMessage;
    const before = costs[index] ?? 0;
    if (cost >= before) continue;
    copies.set(index, copy);
    costs[index] = cost;
    total -= before - cost;
  }

  // Step two: drop whole steps, oldest first, with a note where they were. When the model's
  // latest checklist is among them, the note carries it: the model keeps its plan.
  const dropped = new Set<number>();
  let firstDropped = -1;
  let noteTokens = 0;
  const planIndex = log.findLastIndex((message) => message.meta?.plan !== undefined);
  const lostPlan = () => (dropped.has(planIndex) ? (log[planIndex]?.meta?.plan ?? []) : []);
  const noteCache = notesFor(options.countTokens);
  const noteCost = (count: number): number => {
    const text = noteText(count, lostPlan());
    let tokens = noteCache.get(text);
    if (tokens === undefined) {
      tokens = safeCount(options.countTokens, text);
      if (noteCache.size >= 64) noteCache.clear();
      noteCache.set(text, tokens);
    }
    return tokens + perMessage;
  };
  if (total > budget) {
    const order = [...shape.steps.filter((step) => !step.keep && !step.summary), ...shape.steps.filter((step) => !step.keep && step.summary)];
    for (const step of order) {
      for (let index = step.start; index < step.end; index++) {
        dropped.add(index);
        total -= costs[index] ?? 0;
      }
      if (firstDropped === -1 || step.start < firstDropped) firstDropped = step.start;
      // The note costs at least `perMessage`: count its text only when that could fit.
      if (total + perMessage <= budget && total + noteCost(dropped.size) <= budget) break;
    }
    if (dropped.size > 0) noteTokens = noteCost(dropped.size);
  }

  const messages: Message[] = [];
  let shrunk = 0;
  log.forEach((message, index) => {
    if (index === firstDropped) {
      messages.push({ role: 'system', content: noteText(dropped.size, lostPlan()), timestamp: message.timestamp });
    }
    if (dropped.has(index)) return;
    const copy = copies.get(index);
    if (copy !== undefined) shrunk++;
    messages.push(copy ?? message);
  });
  const tokens = total + noteTokens;
  return { messages, tokens, shrunk, dropped: dropped.size, fits: tokens <= budget };
}

/** The note that stands where `count` messages were left out, with the checklist they held when it has items. */
function noteText(count: number, plan: readonly PlanItem[]): string {
  const note = `[${count} earlier messages were left out to fit the context window; the full log is kept in the session.]`;
  return plan.length === 0 ? note : `${note}\nYour plan (the checklist of your last plan call, which was among them):\n${checklistText(plan)}`;
}

/** One step of the log: messages `start` to `end` (exclusive); `keep` when it may not be dropped; `summary` when it holds one. */
interface Step {
  start: number;
  end: number;
  keep: boolean;
  summary: boolean;
}

/** Where the untouchable parts of a log are, and its steps after the system prompt. */
interface LogShape {
  /** Index after the system prompt (the leading system messages that are not tool results). */
  promptEnd: number;
  /** Index of the first of the last `keepRecent` messages (never below `promptEnd`). */
  recentFrom: number;
  steps: Step[];
}

function shapeOf(log: readonly Message[], keepRecent: number): LogShape {
  let promptEnd = 0;
  while (promptEnd < log.length) {
    const message = log[promptEnd];
    if (message === undefined || message.role !== 'system' || message.meta?.toolResult === true) break;
    promptEnd++;
  }
  const recentFrom = Math.max(promptEnd, log.length - keepRecent);
  const steps: Step[] = [];
  let firstUserSeen = false;
  let current: Step | undefined;
  let currentIsTurn = false;
  for (let index = promptEnd; index < log.length; index++) {
    const message = log[index];
    if (message === undefined) continue;
    const continues = current !== undefined && currentIsTurn && message.role === 'system';
    if (!continues) {
      current = { start: index, end: index, keep: false, summary: false };
      currentIsTurn = message.role === 'assistant';
      steps.push(current);
    }
    if (current === undefined) continue;
    current.end = index + 1;
    const isTask = message.role === 'user' && !firstUserSeen;
    if (message.role === 'user') firstUserSeen = true;
    if (isTask || message.pinned === true || index >= recentFrom) current.keep = true;
    if (message.meta?.compaction !== undefined) current.summary = true;
  }
  return { promptEnd, recentFrom, steps };
}

/** A copy of a tool result cut to head and tail, or undefined when cutting would keep it all. Cached per message. */
function shrunkCopy(message: Message): Message | undefined {
  if (shrunkCopies.has(message)) return shrunkCopies.get(message) ?? undefined;
  const text = message.content;
  const headChars = headLimit(text);
  const tailChars = tailLimit(text);
  let copy: Message | null = null;
  const images = message.meta?.images ?? [];
  if (images.length > 0) {
    // An old result's images go first: each costs as much as a long output.
    const names = images.map((image) => image.name ?? image.file).join(', ');
    const { images: _images, ...meta } = message.meta ?? {};
    copy = { ...message, content: `${text}\n[${images.length === 1 ? 'The image' : 'The images'} of this result (${names}) ${images.length === 1 ? 'was' : 'were'} left out to fit the context window.]`, meta };
  } else if (text.length > headChars + tailChars) {
    let content = truncateOutput(text, { maxChars: headChars + tailChars, headChars, tailChars }).text;
    const path = message.meta?.fullOutput;
    if (path !== undefined && path !== '') {
      const where = `The full output is in ${path}.`;
      if (!content.endsWith(where)) content = `${content}${content.endsWith('\n') ? '' : '\n'}${where}`;
    }
    copy = { ...message, content };
  }
  shrunkCopies.set(message, copy);
  return copy ?? undefined;
}

/**
 * The head to keep, as `truncateOutput` reads it: the index of the 40th line break when it
 * comes within 2,000 characters (the cut then falls just after it), or else 2,000.
 */
function headLimit(text: string): number {
  let index = -1;
  for (let line = 0; line < SHRINK_LINES; line++) {
    index = text.indexOf('\n', index + 1);
    if (index === -1 || index >= SHRINK_CHARS) return SHRINK_CHARS;
  }
  return index;
}

/**
 * The tail to keep, as `truncateOutput` reads it: from the line break before the last 40
 * lines (it moves the cut just past that break) when within 2,000 characters, or else 2,000.
 * A final line break does not start a line.
 */
function tailLimit(text: string): number {
  let index = text.endsWith('\n') ? text.length - 1 : text.length;
  for (let line = 0; line < SHRINK_LINES; line++) {
    if (index <= 0) return SHRINK_CHARS;
    index = text.lastIndexOf('\n', index - 1);
    if (index === -1 || text.length - index > SHRINK_CHARS) return SHRINK_CHARS;
  }
  return text.length - index;
}

type Counter = (text: string) => number;

/** Content token counts, per counting function and message object. */
const contentCounts = new WeakMap<Counter, WeakMap<Message, number>>();
/** Token counts of the note on left-out messages, per counting function and text (at most 64 kept). */
const noteCounts = new WeakMap<Counter, Map<string, number>>();
/** Shrunk copies of tool results (null: cutting would keep the whole text). They depend on the message alone. */
const shrunkCopies = new WeakMap<Message, Message | null>();

function countsFor(counter: Counter): WeakMap<Message, number> {
  let counts = contentCounts.get(counter);
  if (counts === undefined) {
    counts = new WeakMap();
    contentCounts.set(counter, counts);
  }
  return counts;
}

function notesFor(counter: Counter): Map<string, number> {
  let counts = noteCounts.get(counter);
  if (counts === undefined) {
    counts = new Map();
    noteCounts.set(counter, counts);
  }
  return counts;
}

/** `counter(text)`, or one token per four characters when it throws or gives no finite count from 0. */
function safeCount(counter: Counter, text: string): number {
  try {
    const count = counter(text);
    if (typeof count === 'number' && Number.isFinite(count) && count >= 0) return count;
  } catch {
    // Fall through to the estimate.
  }
  return Math.ceil(text.length / 4);
}

/** `value` when it is a number from 0 (Infinity included), else undefined. */
function numberFromZero(value: number | undefined): number | undefined {
  return value !== undefined && value >= 0 ? value : undefined;
}

/** `value` when it is a finite number from 0, else undefined. */
function finiteFromZero(value: number | undefined): number | undefined {
  return value !== undefined && Number.isFinite(value) && value >= 0 ? value : undefined;
}
