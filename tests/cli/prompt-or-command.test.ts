import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { readCommandLine } from '../../src/cli/prompt-or-command';

/** A program shaped as fence's: prompt options with and without values, a group, leaf commands. */
function program(): Command {
  const root = new Command('fence')
    .version('1.0.0', '-V, --version')
    .argument('[prompt...]')
    .option('-n, --non-interactive')
    .option('-y, --yes')
    .option('-m, --model <id>')
    .option('-w, --workspace <dir>')
    .option('-r, --resume [id]')
    .action(() => undefined);
  root.command('sandbox').command('check').option('-w, --workspace <dir>').action(() => undefined);
  root.command('trust [dir]').option('--list').action(() => undefined);
  root.command('run <program>').option('--json-args <json>').action(() => undefined);
  return root;
}

const read = (line: string) => readCommandLine(program(), line === '' ? [] : line.split(' '), ['--model', '--workspace', '--yes']);

describe('readCommandLine', () => {
  it.each([
    ['-n sandbox', 'prompt'],
    ['-ny trust', 'prompt'],
    ['-yn trust', 'prompt'],
    ['-r abc trust', 'prompt'],
    ['--model=local/x trust', 'ambiguous'],
    ['-mlocal/x trust', 'ambiguous'],
    ['-m local/x -y trust', 'ambiguous'],
    ['-w /x trust', 'ambiguous'],
    ['-m local/x trust me on this', 'prompt'],
    ['trust me on this', 'prompt'],
    ['trust . -n', 'prompt'],
    ['sandbox check -n', 'prompt'],
    ['sandbox please', 'prompt'],
    ['run a.js b.js', 'prompt'],
    ['-- trust', 'prompt'],
    ['sandbox check', 'command'],
    ['sandbox check -w /x', 'command'],
    ['sandbox help check', 'command'],
    ['trust /x', 'command'],
    ['trust --list', 'command'],
    ['run a.js --json-args 1', 'command'],
    ['run a.js --unknown', 'command'],
    ['-m sandbox', 'command'],
    ['-r sandbox', 'command'],
    ['-V trust', 'command'],
    ['--help trust', 'command'],
    ['--bogus trust', 'command'],
    ['fix the tests', 'command'],
    ['', 'command'],
  ])('reads "fence %s" as %s', (line, kind) => {
    expect(read(line).kind).toBe(kind);
  });

  it('calls a command name alone, or the words a command takes after options, ambiguous', () => {
    expect(read('trust')).toEqual({ kind: 'ambiguous', prompt: 'trust' });
    expect(read('-m local/x trust')).toEqual({ kind: 'ambiguous', prompt: 'trust' });
    expect(read('-m local/x sandbox check')).toEqual({ kind: 'ambiguous', prompt: 'sandbox check' });
    expect(read('-n trust /x')).toEqual({ kind: 'ambiguous', prompt: 'trust /x' });
    expect(read('-r -- sandbox').kind).toBe('prompt');
  });
});
