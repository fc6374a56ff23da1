import { fenceCloses, isBlankLine, opensNestedBlock, readFenceLine, type FenceLevel, type FenceLine } from './fence-line';

/**
 * What a line read inside an open block turned out to be:
 * - `inside`: the line belongs to the block, and so do the lines held before it;
 * - `held`: not known yet; the line waits for a later one to tell;
 * - `ended`: the block ended at the first held line (a bare fence, its closing fence); the
 *   other held lines and this line come after the block.
 */
export type BlockLine = 'inside' | 'held' | 'ended';

/** Where the reading of the block's own level stands. */
type Phase =
  /** Lines are the block's, read by the nesting rules. */
  | { kind: 'open' }
  /** A bare fence that could close the block was the last line: the next line decides. */
  | { kind: 'closing'; fence: FenceLevel }
  /** That fence was followed by text, so it may open a nested block: held until that block closes. */
  | { kind: 'doubtful' };

/**
 * The fences of one open markdown block, outermost first, and the rule that finds its end.
 * Models nest code blocks without lengthening the outer fence, and the inner blocks are often
 * bare (```` ``` ```` with no tag), so a bare fence inside a block is read like this:
 *
 * - Inside a nested level, a fence line with an info string that a bare fence of its run could
 *   close (the same character, at least as many) opens a further level, and such a bare fence
 *   closes the innermost level. Other fence lines are lines of the block, as in CommonMark.
 * - At the block's own level (no nested level open), a fence line with an info string that
 *   could be closed by a bare fence of its run opens a nested level, as above. A bare fence
 *   that could close the block is decided by the line after it:
 *   - a blank line, another fence line, or the end of the text: the fence closes the block;
 *   - any other line: the fence opens a nested level, and is held (`held`, with the lines after
 *     it) until that level closes. When it closes, by a bare fence that could close it, all was
 *     `inside`. When another fence line comes first, or the text ends, the held fence closed
 *     the block after all (`ended`): a bare inner block holds no fence line of its own, so what
 *     followed the fence was text written against it (```` ``` ```` then "That lists the files.").
 *
 * Inside a block, a fence line whose info string does not start as a tag does (```` ```''' ````,
 * see `opensNestedBlock`) is no fence line at all, just a line of the block.
 *
 * So `` ```save README.md `` with bare ```` ``` ```` blocks inside ends at its last fence, while
 * a block whose closing fence is followed directly by prose still ends at that fence. Each line
 * costs constant work beyond reading it; nothing is read twice.
 */
export class FencedBlock {
  /** Open fences: the block's own first, then the nested levels. */
  readonly #levels: FenceLevel[];
  #phase: Phase = { kind: 'open' };

  /** A block opened by a fence of the given run. */
  constructor(opening: FenceLevel) {
    this.#levels = [{ char: opening.char, length: opening.length }];
  }

  /** Reads the next whole line of the block (with or without its line break). Not to be called once it `ended`. */
  read(line: string): BlockLine {
    const fence = fenceInBlock(line);
    const phase = this.#phase;
    if (phase.kind === 'closing') {
      if (fence || isBlankLine(line)) return 'ended';
      this.#levels.push(phase.fence);
      this.#phase = { kind: 'doubtful' };
      return 'held';
    }
    const innermost = this.#levels[this.#levels.length - 1] as FenceLevel;
    const closesInnermost = fence !== undefined && fenceCloses(fence, innermost);
    if (phase.kind === 'doubtful') {
      if (!fence) return 'held';
      if (fence.info !== '' || !closesInnermost) return 'ended';
      this.#levels.pop();
      this.#phase = { kind: 'open' };
      return 'inside';
    }
    if (!closesInnermost) return 'inside';
    if (fence.info !== '') {
      this.#levels.push({ char: fence.char, length: fence.length });
    } else if (this.#levels.length === 1) {
      this.#phase = { kind: 'closing', fence: { char: fence.char, length: fence.length } };
      return 'held';
    } else {
      this.#levels.pop();
    }
    return 'inside';
  }

  /**
   * The text ended after the lines read so far: true when the block ended at its first held
   * line (a closing fence with nothing after it, or one followed only by text), false when it
   * is left open (unterminated).
   */
  end(): boolean {
    return this.#phase.kind !== 'open';
  }
}

/** The fence line `line` is, as read inside an open block (see `opensNestedBlock`); undefined for other lines. */
function fenceInBlock(line: string): FenceLine | undefined {
  const fence = readFenceLine(line);
  if (!fence || fence.info === '' || opensNestedBlock(fence)) return fence;
  return undefined;
}
