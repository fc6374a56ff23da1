import { fitPrefix, layout, up, type Prefix } from './editor-layout';

/**
 * The line editor's drawing on the terminal: what it last drew there (rows, the cursor's row and
 * column, the widths of the rows above the cursor), how to redraw it in place, how a resize
 * moved it, and which rows of a text taller than the screen are shown.
 */

export const HIDE_CURSOR = '\x1b[?25l';
export const SHOW_CURSOR = '\x1b[?25h';

/** The prompts a read draws: `first` before the first line of text, `rest` before every other. */
export interface Prompts {
  first: Prefix;
  rest: Prefix;
}

/**
 * The drawing of one editor on `output`, redrawn in place as the buffer changes.
 *
 * Contract: call `reset` when a read starts (the cursor at the start of a line, nothing drawn
 * yet); `render` after each change; `reflow` when the terminal was resized, then `render` with
 * `force`; `forget` after the screen was cleared behind the drawing's back; `final` once when
 * the read ends, writing what it returns. `render` is the only method that writes; the others
 * only update what the screen is known to hold.
 */
export class EditorScreen {
  readonly #output: NodeJS.WritableStream & { columns?: number; rows?: number };
  /** Whether the editor has drawn since the last reset, forget or final draw. */
  #drawn = false;
  /** The cursor's row counted from the top of the drawing, and its column. */
  #cursorRow = 0;
  #cursorCol = 0;
  /** The widths of the rows above the cursor, to find the top again after the terminal reflows. */
  #rowWidths: number[] = [];
  #drawnColumns = 80;
  /** The bytes of the last drawing after the move back to its top; '' when nothing is drawn. */
  #drawnBody = '';
  /** The first row shown of a text taller than the screen. */
  #scrollTop = 0;

  /** A screen on `output`: its `columns` (default 80) wrap the text; its `rows`, when known, bound the drawing. */
  constructor(output: NodeJS.WritableStream & { columns?: number; rows?: number }) {
    this.#output = output;
  }

  /** A new read: nothing is drawn yet and the scroll window starts at the top. */
  reset(): void {
    this.forget();
    this.#scrollTop = 0;
  }

  /** The screen was cleared: the next render draws afresh where the cursor is. */
  forget(): void {
    this.#drawn = false;
    this.#drawnBody = '';
  }

  /** Redraws `text` with the cursor at index `cursor`; nothing is written when the drawing would not change, unless `force`. */
  render(text: string, cursor: number, prompts: Prompts, force = false): void {
    const before = this.#drawnBody;
    const out = this.#draw(text, cursor, prompts);
    if (!force && this.#drawnBody === before && before !== '') return;
    this.#output.write(HIDE_CURSOR + out + SHOW_CURSOR);
  }

  /**
   * What to write for the last drawing of a read: back to its top, clear to the end of the
   * screen, and the whole text with no cursor, ending on its last row. Afterwards nothing counts
   * as drawn.
   */
  final(text: string, prompts: Prompts): string {
    const columns = this.#columns();
    const frame = layout(text, -1, columns, fitPrefix(prompts.first, columns), fitPrefix(prompts.rest, columns));
    const out = this.#drawn ? `\r${up(this.#cursorRow)}` : '';
    this.forget();
    return `${out}\x1b[J${frame.rows.join('\r\n')}`;
  }

  /**
   * After a resize: where the cursor's row now is relative to the top of the drawing. A terminal
   * that narrows rewraps each row it holds (most do: VTE, iTerm2, kitty, tmux, Windows Terminal),
   * so a row wider than the new width takes several; widening leaves the rows as they are since
   * each ended in a hard line break.
   */
  reflow(): void {
    const columns = this.#columns();
    if (!this.#drawn || columns >= this.#drawnColumns) return;
    let row = 0;
    for (const width of this.#rowWidths) row += Math.max(1, Math.ceil(width / columns));
    this.#cursorRow = row + Math.floor(this.#cursorCol / columns);
    this.#drawnColumns = columns;
  }

  #columns(): number {
    const columns = this.#output.columns;
    return typeof columns === 'number' && columns > 0 ? Math.floor(columns) : 80;
  }

  #maxRows(): number {
    const rows = this.#output.rows;
    return typeof rows === 'number' && rows > 0 ? Math.floor(rows) : Number.POSITIVE_INFINITY;
  }

  /**
   * What to write to redraw: back to the first row of the last drawing, clear to the end of the
   * screen, then each row of prompt and text followed by an explicit `\r\n` (the terminal's own
   * wrapping, with its pending-wrap state at a full row, is never relied on), and the cursor
   * moved to its place with `\r`, cursor-up and an absolute column. A text taller than the
   * screen shows the rows around the cursor.
   */
  #draw(text: string, cursor: number, prompts: Prompts): string {
    const columns = this.#columns();
    const frame = layout(text, cursor, columns, fitPrefix(prompts.first, columns), fitPrefix(prompts.rest, columns));
    const out = this.#drawn ? `\r${up(this.#cursorRow)}` : '';
    const height = frame.rows.length;
    const maxRows = this.#maxRows();
    let top = 0;
    if (height > maxRows) {
      top = Math.min(Math.max(this.#scrollTop, 0), height - maxRows);
      if (frame.cursorRow < top) top = frame.cursorRow;
      if (frame.cursorRow >= top + maxRows) top = frame.cursorRow - maxRows + 1;
    }
    this.#scrollTop = top;
    const visible = frame.rows.slice(top, top + Math.min(height, maxRows));
    const cursorRow = frame.cursorRow - top;
    let body = `\x1b[J${visible.join('\r\n')}\r${up(visible.length - 1 - cursorRow)}`;
    if (frame.cursorCol > 0) body += `\x1b[${frame.cursorCol + 1}G`;
    this.#drawn = true;
    this.#drawnBody = body;
    this.#cursorRow = cursorRow;
    this.#cursorCol = frame.cursorCol;
    this.#rowWidths = frame.widths.slice(top, frame.cursorRow);
    this.#drawnColumns = columns;
    return out + body;
  }
}
