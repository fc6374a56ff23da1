import { describe, expect, it } from 'vitest';
import { ToolInputError } from '../../src/tools/tool-error';
import { displayPath, locateFile, resolveWorkspacePath } from '../../src/tools/workspace-path';

const workspace = '/home/ada/project';
const home = '/home/ada';

describe('resolveWorkspacePath', () => {
  it('resolves relative paths against the workspace', () => {
    expect(resolveWorkspacePath(workspace, 'src/app.ts', home)).toBe('/home/ada/project/src/app.ts');
    expect(resolveWorkspacePath(workspace, './src/../README.md', home)).toBe('/home/ada/project/README.md');
  });

  it('resolves .. out of the workspace', () => {
    expect(resolveWorkspacePath(workspace, '../other/x.txt', home)).toBe('/home/ada/other/x.txt');
  });

  it('keeps absolute paths, normalised', () => {
    expect(resolveWorkspacePath(workspace, '/etc//hosts', home)).toBe('/etc/hosts');
    expect(resolveWorkspacePath(workspace, '/tmp/a/../b', home)).toBe('/tmp/b');
  });

  it('expands ~ and ~/ to the home folder, but not ~user', () => {
    expect(resolveWorkspacePath(workspace, '~', home)).toBe('/home/ada');
    expect(resolveWorkspacePath(workspace, '~/notes/a.md', home)).toBe('/home/ada/notes/a.md');
    expect(resolveWorkspacePath(workspace, '~bob/a.md', home)).toBe('/home/ada/project/~bob/a.md');
  });

  it('ignores surrounding whitespace and one pair of matching quotes', () => {
    expect(resolveWorkspacePath(workspace, '  notes/a.md \n', home)).toBe('/home/ada/project/notes/a.md');
    expect(resolveWorkspacePath(workspace, '"my notes.md"', home)).toBe('/home/ada/project/my notes.md');
    expect(resolveWorkspacePath(workspace, "'a.md'", home)).toBe('/home/ada/project/a.md');
    expect(resolveWorkspacePath(workspace, '"a.md\'', home)).toBe('/home/ada/project/"a.md\'');
  });

  it('throws ToolInputError for an empty path or a NUL character', () => {
    expect(() => resolveWorkspacePath(workspace, '', home)).toThrow(ToolInputError);
    expect(() => resolveWorkspacePath(workspace, '   ', home)).toThrow(/path is empty/);
    expect(() => resolveWorkspacePath(workspace, '""', home)).toThrow(ToolInputError);
    expect(() => resolveWorkspacePath(workspace, 'a\0b', home)).toThrow(/NUL/);
  });

  it('uses the real home folder by default', () => {
    expect(resolveWorkspacePath(workspace, '~/x')).toMatch(/\/x$/);
    expect(resolveWorkspacePath(workspace, '~/x')).not.toContain('~');
  });
});

describe('displayPath', () => {
  it('is workspace-relative inside the workspace', () => {
    expect(displayPath(workspace, '/home/ada/project/src/app.ts')).toBe('src/app.ts');
    expect(displayPath(`${workspace}/`, '/home/ada/project/src/app.ts')).toBe('src/app.ts');
  });

  it('is . for the workspace itself', () => {
    expect(displayPath(workspace, workspace)).toBe('.');
  });

  it('is absolute outside the workspace, including a sibling sharing its prefix', () => {
    expect(displayPath(workspace, '/etc/hosts')).toBe('/etc/hosts');
    expect(displayPath(workspace, '/home/ada')).toBe('/home/ada');
    expect(displayPath(workspace, '/home/ada/project-old/a.ts')).toBe('/home/ada/project-old/a.ts');
  });

  it('keeps names that merely start with two dots inside the workspace', () => {
    expect(displayPath(workspace, '/home/ada/project/..hidden')).toBe('..hidden');
  });
});

describe('locateFile', () => {
  it('gives the absolute path and its shown form', () => {
    expect(locateFile(workspace, 'src/../a.md')).toEqual({ absolute: '/home/ada/project/a.md', shown: 'a.md' });
  });
});
