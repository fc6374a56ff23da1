import { admit, pathGuard, type Decision, type PolicyRule } from '../policy/admit';
import { workspaceResource } from '../policy/workspace-resource';
import type { ToolAdmission, ToolContext, ToolPreview, ToolResult, ToolSpec } from './define-tool';
import { renderCall, type Notation } from './notation';

/** Who makes a call, and under which rules it is admitted. */
export interface CallerPolicy {
  /** `model`, `program:<sha256-prefix>`, `python`. */
  principal: string;
  /** A program's declared purpose (its `// intent:` line). */
  intent?: string;
  rules: readonly PolicyRule[];
  /** How the caller writes calls, for the example in an invalid-input error (default `program`). */
  notation?: Notation;
  /** Ask the person (`ctx.confirm`, when there is one) before a mutating tool runs: set for the model's own calls. */
  confirmMutating?: boolean;
  /** The person makes the call themselves (a tool run from the chat): a rule that asks is answered by that. */
  byPerson?: boolean;
}

/** What one invocation came to: the admission decision, what the call touched, the result. */
export interface Invocation {
  decision: Decision;
  resource?: string;
  result: ToolResult;
  /** A person was asked and said no: the tool did not run. */
  declined?: boolean;
}

/** How much of an edited body the result repeats to the model; longer edits are only mentioned. */
const EDIT_ECHO_CHARS = 2000;

/**
 * Validates input against the tool's zod schema, admits the call (principal, tool, resource,
 * intent), asks a person when that is wanted, and runs the tool — the steps every call takes
 * whoever makes it. A person is asked (`ctx.confirm`) when policy answers `ask`, and before a
 * mutating tool runs when `caller.confirmMutating` is set; without `ctx.confirm` an `ask` is
 * refused with its reason. A no is the result the model reads (with the person's reason); an
 * edited input is validated and admitted again, and the result says that it was edited.
 * Never throws: invalid input, refusals and anything the tool throws become error results.
 */
export async function invokeTool(spec: ToolSpec, input: unknown, ctx: ToolContext, caller: CallerPolicy): Promise<Invocation> {
  const allowed: Decision = { action: 'allow' };
  const checked = validate(spec, input, ctx, caller);
  if ('error' in checked) return { decision: allowed, result: { output: checked.error, isError: true } };
  let { data, resource, decision } = checked;
  const asks = decision.action === 'ask' && !caller.byPerson;
  if (decision.action === 'deny' || (decision.action === 'ask' && asks && !ctx.confirm)) return { decision, resource, result: refusal(spec, decision) };
  let edited: string | undefined;
  if (ctx.confirm && (asks || (caller.confirmMutating && spec.mutating))) {
    const asked = await askPerson(spec, data, ctx, caller, decision);
    if ('declined' in asked) return { decision, resource, result: asked.declined, ...(asked.byPerson ? { declined: true } : {}) };
    // The run may have ended while the person read the question (a program's wall time, Ctrl-C).
    if (ctx.signal.aborted) return { decision, resource, result: { output: `${spec.name} was not run: the call was stopped while it waited for confirmation.`, isError: true } };
    if (asked.input) {
      const again = validate(spec, asked.input, ctx, caller);
      if ('error' in again) return { decision, resource, result: { output: `The user edited this call, and it is no longer valid; nothing was run.\n${again.error}`, isError: true } };
      if (again.decision.action === 'deny') return { decision: again.decision, resource: again.resource, result: refusal(spec, again.decision) };
      ({ data, resource } = again);
      // The person answered for the edited call: a rule that asks is satisfied by that answer.
      decision = again.decision.action === 'ask' ? decision : again.decision;
      edited = editNote(spec, data);
    }
  }
  const guards = new Map<string, (path: string) => boolean>();
  const canAccess = (tool: string, path: string) => {
    // The call's own resource was admitted (perhaps by a person's yes): its tool may touch it.
    if (tool === spec.name && resource !== undefined && workspaceResource(ctx.workspace, path) === resource) return true;
    let guard = guards.get(tool);
    if (!guard) guards.set(tool, (guard = pathGuard(ctx.workspace, caller.rules, caller.principal, caller.intent, tool)));
    return guard(path);
  };
  const hooked = { tool: spec.name, input: data, ...(resource === undefined ? {} : { resource }), principal: caller.principal };
  const hookRefusal = await ctx.toolHooks?.beforeTool(hooked, ctx.signal);
  if (hookRefusal !== undefined) return { decision, resource, result: { output: `${spec.name} was refused by a pre_tool hook; it did not run: ${hookRefusal}`, isError: true } };
  let result: ToolResult;
  try {
    result = await spec.execute(data, { ...ctx, canAccess, admission: decision });
  } catch (error) {
    result = { output: `${spec.name} failed: ${messageOf(error)}`, isError: true };
  }
  const hookNote = await ctx.toolHooks?.afterTool({ ...hooked, output: result.output, isError: result.isError === true }, ctx.signal);
  if (hookNote !== undefined) result = { ...result, output: `${result.output}\n\npost_tool hook:\n${hookNote}` };
  return { decision, resource, result: edited ? { ...result, output: `${edited}\n${result.output}` } : result };
}

