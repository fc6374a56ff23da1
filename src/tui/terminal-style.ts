/**
 * Colours and widths for the terminal. A `Style` is made once per output stream and passed to
 * whatever renders to it; with colour off every function returns its text unchanged, so the
 * renderers never test for colour themselves.
 */

/** Wraps text in one SGR attribute; identity when colour is off. */
export type Paint = (text: string) => string;

/** The attributes fence uses. Keep it small: a calm screen has few colours. */
export interface Style {
  readonly color: boolean;
  bold: Paint;
  dim: Paint;
  italic: Paint;
  underline: Paint;
  inverse: Paint;
  red: Paint;
  green: Paint;
  yellow: Paint;
  blue: Paint;
  magenta: Paint;
  cyan: Paint;
  gray: Paint;
}

const CODES: Record<Exclude<keyof Style, 'color'>, [number, number]> = {
  bold: [1, 22],
  dim: [2, 22],
  italic: [3, 23],
  underline: [4, 24],
  inverse: [7, 27],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
  gray: [90, 39],
};

/**
 * A style with colour on or off. An attribute closed inside the painted text (nested paints of
 * the same kind) is reopened after its inner close, so `bold('a ' + bold('b') + ' c')` stays bold.
 */
export function createStyle(color: boolean): Style {
  const style = { color } as { -readonly [K in keyof Style]: Style[K] };
  for (const [name, [open, close]] of Object.entries(CODES) as [keyof typeof CODES, [number, number]][]) {
    const openSeq = `\x1b[${open}m`;
    const closeSeq = `\x1b[${close}m`;
    style[name] = color ? (text) => (text ? openSeq + text.split(closeSeq).join(closeSeq + openSeq) + closeSeq : text) : (text) => text;
  }
  return style;
}

/**
 * Whether to colour a stream: never when `NO_COLOR` is set to anything non-empty
 * (no-color.org) or `TERM=dumb`; always when `FORCE_COLOR` is set to anything but `0`;
 * otherwise only on a terminal.
 */
export function colorEnabled(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '') return env.FORCE_COLOR !== '0';
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

// CSI sequences (colours, cursor moves), OSC sequences (titles, links) and two-byte escapes.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

/**
 * The text without the escape sequences fence's own styling adds, to measure or re-cut text fence
 * built. Not for text from the model or a tool: one pass of a pattern can join the pieces of a
 * nested sequence into a live one; `visibleText` is made for that.
 */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/**
 * How many terminal columns one code point takes: 0 for combining marks, zero-width and
 * control characters, 2 for East Asian wide and fullwidth characters and most emoji, else 1.
 */
export function codePointWidth(code: number): number {
  if (code < 0x20 || (code >= 0x7f && code < 0xa0)) return 0;
  if (
    (code >= 0x300 && code <= 0x36f) ||
    (code >= 0x200b && code <= 0x200f) ||
    (code >= 0xfe00 && code <= 0xfe0f) ||
    (code >= 0x1ab0 && code <= 0x1aff) ||
    (code >= 0x20d0 && code <= 0x20ff) ||
    code === 0x2060 ||
    code === 0xfeff
  ) {
    return 0;
  }
  if (
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0x303e) ||
    (code >= 0x3041 && code <= 0x33ff) ||
    (code >= 0x3400 && code <= 0x4dbf) ||
    (code >= 0x4e00 && code <= 0x9fff) ||
    (code >= 0xa000 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1f64f) ||
    (code >= 0x1f900 && code <= 0x1f9ff) ||
    (code >= 0x20000 && code <= 0x3fffd)
  ) {
    return 2;
  }
  return 1;
}

/** The columns `text` takes on a terminal, escape sequences left out. */
export function visibleWidth(text: string): number {
  let width = 0;
  for (const char of stripAnsi(text)) width += codePointWidth(char.codePointAt(0) ?? 0);
  return width;
}

/** Cuts `text` (no escape sequences) to at most `columns` columns, ending with `…` when cut. */
export function truncateToWidth(text: string, columns: number): string {
  if (visibleWidth(text) <= columns) return text;
  let width = 0;
  let out = '';
  for (const char of text) {
    const w = codePointWidth(char.codePointAt(0) ?? 0);
    if (width + w > columns - 1) break;
    out += char;
    width += w;
  }
  return `${out}…`;
}
