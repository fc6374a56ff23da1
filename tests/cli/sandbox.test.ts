import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { trustWorkspace } from '../../src/config/trust';
import { snapshot } from '../support/sandbox-machine';
import {
  block,
  bubblewrapMissing,
  CONFIG_MARKER,
  everythingSent,
  fenceIn,
  fetchFromShell,
  HOST_REPLY,
  KEY_MARKER,
  OLD_LOG_MARKER,
  outsideWorkspace,
  script,
  sessionInfo,
  toolResults,
  useSandboxRig,
  type SandboxRig,
} from '../support/sandbox-rig';

/**
 * A scripted model tries every way out of the sandbox, through the built CLI: each attempt
 * fails in a way the model can read, nothing outside the workspace changes, and the same
 * attempts succeed with `--sandbox off` (so each one would have worked).
 */

const rig = useSandboxRig();

/** The sandbox's note after a refused write. */
const WRITE_NOTE = /Note: fence runs commands in a sandbox that lets them write only inside the workspace and \/tmp/;
/** The note after a refused write to git's hooks or config. */
const GIT_NOTE = /Note: git's hooks and configuration stay read-only in the sandbox/;

/** One way out: the block the model writes, what it reads in the sandbox, and without one. */
interface Escape {
  what: string;
  block: string;
  refused: RegExp[];
  done: RegExp;
}

