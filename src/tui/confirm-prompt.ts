import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { visibleControls, visibleLine, visibleName, visibleText } from '../processes/visible-text';
import type { ConfirmAnswer, ConfirmRequest, ToolPreview } from '../tools/define-tool';
import type { ChatView } from './chat-view';
import { highlighterFor } from './code-highlight';
import { renderFileChange } from './diff-view';
import type { EditorResult } from './line-editor';

/** Diff lines and code lines a confirmation shows before folding the rest. */
const DIFF_LINES = 40;
const CODE_LINES = 20;

/** What the confirmation needs of the chat. */
export interface ConfirmPromptOptions {
  view: ChatView;
  /** Reads the answer (the chat's line editor). */
  read(prompt: string): Promise<EditorResult>;
  /** `-y`: mutating calls run unasked (a policy rule that asks is still asked). */
  yes: boolean;
  /** Ctrl-C or Ctrl-D at the question: the call is declined and the run stopped. */
  onInterrupt(): void;
  /**
   * The model's calls are written as blocks that the reply just showed (markdown and XML): a
   * command or code is not shown a second time, only diffs and edits are. Asked at each
   * question: the format can be chosen again before the session opens.
   */
  blocksShown: () => boolean;
  /** Opens text in the person's editor and returns it changed, or an error line (tests give their own). */
  edit?: (text: string, extension: string) => { text: string } | { error: string };
}

/** The chat's answer to each call that wants a yes: asks the person on the terminal. */
export interface ConfirmPrompt {
  confirm(request: ConfirmRequest): Promise<ConfirmAnswer>;
  /** The person said "yes to all" (or `-y` was given). */
  readonly yesToAll: boolean;
}

/**
 * Asks before a call runs: shows what it will do — a coloured diff for file writes, the command
 * or code for `shell`, `python` and programs — and reads one line: `y` runs it, `n` declines
 * (`n use the other file` passes the reason on to the model), `e` opens the call's body in
 * `$VISUAL`/`$EDITOR` and asks again about the edited call, `a` says yes to this and every later
 * call of the session. An empty line or anything else asks again. A rule of the policy that
 * asks is always asked, whatever `-y` or `a` said.
 */
export function createConfirmPrompt(options: ConfirmPromptOptions): ConfirmPrompt {
  let yesToAll = options.yes;
  const { view } = options;
  const { style } = view;
  const edit = options.edit ?? openInEditor;
  return {
    get yesToAll() {
      return yesToAll;
    },
    async confirm(request) {
      if (yesToAll && request.reason === undefined) return { action: 'yes' };
      view.idle();
      let input = request.input;
      let edited = false;
      let preview = await request.preview(input);
      const shownAbove = options.blocksShown() && request.principal === 'model' && preview.kind === 'code';
      view.printLines(describeCall(request, shownAbove ? undefined : preview, view));
      const question = `${style.bold(questionFor(request, preview))} ${style.dim('[y/n/e/a]')} ${style.cyan('›')} `;
      while (true) {
        const answer = await options.read(question);
        if (answer.kind !== 'line') {
          options.onInterrupt();
          return { action: 'no', reason: 'the user stopped the run' };
        }
        const text = answer.text.trim();
        const word = (/^\S+/.exec(text)?.[0] ?? '').toLowerCase();
        const rest = text.slice(word.length).trim();
        const yes = word === 'y' || word === 'yes';
        if (yes || word === 'a' || word === 'all') {
          if (!yes && request.reason === undefined) yesToAll = true;
          view.toolConfirmed(request.tool.name);
          return edited ? { action: 'yes', input } : { action: 'yes' };
        }
        if (word === 'n' || word === 'no') return rest ? { action: 'no', reason: rest } : { action: 'no' };
        if (word === 'e' || word === 'edit') {
          const changed = editInput(request, input, edit);
          if ('error' in changed) {
            view.printLines([style.yellow(changed.error)]);
            continue;
          }
          if (changed.input === input) continue;
          input = changed.input;
          edited = true;
          preview = await request.preview(input);
          view.printLines([style.dim('edited:'), ...describeCall(request, preview, view)]);
          continue;
        }
        if (text) {
          view.printLines([
            style.dim('y: run it · n: do not (n <reason> tells the model why) · e: edit it in your editor first · a: yes to this and every later call'),
          ]);
        }
      }
    },
  };
}

/** The question for a call: what saying yes does. */
function questionFor(request: ConfirmRequest, preview: ToolPreview): string {
  if (preview.kind === 'diff') return `${preview.created ? 'Create' : 'Change'} ${visibleName(preview.path)}?`;
  const name = request.tool.name;
  if (name === 'shell') return 'Run this command?';
  if (name === 'python' || name === 'ptc') return 'Run this code?';
  return `Call ${name}?`;
}

