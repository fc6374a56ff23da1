import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { CONFIG_FILE_LIMIT_BYTES, PROJECT_CONFIG_FILE, parseConfigText } from './config';
import { projectCommandFiles } from './command-files';
import { describeUnread, readRegularFile } from './regular-file';
import type { ConfigFile } from './config-schema';
import { textChanges } from './text-changes';
import { describeTomlValue, writeTomlKey } from './toml-value';
import { PROJECT_PROGRAMS_DIR, TRUSTED_TEXT_LIMIT_BYTES, type EarlierText, type WorkspaceTrust } from './trust';
import { PROJECT_SKILLS_DIR, projectSkillNames } from './project-skill-files';

/** Longest command or list shown on one line of the summary; the rest is cut with `…`. */
const SHOWN_CHARS = 100;

/** Most lines of the diff shown for a file changed since it was trusted. */
const SHOWN_DIFF_LINES = 40;

/**
 * What trusting a workspace would let in, for a person deciding: the MCP servers its
 * `fence.toml` starts and the commands they run, its command tools, its policy rules, what it
 * sets besides (its `[sandbox]` table as TOML); the size of its `AGENTS.md`; the names of its
 * saved programs. For a workspace whose `fence.toml` or `AGENTS.md` changed since it was
 * trusted, what changed, as a unified diff of the text trusted then against the text now, cut
 * to `SHOWN_DIFF_LINES` (or a sentence saying why the earlier text cannot be shown). One line
 * per item, indented under the file it comes from; the diff's lines quote the folder's files,
 * so the caller shows every line through the terminal's sanitiser. Never throws: a file that
 * cannot be read or parsed says so in its line.
 */
export function describeProject(trust: WorkspaceTrust): string[] {
  const lines: string[] = [];
  const workspace = trust.workspace;
  const changes = (name: string) => changeLines(trust, name).map((line) => `  ${line}`);
  if (trust.present.includes(PROJECT_CONFIG_FILE)) {
    lines.push(`${PROJECT_CONFIG_FILE}:`, ...describeConfigFile(join(workspace, PROJECT_CONFIG_FILE), workspace).map((line) => `  ${line}`), ...changes(PROJECT_CONFIG_FILE));
  } else if (trust.changed?.includes(PROJECT_CONFIG_FILE)) {
    lines.push(`${PROJECT_CONFIG_FILE}: removed since you trusted this folder`);
  }
  if (trust.present.includes('AGENTS.md')) {
    lines.push(`AGENTS.md: ${sizeOf(join(workspace, 'AGENTS.md'))} of instructions put in the model's system prompt`, ...changes('AGENTS.md'));
  } else if (trust.changed?.includes('AGENTS.md')) {
    lines.push('AGENTS.md: removed since you trusted this folder');
  }
  if (trust.present.includes(`${PROJECT_PROGRAMS_DIR}/`)) {
    const names = listFolder(join(workspace, PROJECT_PROGRAMS_DIR)).sort();
    lines.push(`${PROJECT_PROGRAMS_DIR}/: ${cut(names.join(', '))} (a program is offered only once you approve it: fence programs approve)`);
  }
  if (trust.present.includes(`${PROJECT_SKILLS_DIR}/`)) {
    const names = projectSkillNames(workspace);
    lines.push(`${PROJECT_SKILLS_DIR}/: ${cut(names.join(', '))} (skills: each one's name and description go in the model's system prompt)`);
  }
  return lines;
}

