import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { RunKeys } from '../../src/tui/run-keys';

/** A terminal input for tests: keys are sent with `type`, raw mode and resume/pause are recorded. */
class FakeInput extends EventEmitter {
  readonly rawModes: boolean[] = [];
  resumed = 0;
  paused = 0;

  readonly isTTY: boolean | undefined;

  /** `{ isTTY: undefined }` gives an input without the property's value, as a pipe has. */
  constructor(options: { isTTY: boolean | undefined } = { isTTY: true }) {
    super();
    this.isTTY = options.isTTY;
  }

  setRawMode(mode: boolean): this {
    this.rawModes.push(mode);
    return this;
  }

  resume(): this {
    this.resumed++;
    return this;
  }

  pause(): this {
    this.paused++;
    return this;
  }

  /** Whether the terminal is in raw mode now (false before any call). */
  get raw(): boolean {
    return this.rawModes.at(-1) ?? false;
  }

  get listening(): boolean {
    return this.listenerCount('data') > 0;
  }

  /** Sends one chunk of key data, as a string or as the Buffer a TTY gives. */
  type(data: string, asBuffer = false): void {
    this.emit('data', asBuffer ? Buffer.from(data, 'utf8') : data);
  }
}

const CTRL_C = '\x03';
const BACKSPACE = '\x7f';
const UP = '\x1b[A';
const LEFT = '\x1b[D';

function watching(input = new FakeInput()) {
  const keys = new RunKeys(input);
  let interrupts = 0;
  keys.start(() => {
    interrupts++;
  });
  return { input, keys, interrupts: () => interrupts };
}

describe('RunKeys: Ctrl-C and the terminal', () => {
  it('calls the interrupt handler on Ctrl-C, each time', () => {
    const { input, interrupts } = watching();
    input.type(CTRL_C);
    expect(interrupts()).toBe(1);
    input.type(CTRL_C, true);
    expect(interrupts()).toBe(2);
  });

  it('finds Ctrl-C among other keys of a chunk', () => {
    const { input, interrupts } = watching();
    input.type(`ab${CTRL_C}cd`);
    expect(interrupts()).toBe(1);
  });

  it('does not interrupt for other keys', () => {
    const { input, interrupts } = watching();
    input.type('hello\r');
    input.type(UP);
    expect(interrupts()).toBe(0);
  });

  it('puts the terminal in raw mode while watching and takes it out after stop', () => {
    const input = new FakeInput();
    const keys = new RunKeys(input);
    expect(input.rawModes).toEqual([]);
    keys.start(() => {});
    expect(input.raw).toBe(true);
    expect(input.listening).toBe(true);
    expect(input.resumed).toBeGreaterThan(0);
    keys.stop();
    expect(input.raw).toBe(false);
    expect(input.listening).toBe(false);
    expect(input.paused).toBeGreaterThan(0);
  });

  it('no longer interrupts after stop', () => {
    const { input, keys, interrupts } = watching();
    keys.stop();
    input.type(CTRL_C);
    expect(interrupts()).toBe(0);
  });

  it('does not touch the terminal when stopped without having started', () => {
    const input = new FakeInput();
    new RunKeys(input).stop();
    expect(input.rawModes).toEqual([]);
    expect(input.paused).toBe(0);
  });

  it('calls the handler of the latest start, once per Ctrl-C, when started twice', () => {
    const { input, keys } = watching();
    let latest = 0;
    keys.start(() => latest++);
    input.type(CTRL_C);
    expect(latest).toBe(1);
  });

  it('can watch a second run after the first one ended', () => {
    const { input, keys } = watching();
    keys.stop();
    let second = 0;
    keys.start(() => second++);
    expect(input.raw).toBe(true);
    input.type(CTRL_C);
    expect(second).toBe(1);
  });
});

describe('RunKeys: pause and resume', () => {
  it('pause hands the terminal over: raw mode off, keys not watched', () => {
    const { input, keys, interrupts } = watching();
    keys.pause();
    expect(input.raw).toBe(false);
    expect(input.listening).toBe(false);
    input.type(`y${CTRL_C}`);
    expect(interrupts()).toBe(0);
    expect(keys.takeTypeahead()).toEqual([]);
  });

  it('resume takes it back: raw mode on, Ctrl-C interrupts again', () => {
    const { input, keys, interrupts } = watching();
    keys.pause();
    keys.resume();
    expect(input.raw).toBe(true);
    expect(input.listenerCount('data')).toBe(1);
    input.type(CTRL_C);
    expect(interrupts()).toBe(1);
  });

  it('resume does nothing once the run has ended', () => {
    const { input, keys } = watching();
    keys.stop();
    const modes = input.rawModes.length;
    keys.resume();
    expect(input.rawModes.length).toBe(modes);
    expect(input.listening).toBe(false);
  });

  it('stop after pause leaves the terminal out of raw mode', () => {
    const { input, keys } = watching();
    keys.pause();
    keys.stop();
    expect(input.raw).toBe(false);
    expect(input.listening).toBe(false);
    keys.resume();
    expect(input.listening).toBe(false);
  });
});

describe('RunKeys: type-ahead', () => {
  it('keeps the keys typed during the run, in the chunks they came in', () => {
    const { input, keys } = watching();
    input.type('fix the ');
    input.type('tests', true);
    expect(keys.takeTypeahead()).toEqual(['fix the ', 'tests']);
  });

  it('forgets them once taken', () => {
    const { input, keys } = watching();
    input.type('once');
    expect(keys.takeTypeahead()).toEqual(['once']);
    expect(keys.takeTypeahead()).toEqual([]);
  });

  it('keeps Enter, Backspace and escape sequences as they were typed, for the editor to apply', () => {
    const { input, keys } = watching();
    input.type(`ab${BACKSPACE}${LEFT}c\r`);
    input.type(UP);
    expect(keys.takeTypeahead()).toEqual([`ab${BACKSPACE}${LEFT}c\r`, UP]);
  });

  it('leaves Ctrl-C out: it stops the run instead', () => {
    const { input, keys, interrupts } = watching();
    input.type(`one${CTRL_C}two`);
    input.type(CTRL_C);
    expect(interrupts()).toBe(2);
    expect(keys.takeTypeahead()).toEqual(['onetwo']);
  });

  it('keeps what was typed after the run ends, for the next prompt', () => {
    const { input, keys } = watching();
    input.type('next prompt');
    keys.stop();
    expect(keys.takeTypeahead()).toEqual(['next prompt']);
  });
});

describe('RunKeys: input that is not a terminal', () => {
  it('never puts it in raw mode', () => {
    for (const isTTY of [false, undefined]) {
      const input = new FakeInput({ isTTY });
      const keys = new RunKeys(input);
      keys.start(() => {});
      keys.pause();
      keys.resume();
      keys.stop();
      expect(input.rawModes).toEqual([]);
    }
  });
});
