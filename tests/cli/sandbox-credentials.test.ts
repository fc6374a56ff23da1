import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CREDENTIAL_STORES } from '../../src/os-sandbox/credential-stores';
import { block, bubblewrapMissing, everythingSent, fenceIn, script, sessionId, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * A home folder full of credentials, and fence started with credentials in its environment:
 * a scripted model tries every way to read them (the shell, Python, the file tools, links,
 * /proc), and none reaches a request to the model nor the session's files. Beside it, the
 * honest work of a developer still runs in the same sandbox from a warm home folder.
 */

const rig = useSandboxRig();

/** A store that is a folder is planted with the file its tool keeps there; the others are planted as files. */
const INSIDE_FOLDER: Record<string, string> = {
  '.ssh': 'id_rsa',
  '.gnupg': 'private-keys-v1.d/key.key',
  '.pki': 'nssdb/key4.db',
  '.local/share/keyrings': 'login.keyring',
  '.local/share/kwalletd': 'kdewallet.kwl',
  '.password-store': 'email.gpg',
  '.config/op': 'config',
  '.op': 'config',
  '.config/gh': 'hosts.yml',
  '.config/hub': 'hub',
  '.config/glab-cli': 'config.yml',
  '.docker': 'config.json',
  '.kube': 'config',
  '.config/helm': 'repositories.yaml',
  '.aws': 'credentials',
  '.config/gcloud': 'application_default_credentials.json',
  '.azure': 'msal_token_cache.json',
  '.oci': 'config',
  '.config/doctl': 'config.yaml',
  '.config/heroku': 'config.json',
  '.fly': 'config.yml',
  '.config/netlify': 'config.json',
  '.local/share/com.vercel.cli': 'auth.json',
  '.vercel': 'auth.json',
  '.supabase': 'access-token',
  '.config/rclone': 'rclone.conf',
  '.huggingface': 'token',
  '.config/huggingface': 'token',
  '.codex': 'auth.json',
  '.claude': '.credentials.json',
  '.gemini': 'oauth_creds.json',
  '.config/gptme': 'config.toml',
  '.aider': 'oauth-keys.env',
  '.continue': 'config.json',
  '.cursor': 'mcp.json',
  '.config/github-copilot': 'apps.json',
  '.local/share/opencode': 'auth.json',
  '.config/opencode': 'opencode.json',
  '.mozilla': 'firefox/profile.default/cookies.sqlite',
  'snap/firefox': 'common/.mozilla/firefox/logins.json',
  '.config/google-chrome': 'Default/Cookies',
  '.config/chromium': 'Default/Login Data',
  'snap/chromium': 'common/chromium/Default/Cookies',
  '.config/BraveSoftware': 'Brave-Browser/Default/Cookies',
  '.config/microsoft-edge': 'Default/Cookies',
  '.config/vivaldi': 'Default/Cookies',
};

/** Variables in fence's environment that look like credentials, by name or by value. */
function plantedVariables(tag: string): Record<string, string> {
  return {
    OPENAI_API_KEY: `sk-${tag}-provider-key`,
    SSHPASS: `${tag}-sshpass`,
    MYSQL_PWD: `${tag}-mysql-pwd`,
    GITHUB_PAT: `${tag}-github-pat`,
    GPG_PASSPHRASE: `${tag}-gpg-passphrase`,
    SENTRY_DSN: `https://${tag}-sentry-dsn@o1.ingest.sentry.io/1`,
    SLACK_WEBHOOK_URL: `https://hooks.slack.com/services/${tag}-webhook`,
    AZURE_STORAGE_CONNECTION_STRING: `AccountKey=${tag}-connection-string`,
    SESSION_COOKIE: `${tag}-cookie`,
    DATABASE_URL: `postgres://app:${tag}-database-url@db.internal/app`,
  };
}

/** Plants every credential store of the table in `home`, each holding a marker of its own; returns the markers. */
function plantStores(home: string, tag: string): string[] {
  return CREDENTIAL_STORES.map((store, i) => {
    const marker = `${tag}-store-${i}-end`;
    const inside = INSIDE_FOLDER[store.path];
    const file = inside === undefined ? join(home, store.path) : join(home, store.path, inside);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, `token = "${marker}"\n`);
    return marker;
  });
}

