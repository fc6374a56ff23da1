/**
 * The output of one command as read from a pty: taken up to the command's status marker,
 * turned into plain text (escape sequences removed, line endings normalised, overwrites
 * resolved) and bounded in memory (head and tail kept).
 */

/**
 * A start marker `RS nonce:run RS`, a status marker `RS nonce:status RS` or a prompt marker
 * `RS nonce RS` (see {@link CommandCapture}).
 */
const MARKER = /\x1e([0-9a-f]{32})(?::(?:(\d+)|(run)))?\x1e/g;
/** The start of a marker cut off by the end of a chunk. */
const PARTIAL_MARKER = /^\x1e(?:[0-9a-f]{0,32}|[0-9a-f]{32}:(?:\d*|ru?n?))$/;
const MARKER_MAX_LENGTH = 1 + 32 + 1 + 3 + 1;

/** A complete escape sequence starting at the cursor (sticky). */
const COMPLETE_ESCAPE = new RegExp(
  [
    '\\x1b\\[[0-?]*[ -/]*[@-~]', // CSI: colours, cursor moves, erase, private modes
    // OSC: window title, hyperlinks; ends with BEL or ST. A string sequence never spans a line
    // here: a newline ends it too, so that stray bytes (binary output) cannot swallow the rest.
    '\\x1b\\][^\\x07\\x1b\\n]*(?:\\x07|\\x1b\\\\|(?=\\n))',
    '\\x1b[PX^_][^\\x1b\\n]*(?:\\x1b\\\\|(?=\\n))', // DCS, SOS, PM, APC; end with ST (or a newline)
    // Any other ESC sequence (charset selection, keypad modes, save cursor...). The final byte
    // excludes the introducers above so that a CSI cut in two is not mistaken for one.
    '\\x1b[ -/]*[0-OQ-WYZ\\\\`-~]',
  ].join('|'),
  'y',
);

/** The start of an escape sequence that runs to the end of the text and may still complete. */
const PARTIAL_ESCAPE = /\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b\n]*\x1b?|[PX^_][^\x1b\n]*\x1b?|[ -/]*)$/y;

/** Control characters that only make noise in captured text: bell, shift out, shift in. */
const NOISE_CONTROLS = /[\x07\x0e\x0f]/g;

/** An unterminated sequence longer than this is taken as garbage rather than held back. */
const MAX_HELD_ESCAPE = 4096;

/**
 * Streaming cleaner for text read from a pty. `push` accepts chunks as they arrive and returns
 * the text that is settled so far; an escape sequence or a CR LF pair cut between two chunks is
 * held back until the next chunk (or `end`), so chunk boundaries never change the result.
 *
 * Guarantees: CSI, OSC, DCS/SOS/PM/APC and other ESC sequences are removed, as are BEL, SO and
 * SI; a string sequence (OSC, DCS…) that meets a newline before its terminator ends there; CR LF (and the CR CR LF that `onlcr` makes of a program's own CR LF) becomes LF. A bare
 * CR and backspaces are kept, so a live display can still render progress bars; resolve them
 * with {@link resolveOverwrites} when the text is final. Text is never reordered; only what a
 * terminal would take as part of an escape sequence is dropped.
 */
export class TerminalTextStream {
  private held = '';

  /** Takes the next chunk; returns the text that can be shown now (possibly empty). */
  push(chunk: string): string {
    const text = this.held + chunk;
    this.held = '';
    let out = '';
    let cursor = 0;
    while (cursor < text.length) {
      const escape = text.indexOf('\x1b', cursor);
      if (escape === -1) {
        out += text.slice(cursor);
        break;
      }
      out += text.slice(cursor, escape);
      COMPLETE_ESCAPE.lastIndex = escape;
      if (COMPLETE_ESCAPE.test(text)) {
        cursor = COMPLETE_ESCAPE.lastIndex;
        continue;
      }
      PARTIAL_ESCAPE.lastIndex = escape;
      if (text.length - escape <= MAX_HELD_ESCAPE && PARTIAL_ESCAPE.test(text)) {
        this.held = text.slice(escape);
        break;
      }
      cursor = escape + 1; // a lone ESC: drop it, keep what follows as text
    }
    return this.settle(out);
  }

  /** Ends the stream: returns what was held back, minus an escape sequence that never ended. */
  end(): string {
    const held = this.held;
    this.held = '';
    const escape = held.indexOf('\x1b');
    return escape === -1 ? held : held.slice(0, escape);
  }

  private settle(text: string): string {
    let clean = text.replace(NOISE_CONTROLS, '').replace(/\r+\n/g, '\n');
    const trailingCr = /\r+$/.exec(clean);
    if (trailingCr) {
      // A CR at the end may be the first half of a CR LF split across chunks.
      this.held = trailingCr[0] + this.held;
      clean = clean.slice(0, trailingCr.index);
    }
    return clean;
  }
}

