import type { z } from 'zod';
import type { BashSession } from '../processes/bash-session';
import type { PythonKernel } from '../processes/python-kernel';
import type { VmBudget } from '../program-vm/vm-budget';
import type { SandboxPolicy } from '../os-sandbox/policy';
import type { ToolHooks } from './tool-hooks';
import type { PreparedImage } from '../images/prepare-image';

/** What the `python` tool needs of a kernel: running a cell. */
export type PythonCells = Pick<PythonKernel, 'run'>;

/** Who may call a tool: the model directly, a program (PTC), or both. */
export type Caller = 'direct' | 'program';

/** What a tool gets besides its input. Side effects go through these, so tests can swap them. */
export interface ToolContext {
  /** Absolute path of the workspace; relative paths in tool input are resolved against it. */
  workspace: string;
  /** Aborted when the user or a budget stops the tool. */
  signal: AbortSignal;
  /** The session's persistent shell, started on first use. */
  bash(): Promise<BashSession>;
  /**
   * The session's persistent Python kernel, started on first use (its host tools are the
   * program-eligible tools). Absent: Python is not available in this session, and the `python`
   * tool answers with an error result.
   */
  python?(): Promise<PythonCells>;
  /**
   * Whether the current caller may touch `resource` (a workspace-relative path, as
   * `workspaceResource` gives it). Tools that touch many files (`glob`, `grep`) leave out those
   * it may not. Absent: everything is allowed.
   */
  canAccess?: (tool: string, resource: string) => boolean;
  /**
   * Asks a person before a call runs (the interactive chat). Absent: nobody can be asked, so a
   * call that policy answers with `ask` is refused and mutating calls run unasked.
   */
  confirm?: (request: ConfirmRequest) => Promise<ConfirmAnswer>;
  /**
   * Told by the file tools (`save`, `append`, `patch`) just before they change a file: its
   * absolute path and what it held (`undefined` when it did not exist), so a checkpoint can
   * keep it (the chat's `/undo` puts it back). Absent: nothing is kept.
   */
  beforeWrite?: (path: string, before: Buffer | undefined) => void;
  /**
   * How many saved programs, called as tools, are running around this call (each one's tool
   * calls carry one more). Absent: none.
   */
  programDepth?: number;
  /**
   * Who called the tool from outside fence, when not fence's own model: an MCP client as
   * `mcp:<client name>`. A saved program called so admits its own tool calls as this
   * principal instead of `program:<name>@<version>` (the programs it calls in turn run as
   * themselves). Absent: the call is the model's, or a program's.
   */
  principal?: string;
  /**
   * Told of each tool call that a program run by this call makes, as the call ends (the calls
   * of the programs it calls in turn too), so a caller can show a long run's progress. Absent:
   * nobody is told.
   */
  onToolCall?: (call: { tool: string; ok: boolean; decision?: { action: 'allow' | 'deny' | 'ask' } }) => void;
  /**
   * How admission answered the call this context runs (set by `invokeTool`), so a tool that
   * keeps a record of its run (a saved program's trace) can say what let it run.
   */
  admission?: { action: 'allow' | 'deny' | 'ask'; reason?: string; rule?: number };
  /**
   * Set on a program's tool calls: the budget of sandboxes its own sandbox holds a place in. A
   * program the call runs takes its place from it without waiting (see `VmBudget`).
   */
  vmBudget?: VmBudget;
  /**
   * Set on a program's tool calls: holds the program's wall clock until the returned function
   * is called, for a call that waits on what is not the program's own time (a subagent's run).
   */
  holdClock?: () => () => void;
  /**
   * The session's sandbox: the file tools refuse what it refuses the shell (writes outside its
   * writable paths and to protected ones, reads of denied ones; see `pathAccess`). Absent, or
   * with mode `off`: the file tools are not bounded by it.
   */
  sandboxPolicy?: SandboxPolicy;
  /**
   * The command line that runs `command args` in `cwd` inside the session's OS sandbox (see
   * `OsSandbox.wrap`), for tools that start processes (command tools); `terminal: 'none'` for a
   * process on pipes, with no controlling terminal. Absent: no sandbox.
   */
  wrapInSandbox?: (command: string, args: readonly string[], options: { cwd: string; terminal?: 'pty' | 'none' }) => { command: string; args: string[] };
  /**
   * The configuration's `pre_tool` and `post_tool` hooks, run by `invokeTool` around every call
   * made with this context (a program's and Python's calls too). Absent: none.
   */
  toolHooks?: ToolHooks;
}

/** A tool's own answer to a call (see `ToolSpec.admission`); `reason` is told to the caller. */
export type ToolAdmission = { action: 'allow' } | { action: 'ask' | 'deny'; reason: string };

