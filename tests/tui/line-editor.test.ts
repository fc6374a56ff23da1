import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { InputHistory } from '../../src/tui/input-history';
import { LineEditor, type EditorResult } from '../../src/tui/line-editor';
import { codePointWidth, createStyle } from '../../src/tui/terminal-style';

// ---------------------------------------------------------------- a small terminal

/**
 * Just enough of an xterm to check what the editor draws: a grid of cells, a cursor with the
 * pending-wrap state of the last column, scrolling into a scrollback, and the sequences the
 * editor may use (CR, LF, CSI A/B/C/D/G/H/J/K, SGR and private modes).
 */
class Screen {
  width: number;
  readonly height: number;
  grid: string[][] = [];
  scrollback: string[] = [];
  row = 0;
  col = 0;
  pendingWrap = false;
  readonly modes = new Map<string, boolean>();

  constructor(width: number, height: number) {
    this.width = width;
    this.height = height;
    for (let r = 0; r < height; r++) this.grid.push(this.blankRow());
  }

  blankRow(): string[] {
    return Array.from({ length: this.width }, () => ' ');
  }

  write(data: string): void {
    const chars = Array.from(data);
    for (let i = 0; i < chars.length; i++) {
      const ch = chars[i] ?? '';
      if (ch === '\x1b') {
        if (chars[i + 1] === '[') {
          let j = i + 2;
          let params = '';
          while (j < chars.length && /[0-?]/.test(chars[j] ?? '')) params += chars[j++];
          const final = chars[j] ?? '';
          this.csi(params, final);
          i = j;
        } else {
          i += 1; // two-character escapes: nothing the editor should send
        }
      } else if (ch === '\r') {
        this.col = 0;
        this.pendingWrap = false;
      } else if (ch === '\n') {
        this.lineFeed();
        this.pendingWrap = false;
      } else if (ch === '\x07') {
        // bell
      } else {
        this.print(ch);
      }
    }
  }

  csi(params: string, final: string): void {
    if (params.startsWith('?')) {
      if (final === 'h' || final === 'l') this.modes.set(params, final === 'h');
      return;
    }
    const nums = params.split(';').map((p) => Number.parseInt(p, 10));
    const n = Number.isNaN(nums[0] ?? Number.NaN) ? 1 : Math.max(1, nums[0] ?? 1);
    const first = Number.isNaN(nums[0] ?? Number.NaN) ? 0 : (nums[0] ?? 0);
    this.pendingWrap = false;
    switch (final) {
      case 'A':
        this.row = Math.max(0, this.row - n);
        break;
      case 'B':
        this.row = Math.min(this.height - 1, this.row + n);
        break;
      case 'C':
        this.col = Math.min(this.width - 1, this.col + n);
        break;
      case 'D':
        this.col = Math.max(0, this.col - n);
        break;
      case 'G':
        this.col = Math.min(this.width - 1, n - 1);
        break;
      case 'H':
        this.row = Math.min(this.height - 1, n - 1);
        this.col = Math.min(this.width - 1, Math.max(1, nums[1] || 1) - 1);
        break;
      case 'J':
        if (first === 2) {
          for (let r = 0; r < this.height; r++) this.grid[r] = this.blankRow();
        } else {
          this.clearLine(this.col);
          for (let r = this.row + 1; r < this.height; r++) this.grid[r] = this.blankRow();
        }
        break;
      case 'K':
        this.clearLine(this.col);
        break;
      case 'm':
        break;
      default:
        throw new Error(`the screen does not know CSI ${params}${final}`);
    }
  }

  clearLine(from: number): void {
    const line = this.grid[this.row];
    if (line) for (let c = from; c < this.width; c++) line[c] = ' ';
  }

  lineFeed(): void {
    if (this.row < this.height - 1) {
      this.row += 1;
      return;
    }
    this.scrollback.push((this.grid.shift() ?? []).join('').trimEnd());
    this.grid.push(this.blankRow());
  }

  print(ch: string): void {
    const w = codePointWidth(ch.codePointAt(0) ?? 0);
    if (w === 0) {
      const line = this.grid[this.row];
      if (line && this.col > 0) line[this.col - 1] += ch;
      return;
    }
    if (this.pendingWrap || this.col + w > this.width) {
      this.col = 0;
      this.lineFeed();
    }
    this.pendingWrap = false;
    const line = this.grid[this.row];
    if (!line) throw new Error('cursor off the screen');
    line[this.col] = ch;
    if (w === 2) line[this.col + 1] = '';
    this.col += w;
    if (this.col >= this.width) {
      this.col = this.width - 1;
      this.pendingWrap = true;
    }
  }