/** Cleans a complete piece of terminal output in one go (see {@link TerminalTextStream}). */
export function stripTerminalCodes(text: string): string {
  const stream = new TerminalTextStream();
  return stream.push(text) + stream.end();
}

/**
 * Resolves overwrites line by line the simple way an agent wants to read them: a backspace
 * erases the character before it, and a bare carriage return starts the line over, so only the
 * text after the last CR of a line is kept (a progress bar collapses to its final state; a
 * shorter text written over a longer one does not leave the longer one's tail behind). A CR at
 * the very end of a line is ignored. Expects LF line endings.
 */
export function resolveOverwrites(text: string): string {
  if (!text.includes('\r') && !text.includes('\b')) return text;
  return text
    .split('\n')
    .map((line) => {
      const trimmed = line.replace(/\r+$/, '');
      const lastCr = trimmed.lastIndexOf('\r');
      return applyBackspaces(lastCr === -1 ? trimmed : trimmed.slice(lastCr + 1));
    })
    .join('\n');
}

function applyBackspaces(line: string): string {
  if (!line.includes('\b')) return line;
  const kept: string[] = [];
  for (const char of line) {
    if (char === '\b') kept.pop();
    else kept.push(char);
  }
  return kept.join('');
}

export interface CommandCaptureOptions {
  /** The nonce of the command: its status marker ends the capture. */
  nonce: string;
  /**
   * Nonces that bash's prompt may hold while the command runs (those of earlier commands). Once
   * `interrupted` is called, a prompt with one of them, or with `nonce`, also ends the capture.
   */
  prompts?: readonly string[];
  /** Cap on the text kept in memory, in UTF-8 bytes. */
  maxBytes: number;
  /** The line typed into the pty: stripped from the start of the output if the terminal echoes it. */
  echo?: string;
  /** Receives clean text as it arrives. */
  onOutput?: (chunk: string) => void;
}

/**
 * Collects what a pty prints for one command. Raw chunks go in through `push`. Three kinds of
 * marker are taken out of the stream, all `RS <32 hex digits> RS` with the nonce of a command:
 * the start marker `RS nonce:run RS`, printed before the command runs (`started`), the status
 * marker `RS nonce:status RS`, printed after it, and the prompt marker `RS nonce RS`, which
 * bash prints whenever it waits for a command line.
 *
 * The capture is `done` at the command's status marker (the status is kept), or, after
 * `interrupted`, at a prompt marker of a known nonce: bash is back at its prompt, so whatever
 * ran was abandoned. Anything after the end is ignored. Markers with unknown nonces are
 * ordinary output; known markers that do not end the capture are dropped. A marker split
 * between chunks is held back until it can be recognised, so no part of it reaches `onOutput`.
 */
export class CommandCapture {
  private readonly nonce: string;
  private readonly prompts: ReadonlySet<string>;
  private promptEnds = false;
  private running = false;
  private finished = false;
  private exitStatus: number | undefined;
  private raw = '';
  private echo: string | undefined;
  private readonly text = new TerminalTextStream();
  private kept: HeadTailBuffer;
  private readonly maxBytes: number;
  private readonly notices = new JobNoticeFilter();
  private onOutput: ((chunk: string) => void) | undefined;

  constructor(options: CommandCaptureOptions) {
    this.nonce = options.nonce;
    this.prompts = new Set([options.nonce, ...(options.prompts ?? [])]);
    this.echo = options.echo;
    this.maxBytes = options.maxBytes;
    this.kept = new HeadTailBuffer(options.maxBytes);
    this.onOutput = options.onOutput;
  }

  /** Whether the capture has ended (status marker, or a prompt after `interrupted`). */
  get done(): boolean {
    return this.finished;
  }

  /** Whether the command's start marker arrived: bash has read its line and runs it. */
  get started(): boolean {
    return this.running;
  }

  /** The status printed after the command, if its status marker arrived. */
  get status(): number | undefined {
    return this.exitStatus;
  }

  /** Replaces the receiver of clean text (undefined: none, the text is only kept). */
  listen(onOutput: ((chunk: string) => void) | undefined): void {
    this.onOutput = onOutput;
  }

  /** The command was interrupted: from now on, bash's prompt also ends the capture. */
  interrupted(): void {
    this.promptEnds = true;
  }

