/**
 * The OpenAI Responses API side of the fake model server (`fake-llm.ts`): a scripted reply
 * rendered as the event stream of `POST /v1/responses` with `stream: true`, and the checks the
 * real API makes of a request's input items before answering.
 *
 * Each output item streams as the API streams it: `response.output_item.added`, its own
 * events, `response.output_item.done` with the whole item. Thinking becomes a `reasoning`
 * item: its summary is streamed only when the request asks for one (`reasoning.summary`), and
 * its `encrypted_content` is sent only when `include` has `reasoning.encrypted_content`.
 */
import { callsAfter, halves, stopOf, type Frame, type IssuedState, type Rendered, type Script } from './fake-llm-script';
import { inputItems, type WireBody } from './fake-llm-wire';

/** What the renderer needs from the server: the request's index, and where to record issued state. */
export interface ResponsesContext {
  request: number;
  issue: (state: IssuedState) => void;
}

/** The include value that asks for reasoning items' encrypted content. */
export const ENCRYPTED_REASONING = 'reasoning.encrypted_content';

/** Renders a script as a Responses API event stream. */
export function renderResponses(script: Script, body: WireBody, context: ResponsesContext): Rendered {
  const stream = new ResponsesStream(script, body, context);
  stream.start();
  const after = callsAfter(script.steps);
  script.steps.forEach((step, index) => {
    if (step.kind === 'delay') stream.frames.push({ delay: step.ms });
    if (step.kind === 'text') stream.text(step.text);
    if (step.kind === 'end_message') stream.endMessage();
    if (step.kind === 'tool_call') stream.functionCall(step.id, step.name, step.args);
    if (step.kind === 'thinking') stream.reasoning(step.text, step.signature, after[index]);
    if (step.kind === 'redacted_thinking') stream.reasoning('', step.data, after[index]);
    if (step.kind === 'web_search') stream.webSearch(step.query);
  });
  const failedAt = stream.sequence;
  const finish = stream.finish();
  return { frames: stream.frames, finish, error: (type, message) => stream.failed(failedAt, type, message) };
}

/** The state of one stream being rendered: output items so far, and the next sequence number. */
class ResponsesStream {
  readonly frames: Frame[] = [];
  /** Sequence number of the next event. */
  sequence = 0;
  /** The finished output items, in order. */
  private readonly output: Record<string, unknown>[] = [];
  /** The message item being streamed, if text is open. */
  private message: { id: string; index: number; text: string } | undefined;
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private readonly wantsSummary: boolean;
  private readonly wantsEncrypted: boolean;

  constructor(
    private readonly script: Script,
    private readonly body: WireBody,
    private readonly context: ResponsesContext,
  ) {
    this.wantsSummary = typeof body.reasoning?.summary === 'string';
    this.wantsEncrypted = Array.isArray(body.include) && body.include.includes(ENCRYPTED_REASONING);
  }

  /** `response.created` and `response.in_progress`. */
  start(): void {
    this.push('response.created', { response: this.response('in_progress') });
    this.push('response.in_progress', { response: this.response('in_progress') });
  }

  /** One text delta, opening a message item if none is open. */
  text(delta: string): void {
    const message = (this.message ??= this.openMessage());
    message.text += delta;
    this.push('response.output_text.delta', { item_id: message.id, output_index: message.index, content_index: 0, delta, logprobs: [] });
  }

  /** The open message item done, if there is one; the next text opens a new item. */
  endMessage(): void {
    this.closeMessage(this.frames, 'completed');
  }

  /** A whole function call item, its arguments in two deltas. */
  functionCall(callId: string, name: string, args: string): void {
    this.closeMessage(this.frames, 'completed');
    const index = this.output.length;
    const id = `fc_fake_${this.context.request}_${index}`;
    const item = { id, type: 'function_call', status: 'in_progress', arguments: '', call_id: callId, name };
    this.push('response.output_item.added', { output_index: index, item });
    for (const delta of halves(args)) this.push('response.function_call_arguments.delta', { item_id: id, output_index: index, delta });
    this.push('response.function_call_arguments.done', { item_id: id, output_index: index, name, arguments: args });
    this.addDone({ ...item, status: 'completed', arguments: args });
  }

