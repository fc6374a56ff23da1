import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { version } from '../../package.json';
import { fenceHome } from '../config/paths';
import { tightenDataFolder } from '../config/private-data';
import { readCommandLine, type CommandLineReading } from './prompt-or-command';

/**
 * fence's command line. Only commander is loaded up front: each action imports what it
 * needs, so `fence --version` and `fence sessions list` never load a provider SDK. Without
 * `commands`, only the run of the model: every word that is not an option is the prompt.
 */
function buildProgram(commands = true): Command {
  const program = new Command('fence')
    .description('A coding agent that acts by writing code blocks, which fence runs.')
    .version(version, '-V, --version')
    .argument('[prompt...]', 'prompts to run; a lone "-" separates prompts that run as successive turns')
    .option('-n, --non-interactive', 'run the prompts and exit; stdout carries only the final answer')
    .option('-y, --yes', 'run tools without asking for confirmation')
    .option('-m, --model <id>', 'model as provider/model, e.g. anthropic/claude-sonnet-4-6, openai/gpt-5, local/qwen3')
    .option('-w, --workspace <dir>', 'folder the tools work in (default: the current folder)')
    .option('--name <name>', 'name of the new session (default: date, time and a random suffix)')
    .option('-r, --resume [id]', 'go on with a session (without an id: the latest of this workspace), with its model, tool format and workspace unless given again; a prompt right after -r needs -- before it')
    .option('--auto', 'autonomous: implies -n and -y; runs until the model calls complete or a budget ends')
    .option('--max-turns <n>', 'most model requests in this run (default 50)', parsePositiveInt)
    .option('--max-cost <usd>', 'stop before the run costs more than this, in US dollars', parsePositiveNumber)
    .option('--max-tokens <n>', 'stop before a request once the run has used this many tokens (input, cached input and output)', parsePositiveInt)
    .option('--timeout <duration>', 'stop the run after this long: 90s, 30m, 2h (a plain number is seconds)', parseDuration)
    .option('--web-search', "let the model search the web with its provider's hosted search (Anthropic, OpenAI Responses); or [web] search = true")
    .option('--image <file>', 'attach an image (PNG, JPEG, GIF, WebP) to the first prompt; repeat it for more (in a prompt, @path does the same)', collectWords)
    .addOption(
      new Option('--output-format <format>', 'what stdout carries: the answer (text), one JSON result (json), or a JSON line per event (stream-json)').choices([
        'text',
        'json',
        'stream-json',
      ]),
    )
    .addOption(
      new Option('--sandbox <mode>', 'the OS sandbox around what the model runs: writes in the workspace only (workspace-write, the default), no writes (read-only), or none (off)').choices([
        'workspace-write',
        'read-only',
        'off',
      ]),
    )
    .addOption(
      new Option('--tool-format <format>', 'how the model writes tool calls: code blocks, XML, or the provider\'s native tool calls (default: markdown, or tool_format in the config)').choices([
        'markdown',
        'xml',
        'tool',
      ]),
    )
    .addOption(
      new Option('--reasoning <level>', "how hard the model thinks before it answers (default: reasoning in the config, else the model's own default)").choices([
        'off',
        'low',
        'medium',
        'high',
      ]),
    )
    .showHelpAfterError('(run fence --help for usage)')
    // commander throws instead of exiting: see endCommandLine.
    .exitOverride()
    // Options after a subcommand's name belong to it (`fence run x.js -w dir`).
    .enablePositionalOptions()
    .action(async (prompt: string[], options) => {
      // bash first: it starts up while the rest of fence loads (see starting-shell.ts).
      const { startShellForCommand } = await import('../session/starting-shell');
      const shell = startShellForCommand(options);
      const { runPromptCommand } = await import('./run-command');
      const { exitOnceWritten } = await import('./process-exit');
      const code = await runPromptCommand(prompt, options, shell);
      await shell?.close({ waitForExit: false });
      await exitOnceWritten(code);
    });
  if (!commands) return program;

  const sessions = program.command('sessions').description('list and show stored sessions');
  sessions
    .command('list')
    .description('list sessions, newest first')
    .action(async () => {
      const { listSessionsCommand } = await import('./sessions-command');
      process.exitCode = listSessionsCommand();
    });
  sessions
    .command('show <id>')
    .description("print a session's conversation (<id> may be the start of an id)")
    .option('--system-prompt', 'print the system prompt whole instead of one line about it')
    .action(async (id: string, options: { systemPrompt?: boolean }) => {
      const { showSessionCommand } = await import('./sessions-command');
      process.exitCode = showSessionCommand(id, options);
    });
  program
    .command('run <program>')
    .description('run a program (JavaScript) against the registered tools, with no model')
    .option('-w, --workspace <dir>', 'folder whose fence.toml and files the program works with (default: the current folder)')
    .option('--json-args <json>', 'a JSON value the program reads as `args`')
    .action(async (file: string, options: { workspace?: string; jsonArgs?: string }) => {
      const { runProgramCommand } = await import('./run-program-command');
      const { exitOnceWritten } = await import('./process-exit');
      // Ends once the output is out, as a prompt's run does: an MCP server still starting is not waited for.
      await exitOnceWritten(await runProgramCommand(file, options));
    });

  const mcp = program.command('mcp').description("the MCP servers of the configuration, and serving fence's approved programs to other agents");
  mcp
    .command('list')
    .description('start each configured MCP server, list its tools by fence name, and stop it')
    .option('-w, --workspace <dir>', 'folder whose fence.toml names the servers (default: the current folder)')
    .action(async (options: { workspace?: string }) => {
      const { mcpListCommand } = await import('./mcp-command');
      process.exitCode = await mcpListCommand(options);
    });
  mcp
    .command('serve')
    .description("serve the approved saved programs as MCP tools over stdio (stdout carries only MCP messages) or streamable HTTP, for other agents")
    .option('-w, --workspace <dir>', 'folder the programs work in, whose .fence/programs/ counts when trusted (default: the current folder)')
    .option('--http <[host:]port>', 'serve streamable HTTP at /mcp on this port (host 127.0.0.1 unless given), with a bearer token: FENCE_MCP_TOKEN, or one made and shown on stderr')
    .option('--tools', "serve fence's tools that programs may call too (read, glob, grep, command tools, MCP servers' tools), under their fence names")
    .option('--print-config', 'print a JSON config for an MCP client that starts this server (with --http: that reaches it), and exit')
    .action(async (options: { workspace?: string; printConfig?: boolean; http?: string; tools?: boolean }) => {
      const { mcpServeCommand } = await import('./mcp-serve-command');
      process.exitCode = await mcpServeCommand(options);
    });

  program
    .command('sandbox')
    .description('the OS sandbox: `fence sandbox check` says what this machine offers and probes it')
    .command('check')
    .description('print what a session here would be allowed (writable, denied, protected paths, network) and probe the sandbox')
    .option('-w, --workspace <dir>', 'folder of the session to check (default: the current folder)')
    .addOption(new Option('--sandbox <mode>', 'check this mode instead of the configured one').choices(['workspace-write', 'read-only', 'off']))
    .action(async (options: { workspace?: string; sandbox?: 'workspace-write' | 'read-only' | 'off' }) => {
      const { sandboxCheckCommand } = await import('./sandbox-command');
      process.exitCode = sandboxCheckCommand(options);
    });

  program
    .command('trust [dir]')
    .description("trust a folder (default: the current one) on this machine: sessions there use its fence.toml, AGENTS.md and .fence/programs/")
    .option('--list', 'list the trusted folders and whether their files changed since')
    .option('--revoke', 'stop trusting the folder')
    .action(async (dir: string | undefined, options: { list?: boolean; revoke?: boolean }) => {
      const { trustCommand } = await import('./trust-command');
      process.exitCode = trustCommand(dir, options);
    });

  const skills = program.command('skills').description("Agent Skills: the SKILL.md folders whose names and descriptions a session's model is given");
  const skillsWorkspace = ['-w, --workspace <dir>', 'folder whose .fence/skills/ counts when trusted (default: the current folder)'] as const;
  skills
    .command('list')
    .description('list the skills a session here would have, those shadowed by one of the same name, and those left out and why')
    .option(...skillsWorkspace)
    .action(async (options: { workspace?: string }) => {
      const { listSkillsCommand } = await import('./skills-command');
      process.exitCode = await listSkillsCommand(options);
    });
  skills
    .command('show <name>')
    .description("print a skill's SKILL.md and the files beside it")
    .option(...skillsWorkspace)
    .action(async (name: string, options: { workspace?: string }) => {
      const { showSkillCommand } = await import('./skills-command');
      process.exitCode = await showSkillCommand(name, options);
    });

  const programs = program.command('programs').description('saved programs: keep a program that worked, test it, approve it as a tool');
  const workspaceOption = ['-w, --workspace <dir>', 'folder whose .fence/programs/ counts beside the user-wide programs (default: the current folder)'] as const;
  programs
    .command('save <name>')
    .description("save a program run's code as the next version of <name>, with the run as its recorded test")
    .option('--from-trace <id>', 'the trace of the run (see fence trace list; default: the newest program run that worked)')
    .option('--project', "keep it in the workspace's .fence/programs/ (default: $FENCE_HOME/programs/)")
    .option(...workspaceOption)
    .action(async (name: string, options: { fromTrace?: string; project?: boolean; workspace?: string }) => {
      const { saveProgramCommand } = await import('./programs-command');
      process.exitCode = await saveProgramCommand(name, options);
    });
  programs
    .command('test [program]')
    .description('replay the recorded tests of <name>[@version] (default: the newest) with no tools, servers or model; without a name, those of every approved and newest version')
    .option('--add-test <trace>', 'first add a run of the same code as a test')
    .option(...workspaceOption)
    .action(async (ref: string | undefined, options: { addTest?: string; workspace?: string }) => {
      const { testProgramCommand } = await import('./programs-command');
      process.exitCode = await testProgramCommand(ref, options);
    });
  programs
    .command('list')
    .description('list saved programs and their versions')
    .option(...workspaceOption)
    .action(async (options: { workspace?: string }) => {
      const { listProgramsCommand } = await import('./programs-command');
      process.exitCode = listProgramsCommand(options);
    });
  programs
    .command('show <program>')
    .description('print a version: its record, parameters, tests and code')
    .option(...workspaceOption)
    .action(async (ref: string, options: { workspace?: string }) => {
      const { showProgramCommand } = await import('./programs-command');
      process.exitCode = showProgramCommand(ref, options);
    });
  programs
    .command('diff <program> [other]')
    .description('compare two versions\' code (default: the newest, or the one named, against the one before)')
    .option(...workspaceOption)
    .action(async (ref: string, other: string | undefined, options: { workspace?: string }) => {
      const { diffProgramCommand } = await import('./programs-command');
      process.exitCode = await diffProgramCommand(ref, other, options);
    });
  programs
    .command('approve <program>')
    .description('offer <name>@<version> to the model as a tool from the next session on (its tests must pass)')
    .option(...workspaceOption)
    .action(async (ref: string, options: { workspace?: string }) => {
      const { approveProgramCommand } = await import('./programs-command');
      process.exitCode = await approveProgramCommand(ref, options);
    });
  programs
    .command('revoke <program>')
    .description('stop offering <name>@<version>')
    .option(...workspaceOption)
    .action(async (ref: string, options: { workspace?: string }) => {
      const { revokeProgramCommand } = await import('./programs-command');
      process.exitCode = revokeProgramCommand(ref, options);
    });

  const traces = program.command('trace').description('list and show program runs');
  traces
    .command('list')
    .description('list program runs, newest first')
    .action(async () => {
      const { listTracesCommand } = await import('./trace-command');
      process.exitCode = listTracesCommand();
    });
  traces
    .command('show <id>')
    .description('print one program run: its calls, decisions, output and result')
    .action(async (id: string) => {
      const { showTraceCommand } = await import('./trace-command');
      process.exitCode = showTraceCommand(id);
    });
  return program;
}

function parsePositiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number above 0, e.g. 0.50');
  return n;
}

/** A duration in milliseconds from `90`, `90s`, `1.5m`, `2h` or `500ms`. */
function parseDuration(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match?.[2] ?? 's'] ?? 1000;
  const ms = match ? Number(match[1]) * unit : Number.NaN;
  if (!(ms > 0)) throw new InvalidArgumentError('expected a duration such as 90s, 30m or 2h');
  return ms;
}

/** Gathers the values of a repeated option, in order. */
function collectWords(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of at least 1');
  return n;
}

/**
 * Errors nobody expected end the run with one line, never a stack trace; `FENCE_DEBUG=1`
 * adds the stack for a bug report. The session log is written message by message, so what
 * happened up to here is kept.
 */
function reportUnexpected(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`fence: unexpected error: ${message}\n`);
  if (process.env.FENCE_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  process.exit(1);
}

// A reader that stopped reading (`fence trace list | head -1`) is not an error: stop quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  reportUnexpected(error);
});
/**
 * Where commander stops: help and --version exit with 0; a usage error (an unknown option, a
 * bad value), whose message commander has written on stderr, exits with 2, as documented. In
 * the JSON formats a usage error also ends with the one result object every run ends with
 * (stop reason `usage`), so a script reading stdout always gets one.
 */