  push(data: string): void {
    if (this.finished) return;
    let raw = this.raw + data;
    this.raw = '';
    if (this.echo !== undefined) {
      // bash's prompt after the previous command can arrive just before the echo of this one.
      const lead = this.leadingPromptsLength(raw);
      const body = raw.slice(lead);
      const echoed = this.echo;
      const maybeEcho = body.length < echoed.length + 2 && `${echoed}\r\n`.startsWith(body);
      if (maybeEcho || PARTIAL_MARKER.test(body)) {
        this.raw = raw;
        return;
      }
      if (body.startsWith(echoed)) raw = raw.slice(0, lead) + body.slice(echoed.length).replace(/^\r?\n/, '');
      this.echo = undefined;
    }
    this.take(raw, true);
  }

  /**
   * Takes the markers out of `raw` and emits the text around them, up to the end of the
   * command. With `holdPartial`, the start of a marker cut off at the end is kept for the next chunk.
   */
  private take(raw: string, holdPartial: boolean): void {
    let cursor = 0;
    for (const match of raw.matchAll(MARKER)) {
      const [marker, nonce = '', status, run] = match;
      const prompt = status === undefined && run === undefined;
      const known = prompt ? this.prompts.has(nonce) : nonce === this.nonce;
      if (!known) continue;
      this.emit(raw.slice(cursor, match.index));
      cursor = match.index + marker.length;
      if (run !== undefined) {
        this.running = true;
        continue;
      }
      if (status !== undefined) this.exitStatus = Number(status);
      if (status !== undefined || this.promptEnds) {
        this.finished = true;
        return;
      }
    }
    const rest = raw.slice(cursor);
    const partial = holdPartial ? rest.lastIndexOf('\x1e') : -1;
    if (partial !== -1 && rest.length - partial < MARKER_MAX_LENGTH && PARTIAL_MARKER.test(rest.slice(partial))) {
      this.raw = rest.slice(partial);
      this.emit(rest.slice(0, partial));
      return;
    }
    this.emit(rest);
  }

  /** Length of the known prompt markers at the very start of `raw`. */
  private leadingPromptsLength(raw: string): number {
    const prompt = /\x1e([0-9a-f]{32})\x1e/y;
    let at = 0;
    for (;;) {
      prompt.lastIndex = at;
      const match = prompt.exec(raw);
      if (!match || !this.prompts.has(match[1] ?? '')) return at;
      at = prompt.lastIndex;
    }
  }

  /** The text captured so far, final: overwrites resolved, with the dropped byte count. */
  finish(): { output: string; droppedBytes: number } {
    const held = this.raw;
    this.raw = '';
    // What was held back may be a known prompt alone (bash exited before the echo could show): it is no output.
    this.echo = undefined;
    if (!this.finished) this.take(held, false);
    this.append(this.text.end());
    return this.drain();
  }

  /**
   * Hands out the text kept so far (overwrites resolved) and starts keeping afresh, while the
   * capture goes on: for a command that waits for input, whose later output is a new answer.
   * A line held back because it might become a job notice is let out.
   */
  drain(): { output: string; droppedBytes: number } {
    this.keep(this.notices.end());
    const { text, droppedBytes } = this.kept.result();
    this.kept = new HeadTailBuffer(this.maxBytes);
    return { output: resolveOverwrites(text), droppedBytes };
  }

  private emit(raw: string): void {
    if (raw) this.append(this.text.push(raw));
  }

  private append(text: string): void {
    if (text) this.keep(this.notices.push(text));
  }

  private keep(text: string): void {
    if (!text) return;
    this.kept.append(text);
    this.onOutput?.(text);
  }
}

/**
 * A job notice of bash's job control: `[1]+  Done   sleep 1`, `[2]-  Exit 3   make`,
 * `[1]+  Killed   server`, `[3]   Terminated   …`. bash prints these on its stderr when a
 * background job ends during a later command; they are not output of that command.
 */
const JOB_NOTICE =
  /^\[\d+\][+\- ] +(?:Done(?:\(\d+\))?|Exit \d+|Running|Stopped(?:\([A-Z]+\))?|[A-Z][a-z]+(?: [A-Za-z0-9]+)*(?: \(core dumped\))?) +\S.*$/;
/** bash prints an empty line before the notice of a job that stopped (a background job reading the terminal). */
const STOPPED_NOTICE = /^\[\d+\][+\- ] +Stopped/;
/** A line start that may still grow into a job notice. */
const JOB_NOTICE_START = /^\[\d*(?:\][+\- ]?(?: +[^\n]*)?)?$/;
const MAX_NOTICE_LENGTH = 4096;

/**
 * Drops bash's job notices (see {@link JOB_NOTICE}) from clean text given in chunks: whole lines
 * only, and the empty line bash puts before a `Stopped` notice. A line start that may still
 * become a notice, and an empty line that may precede one, are held back until the next line
 * shows what they are (or `end`). Job control itself stays on, since it puts each command in its
 * own process group, which interrupting relies on.
 */