  /** The visible rows, right-trimmed, without the blank rows at the bottom. */
  lines(): string[] {
    const rows = this.grid.map((r) => r.join('').trimEnd());
    while (rows.length > 0 && rows[rows.length - 1] === '') rows.pop();
    return rows;
  }

  /** Where the next character would go: a pending wrap is the start of the next row. */
  cursor(): { row: number; col: number } {
    return this.pendingWrap ? { row: this.row + 1, col: 0 } : { row: this.row, col: this.col };
  }
}

// ---------------------------------------------------------------- the fake terminal streams

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Term {
  input: PassThrough & { isTTY: boolean; isRaw: boolean; setRawMode(mode: boolean): unknown };
  output: Writable & { columns: number; rows?: number; isTTY: boolean };
  screen: Screen;
  writes: string[];
  rawCalls: boolean[];
  editor: LineEditor;
  /** Writes one data chunk to the input and lets the editor handle it. */
  send(data: string): Promise<void>;
  /** Writes each key as a chunk of its own. */
  keys(...keys: string[]): Promise<void>;
}

const tempDirs: string[] = [];
afterEach(() => {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function terminal(options: { columns?: number; rows?: number; history?: InputHistory; height?: number } = {}): Term {
  const columns = options.columns ?? 40;
  const screen = new Screen(columns, options.height ?? options.rows ?? 50);
  const writes: string[] = [];
  const rawCalls: boolean[] = [];
  const input = Object.assign(new PassThrough(), {
    isTTY: true,
    isRaw: false,
    setRawMode(mode: boolean) {
      rawCalls.push(mode);
      input.isRaw = mode;
      return input;
    },
  });
  const output = Object.assign(
    new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        const text = chunk.toString();
        writes.push(text);
        screen.write(text);
        callback();
      },
      decodeStrings: false,
    }),
    { columns, rows: options.rows, isTTY: true },
  );
  const editor = new LineEditor({ input, output, style: createStyle(false), history: options.history });
  const send = async (data: string): Promise<void> => {
    input.write(data);
    await tick();
    await tick();
  };
  const keys = async (...list: string[]): Promise<void> => {
    for (const key of list) await send(key);
  };
  return { input, output, screen, writes, rawCalls, editor, send, keys };
}

