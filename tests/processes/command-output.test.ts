import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CommandCapture,
  HeadTailBuffer,
  JobNoticeFilter,
  TerminalTextStream,
  resolveOverwrites,
  stripTerminalCodes,
} from '../../src/processes/command-output';

const NONCE = 'a'.repeat(16) + 'b'.repeat(16);
const OLD = 'c'.repeat(32);
const OTHER = '0123456789abcdef'.repeat(2);
const status = (nonce: string, code: number): string => `\x1e${nonce}:${code}\x1e`;
const prompt = (nonce: string): string => `\x1e${nonce}\x1e`;

/** Feeds `raw` to a stream cut at the given positions; returns all the text it gave out. */
function streamInPieces(raw: string, cuts: number[]): string {
  const stream = new TerminalTextStream();
  const points = [...new Set(cuts.map((cut) => cut % (raw.length + 1)))].sort((a, b) => a - b);
  let out = '';
  let from = 0;
  for (const point of [...points, raw.length]) {
    out += stream.push(raw.slice(from, point));
    from = point;
  }
  return out + stream.end();
}

describe('TerminalTextStream', () => {
  it('removes escape sequences and noise controls and turns CRLF into LF', () => {
    const raw = [
      '\x1b[1;31mred\x1b[0m ',
      '\x1b]0;window title\x07',
      '\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ ',
      '\x1bP1$r0m\x1b\\',
      '\x1b(B\x1b=\x1b7\x1b[?2004h\x1b[2K',
      'bell\x07 shift\x0e\x0f\r\n',
      'program crlf\r\r\n',
      'lone escape\x1b\n',
    ].join('');
    expect(stripTerminalCodes(raw)).toBe('red link bell shift\nprogram crlf\nlone escape\n');
  });

  it('keeps bare carriage returns and backspaces for a live display', () => {
    expect(stripTerminalCodes('10%\r100%\nab\bc')).toBe('10%\r100%\nab\bc');
  });

  it('drops an escape sequence that never ends, keeping the text before it', () => {
    const stream = new TerminalTextStream();
    expect(stream.push('text\x1b]0;unfinished')).toBe('text');
    expect(stream.end()).toBe('');
  });

  it('ends a string sequence that meets a newline before its terminator, keeping the next lines', () => {
    // Bytes of binary output that happen to open an OSC, an APC or a DCS.
    expect(stripTerminalCodes('bin\x1b]\x84junk\r\nafter\r\n')).toBe('bin\nafter\n');
    expect(stripTerminalCodes('bin\x1b_S\x90\r\nafter\n')).toBe('bin\nafter\n');
    expect(stripTerminalCodes('bin\x1bX\xbe\x1bY\nafter\n')).toBe('binX\xbe\nafter\n');
    expect(stripTerminalCodes('\x1b]0;title\x07kept\n')).toBe('kept\n');
  });

  it('gives the same text however the input is cut into chunks', () => {
    const token = fc.constantFrom(
      'plain ',
      'ünïcødé ✓ ',
      '\x1b[38;5;196m',
      '\x1b[0m',
      '\x1b]0;title\x07',
      '\x1b]8;;url\x1b\\',
      '\x1b(B',
      '\r\n',
      '\r\r\n',
      '\n',
      '\x07',
    );
    const plain: Record<string, string> = { '\r\n': '\n', '\r\r\n': '\n', 'plain ': 'plain ', 'ünïcødé ✓ ': 'ünïcødé ✓ ', '\n': '\n' };
    fc.assert(
      fc.property(fc.array(token, { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 12 }), (tokens, cuts) => {
        const expected = tokens.map((t) => plain[t] ?? '').join('');
        expect(streamInPieces(tokens.join(''), cuts)).toBe(expected);
      }),
    );
  });
});

describe('resolveOverwrites', () => {
  it('keeps the text after the last carriage return of each line and applies backspaces', () => {
    expect(resolveOverwrites('10%\r50%\r100%\nnext\n')).toBe('100%\nnext\n');
    expect(resolveOverwrites('long text\rshort\n')).toBe('short\n');
    expect(resolveOverwrites('N\bNA\bAME\ttab\n')).toBe('NAME\ttab\n');
    expect(resolveOverwrites('trailing\r')).toBe('trailing');
    expect(resolveOverwrites('untouched\n')).toBe('untouched\n');
  });
});