/** What a call will do, for a person to judge before it runs. */
export type ToolPreview =
  /** A file is written: its text before (empty for a new file) and after. */
  | { kind: 'diff'; path: string; before: string; after: string; created: boolean }
  /** Code or a command runs (`language` as a markdown info string: `shell`, `python`, `js`). */
  | { kind: 'code'; language: string; code: string }
  /** Nothing will happen, or it cannot be shown; `text` says why (a patch that does not apply). */
  | { kind: 'note'; text: string };

/** One call waiting for a person's yes or no. */
export interface ConfirmRequest {
  tool: ToolSpec;
  /** The validated input the call would run with. */
  input: Record<string, unknown>;
  /** `model`, `program:<sha>`, `python`. */
  principal: string;
  /** Set when a policy rule asks for the confirmation: the rule's reason. */
  reason?: string;
  /** What the call would do with `input` (also for an input edited by the person). */
  preview(input: Record<string, unknown>): Promise<ToolPreview>;
}

/**
 * A person's answer: run (with `input` when they edited the call), or do not run, with an
 * optional reason that is passed on to the model.
 */
export type ConfirmAnswer = { action: 'yes'; input?: Record<string, unknown> } | { action: 'no'; reason?: string };

/** What a tool returns. `output` goes to the model, `value` to a program, `details` to the UI. */
export interface ToolResult {
  output: string;
  value?: unknown;
  isError?: boolean;
  details?: unknown;
  /**
   * Images the model reads with `output` (`read` of an image file), prepared to be sent (see
   * `prepareImage`); the agent stores them in the session folder and the result message refers
   * to them (`meta.images`). Programs never see them: they get `value`.
   */
  images?: readonly PreparedImage[];
}

/** How a markdown block maps onto a tool's parameters: positional args by name, and the body. */
export interface BlockMapping {
  /** Parameter names filled, in order, by the words after the tool name in the language tag. */
  args?: readonly string[];
  /** Parameter name that receives the block's body. */
  content?: string;
}

/**
 * One tool, as a plain object. `parameters` is the single source of truth for what the tool
 * accepts: markdown blocks are mapped onto it (`block`), native calls and program calls are
 * validated against it. Validation, truncation and error wrapping happen once, around
 * `execute` (see `runToolUse`), never inside a tool.
 */
export interface ToolSpec<P extends z.ZodObject = z.ZodObject> {
  name: string;
  /** One line: what the tool does. */
  description: string;
  /**
   * How to use it, for the system prompt. Written for every tool format: it names parameters
   * (`path`, `content`), never a format's syntax; the prompt adds the call's form per format.
   */
  instructions: string;
  /** The input of one short, typical call, shown in the format the model writes (see `renderCall`). */
  example: z.input<P>;
  /** Language tags the tool answers to in markdown (the first is its name). */
  blockTypes: readonly string[];
  parameters: P;
  block: BlockMapping;
  callers: readonly Caller[];
  /** Changes something outside fence: needs confirmation in chat, runs serially. */
  mutating: boolean;
  /**
   * What a call touches, for admission: a workspace-relative real path for file tools (see
   * `workspaceResource`), the command for `shell`, the JSON arguments for user tools.
   * Absent: the call is admitted on its tool name alone.
   */
  resource?(input: z.output<P>, ctx: ToolContext): string | undefined;
  /**
   * The tool's own answer to a call, joined to the policy rules' (the stricter wins, so a rule
   * can still deny or ask): `fetch` asks about a host `[web] allow` does not list. Must not
   * change anything. Absent: the rules alone decide.
   */
  admission?(input: z.output<P>, ctx: ToolContext): ToolAdmission;
  /**
   * TypeScript type of the `value` a program receives (e.g. `string`, `string[]`), for the
   * declarations shown to the model. Absent: `unknown`.
   */
  returns?: string;
  /**
   * Listed by name and `description` only, because the session has many registered tools
   * (see `listsBriefly`): the prompt leaves out its instructions and parameters, and the
   * `describe` tool gives them. Calls are still validated against `parameters`. Absent: listed
   * in full.
   */
  brief?: boolean;
  /**
   * Not listed at all, because even the one-line listing of the registered tools would be long
   * (see `hidesTools`): the prompt only counts such tools by `group`; `describe` finds them and
   * `call` calls them. Always `brief` too. Absent: listed.
   */
  hidden?: boolean;
  /** Where the tool comes from, for counting hidden tools: `MCP server github`, `saved programs`. */
  group?: string;
  /**
   * What a call would do, for the confirmation a person sees (a diff for file writes). Must not
   * change anything. Absent: the call's body parameter is shown as code.
   */
  preview?(input: z.output<P>, ctx: ToolContext): Promise<ToolPreview>;
  execute(input: z.output<P>, ctx: ToolContext): Promise<ToolResult>;
}

/** Defines a tool. Exists so the input type of `execute` is derived from `parameters`. */
export function defineTool<P extends z.ZodObject>(spec: ToolSpec<P>): ToolSpec<P> {
  return spec;
}