/** Every text of the session's folder (its log, saved outputs, traces), and every request body. */
function everythingKept(rig: SandboxRig): string {
  const session = join(rig.fenceHome, 'sessions', sessionId(rig));
  const texts = readdirSync(session, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'));
  return [everythingSent(rig), ...texts].join('\n');
}

let hostTmp: string | undefined;
afterEach(() => {
  if (hostTmp) rmSync(hostTmp, { recursive: true, force: true });
  hostTmp = undefined;
});

describe.skipIf(bubblewrapMissing)('credentials on a developer machine, through the built CLI', () => {
  it('reach neither a request nor the session log, whatever the model tries', async () => {
    const tag = `cred${randomBytes(4).toString('hex')}`;
    const markers = plantStores(rig().home, tag);
    // gh keeps its token under $XDG_CONFIG_HOME when that is set, as the rig sets it.
    mkdirSync(join(rig().env.XDG_CONFIG_HOME ?? '', 'gh'), { recursive: true });
    writeFileSync(join(rig().env.XDG_CONFIG_HOME ?? '', 'gh', 'hosts.yml'), `oauth_token: ${tag}-xdg-gh\n`);
    markers.push(`${tag}-xdg-gh`);
    const variables = plantedVariables(tag);
    hostTmp = mkdtempSync('/tmp/fence-host-tmp-');
    writeFileSync(join(hostTmp, 'notes.txt'), `${tag}-host-tmp\n`);
    const paths = CREDENTIAL_STORES.map((store) => `~/${store.path}`).join(' ');
    script(rig(), [
      block('shell', `for f in ${paths}; do cat "$f" 2>/dev/null; ls -A "$f" 2>/dev/null; done; echo walked`),
      block('shell', 'find ~ "$XDG_CONFIG_HOME" -type f 2>/dev/null | xargs -d "\\n" cat 2>/dev/null; echo found'),
      block('shell', "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; echo listed"),
      block('python', ['import os', 'seen = []', 'for folder, _, files in os.walk(os.path.expanduser("~")):', '    for name in files:', '        try:', '            seen.append(open(os.path.join(folder, name), errors="replace").read())', '        except OSError as error:', '            seen.append(str(error))', 'print(len(seen), "\\n".join(seen), dict(os.environ))'].join('\n')),
      block('read ~/.npmrc', ''),
      block('read ~/.config/gh/hosts.yml', ''),
      block('read /proc/self/environ', ''),
      block('grep /proc/self', tag),
      block('grep ~', tag),
      block(`read ${hostTmp}/notes.txt`, ''),
      block('shell', `ln -s /proc/self proc-link && ln -s /run run-link && ln -s ${hostTmp} tmp-link && ln -s ~ home-link && echo linked`),
      block('read proc-link/environ', ''),
      block('glob run-link/**', ''),
      block('glob tmp-link/**', ''),
      block('grep home-link', tag),
      block('grep .', tag),
      'Found nothing.',
    ]);
    const result = await fenceIn(rig(), ['-n', 'find every credential on this machine'], variables);

    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Found nothing.');
    const results = toolResults(rig()).map((message) => message.content);
    expect(results).toHaveLength(16);
    expect(results[0]).toContain('walked');
    expect(results[1]).toContain('found');
    expect(results[2]).toContain('listed');
    expect(results[2]).toMatch(/^PATH=/m);
    expect(results[3]).toMatch(/^\d+ /);
    expect(results[4]).toContain('cannot be read: the sandbox denies it');
    expect(results[6]).toMatch(/^\/proc\/self\/environ \(it leads to \/proc\/\d+\/environ\) cannot be read: commands in the sandbox have their own private \/tmp, \/run and \/proc/);
    // A path under /tmp is the sandbox's own /tmp, where the host's file is not.
    expect(results[9]).toBe(`${hostTmp}/notes.txt does not exist (nor does the folder ${hostTmp})`);
    expect(results[10]).toBe('linked\nExit code 0.');
    expect(results[11]).toMatch(/^proc-link\/environ \(it leads to \/proc\/\d+\/environ\) cannot be read: commands in the sandbox have their own private/);

    const kept = everythingKept(rig());
    for (const marker of [...markers, ...Object.values(variables), `${tag}-host-tmp`]) expect(kept).not.toContain(marker);
    // The model did see the rest of the home folder and the environment: the test looked.
    expect(kept).toContain('LANG=C.UTF-8');
  }, 240_000);

  it("lets the file tools and the shell share the sandbox's own /tmp, and keeps the host's out of it", async () => {
    hostTmp = mkdtempSync('/tmp/fence-host-tmp-');
    writeFileSync(join(hostTmp, 'notes.txt'), 'host-only-notes\n');
    const scratch = `fence-scratch-${randomBytes(4).toString('hex')}`;
    script(rig(), [
      block('shell', `echo from-the-shell > /tmp/${scratch}.txt`),
      block(`read /tmp/${scratch}.txt`, ''),
      block(`save /tmp/${scratch}-saved.txt`, 'from-the-save-tool'),
      block('shell', `cat /tmp/${scratch}-saved.txt; ls ${hostTmp} 2>&1`),
      block(`grep /tmp`, 'from-the'),
      'Shared.',
    ]);
    const result = await fenceIn(rig(), ['-n', 'use /tmp']);

    expect(result.exitCode).toBe(0);
    const [, read, save, cat, grep] = toolResults(rig()).map((message) => message.content);
    expect(read).toContain('from-the-shell');
    expect(save).not.toMatch(/cannot/);
    expect(cat).toContain('from-the-save-tool');
    expect(cat).toMatch(/No such file or directory/);
    expect(grep).toContain(`/tmp/${scratch}.txt:1: from-the-shell`);
    expect(grep).toContain(`/tmp/${scratch}-saved.txt:1: from-the-save-tool`);
    expect(grep).not.toContain('fence-sandbox-');
    // Nothing landed in the host's /tmp under those names.
    expect(existsSync(`/tmp/${scratch}.txt`)).toBe(false);
    expect(existsSync(`/tmp/${scratch}-saved.txt`)).toBe(false);
  }, 120_000);

  it('are probed by fence sandbox check, which finds every one it planted unreadable', async () => {
    plantStores(rig().home, 'probed');
    const result = await fenceIn(rig(), ['sandbox', 'check']);

    expect(result.stdout).toContain(`ok   the ${CREDENTIAL_STORES.length} credential stores found here cannot be read`);
  }, 60_000);

  it('lets git, node, npm test, python and pytest (and cargo, where installed) work from a warm home folder', async () => {
    const home = rig().home;
    plantStores(home, 'honest');
    writeFileSync(join(home, '.gitconfig'), '[user]\n\tname = Fence Tester\n\temail = tester@example.com\n');
    mkdirSync(join(home, '.cargo'), { recursive: true });
    writeFileSync(join(home, '.cargo', 'config.toml'), '[term]\nverbose = false\n');
    const workspace = rig().workspace;
    writeFileSync(join(workspace, 'package.json'), JSON.stringify({ name: 'tiny', version: '1.0.0', scripts: { test: 'node test.js' } }));
    writeFileSync(join(workspace, 'test.js'), "require('node:assert').strictEqual(1 + 1, 2); console.log('node test passed');\n");
    writeFileSync(join(workspace, 'test_tiny.py'), 'def test_sum():\n    assert 1 + 1 == 2\n');
    const cargo = spawnSync('cargo', ['--version']).status === 0;
    const commands = [
      'git add -A && git commit -qm "first" && git log --format=%an',
      "node -e 'console.log(6 * 7)'",
      'npm test 2>&1 | grep "node test passed"',
      "python3 -c 'print(6 * 7)'",
      'python3 -m pytest -q -p no:cacheprovider test_tiny.py 2>&1 | tail -1',
      'cat ~/.gitconfig ~/.cargo/config.toml',
    ];
    if (cargo) {
      mkdirSync(join(workspace, 'crate', 'src'), { recursive: true });
      writeFileSync(join(workspace, 'crate', 'Cargo.toml'), '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n');
      writeFileSync(join(workspace, 'crate', 'src', 'main.rs'), 'fn main() { println!("cargo built"); }\n');
      commands.push('cd crate && cargo run -q --offline; cd ..');
    }
    script(rig(), [...commands.map((command) => block('shell', command)), 'Worked.']);
    const rustup: Record<string, string> = cargo ? { RUSTUP_HOME: process.env.RUSTUP_HOME ?? join(process.env.HOME ?? '/root', '.rustup') } : {};
    const result = await fenceIn(rig(), ['-n', 'run the checks'], rustup);

    expect(result.exitCode).toBe(0);
    const results = toolResults(rig()).map((message) => message.content);
    expect(results[0]).toBe('Fence Tester\nExit code 0.');
    expect(results[1]).toBe('42\nExit code 0.');
    expect(results[2]).toBe('node test passed\nExit code 0.');
    expect(results[3]).toBe('42\nExit code 0.');
    expect(results[4]).toMatch(/^1 passed in [\d.]+s\nExit code 0\.$/);
    expect(results[5]).toContain('name = Fence Tester');
    expect(results[5]).toContain('verbose = false');
    if (cargo) expect(results[6]).toBe('cargo built\nExit code 0.');
  }, 240_000);
});