  /** A whole `web_search_call` item, as the API runs its hosted search. */
  webSearch(query: string): void {
    this.closeMessage(this.frames, 'completed');
    const index = this.output.length;
    const id = `ws_fake_${this.context.request}_${index}`;
    this.push('response.output_item.added', { output_index: index, item: { id, type: 'web_search_call', status: 'in_progress' } });
    for (const stage of ['in_progress', 'searching', 'completed']) this.push(`response.web_search_call.${stage}`, { item_id: id, output_index: index });
    this.addDone({ id, type: 'web_search_call', status: 'completed', action: { type: 'search', query } });
  }

  /** A whole reasoning item: summary `text` (if wanted and not empty), encrypted content `seal` (if asked for). */
  reasoning(text: string, seal: string, before: string | undefined): void {
    this.closeMessage(this.frames, 'completed');
    const index = this.output.length;
    const id = `rs_fake_${this.context.request}_${index}`;
    this.push('response.output_item.added', { output_index: index, item: { id, type: 'reasoning', summary: [] } });
    const summarised = this.wantsSummary && text !== '';
    if (summarised) this.summary(id, index, text);
    const summary = summarised ? [{ type: 'summary_text', text }] : [];
    this.addDone({ id, type: 'reasoning', summary, ...(this.wantsEncrypted ? { encrypted_content: seal } : {}) });
    if (this.wantsEncrypted) {
      this.context.issue({ request: this.context.request, format: 'responses', kind: 'reasoning', value: seal, itemId: id, ...(before ? { before } : {}) });
    }
  }

  /** The events after the steps of a finished stream: the open message closed, then `response.completed` (or `.incomplete`). */
  finish(): string[] {
    const incomplete = stopOf(this.script) === 'max_tokens';
    const frames: Frame[] = [];
    this.closeMessage(frames, incomplete ? 'incomplete' : 'completed');
    if (incomplete) {
      const response = this.response('incomplete', { incomplete_details: { reason: 'max_output_tokens' }, usage: this.usage() });
      this.push('response.incomplete', { response }, frames);
    } else {
      const response = this.response('completed', { completed_at: Math.floor(Date.now() / 1000), usage: this.usage() });
      this.push('response.completed', { response }, frames);
    }
    return frames.flatMap((frame) => ('data' in frame ? [frame.data] : []));
  }

  /** `response.failed` sent right after the steps, numbered `sequence`. */
  failed(sequence: number, code: string, message: string): string {
    const response = this.response('failed', { error: { code, message } });
    return frame('response.failed', { response }, sequence);
  }

  private summary(id: string, index: number, text: string): void {
    const where = { item_id: id, output_index: index, summary_index: 0 };
    this.push('response.reasoning_summary_part.added', { ...where, part: { type: 'summary_text', text: '' } });
    for (const delta of halves(text)) this.push('response.reasoning_summary_text.delta', { ...where, delta });
    this.push('response.reasoning_summary_text.done', { ...where, text });
    this.push('response.reasoning_summary_part.done', { ...where, part: { type: 'summary_text', text } });
  }