/** Whether the promise has settled, without waiting for it. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await tick();
  return done;
}

const KEY = {
  enter: '\r',
  left: '\x1b[D',
  right: '\x1b[C',
  up: '\x1b[A',
  down: '\x1b[B',
  home: '\x1b[H',
  end: '\x1b[F',
  delete: '\x1b[3~',
  backspace: '\x7f',
  ctrlA: '\x01',
  ctrlC: '\x03',
  ctrlD: '\x04',
  ctrlE: '\x05',
  ctrlK: '\x0b',
  ctrlL: '\x0c',
  ctrlU: '\x15',
  ctrlW: '\x17',
  ctrlY: '\x19',
  ctrlJ: '\n',
  altEnter: '\x1b\r',
  ctrlLeft: '\x1b[1;5D',
  ctrlRight: '\x1b[1;5C',
  altB: '\x1bb',
  altF: '\x1bf',
  pasteStart: '\x1b[200~',
  pasteEnd: '\x1b[201~',
};

function historyIn(entries: string[]): InputHistory {
  const dir = mkdtempSync(join(tmpdir(), 'fence-editor-'));
  tempDirs.push(dir);
  const history = InputHistory.load(join(dir, 'history'));
  for (const e of entries) history.add(e);
  return history;
}

// ---------------------------------------------------------------- tests

describe('LineEditor: typing', () => {
  it('reads what is typed up to Enter, drawing prompt and text, and leaves the cursor on a fresh line', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.keys('h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd');
    expect(t.screen.lines()).toEqual(['> hello world']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 13 });
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'hello world' });
    expect(t.screen.lines()).toEqual(['> hello world']);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 0 });
  });

  it('does not trim what it returns', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('  spaced  ');
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: '  spaced  ' });
  });

  it('reads again after a read, with the prompt on the next line', async () => {
    const t = terminal();
    const first = t.editor.read('> ');
    await t.send('one');
    await t.send(KEY.enter);
    expect(await first).toEqual({ kind: 'line', text: 'one' });
    const second = t.editor.read('> ');
    await t.send('two');
    expect(t.screen.lines()).toEqual(['> one', '> two']);
    await t.send(KEY.enter);
    expect(await second).toEqual({ kind: 'line', text: 'two' });
  });

  it('writes what comes before a newline in the prompt once, above the editing area', async () => {
    const t = terminal();
    const result = t.editor.read('\nfence\n> ');
    await t.keys('a', 'b', KEY.backspace, 'c');
    expect(t.screen.lines()).toEqual(['', 'fence', '> ac']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'ac' });
  });

  it('inserts two spaces for Tab', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.keys('a', '\t', 'b');
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'a  b' });
  });
});

describe('LineEditor: editing keys', () => {
  it('moves left and right and inserts at the cursor', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('helo');
    await t.keys(KEY.left, 'l', KEY.right, '!');
    expect(t.screen.lines()).toEqual(['> hello!']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'hello!' });
  });

  it('deletes with Backspace before the cursor and with Delete under it', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('abcdef');
    await t.keys(KEY.backspace, KEY.left, KEY.left, KEY.backspace, KEY.delete);
    expect(t.screen.lines()).toEqual(['> abe']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 4 });
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'abe' });
  });

  it('goes to the start and end with Home/End and Ctrl-A/Ctrl-E', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('middle');
    await t.keys(KEY.home, '[', KEY.end, ']', KEY.ctrlA, '<', KEY.ctrlE, '>');
    expect(t.screen.cursor()).toEqual({ row: 0, col: 12 });
    await t.keys('\x1b[1~', '1', '\x1b[4~', '2', '\x1bOH', '3', '\x1bOF', '4');
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: '31<[middle]>24' });
  });

  it('deletes the word before the cursor with Ctrl-W, the line before it with Ctrl-U, after it with Ctrl-K', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('git commit -m "a message"  ');
    await t.send(KEY.ctrlW);
    expect(t.screen.lines()).toEqual(['> git commit -m "a']);
    await t.keys(KEY.ctrlW, KEY.ctrlW);
    expect(t.screen.lines()).toEqual(['> git commit']);
    await t.keys(KEY.left, KEY.left, KEY.left, KEY.ctrlK);
    expect(t.screen.lines()).toEqual(['> git comm']);
    await t.keys(KEY.left, KEY.ctrlU);
    expect(t.screen.lines()).toEqual(['> m']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 2 });
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'm' });
  });

  it('brings the last deleted text back with Ctrl-Y', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('keep this');
    await t.keys(KEY.ctrlU, 'new: ', KEY.ctrlY);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'new: keep this' });
  });

  it('moves by word with Ctrl-Left/Right and Alt-B/F', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('one two-three four');
    await t.keys(KEY.ctrlLeft, '1', KEY.altB, KEY.altB, '2', KEY.ctrlA, KEY.ctrlRight, '3', KEY.altF, '4');
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'one3 two4-2three 1four' });
  });

  it('knows the other spellings of keys: Alt-Backspace, Alt-D, Ctrl-Delete, ESC-prefixed Alt-arrows, Shift-Enter, keypad Enter', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('alpha beta gamma delta');
    await t.keys('\x1b\x7f', KEY.ctrlA, '\x1bd', '\x1b\x1b[C', '\x1b[3;5~', '\x1b\x1b[D', '\x1b[13;2u', '\x1b[27;2;13~');
    // "alpha beta gamma " → " beta gamma " → cursor after "beta" → " beta " → cursor before "beta" → two line breaks
    expect(t.screen.lines()).toEqual(['>', '…', '… beta']);
    await t.send('\x1bOM');
    expect(await result).toEqual({ kind: 'line', text: ' \n\nbeta ' });
  });

  it('clears the screen with Ctrl-L and draws the prompt again at the top', async () => {
    const t = terminal();
    t.screen.write('earlier output\r\n');
    const result = t.editor.read('> ');
    await t.send('text');
    await t.send(KEY.ctrlL);
    expect(t.screen.lines()).toEqual(['> text']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 6 });
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'text' });
  });

  it('ignores unknown escape sequences and control characters instead of inserting them', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('a');
    // F1, F5, an unknown key, a mouse report, a colour reply, focus in, Insert, PageUp, Shift-Tab, Alt-x, Ctrl-G, Ctrl-T
    await t.keys('\x1bOP', '\x1b[15~', '\x1b[99~', '\x1b[<0;12;3M', '\x1b]11;rgb:0000/0000/0000\x07', '\x1b[I', '\x1b[2~', '\x1b[5~', '\x1b[Z');
    await t.keys('\x1bx', '\x07', '\x14', '\u009b');
    await t.send('b');
    expect(t.screen.lines()).toEqual(['> ab']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'ab' });
  });

  it('joins an escape sequence split across chunks, and drops a lone Escape after a moment', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('ac');
    await t.send('\x1b[');
    await t.send('D');
    await t.send('b');
    await t.send('\x1b');
    await sleep(200);
    await t.send('b'); // not Alt-B: the Escape was alone
    expect(t.screen.lines()).toEqual(['> abbc']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'abbc' });
  });

  it('handles a chunk of typed keys as a whole, drawing once', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await tick();
    const before = t.writes.length;
    await t.send(`xyz${KEY.left}${KEY.backspace}${KEY.home}${KEY.delete}`);
    expect(t.writes.length - before).toBe(1);
    expect(t.screen.lines()).toEqual(['> z']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'z' });
  });

  it('writes nothing for a key that changes nothing', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('a');
    const before = t.writes.length;
    await t.keys(KEY.right, '\x1b[99~', KEY.end);
    expect(t.writes.length).toBe(before);
    await t.send(KEY.enter);
    await result;
  });
});

describe('LineEditor: history', () => {
  it('walks the history with Up and Down and comes back to the unsent buffer', async () => {
    const history = historyIn(['first', 'second', 'third']);
    const t = terminal({ history });
    const result = t.editor.read('> ');
    await t.send('draft');
    await t.send(KEY.up);
    expect(t.screen.lines()).toEqual(['> third']);
    await t.keys(KEY.up, KEY.up);
    expect(t.screen.lines()).toEqual(['> first']);
    await t.send(KEY.up); // nothing older
    expect(t.screen.lines()).toEqual(['> first']);
    await t.keys(KEY.down, KEY.down);
    expect(t.screen.lines()).toEqual(['> third']);
    await t.send(KEY.down);
    expect(t.screen.lines()).toEqual(['> draft']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 7 });
    await t.send(KEY.down); // nothing newer
    expect(t.screen.lines()).toEqual(['> draft']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'draft' });
  });

  it('keeps edits made to a recalled entry while walking, and adds submitted lines', async () => {
    const history = historyIn(['older', 'newer']);
    const t = terminal({ history });
    const result = t.editor.read('> ');
    await t.keys(KEY.up, '!', KEY.up, KEY.down);
    expect(t.screen.lines()).toEqual(['> newer!']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'newer!' });
    expect(history.entries).toEqual(['older', 'newer', 'newer!']);
    const again = t.editor.read('> ');
    await t.send(KEY.up);
    expect(t.screen.lines().at(-1)).toBe('> newer!');
    await t.send(KEY.ctrlC);
    expect(await again).toEqual({ kind: 'interrupt', text: 'newer!' });
    expect(history.entries).toHaveLength(3); // an interrupted buffer is not history
  });

  it('moves through the lines of a multi-line entry before going further back', async () => {
    const history = historyIn(['old', 'top\nbottom']);
    const t = terminal({ history });
    const result = t.editor.read('> ');
    await t.send(KEY.up);
    expect(t.screen.lines()).toEqual(['> top', '… bottom']);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 8 });
    await t.send(KEY.up);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 5 });
    await t.send(KEY.up);
    expect(t.screen.lines()).toEqual(['> old']);
    await t.send(KEY.down);
    expect(t.screen.lines()).toEqual(['> top', '… bottom']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 5 });
    await t.keys(KEY.down, KEY.down);
    expect(t.screen.lines()).toEqual(['>']);
    await t.send(KEY.ctrlD);
    expect(await result).toEqual({ kind: 'eof' });
  });
});

describe('LineEditor: multi-line input', () => {
  it('inserts a bracketed paste literally, newlines included, and submits only on Enter', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send(`${KEY.pasteStart}first line\r\nsecond\rthird\nfourth\x1b[31m red\x1b[0m\t!${KEY.pasteEnd}`);
    expect(await settled(result)).toBe(false);
    expect(t.screen.lines()).toEqual(['> first line', '… second', '… third', '… fourth red  !']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'first line\nsecond\nthird\nfourth red\t!' });
  });

  it('handles a paste spread over chunks, the end mark and a CRLF split between them', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('x');
    await t.send(`${KEY.pasteStart}a\r`);
    await t.send('\nb\r');
    await t.send('\x1b[20');
    await t.send('1~');
    expect(await settled(result)).toBe(false);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'xa\nb\n' });
  });

  it('takes an Enter followed by more input in the same chunk as a pasted newline (no bracketed paste)', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('one\rtwo\r\nthree\rfour');
    expect(await settled(result)).toBe(false);
    expect(t.screen.lines()).toEqual(['> one', '… two', '… three', '… four']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'one\ntwo\nthree\nfour' });
  });

  it('submits at an Enter that ends a chunk, even after a burst', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('line\rend\r');
    expect(await result).toEqual({ kind: 'line', text: 'line\nend' });
  });

  it('continues the line after a trailing backslash, dropping the backslash', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('ls \\');
    await t.send(KEY.enter);
    expect(await settled(result)).toBe(false);
    expect(t.screen.lines()).toEqual(['> ls', '…']);
    await t.send('-la');
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'ls \n-la' });
  });

  it('keeps the backslashes of pasted text', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('a \\\rb');
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'a \\\nb' });
  });

  it('inserts a newline for Alt-Enter and for Ctrl-J', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.keys('a', KEY.altEnter, 'b', KEY.ctrlJ, 'c');
    expect(await settled(result)).toBe(false);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'a\nb\nc' });
  });

  it('moves between lines with Up and Down, keeping the column', async () => {
    const t = terminal();
    const result = t.editor.read('> ', { continuation: '. ' });
    await t.send('abcdef\nxy\rlonger line');
    await t.keys(KEY.ctrlA, KEY.right, KEY.right, KEY.right, KEY.right, KEY.up);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 4 }); // end of "xy"
    await t.send(KEY.up);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 6 }); // the column of the start, kept
    await t.send('|');
    expect(t.screen.lines()).toEqual(['> abcd|ef', '. xy', '. longer line']);
    await t.keys(KEY.down, KEY.down, '^');
    expect(t.screen.lines()).toEqual(['> abcd|ef', '. xy', '. longe^r line']);
    await t.keys(KEY.home, KEY.backspace);
    expect(t.screen.lines()).toEqual(['> abcd|ef', '. xylonge^r line']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'abcd|ef\nxylonge^r line' });
  });

  it('right-aligns the default continuation prompt to the prompt', async () => {
    const t = terminal();
    const result = t.editor.read('fence> ');
    await t.send('a\rb');
    expect(t.screen.lines()).toEqual(['fence> a', '     … b']);
    await t.send(KEY.ctrlC);
    expect(await result).toEqual({ kind: 'interrupt', text: 'a\nb' });
  });

  it('gets out of a paste whose end mark never comes with Ctrl-C, keeping the text', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send(`${KEY.pasteStart}stuck\r`);
    await t.send(KEY.enter);
    expect(await settled(result)).toBe(false);
    await t.send(KEY.ctrlC);
    expect(await result).toEqual({ kind: 'interrupt', text: 'stuck\n\n' });
  });

  it('draws a paste of 10,000 characters once', async () => {
    const t = terminal({ columns: 100, height: 200 });
    const result = t.editor.read('> ');
    await tick();
    const before = t.writes.length;
    const text = Array.from({ length: 100 }, (_, i) => `line ${String(i).padStart(3, '0')} `.padEnd(100, 'x')).join('\n');
    expect(text.length).toBeGreaterThan(10_000);
    await t.send(KEY.pasteStart + text + KEY.pasteEnd);
    expect(t.writes.length - before).toBe(1);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text });
  });

  it('takes a burst of 10,000 characters without bracketed paste as one chunk: one drawing, no submit', async () => {
    const t = terminal({ columns: 100, height: 200 });
    const result = t.editor.read('> ');
    await tick();
    const before = t.writes.length;
    const lines = Array.from({ length: 100 }, (_, i) => `${i} `.padEnd(100, 'y'));
    const started = performance.now();
    await t.send(lines.join('\r'));
    expect(performance.now() - started).toBeLessThan(1000);
    expect(t.writes.length - before).toBe(1);
    expect(await settled(result)).toBe(false);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: lines.join('\n') });
  });
});

describe('LineEditor: Ctrl-C and Ctrl-D', () => {
  it('submits a line typed before raw mode, which arrives ending with a line feed', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('typed early\n');
    expect(await result).toEqual({ kind: 'line', text: 'typed early' });
  });

  it('keeps the keys after a Ctrl-C in the same chunk for the next read', async () => {
    const t = terminal();
    const first = t.editor.read('> ');
    await t.send('draft\x03/exit\r');
    expect(await first).toEqual({ kind: 'interrupt', text: 'draft' });
    expect(await t.editor.read('> ')).toEqual({ kind: 'line', text: '/exit' });
  });

  it('returns the buffer on Ctrl-C, shows ^C after it and goes to a new line', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('half a thought');
    await t.keys(KEY.home, KEY.ctrlC);
    expect(await result).toEqual({ kind: 'interrupt', text: 'half a thought' });
    expect(t.screen.lines()).toEqual(['> half a thought^C']);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 0 });
  });

  it('returns an empty interrupt on Ctrl-C at an empty prompt', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send(KEY.ctrlC);
    expect(await result).toEqual({ kind: 'interrupt', text: '' });
    expect(t.screen.lines()).toEqual(['> ^C']);
  });

  it('ends with eof on Ctrl-D at an empty buffer, and deletes under the cursor otherwise', async () => {
    const t = terminal();
    const first = t.editor.read('> ');
    await t.send(KEY.ctrlD);
    expect(await first).toEqual({ kind: 'eof' });
    const second = t.editor.read('> ');
    await t.send('abc');
    await t.keys(KEY.home, KEY.ctrlD, KEY.end, KEY.ctrlD);
    expect(await settled(second)).toBe(false);
    await t.send(KEY.enter);
    expect(await second).toEqual({ kind: 'line', text: 'bc' });
  });

  it('ends with eof when the input stream ends', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('partial');
    t.input.end();
    expect(await result).toEqual({ kind: 'eof' });
    expect(t.rawCalls).toEqual([true, false]);
  });
});

describe('LineEditor: the terminal around a read', () => {
  it('pre-fills the buffer with initial, the cursor at its end', async () => {
    const t = terminal();
    const result = t.editor.read('> ', { initial: 'draft\r\nmore' });
    await tick();
    expect(t.screen.lines()).toEqual(['> draft', '… more']);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 6 });
    await t.send('!');
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'draft\nmore!' });
  });

  it('is in raw mode only while reading and listens to nothing between reads', async () => {
    const t = terminal();
    expect(t.rawCalls).toEqual([]);
    const result = t.editor.read('> ');
    await tick();
    expect(t.rawCalls).toEqual([true]);
    expect(t.input.listenerCount('data')).toBe(1);
    await t.send('x\r');
    await result;
    expect(t.rawCalls).toEqual([true, false]);
    expect(t.input.isRaw).toBe(false);
    expect(t.input.listenerCount('data')).toBe(0);
    expect(t.input.listenerCount('end')).toBe(0);
    expect(t.output.listenerCount('resize')).toBe(0);
    expect(t.input.isPaused()).toBe(true);
    // Input arriving between reads waits for the next read... but is not the editor's to take now.
    t.input.write('later');
    await tick();
    expect(t.screen.lines()).toEqual(['> x']);
  });

  it('turns bracketed paste on while reading and off after', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await tick();
    expect(t.screen.modes.get('?2004')).toBe(true);
    await t.send('\r');
    await result;
    expect(t.screen.modes.get('?2004')).toBe(false);
    expect(t.screen.modes.get('?25')).toBe(true); // the cursor is shown
    const all = t.writes.join('');
    expect(all.indexOf('\x1b[?2004h')).toBeLessThan(all.indexOf('\x1b[?2004l'));
  });

  it('rejects a second read while one is in progress, and close ends it as eof', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await expect(t.editor.read('> ')).rejects.toThrow(/already/);
    await t.send('abc');
    t.editor.close();
    t.editor.close();
    expect(await result).toEqual({ kind: 'eof' });
    expect(t.rawCalls).toEqual([true, false]);
    expect(await t.editor.read('> ')).toEqual({ kind: 'eof' });
    expect(t.input.listenerCount('data')).toBe(0);
  });
});

describe('LineEditor: rendering', () => {
  it('counts wide characters as two columns', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('你好');
    expect(t.screen.cursor()).toEqual({ row: 0, col: 6 });
    await t.keys(KEY.left, 'x');
    expect(t.screen.lines()).toEqual(['> 你x好']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 5 });
    await t.keys(KEY.right, '🙂', KEY.backspace, KEY.backspace, 'é');
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: '你xé' });
  });

  it('moves over a letter with a combining mark as one character', async () => {
    const t = terminal();
    const result = t.editor.read('> ');
    await t.send('ae\u0301i');
    await t.keys(KEY.left, KEY.left, KEY.backspace);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'e\u0301i' });
  });

  it('puts the cursor at the start of the next row after a line exactly filling the width', async () => {
    const t = terminal({ columns: 10 });
    const result = t.editor.read('> ');
    await t.send('abcdefgh'); // 2 + 8 = 10 columns
    expect(t.screen.lines()).toEqual(['> abcdefgh']);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 0 });
    expect(t.screen.pendingWrap).toBe(false);
    await t.send('i');
    expect(t.screen.lines()).toEqual(['> abcdefgh', 'i']);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 1 });
    await t.send(KEY.backspace);
    expect(t.screen.lines()).toEqual(['> abcdefgh']);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 0 });
    await t.send(KEY.left);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 9 });
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'abcdefgh' });
    // Just below the input, no blank row between.
    expect(t.screen.cursor()).toEqual({ row: 1, col: 0 });
    expect(t.screen.lines()).toEqual(['> abcdefgh']);
  });

  it('wraps long text and a wide character that does not fit the last column', async () => {
    const t = terminal({ columns: 10 });
    const result = t.editor.read('> ');
    await t.send('abcdefg你z');
    expect(t.screen.lines()).toEqual(['> abcdefg', '你z']);
    expect(t.screen.cursor()).toEqual({ row: 1, col: 3 });
    await t.keys(KEY.home, KEY.right, 'X');
    expect(t.screen.lines()).toEqual(['> aXbcdefg', '你z']);
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'aXbcdefg你z' });
  });

  it('draws again on resize, to the new width', async () => {
    const t = terminal({ columns: 10 });
    const result = t.editor.read('> ');
    await t.send('abcdefghijklmno');
    expect(t.screen.lines()).toEqual(['> abcdefgh', 'ijklmno']);
    t.output.columns = 30;
    t.screen.width = 30;
    t.screen.grid = t.screen.grid.map((row) => [...row, ...Array.from({ length: 20 }, () => ' ')]);
    t.output.emit('resize');
    expect(t.screen.lines()).toEqual(['> abcdefghijklmno']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 17 });
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: 'abcdefghijklmno' });
  });

  it('shows the rows around the cursor when the text is taller than the screen, and all of it on submit', async () => {
    const t = terminal({ columns: 20, rows: 5 });
    const result = t.editor.read('> ');
    const lines = Array.from({ length: 12 }, (_, i) => `line ${i}`);
    await t.send(KEY.pasteStart + lines.join('\n') + KEY.pasteEnd);
    expect(t.screen.lines()).toEqual(['… line 7', '… line 8', '… line 9', '… line 10', '… line 11']);
    expect(t.screen.cursor()).toEqual({ row: 4, col: 9 });
    for (let i = 0; i < 11; i++) await t.send(KEY.up);
    expect(t.screen.lines()).toEqual(['> line 0', '… line 1', '… line 2', '… line 3', '… line 4']);
    expect(t.screen.cursor()).toEqual({ row: 0, col: 8 });
    await t.send(KEY.enter);
    expect(await result).toEqual({ kind: 'line', text: lines.join('\n') });
    const everything = [...t.screen.scrollback, ...t.screen.lines()];
    expect(everything.slice(-12)).toEqual(['> line 0', ...lines.slice(1).map((l) => `… ${l}`)]);
  });
});

describe('LineEditor: without a terminal', () => {
  it('reads one line at a time from a pipe, writing only the prompt, and eof at its end', async () => {
    const input = new PassThrough();
    const written: string[] = [];
    const output = new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        written.push(chunk.toString());
        callback();
      },
    });
    const history = historyIn([]);
    const editor = new LineEditor({ input, output, style: createStyle(false), history });
    input.write('first\nsecond\r\nthi');
    input.end('rd');
    const results: EditorResult[] = [];
    for (let i = 0; i < 5; i++) results.push(await editor.read('> '));
    expect(results).toEqual([
      { kind: 'line', text: 'first' },
      { kind: 'line', text: 'second' },
      { kind: 'line', text: 'third' },
      { kind: 'eof' },
      { kind: 'eof' },
    ]);
    expect(written.join('')).toBe('> > > > > ');
    expect(history.entries).toEqual([]); // piped lines are not history
    expect(input.listenerCount('data')).toBe(0);
  });

  it('falls back to plain lines when the output is not a terminal, even with a terminal input', async () => {
    const t = terminal();
    t.output.isTTY = false;
    const result = t.editor.read('> ');
    await t.send('typed\x1b[D line\n');
    expect(await result).toEqual({ kind: 'line', text: 'typed\x1b[D line' });
    expect(t.rawCalls).toEqual([]);
    expect(t.writes.join('')).toBe('> ');
  });

  it('waits for a line that arrives in pieces', async () => {
    const input = new PassThrough();
    const output = new Writable({ write: (_c, _e, cb) => cb() });
    const editor = new LineEditor({ input, output, style: createStyle(false) });
    const result = editor.read('> ');
    input.write('par');
    expect(await settled(result)).toBe(false);
    input.write(Buffer.from([0xc3])); // the first byte of é
    input.write(Buffer.from([0xa9, 0x0a]));
    expect(await result).toEqual({ kind: 'line', text: 'paré' });
  });
});

// ---------------------------------------------------------------- a property

/** The keys of the property and what each does to a model buffer (code points, cursor index). */
type Model = { chars: string[]; cursor: number };
const PRINTABLE = ['a', 'b', 'z', ' ', 'é', '你', '🙂', '-'];
const EDIT_KEYS: Record<string, (m: Model) => void> = {
  [KEY.left]: (m) => void (m.cursor = Math.max(0, m.cursor - 1)),
  [KEY.right]: (m) => void (m.cursor = Math.min(m.chars.length, m.cursor + 1)),
  [KEY.home]: (m) => void (m.cursor = modelLineStart(m)),
  [KEY.end]: (m) => void (m.cursor = modelLineEnd(m)),
  [KEY.ctrlA]: (m) => void (m.cursor = modelLineStart(m)),
  [KEY.ctrlE]: (m) => void (m.cursor = modelLineEnd(m)),
  [KEY.backspace]: (m) => {
    if (m.cursor > 0) m.chars.splice(--m.cursor, 1);
  },
  [KEY.delete]: (m) => void m.chars.splice(m.cursor, 1),
  [KEY.ctrlU]: (m) => {
    const start = modelLineStart(m);
    const from = start === m.cursor ? Math.max(0, m.cursor - 1) : start;
    m.chars.splice(from, m.cursor - from);
    m.cursor = from;
  },
  [KEY.ctrlK]: (m) => {
    const end = modelLineEnd(m);
    m.chars.splice(m.cursor, end === m.cursor ? 1 : end - m.cursor);
  },
  [KEY.ctrlW]: (m) => {
    let j = m.cursor;
    while (j > 0 && /\s/.test(m.chars[j - 1] ?? '')) j--;
    while (j > 0 && !/\s/.test(m.chars[j - 1] ?? '')) j--;
    m.chars.splice(j, m.cursor - j);
    m.cursor = j;
  },
  [KEY.altEnter]: (m) => void m.chars.splice(m.cursor++, 0, '\n'),
};