async function endCommandLine(error: CommanderError, reading: CommandLineReading): Promise<void> {
  if (error.exitCode === 0) process.exit(0);
  if (reading.kind === 'ambiguous') {
    process.stderr.write(`To give "${reading.prompt}" to the model as the prompt, put -- before it: fence -- ${reading.prompt}, or fence -n -- ${reading.prompt}\n`);
  }
  if (jsonRequested(process.argv.slice(2))) {
    const { jsonResult, resultBeforeRun } = await import('./output-format');
    const message = error.message.replace(/^error: /, '');
    process.stdout.write(jsonResult(resultBeforeRun('usage', message, Math.round(process.uptime() * 1000))));
  }
  process.exit(2);
}

/**
 * Whether the words ask for a JSON output format (`--output-format json`, `=stream-json`, …),
 * read without commander, which has just refused them. Words after `--` are prompts.
 */
function jsonRequested(words: readonly string[]): boolean {
  const end = words.indexOf('--');
  const options = end === -1 ? words : words.slice(0, end);
  return options.some((word, i) => {
    const value = word.startsWith('--output-format=') ? word.slice('--output-format='.length) : word === '--output-format' ? options[i + 1] : undefined;
    return value === 'json' || value === 'stream-json';
  });
}

process.on('uncaughtException', reportUnexpected);
process.on('unhandledRejection', reportUnexpected);
tightenDataFolder(fenceHome());
/** Options that set what fence works with rather than ask for a run: a shell alias may add them to every command line. */
const SETTINGS = ['--model', '--workspace', '--sandbox', '--tool-format', '--reasoning', '--web-search', '--yes'];

// A command's name is a prompt when the line says so (see readCommandLine).
const reading = readCommandLine(buildProgram(), process.argv.slice(2), SETTINGS);
buildProgram(reading.kind !== 'prompt')
  .parseAsync(process.argv)
  .catch((error: unknown) => (error instanceof CommanderError ? endCommandLine(error, reading) : reportUnexpected(error)));