  private openMessage(): { id: string; index: number; text: string } {
    const index = this.output.length;
    const id = `msg_fake_${this.context.request}_${index}`;
    this.push('response.output_item.added', { output_index: index, item: { id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    this.push('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: outputText('') });
    return { id, index, text: '' };
  }

  private closeMessage(frames: Frame[], status: 'completed' | 'incomplete'): void {
    const message = this.message;
    if (!message) return;
    this.message = undefined;
    const where = { item_id: message.id, output_index: message.index, content_index: 0 };
    this.push('response.output_text.done', { ...where, text: message.text, logprobs: [] }, frames);
    this.push('response.content_part.done', { ...where, part: outputText(message.text) }, frames);
    this.addDone({ id: message.id, type: 'message', status, role: 'assistant', content: [outputText(message.text)] }, frames);
  }

  private addDone(item: Record<string, unknown>, frames = this.frames): void {
    this.push('response.output_item.done', { output_index: this.output.length, item }, frames);
    this.output.push(item);
  }

  private push(type: string, payload: Record<string, unknown>, frames = this.frames): void {
    frames.push({ data: frame(type, payload, this.sequence++) });
  }

  /** The response object, with the output items finished so far. */
  private response(status: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const body = this.body;
    return {
      id: `resp_fake_${this.context.request}`,
      object: 'response',
      created_at: this.createdAt,
      status,
      background: false,
      error: null,
      incomplete_details: null,
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      model: body.model ?? 'fake',
      output: [...this.output],
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: body.previous_response_id ?? null,
      reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
      store: body.store ?? true,
      temperature: body.temperature ?? 1,
      text: { format: { type: 'text' } },
      tool_choice: body.tool_choice ?? 'auto',
      tools: body.tools ?? [],
      top_p: body.top_p ?? 1,
      truncation: 'disabled',
      usage: null,
      metadata: {},
      ...extra,
    };
  }

  /** The usage as the Responses API reports it: cached tokens are counted in the input. */
  private usage(): Record<string, unknown> {
    const { input, output, cacheRead = 0, reasoning = 0 } = this.script.usage;
    return {
      input_tokens: input + cacheRead,
      input_tokens_details: { cached_tokens: cacheRead },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: reasoning },
      total_tokens: input + cacheRead + output,
    };
  }
}

function frame(type: string, payload: Record<string, unknown>, sequence: number): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...payload, sequence_number: sequence })}\n\n`;
}

function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/** Models the real API refuses encrypted reasoning for: those that do not reason. */
const NO_REASONING_MODEL = /^(gpt-4o|gpt-4\.1|gpt-5-chat)/;

/**
 * The 400 the real API gives a request it refuses, and the parameter it names; undefined when
 * it takes it. Refused: `include` asking a model that does not reason for encrypted reasoning;
 * a reasoning item without its encrypted content, which names an item nobody stored
 * (`store: false`); function calls and outputs that do not pair up by `call_id` (an output
 * must follow its call).
 */
export function responsesInputError(body: WireBody): { message: string; param: string } | undefined {
  const include = Array.isArray(body.include) ? body.include : [];
  if (include.includes(ENCRYPTED_REASONING) && NO_REASONING_MODEL.test(String(body.model))) {
    return { message: 'Encrypted content is not supported with this model.', param: 'include' };
  }
  for (const item of inputItems(body)) {
    if (item.type === 'reasoning' && typeof item.encrypted_content !== 'string' && body.store === false) {
      return { message: `Item with id '${String(item.id)}' not found. Items are not persisted when \`store\` is set to false.`, param: 'input' };
    }
  }
  const unpaired = unpairedCall(body);
  return unpaired === undefined ? undefined : { message: unpaired, param: 'input' };
}

/** The message for function calls and outputs that do not pair up, or undefined when they do. */
function unpairedCall(body: WireBody): string | undefined {
  const answered = new Map<string, boolean>();
  for (const item of inputItems(body)) {
    const callId = String(item.call_id);
    if (item.type === 'function_call') answered.set(callId, answered.get(callId) ?? false);
    if (item.type === 'function_call_output') {
      if (!answered.has(callId)) return `No tool call found for function call output with call_id ${callId}.`;
      answered.set(callId, true);
    }
  }
  const unanswered = [...answered].find(([, done]) => !done);
  return unanswered ? `No tool output found for function call ${unanswered[0]}.` : undefined;
}
