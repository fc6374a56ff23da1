import type { AgentEvent } from '../agent/agent';
import type { ToolUse } from '../parse/tool-use';
import { visibleLine, visibleName, visibleText } from '../processes/visible-text';
import { planOfResult } from '../tools/plan';
import type { ToolRunOutcome } from '../tools/run-tool-use';
import { MarkdownStream } from './markdown-stream';
import { planLines } from './plan-view';
import { calledTool, runEnding } from './called-tool';
import { Spinner } from './spinner';
import { truncateToWidth, type Style } from './terminal-style';

/** How many lines of a tool's output are shown whole; longer outputs show their head and tail. */
const SHOWN_OUTPUT_LINES = 10;
const FOLDED_HEAD = 4;
const FOLDED_TAIL = 4;

/** The terminal the chat draws on. */
export interface ChatOutput {
  write(text: string): unknown;
  readonly columns?: number;
  readonly isTTY?: boolean;
}

/**
 * Draws a chat run on the terminal, event by event: the reply rendered from markdown as its
 * lines complete, a spinner with the elapsed time while the model thinks or a tool runs, and
 * each tool run as one line (✓ or ✗, the tool, what it ran on, how long it took) over its
 * output, folded to head and tail when long. Every write goes through `print`, which moves the
 * spinner out of the way, so the screen only ever holds whole lines.
 */
export class ChatView {
  readonly #spinner: Spinner;
  #markdown: MarkdownStream;
  #toolStarted = 0;
  /** Width the markdown stream was made for; a resize makes a new one at the next reply. */
  #width: number;
  /** The thinking of the reply under way, until its one-line fold is printed. */
  #thinking = '';
  #lastThinking = '';

  constructor(
    private readonly out: ChatOutput,
    readonly style: Style,
    /** The reply writes its tool calls as XML: they are shown as code blocks too. */
    private xmlToolUse = false,
  ) {
    this.#spinner = new Spinner(out, style, out.isTTY === true);
    this.#width = this.width;
    this.#markdown = new MarkdownStream({ style, width: this.#width, xmlToolUse });
  }

  /** The terminal's width in columns (80 when unknown). */
  get width(): number {
    return Math.max(20, this.out.columns ?? 80);
  }

  /** Writes whole lines above the spinner. */
  print(text: string): void {
    if (!text) return;
    this.#spinner.clear();
    this.out.write(text);
    this.#spinner.draw();
  }

  /** Writes `lines`, each ending with a line break. */
  printLines(lines: readonly string[]): void {
    if (lines.length > 0) this.print(`${lines.join('\n')}\n`);
  }

  /** Shows a warning fence passes on (an SDK's, e.g. a model's deprecation) as one line above the spinner. */
  readonly warn = (line: string): void => {
    this.printLines([this.style.yellow(`⚠ ${visibleLine(line)}`)]);
  };

  /** Starts the spinner with a label (`thinking`, `compacting`). */
  busy(label: string): void {
    this.#spinner.start(label);
  }

  /** Stops the spinner (before asking the person something, or when the run ends). */
  idle(): void {
    this.#spinner.stop();
  }

  /** The whole thinking of the last reply that had some ('' when none has): what `/thinking` shows. */
  get lastThinking(): string {
    return this.#lastThinking;
  }

