import { StringDecoder } from 'node:string_decoder';
import { defaultContinuation, displayWidth, indexAtColumn, isPrintable, TAB } from './editor-layout';
import { EditorScreen, HIDE_CURSOR, SHOW_CURSOR, type Prompts } from './editor-screen';
import type { InputHistory } from './input-history';
import { CONTROL_KEYS, heldBack, parseEscape, type Action } from './terminal-keys';
import { stripAnsi, visibleWidth, type Style } from './terminal-style';
import { lineEnd, lineStart, nextBoundary, previousBoundary, spaceWordStart, wordEnd, wordStart } from './text-boundaries';

/**
 * The prompt of the interactive chat: a line editor of its own on a raw-mode terminal.
 *
 * Keys are decoded from the bytes (see `terminal-keys.ts`) rather than by
 * `readline.emitKeypressEvents`. On Node 20 that decoder does report bracketed paste (a
 * `paste-start` / `paste-end` key with no text), but it hands out one key at a time, which hides
 * where a data chunk ends (the paste-burst rule below needs that), splits `\r\n` into two Enter
 * keys, and spills unknown sequences (a mouse report, say) as ordinary characters. Reading the
 * bytes ourselves covers both bracketed paste and the lack of it.
 *
 * Each data chunk is applied as a whole and rendered once: a paste of ten thousand characters
 * is one redraw, and one insertion per run of plain text.
 */

/** What one read of the editor came to. */
export type EditorResult =
  /** Enter: the text as typed (it may hold `\n` for multi-line input), not trimmed. */
  | { kind: 'line'; text: string }
  /** Ctrl-C: what was in the buffer. The caller decides: clear it, or exit after a second one on an empty prompt. */
  | { kind: 'interrupt'; text: string }
  /** Ctrl-D on an empty buffer, the input stream ended or failed, or the editor was closed. */
  | { kind: 'eof' };

/** The streams and helpers a `LineEditor` works with. */
export interface LineEditorOptions {
  /** Where keys come from; a terminal in raw mode, or anything readable for the plain fallback. */
  input: NodeJS.ReadStream | (NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(mode: boolean): unknown });
  /** Where the prompt is drawn. `columns` (default 80) wraps the text; `rows`, when known, bounds the drawing. */
  output: NodeJS.WritableStream & { columns?: number; rows?: number; isTTY?: boolean };
  /** Paints the default continuation prompt and the `^C` mark. */
  style: Style;
  /** Walked with Up and Down; each submitted line typed at a terminal is added to it. Absent: no history. */
  history?: InputHistory;
}

/** Options of one `LineEditor.read`. */
export interface ReadOptions {
  /** Text to start with, the cursor at its end. */
  initial?: string;
  /** The prompt before each line after the first; default `… ` right-aligned to the prompt's width. */
  continuation?: string;
}

/** How long an escape sequence cut at the end of a chunk waits for the rest before it is dropped. */
const ESCAPE_TIMEOUT_MS = 100;
const PASTE_ON = '\x1b[?2004h';
const PASTE_OFF = '\x1b[?2004l';
const PASTE_END = '\x1b[201~';

/** Reads entries from a person at a terminal, one `read` at a time. */
export class LineEditor {
  readonly #input: LineEditorOptions['input'];
  readonly #output: LineEditorOptions['output'];
  readonly #style: Style;
  readonly #history: InputHistory | undefined;
  #closed = false;
  /** Ends the read in progress (terminal or plain) with a result, and `mark` after the text (`^C`); null between reads. */
  #stop: ((result: EditorResult, mark?: string) => void) | null = null;
  /** Text killed by Ctrl-U/K/W and friends, for Ctrl-Y; kept across reads. */
  #killed = '';

  // Plain (non-terminal) reading: text read past the last line, and whether the stream ended.
  readonly #plainDecoder = new StringDecoder('utf8');
  #plainText = '';
  #plainEnded = false;

