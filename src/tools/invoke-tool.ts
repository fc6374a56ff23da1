import { admit, pathGuard, type Decision, type PolicyRule } from '../policy/admit';
import type { ToolContext, ToolResult, ToolSpec } from './define-tool';
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
}

/** What one invocation came to: the admission decision, what the call touched, the result. */
export interface Invocation {
  decision: Decision;
  resource?: string;
  result: ToolResult;
}

/**
 * Validates input against the tool's zod schema, admits the call (principal, tool, resource,
 * intent), and runs the tool — the steps every call takes whoever makes it. A call that policy
 * answers with `ask` is not run: nobody can be asked here, so it is refused with that reason.
 * Never throws: invalid input, refusals and anything the tool throws become error results.
 */
export async function invokeTool(spec: ToolSpec, input: unknown, ctx: ToolContext, caller: CallerPolicy): Promise<Invocation> {
  const allowed: Decision = { action: 'allow' };
  const parsed = spec.parameters.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `- ${issue.path.join('.') || 'input'}: ${issue.message}`);
    const example = renderCall(spec, spec.example, caller.notation ?? 'program');
    const output = [`Invalid input for ${spec.name}:`, ...problems, 'Write it like this:', example].join('\n');
    return { decision: allowed, result: { output, isError: true } };
  }
  let resource: string | undefined;
  try {
    resource = spec.resource?.(parsed.data, ctx);
  } catch (error) {
    return { decision: allowed, result: { output: `${spec.name} failed: ${messageOf(error)}`, isError: true } };
  }
  const decision = admit({ principal: caller.principal, tool: spec.name, resource, intent: caller.intent }, caller.rules);
  if (decision.action !== 'allow') {
    const verb = decision.action === 'deny' ? 'denied' : 'needs confirmation, which nobody can give here';
    return { decision, resource, result: { output: `${spec.name} ${verb}: ${decision.reason}`, isError: true } };
  }
  const guards = new Map<string, (path: string) => boolean>();
  const canAccess = (tool: string, path: string) => {
    let guard = guards.get(tool);
    if (!guard) guards.set(tool, (guard = pathGuard(ctx.workspace, caller.rules, caller.principal, caller.intent, tool)));
    return guard(path);
  };
  try {
    const result = await spec.execute(parsed.data, { ...ctx, canAccess });
    return { decision, resource, result };
  } catch (error) {
    return { decision, resource, result: { output: `${spec.name} failed: ${messageOf(error)}`, isError: true } };
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
