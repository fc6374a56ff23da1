import { describe, expect, it } from 'vitest';
import { DEFAULT_MODELS } from '../../src/llm/models';
import { childEnvironment, holdsPasswordUrl, isWithheld, looksLikeCredential, PROVIDER_KEY_VARIABLES } from '../../src/os-sandbox/child-env';
import { kernelEnvironment } from '../../src/processes/python-launch';
import { shellEnvironment } from '../../src/processes/shell-setup';

const fenceEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/someone',
  LANG: 'C.UTF-8',
  FENCE_HOME: '/home/someone/.fence',
  FENCE_PYTHON: '/usr/bin/python3',
  OPENAI_API_KEY: 'sk-openai',
  ANTHROPIC_API_KEY: 'sk-ant',
  OPENROUTER_API_KEY: 'sk-or',
  OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
  GITHUB_TOKEN: 'ghp_x',
  AWS_SECRET_ACCESS_KEY: 'aws',
  NPM_AUTH_TOKEN: 'npm',
  DB_PASSWORD: 'db',
  MY_SECRET: 'mine',
  SSH_AUTH_SOCK: '/tmp/agent.sock',
  GIT_AUTHOR_NAME: 'Someone',
  KEYTIMEOUT: '1',
  LESSKEY: '/home/someone/.less',
  TOKENIZERS_PARALLELISM: 'false',
};

describe('the environment of the shell and the kernel', () => {
  it('withholds provider keys and names with a credential word as a word part, in any case', () => {
    for (const name of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY', 'GITHUB_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'NPM_AUTH_TOKEN', 'DB_PASSWORD', 'MY_SECRET']) {
      expect(isWithheld(name), name).toBe(true);
    }
    for (const name of ['github_token', 'PGPASSWORD', 'MYSQL_PASSWD', 'GOOGLE_APPLICATION_CREDENTIALS', 'HF_API_KEYS', 'OAUTH', 'STRIPE_APIKEY', 'SSH_AUTH_SOCK', 'X-Auth-Token']) {
      expect(looksLikeCredential(name), name).toBe(true);
    }
    for (const name of ['PATH', 'HOME', 'LANG', 'PWD', 'GIT_AUTHOR_NAME', 'KEYTIMEOUT', 'TOKENIZERS_PARALLELISM', 'PYTHON_KEYRING_BACKEND', 'LESSKEY', 'FENCE_HOME', 'OPENAI_BASE_URL']) {
      expect(isWithheld(name), name).toBe(false);
    }
  });

  it('withholds passwords, passphrases, personal access tokens, DSNs, cookies, webhooks and connection strings', () => {
    for (const name of [
      'SSHPASS',
      'MYSQL_PWD',
      'DB_PWD',
      'DBPWD',
      'GITHUB_PAT',
      'GH_PATS',
      'SMTP_PASS',
      'GPG_PASSPHRASE',
      'SENTRY_DSN',
      'SESSION_COOKIE',
      'SLACK_WEBHOOK_URL',
      'AZURE_STORAGE_CONNECTION_STRING',
      'ConnectionStrings__Default',
      'my-secret-pass',
      'GIT_ASKPASS',
      'SSH_ASKPASS',
    ]) {
      expect(isWithheld(name), name).toBe(true);
    }
  });

  it('keeps their look-alikes: paths, the working folder, a word that only starts a part', () => {
    for (const name of [
      'PATH',
      'PATHEXT',
      'NODE_PATH',
      'CLASSPATH',
      'MANPATH',
      'XDG_RUNTIME_DIR',
      'XDG_DATA_DIRS',
      'PWD',
      'OLDPWD',
      'PGPASSFILE',
      'COMPASS_HOME',
      'PROXY_BYPASS',
      'PASSTHROUGH',
      'COMPAT_LEVEL',
      'DSNAME',
      'COOKIEJAR_PATH',
    ]) {
      expect(isWithheld(name), name).toBe(false);
    }
  });

  it('withholds a variable whose value is a URL with a password, whatever its name; a URL with a user alone stays', () => {
    const env = childEnvironment([], {
      PATH: '/usr/bin',
      DATABASE_URL: 'postgres://u:pw-db-9@h/db',
      REDIS_URL: 'redis://:pw-redis@localhost:6379/0',
      JDBC: 'jdbc:mysql://root:pw@db:3306/app',
      HTTPS_PROXY: 'http://me:pw@proxy:8080',
      GIT_REMOTE: 'ssh://git@github.com/org/repo.git',
      HOMEPAGE: 'https://example.com:8443/a@b',
      PASSED_URL: 'postgres://u:pw@h/db',
    });
    expect(holdsPasswordUrl('postgres://u:pw@h/db')).toBe(true);
    expect(Object.keys(env).sort()).toEqual(['GIT_REMOTE', 'HOMEPAGE', 'PATH']);
    expect(childEnvironment(['PASSED_URL'], { PASSED_URL: 'postgres://u:pw@h/db' })).toEqual({ PASSED_URL: 'postgres://u:pw@h/db' });
  });

  it('withholds every key resolveModel reads', () => {
    for (const { key } of DEFAULT_MODELS) expect(PROVIDER_KEY_VARIABLES).toContain(key);
  });

  it('keeps the rest, and what pass_env names', () => {
    const env = childEnvironment(['GITHUB_TOKEN', 'NOT_SET_TOKEN'], fenceEnv);
    expect(Object.keys(env).sort()).toEqual(
      ['PATH', 'HOME', 'LANG', 'FENCE_HOME', 'FENCE_PYTHON', 'OPENAI_BASE_URL', 'GITHUB_TOKEN', 'GIT_AUTHOR_NAME', 'KEYTIMEOUT', 'LESSKEY', 'TOKENIZERS_PARALLELISM'].sort(),
    );
    expect(env.GITHUB_TOKEN).toBe('ghp_x');
  });

  it('is what shellEnvironment and kernelEnvironment start from', () => {
    const shell = shellEnvironment({ EXTRA: '1' }, ['DB_PASSWORD'], fenceEnv);
    expect(shell.OPENAI_API_KEY).toBeUndefined();
    expect(shell.GITHUB_TOKEN).toBeUndefined();
    expect(shell.DB_PASSWORD).toBe('db');
    expect(shell).toMatchObject({ PATH: '/usr/bin:/bin', HOME: '/home/someone', EXTRA: '1', TERM: 'dumb' });
    expect(shell.FENCE_SHELL_SESSION).toMatch(/^[0-9a-f]{32}$/);
    const kernel = kernelEnvironment(undefined, '/tmp/k', [], fenceEnv);
    expect(kernel.ANTHROPIC_API_KEY).toBeUndefined();
    expect(kernel.MY_SECRET).toBeUndefined();
    expect(kernel).toMatchObject({ PATH: '/usr/bin:/bin', FENCE_PYTHON: '/usr/bin/python3', IPYTHONDIR: '/tmp/k/ipython' });
  });
});