export class JobNoticeFilter {
  private held = '';
  /** Whether the next text (the held text first) starts a line. */
  private atLineStart = true;

  push(chunk: string): string {
    const text = this.held + chunk;
    this.held = '';
    const lastNewline = text.lastIndexOf('\n');
    const lines = lastNewline === -1 ? [] : text.slice(0, lastNewline).split('\n');
    const tail = text.slice(lastNewline + 1);
    const startsLine = (index: number): boolean => index > 0 || this.atLineStart;
    const tailStartsLine = startsLine(lines.length);
    const tailMayBeNotice = tailStartsLine && tail.length < MAX_NOTICE_LENGTH && JOB_NOTICE_START.test(tail);
    const last = lines.length - 1;
    const holdBlank = last >= 0 && lines[last] === '' && startsLine(last) && (tail === '' || tailMayBeNotice);
    let out = '';
    const end = holdBlank ? last : lines.length;
    for (let i = 0; i < end; i++) {
      const line = lines[i] ?? '';
      const next = lines[i + 1];
      const notice = startsLine(i) && JOB_NOTICE.test(line);
      const blankBeforeStop = startsLine(i) && line === '' && next !== undefined && i + 1 < end && STOPPED_NOTICE.test(next);
      if (!notice && !blankBeforeStop) out += `${line}\n`;
    }
    if (holdBlank || tailMayBeNotice) {
      this.held = `${holdBlank ? '\n' : ''}${tail}`;
      this.atLineStart = true;
      return out;
    }
    this.atLineStart = tail === '' && tailStartsLine;
    return out + tail;
  }

  /** Lets out what is held: the stream ended, or a program waits after printing it. */
  end(): string {
    const held = this.held;
    this.held = '';
    if (held) this.atLineStart = held.endsWith('\n');
    return held;
  }
}

/**
 * Text bounded to about `limit` UTF-8 bytes: the first half of the limit is kept from the start,
 * the second half from the end, and the bytes in between are only counted. Memory stays
 * proportional to the limit, however much is appended.
 */
export class HeadTailBuffer {
  private head = '';
  private headBytes = 0;
  private headFull = false;
  private readonly tail: { text: string; bytes: number }[] = [];
  private tailBytes = 0;
  private totalBytes = 0;
  private readonly headLimit: number;
  private readonly tailLimit: number;

  constructor(limit: number) {
    this.headLimit = Math.floor(Math.max(0, limit) / 2);
    this.tailLimit = Math.max(0, limit) - this.headLimit;
  }

  append(text: string): void {
    let rest = text;
    let bytes = Buffer.byteLength(rest);
    this.totalBytes += bytes;
    if (!this.headFull) {
      if (this.headBytes + bytes <= this.headLimit) {
        this.head += rest;
        this.headBytes += bytes;
        return;
      }
      const [first, second] = splitAtByte(rest, this.headLimit - this.headBytes);
      const firstBytes = Buffer.byteLength(first);
      this.head += first;
      this.headBytes += firstBytes;
      this.headFull = true;
      rest = second;
      bytes -= firstBytes;
    }
    if (!rest) return;
    this.tail.push({ text: rest, bytes });
    this.tailBytes += bytes;
    while (this.tail.length > 1 && this.tailBytes - (this.tail[0]?.bytes ?? 0) >= this.tailLimit) {
      this.tailBytes -= this.tail.shift()?.bytes ?? 0;
    }
  }

  /** The kept text; when bytes were dropped, a line in the middle says how many. */
  result(): { text: string; droppedBytes: number } {
    const tail = keepLastBytes(this.tail.map((chunk) => chunk.text).join(''), this.tailLimit);
    const droppedBytes = this.totalBytes - this.headBytes - Buffer.byteLength(tail);
    if (droppedBytes === 0) return { text: this.head + tail, droppedBytes };
    return { text: `${this.head}\n[... ${droppedBytes} bytes of output dropped ...]\n${tail}`, droppedBytes };
  }
}

/** Splits at most `bytes` UTF-8 bytes off the front, never inside a character. */
function splitAtByte(text: string, bytes: number): [string, string] {
  const buffer = Buffer.from(text);
  let end = Math.max(0, bytes);
  while (end > 0 && end < buffer.length && ((buffer[end] ?? 0) & 0xc0) === 0x80) end--;
  return [buffer.subarray(0, end).toString(), buffer.subarray(end).toString()];
}

/** The longest end of `text` that fits in `bytes` UTF-8 bytes, never starting inside a character. */
function keepLastBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  if (buffer.length <= bytes) return text;
  let start = buffer.length - Math.max(0, bytes);
  while (start < buffer.length && ((buffer[start] ?? 0) & 0xc0) === 0x80) start++;
  return buffer.subarray(start).toString();
}
