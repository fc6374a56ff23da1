/**
 * Text from the model or a tool made safe to print on a terminal: whatever a terminal would
 * act on instead of showing (escape sequences, control characters, bidirectional overrides)
 * either goes or becomes a visible symbol, so printed text can neither drive the terminal
 * (set the title, write the clipboard, move the cursor, clear the screen) nor hide or reorder
 * the text around it.
 */

/** Anything that needs work: C0 controls but tab and line feed, DEL, C1 controls, bidi controls. */
const NEEDS_WORK = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const ESC = 0x1b;
const BEL = 0x07;
const LF = 0x0a;
const CR = 0x0d;
/** The 8-bit forms of CSI, OSC, DCS, SOS, PM, APC and ST. */
const C1_CSI = 0x9b;
const C1_STRINGS = new Set([0x9d, 0x90, 0x98, 0x9e, 0x9f]);
const C1_ST = 0x9c;
/** The characters after ESC that open a string sequence: OSC `]`, DCS `P`, SOS `X`, PM `^`, APC `_`. */
const STRING_OPENERS = new Set([0x5d, 0x50, 0x58, 0x5e, 0x5f]);

/** Embedding, override and isolate controls, and the three marks: they can reorder how a line reads. */
function isBidiControl(code: number): boolean {
  return code === 0x061c || code === 0x200e || code === 0x200f || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}

/**
 * The text as it may be printed on a terminal. Complete escape sequences are removed — CSI
 * (`ESC [`), OSC (`ESC ]`, ending with BEL or ST), DCS, SOS, PM and APC strings (ending with
 * ST or BEL), other `ESC` sequences (`ESC c`, `ESC ( B`) and the 8-bit C1 forms of all of
 * them — in one left-to-right pass that reads them as a terminal would, so a sequence inside
 * another or cut short cannot leave a live one behind. Everything else that a terminal would
 * act on is then shown as a visible symbol: C0 controls as their control pictures (`␛`, `␇`,
 * `␈`), a carriage return not followed by a line feed as `␍` (so text it would overwrite stays
 * visible; CR LF becomes LF), DEL as `␡`, C1 controls and the bidirectional controls (U+202A–
 * U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) as `<U+202E>`. A string sequence (OSC, DCS…)
 * that meets a line feed, an ESC that does not end it, or the end of the text before its
 * terminator is not removed: its introducer is shown and the rest stays as text.
 *
 * Guarantees: the result holds no C0 control but tab and line feed, no DEL, no C1 control and
 * no bidirectional control; printable text is never dropped except the inside of a complete
 * escape sequence, and never reordered. Linear in the length of the text; never throws.
 */
export function visibleText(text: string): string {
  return shownText(text, true, false).shown;
}

/**
 * Like {@link visibleText} but removes nothing: escape sequences are shown whole (`␛[31m`),
 * for text where even a colour code is out of place, such as the model's own reply.
 */
export function visibleControls(text: string): string {
  return shownText(text, false, false).shown;
}

/** An unfinished sequence at the end of a chunk longer than this is not held back but shown. */
const MAX_HELD = 4096;

/**
 * {@link visibleText} for text that arrives in chunks (a streamed reply, a process's output):
 * an escape sequence or a CR LF cut between two chunks is held back until the next chunk, so
 * the cut neither shows half a sequence nor lets one through. `end` gives what is still held,
 * made visible.
 */
export class VisibleTextStream {
  #held = '';

  /** Takes the next chunk; returns what can be shown now (possibly ''). */
  push(chunk: string): string {
    const text = this.#held + chunk;
    const { shown, heldFrom } = shownText(text, true, true);
    this.#held = text.slice(heldFrom);
    return shown;
  }

  /** Ends the stream: what was held back, shown as text when it never completed. */
  end(): string {
    const held = this.#held;
    this.#held = '';
    return visibleText(held);
  }
}

/**
 * The text made visible, removing complete sequences when `removeSequences`. With `holdOpenEnd`,
 * stops at a sequence (or a CR) that runs to the end of the text and may still complete in a
 * later chunk: `heldFrom` is where it starts (the text's length when nothing is held).
 */
