import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** A line `^(a+)+$` backtracks on without end in a backtracking engine. */
const EVIL_LINE = `${'a'.repeat(36)}!`;

const grepBlock = (pattern: string) => `\`\`\`grep\n${pattern}\n\`\`\`\n`;
const ptcBlock = (code: string) => `\`\`\`ptc\n${code.trimEnd()}\n\`\`\`\n`;

function toolResults(): string[] {
  return readOnlySessionLog(cli.dirs.home)
    .filter((message) => message.meta?.toolResult)
    .map((message) => (typeof message.content === 'string' ? message.content : JSON.stringify(message.content)));
}

describe('grep patterns in a scripted session', () => {
  it('answers a catastrophic pattern, stops a runaway lookaround, and still finds what a plain pattern names', async () => {
    writeFileSync(join(cli.dirs.workspace, 'evil.txt'), `${EVIL_LINE}\n`);
    writeFileSync(join(cli.dirs.workspace, 'notes.md'), 'one\n// TODO: two\n');
    cli.server.reply((r) => r.text(grepBlock('^(a+)+$')));
    cli.server.reply((r) => r.text(grepBlock('(?=a)(a+)+$')));
    cli.server.reply((r) => r.text(grepBlock('TODO')));
    cli.server.reply((r) => r.text('Done.'));

    const result = await runFence(['-n', '-m', 'local/test', 'search'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Done.');
    const [evil, lookaround, plain] = toolResults();
    expect(evil).toContain('no matches for ^(a+)+$ in the workspace');
    expect(lookaround).toMatch(/grep stopped: the pattern \(\?=a\)\(a\+\)\+\$ ran over 3 s on evil\.txt/);
    expect(plain).toContain('notes.md:2: // TODO: two');
  });

  it('lets a program grep a catastrophic pattern and go on', async () => {
    writeFileSync(join(cli.dirs.workspace, 'evil.txt'), `${EVIL_LINE}\naaaa\n`);
    const program = ['// intent: search', 'const found = await grep({ pattern: "^(a+)+$" });', 'print(JSON.stringify(found));'].join('\n');
    cli.server.reply((r) => r.text(ptcBlock(program)));
    cli.server.reply((r) => r.text('One line of a.'));

    const result = await runFence(['-n', '-m', 'local/test', 'search'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('One line of a.');
    expect(toolResults()[0]).toContain('[{"path":"evil.txt","line":2,"text":"aaaa"}]');
  });
});