  /** The event handler for the Agent. */
  readonly onEvent = (event: AgentEvent): void => {
    if (this.#thinking && event.type !== 'thinking') this.#foldThinking();
    switch (event.type) {
      case 'turn':
        this.#newReply();
        this.busy('thinking');
        break;
      case 'thinking':
        this.#thinking += event.text;
        this.#lastThinking = this.#thinking;
        // Its last words show, dim, at the end of the status line as they come.
        if (this.#spinner.active) this.#spinner.relabel('thinking', this.style.dim(visibleLine(lastWords(this.#thinking))));
        break;
      case 'text':
        this.print(this.#markdown.push(event.text));
        // A long line shows as it comes, at the end of the status line, until it is rendered.
        if (this.#spinner.active) this.#spinner.relabel('writing', this.#markdown.tail);
        break;
      case 'reply_end':
        this.print(this.#markdown.finish());
        break;
      case 'retry':
        this.printLines([this.style.yellow(`↻ retrying in ${(event.delayMs / 1000).toFixed(1)} s: ${visibleLine(event.reason)}`)]);
        break;
      case 'web_search':
        this.print(this.#markdown.finish());
        this.printLines([this.style.dim(`⌕ web search${event.query ? `: ${visibleLine(event.query)}` : ''}`)]);
        break;
      case 'restart':
        this.#markdown.finish();
        this.printLines([this.style.yellow(`↻ connection lost mid-reply; asking again: ${visibleLine(event.reason)}`)]);
        break;
      case 'tool_start':
        this.print(this.#markdown.finish());
        this.#toolStarted = Date.now();
        if (event.use.format === 'tool') this.printLines([this.#callLine(event.use)]);
        this.busy(`running ${visibleName(calledTool(event.use).tool)}`);
        break;
      case 'tool_end':
        this.#spinner.stop();
        // A blank line after the output: the reply that follows starts apart from it.
        this.printLines([...this.toolLines(event.use, event.outcome, Date.now() - this.#toolStarted), '']);
        break;
      case 'compaction':
        this.printLines([this.style.dim(`⋯ older turns summarized to fit the context (up to message ${(event.message.meta?.compaction?.through ?? 0) + 1})`)]);
        break;
      case 'compaction_failed':
        this.printLines([this.style.yellow(`⋯ no summary (${visibleLine(event.error)}); the oldest turns are cut instead`)]);
        break;
    }
  };

  /** A confirmed call starts now: its clock restarts and the spinner shows again. */
  toolConfirmed(tool: string): void {
    this.#toolStarted = Date.now();
    this.busy(`running ${tool}`);
  }

  /** Ends a run's drawing: what is left of the reply, and the spinner off. */
  endRun(): void {
    this.print(this.#markdown.finish());
    this.#spinner.stop();
  }

  /** A tool run as lines: the status line, then its output folded to head and tail. */
  toolLines(use: ToolUse, outcome: ToolRunOutcome, elapsedMs: number): string[] {
    const { style } = this;
    const ending = runEnding(outcome);
    const mark = ending === 'done' ? style.green('✓') : ending === 'failed' ? style.red('✗') : style.yellow('✗');
    const words = visibleName(calledTool(use).words.join(' '));
    const status = ending === 'done' ? '' : ending === 'failed' ? style.red(ending) : style.yellow(ending);
    const time = outcome.declined ? '' : style.dim(seconds(elapsedMs));
    const head = [mark, style.bold(visibleName(outcome.tool)), words ? style.dim(truncateToWidth(words, Math.max(10, this.width - 30))) : '', status, time];
    const lines = [head.filter(Boolean).join(' ')];
    if (outcome.declined) return lines;
    // A plan call shows the checklist it set, styled by status, instead of its text.
    const plan = planOfResult(outcome.tool, outcome.result);
    if (plan) return [...lines, ...planLines(plan, style, this.width)];
    return [...lines, ...this.outputLines(outcome.result.output)];
  }

  /**
   * Output lines under a bar, each cut to the width, long outputs folded to head and tail. The
   * output is made visible first (see `visibleText`): it cannot drive the terminal or hide a line.
   */
  outputLines(output: string): string[] {
    const { style } = this;
    const text = visibleText(output).replace(/\n+$/, '');
    if (!text) return [];
    const all = text.split('\n');
    const bar = style.dim('  │ ');
    const cut = (line: string) => bar + truncateToWidth(line.replace(/\t/g, '    '), this.width - 5);
    if (all.length <= SHOWN_OUTPUT_LINES) return all.map(cut);
    const hidden = all.length - FOLDED_HEAD - FOLDED_TAIL;
    return [...all.slice(0, FOLDED_HEAD).map(cut), bar + style.dim(`⋯ ${hidden} more lines (/log shows them)`), ...all.slice(-FOLDED_TAIL).map(cut)];
  }

  /** The line of a native call, which the reply's text does not show. */
  #callLine(use: ToolUse): string {
    const called = calledTool(use);
    const words = visibleName(called.words.join(' '));
    const tool = visibleName(called.tool);
    return `${this.style.cyan('●')} ${this.style.bold(tool)}${words ? ` ${truncateToWidth(words, this.width - tool.length - 4)}` : ''}`;
  }

  /** The thinking that streamed, folded to one dim line above what follows. */
  #foldThinking(): void {
    const line = visibleLine(this.#thinking).replace(/\s+/g, ' ').trim();
    this.#thinking = '';
    if (!line) return;
    const note = ' (/thinking shows it)';
    this.printLines([this.style.dim(`✻ ${truncateToWidth(line, Math.max(10, this.width - note.length - 3))}${note}`)]);
  }

  /** The replies to come write their tool calls as XML (or not): the format was chosen again. */
  setXmlToolUse(xml: boolean): void {
    if (xml === this.xmlToolUse) return;
    this.xmlToolUse = xml;
    this.#markdown = new MarkdownStream({ style: this.style, width: this.#width, xmlToolUse: xml });
  }

  #newReply(): void {
    if (this.#width === this.width) return;
    this.#width = this.width;
    this.#markdown = new MarkdownStream({ style: this.style, width: this.#width, xmlToolUse: this.xmlToolUse });
  }
}

/** The end of a text on one line: its last line, spaces folded. */
function lastWords(text: string): string {
  return (text.trimEnd().split('\n').at(-1) ?? '').replace(/\s+/g, ' ');
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : `${(ms / 1000).toFixed(1)} s`;
}