describe('CommandCapture', () => {
  it('ends at the status marker of its nonce and keeps the status', () => {
    const capture = new CommandCapture({ nonce: NONCE, maxBytes: 1000 });
    capture.push(`hello\r\n${status(NONCE, 42)}${prompt(NONCE)}after`);
    expect(capture.done).toBe(true);
    expect(capture.status).toBe(42);
    expect(capture.finish()).toEqual({ output: 'hello\n', droppedBytes: 0 });
  });

  it('recognises a marker cut at any point and never streams a piece of it', () => {
    const raw = `out\x1e put${status(NONCE, 7)}`;
    for (let cut = 0; cut <= raw.length; cut++) {
      const chunks: string[] = [];
      const capture = new CommandCapture({ nonce: NONCE, maxBytes: 1000, onOutput: (c) => chunks.push(c) });
      capture.push(raw.slice(0, cut));
      capture.push(raw.slice(cut));
      expect(capture.status).toBe(7);
      expect(capture.finish().output).toBe('out\x1e put');
      expect(chunks.join('')).toBe('out\x1e put');
    }
  });

  it('takes the start marker out, cut at any point, and says the command started', () => {
    const raw = `\x1e${NONCE}:run\x1eout${status(NONCE, 0)}`;
    for (let cut = 0; cut <= raw.length; cut++) {
      const chunks: string[] = [];
      const capture = new CommandCapture({ nonce: NONCE, maxBytes: 1000, onOutput: (c) => chunks.push(c) });
      capture.push(raw.slice(0, cut));
      expect(capture.started).toBe(cut >= NONCE.length + 6);
      capture.push(raw.slice(cut));
      expect(capture.started).toBe(true);
      expect(capture.finish().output).toBe('out');
      expect(chunks.join('')).toBe('out');
    }
    const other = new CommandCapture({ nonce: NONCE, maxBytes: 1000 });
    other.push(`\x1e${OTHER}:run\x1e`);
    expect(other.started).toBe(false);
    expect(other.finish().output).toBe(`\x1e${OTHER}:run\x1e`);
  });

  it('treats markers with unknown nonces as output', () => {
    const capture = new CommandCapture({ nonce: NONCE, maxBytes: 1000 });
    capture.push(`${status(OTHER, 0)}${prompt(OTHER)}${status(NONCE, 0)}`);
    expect(capture.finish().output).toBe(`${status(OTHER, 0)}${prompt(OTHER)}`);
  });

  it('ends at a known prompt only after it was interrupted', () => {
    const capture = new CommandCapture({ nonce: NONCE, prompts: [OLD], maxBytes: 1000 });
    capture.push(`before${prompt(OLD)} more`);
    expect(capture.done).toBe(false);
    capture.interrupted();
    capture.push(`\r\n${prompt(OLD)}ignored`);
    expect(capture.done).toBe(true);
    expect(capture.status).toBeUndefined();
    expect(capture.finish().output).toBe('before more\n');
  });

  it('strips the echo of the typed line, even when it arrives in pieces', () => {
    const line = ' builtin . /tmp/x/command.sh; marker';
    const capture = new CommandCapture({ nonce: NONCE, echo: line, maxBytes: 1000 });
    capture.push(line.slice(0, 10));
    capture.push(`${line.slice(10)}\r\nout\r\n${status(NONCE, 0)}`);
    expect(capture.finish().output).toBe('out\n');
  });

  it('strips the echo when the previous prompt arrives just before it, whole or in pieces', () => {
    const previous = 'c'.repeat(32);
    const line = ' builtin . /tmp/x/command.sh; marker';
    const prompt = `\x1e${previous}\x1e`;
    for (const cut of [0, 3, prompt.length, prompt.length + 5]) {
      const capture = new CommandCapture({ nonce: NONCE, prompts: [previous], echo: line, maxBytes: 1000 });
      const stream = `${prompt}${line}\r\nvisible\r\n${status(NONCE, 0)}`;
      capture.push(stream.slice(0, cut));
      capture.push(stream.slice(cut));
      expect(capture.finish().output).toBe('visible\n');
    }
  });

  it('drops the previous prompt held back for the echo when the command ends without output (bash exited)', () => {
    const previous = 'c'.repeat(32);
    const capture = new CommandCapture({ nonce: NONCE, prompts: [previous], echo: ' builtin . /tmp/x', maxBytes: 1000 });
    capture.push(`\x1e${previous}\x1e`);
    expect(capture.finish().output).toBe('');
  });

  it('keeps output that merely starts like the typed line', () => {
    const capture = new CommandCapture({ nonce: NONCE, echo: ' builtin . /tmp/x', maxBytes: 1000 });
    capture.push(` builtin was printed\n${status(NONCE, 0)}`);
    expect(capture.finish().output).toBe(' builtin was printed\n');
  });

  it('returns what it has when it never ends', () => {
    const capture = new CommandCapture({ nonce: NONCE, maxBytes: 1000 });
    capture.push(`partial\x1e${NONCE.slice(0, 5)}`);
    expect(capture.done).toBe(false);
    expect(capture.finish().output).toBe(`partial\x1e${NONCE.slice(0, 5)}`);
  });
});

