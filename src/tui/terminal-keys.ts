/**
 * Key decoding for the line editor: what the bytes a raw-mode terminal sends (control
 * characters, CSI and SS3 escape sequences, Alt-prefixed keys) stand for, as actions.
 */

/** What a key does. */
export type Action =
  | 'none'
  | 'enter'
  | 'newline'
  | 'tab'
  | 'left'
  | 'right'
  | 'up'
  | 'down'
  | 'home'
  | 'end'
  | 'word-left'
  | 'word-right'
  | 'backspace'
  | 'delete'
  | 'delete-or-eof'
  | 'kill-start'
  | 'kill-end'
  | 'kill-word-back'
  | 'kill-word-forward'
  | 'rubout-word'
  | 'yank'
  | 'clear'
  | 'interrupt'
  | 'paste-start';

/** Control characters (and DEL) as keys. Those not listed are ignored. */
export const CONTROL_KEYS: Partial<Record<number, Action>> = {
  0x01: 'home', // Ctrl-A
  0x02: 'left', // Ctrl-B
  0x03: 'interrupt', // Ctrl-C
  0x04: 'delete-or-eof', // Ctrl-D
  0x05: 'end', // Ctrl-E
  0x06: 'right', // Ctrl-F
  0x08: 'backspace', // Ctrl-H, Backspace on some terminals
  0x09: 'tab',
  0x0a: 'newline', // Ctrl-J
  0x0b: 'kill-end', // Ctrl-K
  0x0c: 'clear', // Ctrl-L
  0x0e: 'down', // Ctrl-N
  0x10: 'up', // Ctrl-P
  0x15: 'kill-start', // Ctrl-U
  0x17: 'rubout-word', // Ctrl-W
  0x19: 'yank', // Ctrl-Y
  0x7f: 'backspace',
};

/** Keys sent as ESC O <letter> (application cursor mode, rxvt's Ctrl-arrows, the keypad's Enter). */
const SS3_KEYS: Partial<Record<string, Action>> = {
  A: 'up',
  B: 'down',
  C: 'right',
  D: 'left',
  H: 'home',
  F: 'end',
  M: 'enter',
  c: 'word-right',
  d: 'word-left',
};

/**
 * How many units at the end of `s` (from `from` on) could begin `mark`: held back from a paste
 * until the next chunk says whether the mark follows.
 */
export function heldBack(s: string, from: number, mark: string): number {
  for (let k = Math.min(mark.length - 1, s.length - from); k > 0; k--) {
    if (mark.startsWith(s.slice(s.length - k))) return k;
  }
  return 0;
}

/**
 * The key an escape sequence at `s[i]` stands for and how many units it takes; null when the
 * sequence is cut off by the end of `s`. Sequences that mean nothing here come out as `none`,
 * whole, so they never reach the buffer.
 */
export function parseEscape(s: string, i: number): { length: number; action: Action } | null {
  const next = s[i + 1];
  if (next === undefined) return null;
  if (next === '[') return parseCsi(s, i);
  if (next === 'O') {
    const final = s[i + 2];
    return final === undefined ? null : { length: 3, action: SS3_KEYS[final] ?? 'none' };
  }
  if (next === ']' || next === 'P' || next === '_' || next === '^' || next === 'X') {
    // A string (a terminal's reply, say) up to BEL or ST: skipped whole.
    for (let j = i + 2; j < s.length; j++) {
      if (s[j] === '\x07') return { length: j - i + 1, action: 'none' };
      if (s[j] === '\x1b' && s[j + 1] === '\\') return { length: j - i + 2, action: 'none' };
    }
    return s.length - i > 4096 ? { length: s.length - i, action: 'none' } : null;
  }
  if (next === '\x1b') {
    // ESC ESC [ D and the like: Alt with a key some terminals send as a sequence of its own.
    const inner = parseEscape(s, i + 1);
    if (!inner) return null;
    return { length: inner.length + 1, action: withAlt(inner.action) };
  }
  if (next === '\r') return { length: 2, action: 'newline' }; // Alt-Enter
  if (next === '\x7f' || next === '\x08') return { length: 2, action: 'kill-word-back' }; // Alt-Backspace
  const code = next.charCodeAt(0);
  // A lone Escape before a control key: the Escape is dropped and the key stays a key.
  if (code < 0x20 || code === 0x7f) return { length: 1, action: 'none' };
  const size = code >= 0xd800 && code <= 0xdbff ? 2 : 1;
  const meta: Partial<Record<string, Action>> = { b: 'word-left', f: 'word-right', d: 'kill-word-forward' };
  return { length: 1 + size, action: meta[next] ?? 'none' };
}

/** A CSI sequence: ESC [ parameters intermediates final. */
function parseCsi(s: string, i: number): { length: number; action: Action } | null {
  let j = i + 2;
  while (j < s.length && s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x3f) j++;
  const paramsEnd = j;
  while (j < s.length && s.charCodeAt(j) >= 0x20 && s.charCodeAt(j) <= 0x2f) j++;
  if (j >= s.length) return j - i > 64 ? { length: j - i, action: 'none' } : null;
  const final = s.charCodeAt(j);
  // Not a sequence after all: drop what was read and let the odd character be a key of its own.
  if (final < 0x40 || final > 0x7e) return { length: j - i, action: 'none' };
  return { length: j - i + 1, action: csiAction(s.slice(i + 2, paramsEnd), s[j] ?? '') };
}

function csiAction(params: string, final: string): Action {
  const parts = params.split(';');
  const modifiers = Math.max(0, (Number.parseInt(parts[1] ?? '1', 10) || 1) - 1);
  const altOrCtrl = (modifiers & (2 | 4 | 8)) !== 0;
  switch (final) {
    case 'A':
      return 'up';
    case 'B':
      return 'down';
    case 'C':
      return altOrCtrl ? 'word-right' : 'right';
    case 'D':
      return altOrCtrl ? 'word-left' : 'left';
    case 'H':
      return 'home';
    case 'F':
      return 'end';
    case '~':
      switch (parts[0]) {
        case '1':
        case '7':
          return 'home';
        case '4':
        case '8':
          return 'end';
        case '3':
          return (modifiers & 4) !== 0 ? 'kill-word-forward' : 'delete';
        case '200':
          return 'paste-start';
        case '27':
          // xterm's modifyOtherKeys: a modified Enter (Shift-Enter) breaks the line.
          return parts[2] === '13' ? 'newline' : 'none';
        default:
          return 'none';
      }
    case 'u':
      // The kitty keyboard protocol's Enter, plain or modified.
      if (parts[0] === '13') return modifiers > 0 ? 'newline' : 'enter';
      return 'none';
    default:
      return 'none';
  }
}

/** What a key does with Alt held. */
function withAlt(action: Action): Action {
  if (action === 'left') return 'word-left';
  if (action === 'right') return 'word-right';
  if (action === 'backspace') return 'kill-word-back';
  if (action === 'enter') return 'newline';
  return action;
}
