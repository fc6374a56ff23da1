/**
 * Checks of what a client sent the fake model server (`fake-llm.ts`): that native tool calls
 * pair up with their results, and that thinking state handed out in a reply came back in a
 * later request unchanged and where it belongs.
 */
import { field, type IssuedState } from './fake-llm-script';
import { inputItems, type RecordedRequest, type WireBody } from './fake-llm-wire';

/**
 * Checks the native tool calls of a recorded request (any format): every call (in an
 * assistant message, or a Responses `function_call` item) has exactly one result with its id,
 * after it, and no result lacks its call. Returns the problems found, one line each; empty
 * when all is well. The fake server runs this on every request and answers 400 when it finds
 * any, as the real APIs do.
 */
export function checkToolCallPairing(request: Pick<RecordedRequest, 'body'>): string[] {
  const problems: string[] = [];
  const calls = new Map<string, number>();
  for (const { callIds, resultIds } of toolTraffic(request.body)) {
    for (const id of callIds) {
      if (calls.has(id)) problems.push(`tool call ${id} appears twice`);
      calls.set(id, 0);
    }
    for (const id of resultIds) {
      const seen = calls.get(id);
      if (seen === undefined) problems.push(`result for ${id} has no call before it`);
      else calls.set(id, seen + 1);
    }
  }
  for (const [id, count] of calls) {
    if (count !== 1) problems.push(`tool call ${id} has ${count} results`);
  }
  return problems;
}

/** The tool call ids and result ids of each message (or input item) of a body, in order. */
function toolTraffic(body: WireBody): { callIds: string[]; resultIds: string[] }[] {
  const items = inputItems(body).map((item) => ({
    callIds: item.type === 'function_call' ? [String(item.call_id)] : [],
    resultIds: item.type === 'function_call_output' ? [String(item.call_id)] : [],
  }));
  const messages = (body.messages ?? []).map((message) => {
    const blocks = Array.isArray(message.content) ? (message.content as unknown[]) : [];
    return {
      callIds: [
        ...(message.tool_calls ?? []).map((call) => call.id),
        ...blocks.filter((block) => field(block, 'type') === 'tool_use').map((block) => String(field(block, 'id'))),
      ],
      resultIds: [
        ...(message.role === 'tool' ? [String(message.tool_call_id)] : []),
        ...blocks.filter((block) => field(block, 'type') === 'tool_result').map((block) => String(field(block, 'tool_use_id'))),
      ],
    };
  });
  return [...messages, ...items];
}

/** Where a piece of state sits in a body: message and block (Anthropic), or item (Responses, block 0). */
type Position = { message: number; block: number };

/**
 * Checks that each expected piece of issued thinking state (from `server.issued`) came back
 * in `request` byte for byte and in place:
 * - Anthropic: a `thinking` block with the exact signature and thinking text (or a
 *   `redacted_thinking` block with the exact data) in an assistant message, before the
 *   `tool_use` block of the call it preceded, in the same message;
 * - Responses: a `reasoning` input item with the exact `encrypted_content`, before the
 *   `function_call` item of the call it preceded, with nothing from another turn (a user
 *   message, a function call output) between them.
 * State issued by the same reply must also come back in the order it was issued. Returns the
 * problems found, one line each; empty when all is well.
 */
export function checkThinkingReturned(request: Pick<RecordedRequest, 'body'>, expected: readonly IssuedState[]): string[] {
  const problems: string[] = [];
  const found = new Map<IssuedState, Position>();
  for (const state of expected) {
    const place = state.format === 'anthropic' ? anthropicPlace(request.body, state) : responsesPlace(request.body, state);
    if (typeof place === 'string') problems.push(place);
    else found.set(state, place);
  }
  problems.push(...orderProblems(expected, found));
  return problems;
}

/** Finds an Anthropic thinking block in the body; a problem line when it is missing or misplaced. */
function anthropicPlace(body: WireBody, state: IssuedState): Position | string {
  const messages = body.messages ?? [];
  for (const [message, { role, content }] of messages.entries()) {
    if (role !== 'assistant' || !Array.isArray(content)) continue;
    const block = content.findIndex((candidate) => sameThinking(candidate, state));
    if (block < 0) continue;
    if (state.before === undefined) return { message, block };
    const call = content.findIndex((candidate) => field(candidate, 'type') === 'tool_use' && field(candidate, 'id') === state.before);
    if (call < 0) return `${describe(state)} is not in the assistant message with tool call ${state.before}`;
    if (call < block) return `${describe(state)} comes after tool call ${state.before}`;
    return { message, block };
  }
  return `${describe(state)} did not come back unchanged`;
}

function sameThinking(block: unknown, state: IssuedState): boolean {
  if (state.kind === 'redacted_thinking') return field(block, 'type') === 'redacted_thinking' && field(block, 'data') === state.value;
  return field(block, 'type') === 'thinking' && field(block, 'signature') === state.value && field(block, 'thinking') === state.text;
}

/** Finds a Responses reasoning item in the body's input; a problem line when it is missing or misplaced. */
function responsesPlace(body: WireBody, state: IssuedState): Position | string {
  const items = inputItems(body);
  const index = items.findIndex((item) => item.type === 'reasoning' && item.encrypted_content === state.value);
  if (index < 0) return `${describe(state)} did not come back unchanged`;
  if (state.before === undefined) return { message: index, block: 0 };
  const call = items.findIndex((item) => item.type === 'function_call' && item.call_id === state.before);
  if (call < 0) return `${describe(state)}: function call ${state.before} is not in the input`;
  if (call < index) return `${describe(state)} comes after function call ${state.before}`;
  const between = items.slice(index + 1, call).find((item) => !['reasoning', 'function_call'].includes(item.type ?? 'message') && item.role !== 'assistant');
  if (between) return `${describe(state)} is separated from function call ${state.before} by a ${between.type ?? 'message'} item`;
  return { message: index, block: 0 };
}

/** Problems with the order of state found from the same reply. */
function orderProblems(expected: readonly IssuedState[], found: Map<IssuedState, Position>): string[] {
  const problems: string[] = [];
  const last = new Map<number, { state: IssuedState; at: Position }>();
  for (const state of expected) {
    const at = found.get(state);
    if (!at) continue;
    const previous = last.get(state.request);
    if (previous && !isBefore(previous.at, at)) problems.push(`${describe(previous.state)} and ${describe(state)} came back out of order`);
    last.set(state.request, { state, at });
  }
  return problems;
}

function isBefore(a: Position, b: Position): boolean {
  return a.message < b.message || (a.message === b.message && a.block < b.block);
}

/** Names a piece of issued state in a problem line. */
function describe(state: IssuedState): string {
  const value = state.value.length > 24 ? `${state.value.slice(0, 24)}…` : state.value;
  return `${state.kind} ${value} (reply ${state.request})`;
}