  // State of one terminal read.
  #decoder = new StringDecoder('utf8');
  #prompts: Prompts = { first: { text: '', width: 0 }, rest: { text: '', width: 0 } };
  #text = '';
  #cursor = 0;
  /** The column Up/Down aim for while moving through lines, so short lines do not lose it. */
  #goal: number | null = null;
  #pasting = false;
  /** The pasted text so far ended with `\r`: a `\n` starting the next chunk belongs to it. */
  #pasteCR = false;
  /** The start of an escape sequence (or of the paste end mark) cut off at the end of a chunk. */
  #pending = '';
  /** Keys typed after the key that ended the last read (Ctrl-C, then more in one chunk): the next read starts with them. */
  #leftover = '';
  #escapeTimer: ReturnType<typeof setTimeout> | undefined;
  #historyIndex = 0;
  #draft = '';
  #edits = new Map<number, string>();
  /** What the editor has drawn on the terminal. */
  readonly #screen: EditorScreen;

  /** An editor on `options.input` and `options.output`; it listens only while a `read` is in progress. */
  constructor(options: LineEditorOptions) {
    this.#input = options.input;
    this.#output = options.output;
    this.#style = options.style;
    this.#history = options.history;
    this.#screen = new EditorScreen(options.output);
  }

  /**
   * Shows `prompt` and reads one entry. The prompt may hold escape codes (its width is measured
   * by `visibleWidth`) and newlines (what comes before the last one is written once, above the
   * editing area). The cursor is expected at the start of a line. `options.initial` pre-fills the
   * buffer with the cursor at its end.
   *
   * On a terminal (input with `setRawMode`, output a TTY) it sets raw mode and bracketed paste
   * for the read and restores both before the promise settles; it leaves the cursor at the start
   * of the line after the input. Otherwise it writes the prompt and reads one line up to `\n`
   * (`eof` at the end of the stream). Only one read may be in progress at a time; after `close`
   * every read is `eof`.
   */
  read(prompt: string, options: ReadOptions = {}): Promise<EditorResult> {
    if (this.#closed) return Promise.resolve({ kind: 'eof' });
    if (this.#stop) return Promise.reject(new Error('LineEditor.read: a read is already in progress'));
    if (!this.#interactive()) return this.#readPlain(prompt);
    return new Promise((resolve) => this.#begin(prompt, options, resolve));
  }

  /**
   * Stops listening and leaves raw mode; a read in progress ends as `eof`. Idempotent; the
   * editor reads nothing after it.
   */
  close(): void {
    this.#closed = true;
    this.#stop?.({ kind: 'eof' });
  }

  #interactive(): boolean {
    const input = this.#input as { isTTY?: boolean; setRawMode?: unknown };
    return input.isTTY === true && typeof input.setRawMode === 'function' && this.#output.isTTY === true;
  }

  // ---------------------------------------------------------------- plain reading

  #readPlain(prompt: string): Promise<EditorResult> {
    const input = this.#input;
    if ((input as { readableEnded?: boolean }).readableEnded) this.#plainEnded = true;
    this.#output.write(prompt);
    return new Promise((resolve) => {
      const finish = (result: EditorResult): void => {
        input.removeListener('data', onData);
        input.removeListener('end', onEnd);
        input.removeListener('error', onEnd);
        input.pause();
        this.#stop = null;
        if (result.kind === 'line' && this.#input.isTTY) this.#history?.add(result.text);
        resolve(result);
      };
      const settle = (): boolean => {
        const newline = this.#plainText.indexOf('\n');
        if (newline >= 0) {
          const line = this.#plainText.slice(0, newline);
          this.#plainText = this.#plainText.slice(newline + 1);
          finish({ kind: 'line', text: line.endsWith('\r') ? line.slice(0, -1) : line });
          return true;
        }
        if (!this.#plainEnded) return false;
        const rest = this.#plainText;
        this.#plainText = '';
        finish(rest ? { kind: 'line', text: rest } : { kind: 'eof' });
        return true;
      };
      const onData = (chunk: Buffer | string): void => {
        this.#plainText += typeof chunk === 'string' ? chunk : this.#plainDecoder.write(chunk);
        settle();
      };
      const onEnd = (): void => {
        this.#plainEnded = true;
        this.#plainText += this.#plainDecoder.end();
        settle();
      };
      if (settle()) return;
      this.#stop = finish;
      input.on('data', onData);
      input.on('end', onEnd);
      input.on('error', onEnd);
      input.resume();
    });
  }

  // ---------------------------------------------------------------- terminal reading

  #begin(prompt: string, options: ReadOptions, resolve: (result: EditorResult) => void): void {
    const input = this.#input as { isRaw?: boolean; setRawMode(mode: boolean): unknown } & LineEditorOptions['input'];
    const output = this.#output;
    const lastNewline = prompt.lastIndexOf('\n');
    const above = prompt.slice(0, lastNewline + 1).replace(/\r?\n/g, '\r\n');
    const promptLine = prompt.slice(lastNewline + 1);
    const promptWidth = visibleWidth(promptLine);
    const continuation = options.continuation ?? defaultContinuation(promptWidth, this.#style);
    this.#prompts = { first: { text: promptLine, width: promptWidth }, rest: { text: continuation, width: visibleWidth(continuation) } };
    this.#text = sanitize((options.initial ?? '').replace(/\r\n?/g, '\n'));
    this.#cursor = this.#text.length;
    this.#goal = null;
    this.#pasting = false;
    this.#pasteCR = false;
    this.#pending = '';
    this.#decoder = new StringDecoder('utf8');
    this.#historyIndex = this.#history?.entries.length ?? 0;
    this.#draft = this.#text;
    this.#edits = new Map();
    this.#screen.reset();

    const wasRaw = input.isRaw === true;
    const onData = (chunk: Buffer | string): void => {
      const text = this.#pending + (typeof chunk === 'string' ? chunk : this.#decoder.write(chunk));
      this.#pending = '';
      this.#clearEscapeTimer();
      this.#feed(text);
      if (this.#stop === finish) this.#render();
    };
    const onEnd = (): void => finish({ kind: 'eof' });
    const onResize = (): void => {
      this.#screen.reflow();
      this.#render(true);
    };
    const finish = (result: EditorResult, mark = ''): void => {
      if (this.#stop !== finish) return;
      this.#stop = null;
      this.#clearEscapeTimer();
      input.removeListener('data', onData);
      input.removeListener('end', onEnd);
      input.removeListener('error', onEnd);
      output.removeListener('resize', onResize);
      output.write(`${HIDE_CURSOR}${this.#screen.final(this.#text, this.#prompts)}${mark}\r\n${PASTE_OFF}${SHOW_CURSOR}`);
      input.pause();
      try {
        input.setRawMode(wasRaw);
      } catch {
        // The terminal went away; nothing to restore.
      }
      if (result.kind === 'line') this.#history?.add(result.text);
      resolve(result);
    };
    this.#stop = finish;

    try {
      input.setRawMode(true);
    } catch {
      // Not a terminal after all: keys still arrive, only line-buffered.
    }
    input.on('data', onData);
    input.on('end', onEnd);
    input.on('error', onEnd);
    output.on('resize', onResize);
    output.write(above + PASTE_ON);
    this.#render();
    input.resume();
    if (this.#leftover) {
      const typed = this.#leftover;
      this.#leftover = '';
      onData(typed);
    }
  }

  /** Applies one chunk of input, key by key; stops at a key that ends the read. */
  #feed(s: string): void {
    let i = 0;
    while (i < s.length && this.#stop) {
      if (this.#pasting) {
        if (s === '\x03') {
          // Ctrl-C alone in a chunk is the person, not the paste: a terminal that never sends
          // the end mark must not leave the prompt stuck in paste mode.
          this.#pasting = false;
          this.#apply('interrupt', false);
          return;
        }
        const end = s.indexOf(PASTE_END, i);
        if (end < 0) {
          const keep = heldBack(s, i, PASTE_END);
          this.#insertPasted(s.slice(i, s.length - keep));
          if (keep > 0) {
            this.#pending = s.slice(s.length - keep);
            this.#armEscapeTimer();
          }
          return;
        }
        this.#insertPasted(s.slice(i, end));
        this.#pasting = false;
        i = end + PASTE_END.length;
        continue;
      }
      const code = s.charCodeAt(i);
      if (code === 0x1b) {
        const key = parseEscape(s, i);
        if (!key) {
          this.#pending = s.slice(i);
          this.#armEscapeTimer();
          return;
        }
        i += key.length;
        this.#apply(key.action, i < s.length);
      } else if (code === 0x0d) {
        i += s.charCodeAt(i + 1) === 0x0a ? 2 : 1;
        this.#apply('enter', i < s.length);
      } else if (code === 0x0a && s.length > 1) {
        // A line feed among other keys is not the Ctrl-J key: it is a line typed before raw
        // mode was on (the terminal turned its Enter into `\n`) or part of a burst.
        i += 1;
        this.#apply('enter', i < s.length);
      } else if (code < 0x20 || code === 0x7f) {
        i += 1;
        this.#apply(CONTROL_KEYS[code] ?? 'none', i < s.length);
      } else if (code >= 0x80 && code <= 0x9f) {
        i += 1; // C1 controls: never shown
      } else {
        let j = i + 1;
        while (j < s.length && isPrintable(s.charCodeAt(j))) j++;
        this.#goal = null;
        this.#insert(s.slice(i, j));
        i = j;
      }
    }
    if (!this.#stop && i < s.length) this.#leftover = s.slice(i);
  }

  /** Does what `action` says. `more`: further input follows in the same chunk (a paste burst). */
  #apply(action: Action, more: boolean): void {
    if (action !== 'up' && action !== 'down') this.#goal = null;
    const text = this.#text;
    const cursor = this.#cursor;
    switch (action) {
      case 'none':
        return;
      case 'enter':
        return this.#enter(more);
      case 'newline':
        return this.#insert('\n');
      case 'tab':
        return this.#insert(TAB);
      case 'left':
        this.#cursor = previousBoundary(text, cursor);
        return;
      case 'right':
        this.#cursor = nextBoundary(text, cursor);
        return;
      case 'home':
        this.#cursor = lineStart(text, cursor);
        return;
      case 'end':
        this.#cursor = lineEnd(text, cursor);
        return;
      case 'word-left':
        this.#cursor = wordStart(text, cursor);
        return;
      case 'word-right':
        this.#cursor = wordEnd(text, cursor);
        return;
      case 'up':
      case 'down':
        return this.#vertical(action === 'up' ? -1 : 1);
      case 'backspace':
        return this.#remove(previousBoundary(text, cursor), cursor);
      case 'delete':
        return this.#remove(cursor, nextBoundary(text, cursor));
      case 'delete-or-eof':
        if (text === '') return this.#stop?.({ kind: 'eof' });
        return this.#remove(cursor, nextBoundary(text, cursor));
      case 'kill-start': {
        // At the start of a line it takes the line break, so repeated Ctrl-U clears upwards.
        const start = lineStart(text, cursor);
        return this.#kill(start === cursor ? Math.max(0, cursor - 1) : start, cursor);
      }
      case 'kill-end': {
        const end = lineEnd(text, cursor);
        return this.#kill(cursor, end === cursor ? Math.min(text.length, cursor + 1) : end);
      }
      case 'kill-word-back':
        return this.#kill(wordStart(text, cursor), cursor);
      case 'kill-word-forward':
        return this.#kill(cursor, wordEnd(text, cursor));
      case 'rubout-word':
        return this.#kill(spaceWordStart(text, cursor), cursor);
      case 'yank':
        return this.#insert(this.#killed);
      case 'clear':
        this.#output.write('\x1b[H\x1b[2J');
        this.#screen.forget();
        return;
      case 'interrupt':
        return this.#stop?.({ kind: 'interrupt', text }, this.#style.dim('^C'));
      case 'paste-start':
        this.#pasting = true;
        this.#pasteCR = false;
        return;
    }
  }

  /**
   * Enter. Inside a burst of input it is a line break of pasted text; after a backslash ending
   * the line it replaces the backslash with a line break (as shells continue lines); else it
   * submits.
   */
  #enter(more: boolean): void {
    if (more) return this.#insert('\n');
    const text = this.#text;
    const cursor = this.#cursor;
    if (text[cursor - 1] === '\\' && lineEnd(text, cursor) === cursor) {
      this.#text = `${text.slice(0, cursor - 1)}\n${text.slice(cursor)}`;
      return;
    }
    this.#stop?.({ kind: 'line', text });
  }

  #insert(s: string): void {
    if (!s) return;
    this.#text = this.#text.slice(0, this.#cursor) + s + this.#text.slice(this.#cursor);
    this.#cursor += s.length;
  }

  #remove(from: number, to: number): void {
    if (to <= from) return;
    this.#text = this.#text.slice(0, from) + this.#text.slice(to);
    this.#cursor = from;
  }

  #kill(from: number, to: number): void {
    if (to <= from) return;
    this.#killed = this.#text.slice(from, to);
    this.#remove(from, to);
  }

  /** Inserts a piece of a bracketed paste: line breaks normalised to `\n`, escape codes and controls left out. */
  #insertPasted(raw: string): void {
    let s = raw;
    if (this.#pasteCR && s.startsWith('\n')) s = s.slice(1);
    if (!s) return;
    this.#pasteCR = s.endsWith('\r');
    this.#insert(sanitize(stripAnsi(s.replace(/\r\n?/g, '\n'))));
  }

  /** Up (-1) or Down (1): to the line above or below, keeping the column; past the first or last line, through the history. */
  #vertical(direction: -1 | 1): void {
    const text = this.#text;
    const start = lineStart(text, this.#cursor);
    const end = lineEnd(text, this.#cursor);
    if (direction < 0 ? start === 0 : end === text.length) {
      this.#goal = null;
      this.#walkHistory(direction);
      return;
    }
    const goal = this.#goal ?? displayWidth(text.slice(start, this.#cursor));
    const targetStart = direction < 0 ? lineStart(text, start - 1) : end + 1;
    const targetEnd = lineEnd(text, targetStart);
    this.#cursor = targetStart + indexAtColumn(text.slice(targetStart, targetEnd), goal);
    this.#goal = goal;
  }

  /**
   * Steps through the history: Up to older entries, Down to newer ones and at last back to the
   * unsent buffer. Edits made to an entry on the way are kept until the read ends.
   */
  #walkHistory(direction: -1 | 1): void {
    const entries = this.#history?.entries ?? [];
    const target = this.#historyIndex + direction;
    if (target < 0 || target > entries.length) return;
    if (this.#historyIndex >= entries.length) this.#draft = this.#text;
    else if (this.#text !== entries[this.#historyIndex]) this.#edits.set(this.#historyIndex, this.#text);
    else this.#edits.delete(this.#historyIndex);
    this.#historyIndex = target;
    this.#text = target === entries.length ? this.#draft : (this.#edits.get(target) ?? entries[target] ?? '');
    // Going up lands on the entry's last line, going down on its first, so the walk continues
    // through its lines in the same direction.
    this.#cursor = direction < 0 ? this.#text.length : lineEnd(this.#text, 0);
  }

  #armEscapeTimer(): void {
    this.#clearEscapeTimer();
    this.#escapeTimer = setTimeout(() => {
      this.#escapeTimer = undefined;
      const pending = this.#pending;
      this.#pending = '';
      // A lone Escape, or a sequence that never finished, is dropped; inside a paste the text is literal.
      if (this.#pasting) this.#insertPasted(pending);
      if (this.#stop) this.#render();
    }, ESCAPE_TIMEOUT_MS);
  }

  #clearEscapeTimer(): void {
    if (this.#escapeTimer !== undefined) clearTimeout(this.#escapeTimer);
    this.#escapeTimer = undefined;
  }

  /** Redraws the buffer; nothing is written when the drawing would not change, unless `force`. */
  #render(force = false): void {
    this.#screen.render(this.#text, this.#cursor, this.#prompts, force);
  }
}

/** The text without control characters other than tab and newline. */
function sanitize(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '');
}