/** The lines for one `fence.toml`: what it starts, adds, allows and sets. */
function describeConfigFile(path: string, workspace: string): string[] {
  const read = readRegularFile(path, CONFIG_FILE_LIMIT_BYTES, 'follow');
  if (read.kind !== 'read') return [`cannot be read: ${describeUnread(read)}`];
  const parsed = parseConfigText(read.bytes.toString('utf8'), PROJECT_CONFIG_FILE);
  if ('error' in parsed) return [`cannot be used as it is: ${parsed.error}`];
  const file: ConfigFile = parsed.file;
  const lines: string[] = [];
  for (const [name, server] of Object.entries(file.mcpServers ?? {})) {
    const how = 'command' in server ? `runs ${commandLine([server.command, ...(server.args ?? [])])}${setsVariables(server.env)}` : `connects to ${oneLine(server.url)}`;
    lines.push(`MCP server ${name}: ${how}`);
  }
  for (const [name, tool] of Object.entries(file.tools ?? {})) {
    lines.push(`command tool ${name}: runs ${commandLine(tool.command)}${tool.env?.length ? ` (passed ${oneLine(tool.env.join(', '))})` : ''}`);
  }
  for (const hook of file.hooks ?? []) {
    const match = [hook.tool ? ` tool ${hook.tool}` : '', hook.resource ? ` resource ${hook.resource}` : ''].join('');
    lines.push(`hook at ${hook.event}${oneLine(match)}: runs ${commandLine(hook.command)} (inside the sandbox)`);
  }
  for (const rule of file.policy ?? []) {
    const who = rule.principal ? ` for ${rule.principal}` : '';
    const what = rule.resource ? ` ${rule.resource}` : '';
    const why = rule.intent ? ` (intent ${rule.intent})` : '';
    lines.push(`policy: ${rule.action} ${rule.tool}${what}${who}${why} (your own rules that deny or ask still win)`);
  }
  const sandbox = sandboxTable(read.bytes.toString('utf8'));
  if (sandbox.length > 0) lines.push('[sandbox] (it can narrow the sandbox, not widen it):', ...sandbox.map((line) => `  ${line}`));
  const other = [
    file.toolFormat ? 'tool_format' : '',
    file.ptc ? '[ptc] limits' : '',
    file.models ? `[models] (${Object.keys(file.models).join(', ')})` : '',
    file.briefToolsAboveTokens !== undefined || file.hideToolsAboveTokens !== undefined ? 'tool listing sizes' : '',
  ].filter(Boolean);
  if (other.length > 0) lines.push(`also sets: ${cut(other.join(', '))}`);
  const scripts = projectCommandFiles(read.bytes.toString('utf8'), workspace);
  if (scripts.length > 0) lines.push(`files of this folder its commands run: ${cut(scripts.join(', '))} (a change to one asks again)`);
  if (lines.length === 0) lines.push('nothing besides defaults');
  return lines;
}

/**
 * The lines of the diff of a changed file of `TRUSTED_FILES` (none when it did not change):
 * `changed since you trusted it:` over the diff, indented; or the sentence saying why the
 * earlier text cannot be compared.
 */
function changeLines(trust: WorkspaceTrust, name: string): string[] {
  if (trust.state !== 'changed' || !trust.changed?.includes(name)) return [];
  const earlier: EarlierText = trust.earlier?.[name] ?? { kind: 'not-kept', why: 'older-record' };
  if (earlier.kind === 'not-kept') {
    const why = earlier.why === 'too-large' ? `it was over ${TRUSTED_TEXT_LIMIT_BYTES / 1024} KiB` : 'this folder was trusted by an earlier version of fence';
    return [`changed since you trusted it; the earlier text was not kept (${why}), so what changed cannot be shown`];
  }
  const now = readRegularFile(join(trust.workspace, name), CONFIG_FILE_LIMIT_BYTES, 'follow');
  if (now.kind !== 'read') return [`changed since you trusted it; it cannot be read now: ${describeUnread(now)}`];
  const before = earlier.kind === 'text' ? earlier.text : '';
  const diff = textChanges(before, now.bytes.toString('utf8'), SHOWN_DIFF_LINES);
  const head = earlier.kind === 'absent' ? 'added since you trusted this folder:' : 'changed since you trusted it:';
  return [head, ...diff.map((line) => `  ${line}`)];
}

/**
 * The `[sandbox]` table of a `fence.toml` as its author wrote it: one `key = value` line per
 * key, in the file's order, values as TOML, each line cut to `SHOWN_CHARS`. Empty when the
 * file has no such table or it is empty.
 */
function sandboxTable(text: string): string[] {
  let table: unknown;
  try {
    table = (parseToml(text) as Record<string, unknown>).sandbox;
  } catch {
    return [];
  }
  if (typeof table !== 'object' || table === null || Array.isArray(table)) return [];
  return Object.entries(table).map(([key, value]) => cut(`${writeTomlKey(key)} = ${describeTomlValue(value)}`));
}

function sizeOf(path: string): string {
  try {
    const bytes = statSync(path).size;
    return `${bytes.toLocaleString('en-US')} byte${bytes === 1 ? '' : 's'}`;
  } catch {
    return 'an unreadable file';
  }
}

/**
 * A command as the person deciding must see it: whole, however long, each argument that is not
 * a plain word quoted (`sh -c "curl … | sh"`), control characters shown as `?`.
 */
function commandLine(words: readonly string[]): string {
  return oneLine(words.map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : JSON.stringify(word))).join(' '));
}

/** ` (sets A, B)`: the variables an MCP server's table sets for it; empty when none. */
function setsVariables(env: Record<string, string> | undefined): string {
  const names = Object.keys(env ?? {});
  return names.length === 0 ? '' : ` (sets ${oneLine(names.join(', '))})`;
}

/** `text` on one line, whole, control characters shown as `?`. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\s+/g, ' ').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

/** One line of at most `SHOWN_CHARS`, control characters shown as `?` (a file must not drive the terminal). */
function cut(text: string): string {
  const line = oneLine(text);
  return line.length > SHOWN_CHARS ? `${line.slice(0, SHOWN_CHARS - 1)}…` : line;
}

function listFolder(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}