/**
 * Who asks and why, then the preview (a diff, the code, or a note) unless it is left out. Code
 * and diffs show every character that will run or be written (see `visibleControls`); notes and
 * reasons are made visible (see `visibleText`).
 */
function describeCall(request: ConfirmRequest, preview: ToolPreview | undefined, view: ChatView): string[] {
  const { style } = view;
  const lines: string[] = [];
  if (request.reason !== undefined) lines.push(style.yellow(`⚠ policy asks for a yes: ${visibleLine(request.reason)}`));
  if (request.principal !== 'model') lines.push(style.dim(`called by ${visibleLine(request.principal)}`));
  if (!preview) return lines;
  if (preview.kind === 'diff') return [...lines, ...renderFileChange(preview, style, DIFF_LINES).map((line) => `  ${line}`)];
  if (preview.kind === 'note') return [...lines, ...visibleText(preview.text).split('\n').map((line) => style.dim(`  ${line}`))];
  const language = preview.language === 'ptc' ? 'js' : preview.language;
  const highlight = highlighterFor(language, style);
  const code = preview.code.replace(/\n+$/, '').split('\n');
  const bar = style.dim('  ┃ ');
  const shown = code.slice(0, CODE_LINES).map((line) => bar + highlight.line(visibleControls(line)));
  if (code.length > CODE_LINES) shown.push(bar + style.dim(`… ${code.length - CODE_LINES} more lines (e shows them all)`));
  return [...lines, style.dim(`  ${request.tool.name}`), ...shown];
}

/**
 * The input with its body (the block's content parameter: the command, the code, the file's
 * text) edited by the person; a tool without a body has its whole input edited as JSON.
 */
function editInput(
  request: ConfirmRequest,
  input: Record<string, unknown>,
  edit: (text: string, extension: string) => { text: string } | { error: string },
): { input: Record<string, unknown> } | { error: string } {
  const name = request.tool.block.content;
  const body = name === undefined ? undefined : input[name];
  if (name !== undefined && typeof body === 'string') {
    const changed = edit(body, extensionFor(request, input));
    if ('error' in changed) return changed;
    return changed.text === body ? { input } : { input: { ...input, [name]: changed.text } };
  }
  const json = JSON.stringify(input, null, 2);
  const changed = edit(`${json}\n`, '.json');
  if ('error' in changed) return changed;
  try {
    const parsed: unknown = JSON.parse(changed.text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { error: 'the edited input is not a JSON object; the call is unchanged' };
    return JSON.stringify(parsed, null, 2) === json ? { input } : { input: parsed as Record<string, unknown> };
  } catch {
    return { error: 'the edited input is not valid JSON; the call is unchanged' };
  }
}

/** A file extension that lets the editor highlight the body: the target file's own, or the language's. */
function extensionFor(request: ConfirmRequest, input: Record<string, unknown>): string {
  const name = request.tool.name;
  if (name === 'shell') return '.sh';
  if (name === 'python') return '.py';
  if (name === 'ptc') return '.js';
  if (name === 'patch') return '.patch';
  const path = input.path;
  return typeof path === 'string' && extname(path) ? extname(path) : '.txt';
}

/**
 * Opens `text` in `$VISUAL` or `$EDITOR` (default `vi`) on a temp file and returns what the
 * person saved. The editor owns the terminal until it exits. A non-zero exit leaves the call
 * as it was.
 */
function openInEditor(text: string, extension: string): { text: string } | { error: string } {
  const editor = process.env.VISUAL || process.env.EDITOR || 'vi';
  const dir = mkdtempSync(join(tmpdir(), 'fence-edit-'));
  const file = join(dir, `call${extension}`);
  try {
    writeFileSync(file, text);
    // The editor wants the terminal as a terminal normally is: echo on, lines cooked.
    const stdin = process.stdin;
    const wasRaw = stdin.isTTY ? stdin.isRaw : false;
    if (stdin.isTTY) stdin.setRawMode(false);
    // Through sh, so that an editor with options (`code --wait`) works as people set it.
    const run = spawnSync('sh', ['-c', `${editor} "$1"`, 'sh', file], { stdio: 'inherit' });
    if (stdin.isTTY) stdin.setRawMode(wasRaw);
    if (run.error) return { error: `the editor could not be started (${run.error.message}); the call is unchanged` };
    if (run.status !== 0) return { error: `the editor exited with code ${run.status ?? run.signal}; the call is unchanged` };
    return { text: readFileSync(file, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