function modelLineStart(m: Model): number {
  let i = m.cursor;
  while (i > 0 && m.chars[i - 1] !== '\n') i--;
  return i;
}

function modelLineEnd(m: Model): number {
  let i = m.cursor;
  while (i < m.chars.length && m.chars[i] !== '\n') i++;
  return i;
}

/** How the text should look on a terminal `width` wide, and where the cursor should be: an oracle written apart from the editor. */
function expectedScreen(prompt: string, continuation: string, m: Model, width: number): { rows: string[]; cursor: { row: number; col: number } } {
  const rows: string[] = [];
  let row = prompt;
  let col = prompt.length;
  let cursor = { row: 0, col };
  m.chars.forEach((ch, i) => {
    if (ch === '\n') {
      if (i === m.cursor) cursor = col === width ? { row: rows.length + 1, col: 0 } : { row: rows.length, col };
      if (i === m.cursor && col === width) rows.push(row, '');
      else rows.push(row);
      row = continuation;
      col = continuation.length;
      return;
    }
    const w = codePointWidth(ch.codePointAt(0) ?? 0);
    if (col + w > width) {
      rows.push(row);
      row = '';
      col = 0;
    }
    if (i === m.cursor) cursor = { row: rows.length, col };
    row += ch;
    col += w;
  });
  if (m.cursor === m.chars.length) cursor = col === width ? { row: rows.length + 1, col: 0 } : { row: rows.length, col };
  rows.push(row);
  return { rows: rows.map((r) => r.trimEnd()), cursor };
}