/** Feeds `text` to a job notice filter cut at the given positions; returns all it let through. */
function filterInPieces(text: string, cuts: number[]): string {
  const filter = new JobNoticeFilter();
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  let out = '';
  let from = 0;
  for (const point of [...points, text.length]) {
    out += filter.push(text.slice(from, point));
    from = point;
  }
  return out + filter.end();
}

describe('JobNoticeFilter', () => {
  it('drops the notices of bash job control, and the empty line before a Stopped notice', () => {
    const text = [
      'before',
      '[1]+  Done                    sleep 0.2',
      '[2]-  Exit 3                  make -j4',
      '[3]   Killed                  python3 -m http.server 8765 > server.log 2>&1',
      '[1]+  Terminated              sleep 100  (wd: /tmp)',
      '[4]+  Segmentation fault (core dumped) ./crash',
      '[12]+  Done(1)                 false | true',
      '',
      '[1]+  Stopped                 cat',
      'after',
      '',
    ].join('\n');
    expect(filterInPieces(text, [])).toBe('before\nafter\n');
  });

  it('keeps lines that only look a little like notices', () => {
    const text = ['[1] 12345', '[sudo] password', 'x [1]+  Done   sleep 1', '[1]+ done lower case', '[INFO] Done building', '', 'end'].join('\n');
    expect(filterInPieces(text, [])).toBe(text);
    expect(filterInPieces('  [1]+  Done                    sleep 1\n', [])).toBe('  [1]+  Done                    sleep 1\n');
  });

  it('holds back a possible notice only until its line ends, and lets it out at the end', () => {
    const filter = new JobNoticeFilter();
    expect(filter.push('out\n[1]+  Do')).toBe('out\n');
    expect(filter.push('ne   sleep 1\nnext')).toBe('next');
    expect(filter.push(' line\n[2')).toBe(' line\n');
    expect(filter.end()).toBe('[2');
    expect(filter.push(']+  Done   sleep 1\n')).toBe(']+  Done   sleep 1\n');
  });

  it('gives the same text however the input is cut into chunks', () => {
    const token = fc.constantFrom(
      { text: 'plain line\n', kept: true },
      { text: '\n', kept: true },
      { text: '[1] 4242\n', kept: true },
      { text: '[7] waiting\n', kept: true },
      { text: '[1]+  Done                    sleep 1\n', kept: false },
      { text: '[2]-  Exit 2                  make\n', kept: false },
      { text: '\n[3]+  Stopped                 cat\n', kept: false },
      { text: 'prompt? ', kept: true },
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 12 }), (tokens, cuts) => {
        // A notice is a notice only at the start of a line: keep the generated text line-aligned.
        const aligned = tokens.map((t, i) => (t.text === 'prompt? ' && i < tokens.length - 1 ? { text: 'prompt?\n', kept: true } : t));
        const expected = aligned.filter((t) => t.kept).map((t) => t.text).join('');
        expect(filterInPieces(aligned.map((t) => t.text).join(''), cuts)).toBe(expected);
      }),
    );
  });
});

describe('HeadTailBuffer', () => {
  it('keeps everything under the limit', () => {
    const buffer = new HeadTailBuffer(100);
    buffer.append('a'.repeat(60));
    buffer.append('b'.repeat(40));
    expect(buffer.result()).toEqual({ text: 'a'.repeat(60) + 'b'.repeat(40), droppedBytes: 0 });
  });

  it('keeps the head and the tail, counts the dropped bytes and never splits a character', () => {
    const buffer = new HeadTailBuffer(101);
    const pieces = Array.from({ length: 50 }, (_, i) => `${i}€`.repeat(7));
    for (const piece of pieces) buffer.append(piece);
    const all = pieces.join('');
    const { text, droppedBytes } = buffer.result();
    const marker = `\n[... ${droppedBytes} bytes of output dropped ...]\n`;
    const [head = '', tail = ''] = text.split(marker);
    expect(text).not.toContain('\ufffd');
    expect(all.startsWith(head)).toBe(true);
    expect(all.endsWith(tail)).toBe(true);
    expect(Buffer.byteLength(head)).toBeLessThanOrEqual(50);
    expect(Buffer.byteLength(head)).toBeGreaterThan(46);
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(51);
    expect(Buffer.byteLength(tail)).toBeGreaterThan(47);
    expect(Buffer.byteLength(head) + Buffer.byteLength(tail) + droppedBytes).toBe(Buffer.byteLength(all));
  });
});
