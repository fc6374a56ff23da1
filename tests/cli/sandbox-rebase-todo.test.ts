import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GIT_AUTHOR, hostGit } from '../support/host-git';
import { block, bubblewrapMissing, fenceIn, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * A rebase the model leaves stopped in the workspace holds its remaining steps in
 * `.git/rebase-merge/git-rebase-todo`, which git must be able to write in the sandbox; an
 * `exec` step there would run on the host when the person types `git rebase --continue`. The
 * git guard turns such steps into comments at the end; a rebase that was stopped before the
 * session keeps its todo as it was, and a rebase without commands goes on as git left it.
 */

const rig = useSandboxRig();


/** The file an `exec` step makes when it runs: outside the workspace, where the sandbox cannot write. */
const marker = (r: SandboxRig) => join(r.outside, 'rebase-exec-ran');

/** git on the host in the workspace, with no editor to wait for. */
const gitHere = (r: SandboxRig, args: string[]) => hostGit(r, r.workspace, args, { GIT_EDITOR: 'true' });

/** Two commits, so that `git rebase -i HEAD~1` has one to replay. */
function twoCommits(r: SandboxRig): void {
  for (const name of ['a', 'b']) {
    writeFileSync(join(r.workspace, `${name}.txt`), `${name}\n`);
    execFileSync('git', ['add', '.'], { cwd: r.workspace, env: { ...process.env, ...GIT_AUTHOR } });
    execFileSync('git', ['commit', '-q', '-m', name], { cwd: r.workspace, env: { ...process.env, ...GIT_AUTHOR } });
  }
}

/** A rebase of the last commit, stopped by a `break` before its steps; `exec` adds a command step. */
const stoppedRebase = (exec?: string) =>
  `GIT_SEQUENCE_EDITOR="sed -i '1i break'" git rebase -i ${exec ? `--exec '${exec}' ` : ''}HEAD~1; git status --short --branch | head -1`;

describe.skipIf(bubblewrapMissing)('a rebase left stopped in the sandbox', () => {
  it('runs none of the model’s exec steps when the person continues it on the host', { timeout: 150_000 }, async () => {
    const r = rig();
    twoCommits(r);
    script(r, [block('shell', stoppedRebase(`touch ${marker(r)}`)), block('shell', 'grep -c "^exec" .git/rebase-merge/git-rebase-todo'), 'Left the rebase stopped.']);
    const run = await fenceIn(r, ['-n', 'rebase'], GIT_AUTHOR);
    expect(run.exitCode).toBe(0);
    // The rebase really stopped with an exec step in the sandbox: the attack is real.
    expect(toolResults(r)[1]?.content).toMatch(/^1$/m);
    expect(run.stderr).toContain('git-rebase-todo, written in the sandbox, held a command for git rebase --continue to run (exec)');
    const todo = readFileSync(join(r.workspace, '.git', 'rebase-merge', 'git-rebase-todo'), 'utf8');
    expect(todo).toMatch(/^# disabled by fence, written in the sandbox: exec touch /m);
    const continued = gitHere(r, ['rebase', '--continue']);
    expect(continued.status).toBe(0);
    expect(existsSync(marker(r))).toBe(false);
    expect(gitHere(r, ['log', '--format=%s']).stdout.split('\n')[0]).toBe('b');
  });

  it('goes on as git left it when it has no command, and one stopped before the session keeps its todo', { timeout: 150_000 }, async () => {
    const r = rig();
    twoCommits(r);
    // The person's own rebase, stopped before fence starts, with an exec step of theirs.
    const own = join(r.outside, 'own-exec-ran');
    execFileSync('bash', ['-c', stoppedRebase(`touch ${own}`)], { cwd: r.workspace, env: { ...process.env, ...GIT_AUTHOR } });
    const before = readFileSync(join(r.workspace, '.git', 'rebase-merge', 'git-rebase-todo'), 'utf8');
    script(r, [block('shell', 'git status --short --branch | head -1'), 'Looked.']);
    const run = await fenceIn(r, ['-n', 'look'], GIT_AUTHOR);
    expect(run.exitCode).toBe(0);
    expect(run.stderr).not.toContain('git-rebase-todo');
    expect(readFileSync(join(r.workspace, '.git', 'rebase-merge', 'git-rebase-todo'), 'utf8')).toBe(before);
    expect(gitHere(r, ['rebase', '--continue']).status).toBe(0);
    expect(existsSync(own)).toBe(true);

    // The model's rebase without a command: continued on the host, it finishes.
    script(r, [block('shell', stoppedRebase()), 'Left it stopped.']);
    const second = await fenceIn(r, ['-n', 'rebase'], GIT_AUTHOR);
    expect(second.exitCode).toBe(0);
    expect(second.stderr).not.toContain('git-rebase-todo');
    expect(gitHere(r, ['rebase', '--continue']).status).toBe(0);
    expect(existsSync(join(r.workspace, '.git', 'rebase-merge'))).toBe(false);
  });
});