describe('LineEditor: a property', () => {
  it('any mix of printable and editing keys, in any chunks, shows exactly the buffer with the cursor in place', async () => {
    const key = fc.constantFrom(...PRINTABLE, ...Object.keys(EDIT_KEYS));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(key, { minLength: 1, maxLength: 4 }), { maxLength: 25 }), fc.integer({ min: 6, max: 16 }), async (chunks, width) => {
        const t = terminal({ columns: width, height: 60 });
        const result = t.editor.read('> ');
        const model: Model = { chars: [], cursor: 0 };
        for (const chunk of chunks) {
          await t.send(chunk.join(''));
          for (const k of chunk) {
            const edit = EDIT_KEYS[k];
            if (edit) edit(model);
            else model.chars.splice(model.cursor++, 0, k);
          }
        }
        await tick();
        const expected = expectedScreen('> ', '… ', model, width);
        const shown = t.screen.lines();
        while (shown.length < expected.rows.length) shown.push('');
        expect(shown).toEqual(expected.rows);
        expect(t.screen.cursor()).toEqual(expected.cursor);
        await t.send(KEY.enter);
        expect(await result).toEqual({ kind: 'line', text: model.chars.join('') });
        // On submit the whole text is drawn once more and the cursor goes to the row below it.
        const final = expectedScreen('> ', '… ', { chars: model.chars, cursor: -1 }, width);
        const after = t.screen.lines();
        while (after.length < final.rows.length) after.push(''); // a row holding only a space
        expect(after).toEqual(final.rows);
        expect(t.screen.cursor()).toEqual({ row: final.rows.length, col: 0 });
      }),
      { numRuns: 150 },
    );
  });
});