/** Input checked against the schema, what the call touches, and how policy answers it. */
function validate(
  spec: ToolSpec,
  input: unknown,
  ctx: ToolContext,
  caller: CallerPolicy,
): { data: Record<string, unknown>; resource?: string; decision: Decision } | { error: string } {
  const parsed = spec.parameters.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `- ${issue.path.join('.') || 'input'}: ${issue.message}`);
    const example = renderCall(spec, spec.example, caller.notation ?? 'program');
    return { error: [`Invalid input for ${spec.name}:`, ...problems, 'Write it like this:', example].join('\n') };
  }
  const data = parsed.data as Record<string, unknown>;
  let resource: string | undefined;
  try {
    resource = spec.resource?.(data, ctx);
  } catch (error) {
    return { error: `${spec.name} failed: ${messageOf(error)}` };
  }
  const ruled = admit({ principal: caller.principal, tool: spec.name, resource, intent: caller.intent }, caller.rules);
  const decision = stricter(ruled, spec.admission?.(data, ctx));
  return { data, ...(resource === undefined ? {} : { resource }), decision };
}

/** The rules' decision, or the tool's own answer when that is stricter (deny over ask over allow). */
function stricter(ruled: Decision, own: ToolAdmission | undefined): Decision {
  const rank = { allow: 0, ask: 1, deny: 2 } as const;
  if (!own || rank[own.action] <= rank[ruled.action]) return ruled;
  return own;
}

function refusal(spec: ToolSpec, decision: Decision & { reason: string }): ToolResult {
  const verb = decision.action === 'deny' ? 'denied' : 'needs confirmation, which nobody can give here';
  return { output: `${spec.name} ${verb}: ${decision.reason}`, isError: true };
}

/**
 * Asks the person through `ctx.confirm`. A no, or a confirmation that failed (the terminal
 * went away), becomes the result the model reads; a yes may carry an edited input.
 */
async function askPerson(
  spec: ToolSpec,
  data: Record<string, unknown>,
  ctx: ToolContext,
  caller: CallerPolicy,
  decision: Decision,
): Promise<{ input?: Record<string, unknown> } | { declined: ToolResult; byPerson: boolean }> {
  const confirm = ctx.confirm;
  if (!confirm) return {};
  try {
    const answer = await confirm({
      tool: spec,
      input: data,
      principal: caller.principal,
      ...(decision.action === 'ask' ? { reason: decision.reason } : {}),
      preview: (input) => previewCall(spec, input, ctx),
    });
    if (answer.action === 'yes') return answer.input ? { input: answer.input } : {};
    const why = answer.reason?.trim();
    const output = `The user declined this ${spec.name} call; it was not run.${why ? ` Their reason: ${why}` : ''}`;
    return { declined: { output, isError: true, details: { declined: true } }, byPerson: true };
  } catch (error) {
    return { declined: { output: `${spec.name} was not run: asking the user for confirmation failed (${messageOf(error)}).`, isError: true }, byPerson: false };
  }
}

/**
 * What a call would do: the tool's own preview, else its body parameter as code (the command
 * of `shell`, the code of `python`), else its input as JSON. Never throws.
 */
export async function previewCall(spec: ToolSpec, input: Record<string, unknown>, ctx: ToolContext): Promise<ToolPreview> {
  try {
    if (spec.preview) return await spec.preview(input, ctx);
  } catch (error) {
    return { kind: 'note', text: `no preview: ${messageOf(error)}` };
  }
  const body = spec.block.content === undefined ? undefined : input[spec.block.content];
  if (typeof body === 'string') return { kind: 'code', language: spec.blockTypes[0] ?? spec.name, code: body };
  return { kind: 'code', language: 'json', code: JSON.stringify(input, null, 2) };
}

/** Tells the model that the person changed the call, and how, when that is short enough to repeat. */
function editNote(spec: ToolSpec, data: Record<string, unknown>): string {
  const name = spec.block.content;
  const body = name === undefined ? undefined : data[name];
  if (name === undefined || typeof body !== 'string') return `The user edited this ${spec.name} call before it ran.`;
  if (body.length > EDIT_ECHO_CHARS) return `The user edited \`${name}\` of this ${spec.name} call before it ran.`;
  return `The user edited \`${name}\` of this ${spec.name} call before it ran; it ran with:\n${body}\n---`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
