import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { homeWorkspaceReason } from '../../src/session/home-workspace';
import { STARTUP_FILES_IN_HOME, startupFilesWithin } from '../../src/os-sandbox/startup-files';

let root: string;
let home: string;
beforeEach(() => {
  root = mkdtempSync('/var/tmp/fence-startup-files-');
  home = join(root, 'home', 'someone');
  mkdirSync(join(home, 'project'), { recursive: true });
  mkdirSync(join(home, '.config'));
  symlinkSync(home, join(root, 'home-link'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('homeWorkspaceReason', () => {
  it('refuses the home folder, a link to it, the folders above it and /', () => {
    expect(homeWorkspaceReason(home, home)).toBe('it is your home folder');
    expect(homeWorkspaceReason(join(root, 'home-link'), home)).toBe('it is your home folder');
    expect(homeWorkspaceReason(`${home}/`, home)).toBe('it is your home folder');
    expect(homeWorkspaceReason(join(root, 'home'), home)).toBe('it holds your home folder');
    expect(homeWorkspaceReason(root, home)).toBe('it holds your home folder');
    expect(homeWorkspaceReason('/', home)).toBe('it is the root folder /');
  });

  it('lets a project in the home folder, and a folder beside it, be the workspace', () => {
    expect(homeWorkspaceReason(join(home, 'project'), home)).toBeUndefined();
    expect(homeWorkspaceReason(join(root, 'home', 'someone-else'), home)).toBeUndefined();
    expect(homeWorkspaceReason(`${home}-work`, home)).toBeUndefined();
  });
});

describe('startupFilesWithin', () => {
  it('gives the start-up files a writable path holds, by its path or by where it leads', () => {
    const all = STARTUP_FILES_IN_HOME.map((path) => join(home, path));
    expect(startupFilesWithin(home, [home])).toEqual(all);
    expect(startupFilesWithin(home, [join(root, 'home-link')])).toEqual(all);
    expect(startupFilesWithin(home, [join(home, '.config')])).toEqual(all.filter((path) => path.startsWith(join(home, '.config/'))));
    expect(startupFilesWithin(home, [join(home, '.config')])).toContain(join(home, '.config', 'autostart'));
  });

  it('gives none for a project folder or a cache', () => {
    expect(startupFilesWithin(home, [join(home, 'project'), join(home, '.cache', 'pip')])).toEqual([]);
  });
});
