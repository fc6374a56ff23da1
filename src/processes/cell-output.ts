import { HeadTailBuffer, TerminalTextStream, resolveOverwrites } from './command-output';

/** Control characters that are neither layout (tab, LF, CR) nor an overwrite (backspace): binary junk. */
const JUNK_CONTROLS = /[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]/g;

export interface CellOutputOptions {
  /** Written by the kernel after the cell's output: ends the capture. Never shown. */
  sentinel: string;
  /** Cap on the text kept in memory, in UTF-8 bytes (head and tail kept, the middle counted). */
  maxBytes: number;
  /** Receives clean text as it arrives. */
  onOutput?: (chunk: string) => void;
}

/**
 * The output of one Python cell as read from the kernel's output pipe (decoded text in, any
 * chunking). It ends at the cell's sentinel: what comes after it belongs to no cell and is
 * ignored. A sentinel split between chunks is held back until it can be recognised, so no part
 * of it reaches `onOutput` or the result.
 *
 * Guarantees: terminal escape sequences are removed, CR LF becomes LF, other control
 * characters (NUL, binary junk) become U+FFFD; at the end, carriage-return overwrites and
 * backspaces are resolved as a terminal would show the final state. Memory stays bounded by
 * `maxBytes`, however much the cell prints.
 */
export class CellOutput {
  private held = '';
  private ended = false;
  private readonly text = new TerminalTextStream();
  private readonly kept: HeadTailBuffer;

  constructor(private readonly options: CellOutputOptions) {
    this.kept = new HeadTailBuffer(options.maxBytes);
  }

  /** Whether the sentinel has arrived. */
  get done(): boolean {
    return this.ended;
  }

  push(chunk: string): void {
    if (this.ended || !chunk) return;
    const data = this.held + chunk;
    this.held = '';
    const { sentinel } = this.options;
    const at = data.indexOf(sentinel);
    if (at !== -1) {
      this.emit(data.slice(0, at));
      this.ended = true;
      return;
    }
    const keep = partialSuffix(data, sentinel);
    this.held = data.slice(data.length - keep);
    this.emit(data.slice(0, data.length - keep));
  }

  /** The text captured so far, final, with the number of bytes dropped from its middle. */
  finish(): { output: string; droppedBytes: number } {
    if (!this.ended) this.emit(this.held);
    this.held = '';
    this.append(this.text.end());
    const { text, droppedBytes } = this.kept.result();
    return { output: resolveOverwrites(text), droppedBytes };
  }

  private emit(raw: string): void {
    if (raw) this.append(this.text.push(raw));
  }

  private append(text: string): void {
    const clean = text.replace(JUNK_CONTROLS, '\uFFFD');
    if (!clean) return;
    this.kept.append(clean);
    this.options.onOutput?.(clean);
  }
}

/** Length of the longest end of `data` that is a beginning of `marker` (a marker cut by a chunk). */
function partialSuffix(data: string, marker: string): number {
  const first = marker[0] ?? '';
  for (let start = Math.max(0, data.length - marker.length + 1); start < data.length; start++) {
    if (data[start] === first && marker.startsWith(data.slice(start))) return data.length - start;
  }
  return 0;
}
