import { describe, expect, it } from 'vitest';
import { isSlashCommand } from '../../src/tui/slash-commands';

describe('isSlashCommand', () => {
  it.each(['/help', '/undo 2', '/shell ls', '/fork my-copy', '/export notes/chat.md', '/exit', '/read README.md', '/undo\t3'])('takes %j for a command', (line) => {
    expect(isSlashCommand(line)).toBe(true);
  });

  it('takes a command with surrounding blank space, or a body on the next lines, for a command', () => {
    expect(isSlashCommand('  /help  ')).toBe(true);
    expect(isSlashCommand('/help\n')).toBe(true);
    expect(isSlashCommand('/save notes.md\n# Notes\n- one')).toBe(true);
  });

  it.each(['/usr/bin/env', '/src/app.ts', '//x', '//', '/', '/ help', '/2fa', '/help/me', ' text', 'hello /help', 'help', '', '   '])('takes %j for a prompt', (line) => {
    expect(isSlashCommand(line)).toBe(false);
  });
});
