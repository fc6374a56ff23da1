import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../config/config';
import { fenceHome } from '../config/paths';
import { trustNotice } from '../config/trust';
import { newSessionId, SessionStore } from '../conversation/session-store';
import { parametersSchema, parseSignature } from '../ptc/program-params';
import { runProgram } from '../ptc/run-program';
import { approvedPrograms, programRoots, type SavedProgram } from '../ptc/saved-programs';
import type { BashSession } from '../processes/bash-session';
import { programTools } from '../tools/ptc';
import { resolveWorkspace } from '../session/workspace';
import { openMcpServers, type LiveMcpServers } from '../session/mcp-servers';
import { openSessionSandbox } from '../session/session-sandbox';
import { unsandboxedCommands } from '../session/unsandboxed-commands';
import { buildToolset } from '../session/toolset';

/** Options of `fence run`. */
export interface RunProgramCommandOptions {
  workspace?: string;
  jsonArgs?: string;
}

/**
 * `fence run <program.js>`: runs a program against the workspace's eligible tools with no
 * model, under the same admission and limits as in a session (with the tools of the config's
 * MCP servers and the approved saved programs). Of the servers not in the cache, it waits only
 * for those whose tools the program may call (see `namedServers`). The program's output goes
 * to stdout, then its result as JSON; errors go to stderr. Its trace goes to a session of its
 * own. Returns the exit code: 0 when the program finished, 1 when it failed or could not run,
 * 2 for arguments that do not fit the program's declared parameters.
 */
export async function runProgramCommand(file: string, options: RunProgramCommandOptions): Promise<number> {
  const err = process.stderr;
  let code: string;
  try {
    code = readFileSync(resolve(file), 'utf8');
  } catch (error) {
    err.write(`fence: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`);
    return 1;
  }
  let args: unknown = null;
  if (options.jsonArgs !== undefined) {
    try {
      args = JSON.parse(options.jsonArgs);
    } catch {
      err.write('fence: --json-args is not valid JSON\n');
      return 2;
    }
  }
  const checked = programArguments(code, args, options.jsonArgs !== undefined);
  if ('error' in checked) {
    err.write(`fence: ${checked.error}\n`);
    return 2;
  }
  const workspace = resolveWorkspace(options.workspace);
  if ('error' in workspace) {
    err.write(`fence: ${workspace.error}\n`);
    return 1;
  }
  const loaded = loadConfig({ workspace: workspace.path, env: process.env });
  if ('error' in loaded) {
    err.write(`fence: ${loaded.error}\n`);
    return 1;
  }

  const untrusted = loaded.config.trust && trustNotice(loaded.config.trust);
  if (untrusted) err.write(`${untrusted}\n`);

  const home = fenceHome();
  const id = newSessionId();
  const session = { id, dir: join(home, 'sessions', id) };
  // The program's tools run in the OS sandbox a session here would have: its shell, command tools and stdio MCP servers.
  const chosen = openSessionSandbox({ config: loaded.config.sandbox, workspace: workspace.path, fenceHome: home, sessionId: id, unsandboxed: unsandboxedCommands(loaded.config, workspace.path) });
  if ('error' in chosen) {
    err.write(`fence: ${chosen.error}\n`);
    return 1;
  }
  const { sandbox } = chosen;
  if (chosen.warning) err.write(`${chosen.warning}\n`);
  for (const line of loaded.config.sandbox.ignored) err.write(`fence: ${line}\n`);
  const mcp = await openMcpServers(loaded.config, workspace.path, { dir: join(home, 'mcp-tools') }, sandbox.kind === 'none' ? undefined : sandbox, (line) =>
    err.write(`fence: ${line}\n`),
  );
  const programs = approvedPrograms(programRoots(home, workspace.path).filter((root) => untrusted === undefined || root.scope !== 'project'), home);
  await namedServers(mcp, code, programs);
  const toolset = buildToolset(loaded.config, session, mcp.tools, programs);
  for (const problem of toolset.problems) err.write(`fence: ${problem}\n`);
  const store = SessionStore.create(home, {
    id,
    model: 'none (fence run)',
    programsOnly: true,
    startedAs: `fence run ${file}`,
    workspace: workspace.path,
    toolFormat: 'markdown',
    tools: toolset.eligible.map((t) => t.name),
  });
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.on('SIGINT', onSigint);
  let bash: Promise<BashSession> | undefined;
  try {
    const ctx = {
      workspace: workspace.path,
      signal: controller.signal,
      sandboxPolicy: sandbox.policy,
      ...(sandbox.kind === 'none' ? {} : { wrapInSandbox: sandbox.wrap }),
      bash: () =>
        (bash ??= import('../processes/bash-session').then(({ BashSession }) =>
          BashSession.start({ cwd: workspace.path, passEnv: loaded.config.sandbox.passEnv, ...(sandbox.kind === 'none' ? {} : { sandbox }) }),
        )),
    };
    const run = await runProgram({
      code,
      tools: programTools(toolset.eligible, ctx, toolset.rules),
      limits: toolset.limits,
      budget: toolset.budget,
      signal: controller.signal,
      session,
      args: checked.args,
    });
    const { trace } = run;
    if (trace.stdout) process.stdout.write(trace.stdout.endsWith('\n') ? trace.stdout : `${trace.stdout}\n`);
    if (trace.result !== undefined) process.stdout.write(`${JSON.stringify(trace.result, null, 2)}\n`);
    if (trace.droppedOutputBytes > 0) err.write(`fence: ${trace.droppedOutputBytes} bytes of output were dropped\n`);
    if (trace.error) {
      const where = trace.error.line === undefined ? '' : ` at line ${trace.error.line}`;
      err.write(`fence: program failed (${trace.error.kind})${where}: ${trace.error.message}\n`);
    }
    err.write(`trace ${trace.id} (${trace.calls.length} tool call${trace.calls.length === 1 ? '' : 's'}) · fence trace show ${trace.id}\n`);
    return trace.ok ? 0 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    const shell = await bash?.catch(() => undefined);
    await Promise.all([shell?.close(), mcp.close()]);
    sandbox.close();
    store.close();
  }
}

/**
 * Waits for the MCP servers still starting whose tools the program may call: those a word of
 * its code, or a tool an approved saved program calls, could be a tool of (it starts with the
 * server's name and `_`). A program's functions are fixed when it starts, so those tools must
 * be there by then; a server it does not name is not waited for.
 */
async function namedServers(mcp: LiveMcpServers, code: string, programs: readonly SavedProgram[]): Promise<void> {
  const words = new Set([...(code.match(/[A-Za-z_$][\w$]*/g) ?? []), ...programs.flatMap((program) => program.record.tools)]);
  const signal = new AbortController().signal;
  await Promise.all([...words].filter((word) => mcp.mayList(word)).map((word) => mcp.absent.arrival(word, signal)));
}

/**
 * The `args` a program runs with. A program that declares parameters gets them checked and
 * their defaults filled in (`{}` when none were given); any other gets the JSON as given, or
 * null.
 */
function programArguments(code: string, given: unknown, wasGiven: boolean): { args: unknown } | { error: string } {
  const signature = parseSignature(code);
  if (signature.errors.length > 0) return { error: `the program's declarations cannot be read: ${signature.errors.join('; ')}` };
  if (signature.parameters.length === 0) return { args: given };
  const parsed = parametersSchema(signature.parameters).safeParse(wasGiven ? given : {});
  if (parsed.success) return { args: parsed.data };
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'args'}: ${issue.message}`);
  return { error: `--json-args does not fit the program's parameters: ${problems.join('; ')}` };
}