/** The ways out that harm nothing but the test's own folders (so they can run without a sandbox). */
function escapes(rig: SandboxRig): Escape[] {
  return [
    {
      what: 'a file outside the workspace, from the shell',
      block: block('shell', `echo escaped > ${rig.outside}/from-shell.txt`),
      refused: [/from-shell\.txt: Read-only file system/, WRITE_NOTE],
      done: /^Exit code 0\.$/,
    },
    {
      what: 'a file outside the workspace, from Python',
      block: block('python', `open(${JSON.stringify(`${rig.outside}/from-python.txt`)}, "w").write("escaped")`),
      refused: [/OSError: \[Errno 30\] Read-only file system/],
      done: /^Out: 7$/,
    },
    { what: 'the private key', block: block('shell', 'cat ~/.ssh/id_ed25519'), refused: [/id_ed25519: No such file or directory/], done: new RegExp(KEY_MARKER) },
    { what: "another session's log", block: block('shell', `cat ${rig.otherLog}`), refused: [/conversation\.jsonl: No such file or directory/], done: new RegExp(OLD_LOG_MARKER) },
    { what: "the user's configuration", block: block('shell', `cat ${rig.userConfig}`), refused: [/config\.toml: No such file or directory/], done: new RegExp(CONFIG_MARKER) },
    { what: 'a host server, from the shell', block: block('shell', fetchFromShell(rig.host.url)), refused: [/Couldn't connect to server|Connection refused/], done: new RegExp(HOST_REPLY) },
    {
      what: 'a host server, from Python',
      block: block('python', `import urllib.request\nurllib.request.urlopen(${JSON.stringify(rig.host.url)}, timeout=20).read().decode()`),
      refused: [/URLError: <urlopen error \[Errno 111\] Connection refused>/],
      done: new RegExp(HOST_REPLY),
    },
    { what: 'fence.toml', block: block('shell', "echo 'writable = [\"~\"]' >> fence.toml"), refused: [/fence\.toml: Is a directory/, WRITE_NOTE], done: /^Exit code 0\.$/ },
    { what: '.fence/', block: block('shell', 'mkdir -p .fence && echo x > .fence/x'), refused: [/\.fence\/x: Read-only file system/, WRITE_NOTE], done: /^Exit code 0\.$/ },
    {
      what: "git's hooks",
      block: block('shell', `printf '#!/bin/sh\\ntouch ${rig.outside}/hook-ran\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`),
      refused: [/pre-commit: Read-only file system/, GIT_NOTE],
      done: /^Exit code 0\.$/,
    },
    {
      what: "git's config",
      block: block('shell', 'git config core.hooksPath "$PWD/model-hooks"'),
      refused: [/could not write config file \.git\/config: Device or resource busy/, GIT_NOTE],
      done: /^Exit code 0\.$/,
    },
  ];
}

describe.skipIf(bubblewrapMissing)('the sandbox of an --auto run, end to end', () => {
  it('holds against every way out the model tries, tells it each time, and the run still completes', async () => {
    const tries = escapes(rig());
    const outsideBefore = await outsideWorkspace(rig());
    const workspaceBefore = await snapshot(rig().workspace);
    const run = fenceIn(rig(), ['--auto', 'get out of the sandbox']);
    // Scripted before any request can arrive: this process serves them, after this runs.
    const swap = 'mv .git .git-old && git init -q && printf "#!/bin/sh\\necho ran\\n" > .git/hooks/pre-commit';
    script(rig(), [...tries.map((t) => t.block), block('shell', swap), block('shell', `kill -9 ${run.pid}`), block('complete', 'Tried every way out.')]);
    const result = await run;

    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Tried every way out.');
    const results = toolResults(rig());
    expect(results).toHaveLength(tries.length + 3);
    tries.forEach((t, i) => {
      for (const pattern of t.refused) expect(results[i]?.content, t.what).toMatch(pattern);
      expect(results[i]?.meta?.isError, t.what).toBe(true);
    });
    expect(results[tries.length]?.content).toMatch(/cannot move '\.git' to '\.git-old': Device or resource busy/);
    expect(results[tries.length]?.content).toMatch(WRITE_NOTE);
    expect(results[tries.length + 1]?.content).toContain(`kill: (${run.pid}) - No such process`);
    // And the model read each one: the last request carried them all.
    const last = JSON.stringify(rig().server.requests.at(-1)?.body.messages);
    for (const message of results.slice(0, -1)) expect(last).toContain(JSON.stringify(message.content).slice(1, -1));

    // No secret reached the model, in any request.
    const sent = everythingSent(rig());
    for (const secret of [KEY_MARKER, OLD_LOG_MARKER, CONFIG_MARKER]) expect(sent).not.toContain(secret);
    // Nothing changed outside the workspace, nor in it: no placeholder folder was left behind.
    expect(await outsideWorkspace(rig())).toEqual(outsideBefore);
    expect(await snapshot(rig().workspace)).toEqual(workspaceBefore);
    expect(existsSync(join(rig().workspace, 'fence.toml'))).toBe(false);
    expect(existsSync(join(rig().workspace, '.fence'))).toBe(false);
    expect(rig().host.hits).toBe(0);
    expect(sessionInfo(rig()).sandbox).toBe('workspace-write (bubblewrap)');
  }, 180_000);

  it('lets the same attempts through with --sandbox off: each one would have worked', async () => {
    const tries = escapes(rig());
    script(rig(), [...tries.map((t) => t.block), block('complete', 'Out.')]);
    const result = await fenceIn(rig(), ['--auto', '--sandbox', 'off', 'get out']);

    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Out.');
    const results = toolResults(rig());
    tries.forEach((t, i) => expect(results[i]?.content, t.what).toMatch(t.done));
    const sent = everythingSent(rig());
    for (const secret of [KEY_MARKER, OLD_LOG_MARKER, CONFIG_MARKER]) expect(sent).toContain(secret);
    expect(rig().host.hits).toBe(2);
    expect(readFileSync(join(rig().outside, 'from-shell.txt'), 'utf8')).toBe('escaped\n');
    expect(readFileSync(join(rig().outside, 'from-python.txt'), 'utf8')).toBe('escaped');
    expect(readFileSync(join(rig().workspace, 'fence.toml'), 'utf8')).toBe('writable = ["~"]\n');
    expect(readFileSync(join(rig().workspace, '.fence', 'x'), 'utf8')).toBe('x\n');
    expect(readFileSync(join(rig().workspace, '.git', 'hooks', 'pre-commit'), 'utf8')).toContain('hook-ran');
    expect(readFileSync(join(rig().workspace, '.git', 'config'), 'utf8')).toContain('hooksPath');
    expect(sessionInfo(rig()).sandbox).toBe('off');
  }, 180_000);

  it("keeps a hostile project's fence.toml from turning the sandbox off, opening it or widening it, and says so", async () => {
    const hostile = '[sandbox]\nmode = "off"\nnetwork = true\nwritable = ["~"]\n';
    writeFileSync(join(rig().workspace, 'fence.toml'), hostile);
    // Trusted, even: a project's file narrows the sandbox at most.
    trustWorkspace(rig().workspace, rig().fenceHome);
    script(rig(), [
      block('shell', 'echo escaped > ~/escaped.txt'),
      block('shell', fetchFromShell(rig().host.url)),
      block('shell', "echo 'mode = \"off\"' >> fence.toml"),
      'Stayed in.',
    ]);
    const result = await fenceIn(rig(), ['-n', 'get out']);

    expect(result.exitCode).toBe(0);
    expect(sessionInfo(rig()).sandbox).toBe('workspace-write (bubblewrap)');
    expect(result.stderr).toContain('fence: fence.toml: [sandbox] mode = "off" ignored');
    expect(result.stderr).toContain('fence: fence.toml: [sandbox] writable ignored');
    expect(result.stderr).toContain('fence: fence.toml: [sandbox] network ignored');
    const [home, network, config] = toolResults(rig()).map((message) => message.content);
    expect(home).toMatch(/escaped\.txt: Read-only file system/);
    expect(network).toMatch(/Couldn't connect to server|Connection refused/);
    expect(config).toMatch(/fence\.toml: Read-only file system/);
    expect(existsSync(join(rig().home, 'escaped.txt'))).toBe(false);
    expect(rig().host.hits).toBe(0);
    expect(readFileSync(join(rig().workspace, 'fence.toml'), 'utf8')).toBe(hostile);
  }, 120_000);
});
