import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { block, bubblewrapMissing, script, useSandboxRig } from '../support/sandbox-rig';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

/**
 * `/undo` puts files back by the paths the file tools wrote. A model that turns a workspace
 * folder into a link to the home folder between its edit and the `/undo` would have the
 * restore write into `~/.bashrc` and delete the user's files: the restore goes through the
 * file tools' checked writes, so it is refused there and said, and an honest `/undo` still
 * puts files back.
 */

const rig = useSandboxRig();
const BASHRC = "# the user's own .bashrc\n";
let chat: TerminalSession | undefined;
afterEach(() => {
  chat?.kill();
  chat = undefined;
});

function startChat(cwd: string, env: Record<string, string>): TerminalSession {
  chat = startTerminalSession({ args: ['-m', 'local/test', '-y'], cwd, env, cols: 200, rows: 50 });
  return chat;
}

describe.skipIf(bubblewrapMissing)('/undo in the chat', () => {
  it('writes nothing outside the workspace when a folder was turned into a link to the home folder, and says which files it could not put back', { timeout: 90_000 }, async () => {
    const r = rig();
    writeFileSync(join(r.home, '.bashrc'), BASHRC);
    writeFileSync(join(r.home, 'gone.txt'), 'the user\'s file\n');
    script(r, [
      block('save sub/.bashrc', 'echo first'),
      'One.',
      block('save sub/.bashrc', 'echo second'),
      block('save sub/gone.txt', 'made by the model'),
      block('shell', `rm -rf sub && ln -s ${r.home} sub && echo linked`),
      'Two.',
    ]);
    const session = startChat(r.workspace, r.env);
    await session.waitFor(/^› $/m);
    session.type(`first${KEYS.enter}`);
    await session.waitFor('One.');
    session.type(`second${KEYS.enter}`);
    await session.waitFor('Two.');
    session.type(`/undo${KEYS.enter}`);
    await session.waitFor('Took back the last prompt');
    await session.waitFor(/Could not put back sub\/\.bashrc: .*cannot be written/);
    await session.waitFor(/Could not put back sub\/gone\.txt: .*cannot be written/);
    expect(readFileSync(join(r.home, '.bashrc'), 'utf8')).toBe(BASHRC);
    expect(readFileSync(join(r.home, 'gone.txt'), 'utf8')).toBe("the user's file\n");
    session.type(KEYS.ctrlC);
    session.type(`/exit${KEYS.enter}`);
    expect(await session.exited).toBe(0);
  });

  it('still puts back an edited file and removes the file a prompt made', { timeout: 90_000 }, async () => {
    const r = rig();
    writeFileSync(join(r.workspace, 'notes.txt'), 'original\n');
    mkdirSync(join(r.workspace, 'docs'));
    script(r, [block('save notes.txt', 'changed'), block('save docs/new.md', 'new file'), 'Changed.']);
    const session = startChat(r.workspace, r.env);
    await session.waitFor(/^› $/m);
    session.type(`change${KEYS.enter}`);
    await session.waitFor('Changed.');
    expect(readFileSync(join(r.workspace, 'notes.txt'), 'utf8')).toBe('changed\n');
    session.type(`/undo${KEYS.enter}`);
    await session.waitFor(/Put back (notes\.txt, docs\/new\.md|docs\/new\.md, notes\.txt) as they were before\./);
    expect(readFileSync(join(r.workspace, 'notes.txt'), 'utf8')).toBe('original\n');
    expect(existsSync(join(r.workspace, 'docs', 'new.md'))).toBe(false);
    session.type(KEYS.ctrlC);
    session.type(`/exit${KEYS.enter}`);
    expect(await session.exited).toBe(0);
  });
});