function shownText(text: string, removeSequences: boolean, holdOpenEnd: boolean): { shown: string; heldFrom: number } {
  if (!NEEDS_WORK.test(text)) return { shown: text, heldFrom: text.length };
  const special = new RegExp(NEEDS_WORK.source, 'g');
  const parts: string[] = [];
  let at = 0;
  // A string sequence that started before this index has no terminator before it (see `stringEnd`).
  let unterminatedBefore = -1;
  while (at < text.length) {
    // Plain text up to the next character that needs work is copied as one piece.
    special.lastIndex = at;
    const next = special.exec(text)?.index ?? text.length;
    if (next > at) parts.push(text.slice(at, next));
    at = next;
    if (at === text.length) break;
    const code = text.charCodeAt(at);
    let end: number | 'open' | undefined;
    if (removeSequences && (code === ESC || code === C1_CSI || C1_STRINGS.has(code))) {
      const from = code === ESC ? at + 2 : at + 1;
      const kind = code === ESC ? escapeKind(text.charCodeAt(at + 1)) : code === C1_CSI ? 'csi' : 'string';
      if (kind === 'csi') end = csiEnd(text, from);
      else if (kind === 'other') end = otherEscapeEnd(text, at + 1);
      else if (from > unterminatedBefore) {
        const found = stringEnd(text, from);
        if (typeof found !== 'object') end = found;
        else unterminatedBefore = found.stoppedAt;
      }
    }
    const open = end === 'open' || (code === CR && at === text.length - 1);
    if (open && holdOpenEnd && text.length - at <= MAX_HELD) return { shown: parts.join(''), heldFrom: at };
    if (typeof end === 'number') {
      at = end;
      continue;
    }
    if (code === CR && text.charCodeAt(at + 1) === LF) {
      at++;
      continue;
    }
    parts.push(shownControl(code, text[at] as string));
    at++;
  }
  return { shown: parts.join(''), heldFrom: text.length };
}

/** What an ESC followed by `next` starts. */
function escapeKind(next: number): 'csi' | 'string' | 'other' {
  if (next === 0x5b) return 'csi';
  if (STRING_OPENERS.has(next)) return 'string';
  return 'other';
}

/**
 * The end of a CSI whose parameters start at `from`: parameter and intermediate bytes
 * (0x20–0x3F), then one final byte (0x40–0x7E). Undefined when another character comes first
 * (a terminal abandons the sequence there and acts on that character); `'open'` when the text
 * ends first.
 */
function csiEnd(text: string, from: number): number | 'open' | undefined {
  for (let at = from; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code >= 0x40 && code <= 0x7e) return at + 1;
    if (code < 0x20 || code > 0x3f) return undefined;
  }
  return 'open';
}

/**
 * The end of an ESC sequence that is neither CSI nor a string: intermediates (0x20–0x2F), then
 * a final byte (0x30–0x7E). Undefined or `'open'` as for {@link csiEnd}.
 */
function otherEscapeEnd(text: string, from: number): number | 'open' | undefined {
  for (let at = from; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code >= 0x30 && code <= 0x7e) return at + 1;
    if (code < 0x20 || code > 0x2f) return undefined;
  }
  return 'open';
}

/**
 * The end of a string sequence whose body starts at `from`, just after its terminator (BEL,
 * `ESC \` or the 8-bit ST); `'open'` when the text ends first (or ends with the ESC of an ST);
 * or, when a line feed, another ESC or another introducer comes first, where the search
 * stopped. Any string sequence starting before that point stops there too, which keeps the
 * whole pass linear.
 */
function stringEnd(text: string, from: number): number | 'open' | { stoppedAt: number } {
  for (let at = from; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === BEL || code === C1_ST) return at + 1;
    if (code === ESC) {
      if (at === text.length - 1) return 'open';
      return text.charCodeAt(at + 1) === 0x5c ? at + 2 : { stoppedAt: at };
    }
    if (code === LF || code === C1_CSI || C1_STRINGS.has(code)) return { stoppedAt: at };
  }
  return 'open';
}

/** A control character as a visible symbol. */
function shownControl(code: number, char: string): string {
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  if ((code >= 0x80 && code <= 0x9f) || isBidiControl(code)) return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
  return char;
}

/**
 * Like {@link visibleText}, for a place that shows one line: line feeds and tabs become
 * spaces as well, so the text cannot start a line of its own that looks like fence's.
 */
export function visibleLine(text: string): string {
  return visibleText(text).replace(/[\n\t]/g, ' ');
}

/**
 * A name that stands for exact bytes (a path to be written, a file name) on one line: like
 * {@link visibleControls}, nothing removed, with line feeds and tabs shown as `␊` and `␉` too.
 */
export function visibleName(text: string): string {
  return visibleControls(text).replace(/\n/g, '\u240a').replace(/\t/g, '\u2409');
}
