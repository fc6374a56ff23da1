import { isAbsolute, join } from 'node:path';

/**
 * Where the tools of a developer's machine keep credentials, relative to the home folder: the
 * sandbox denies each of these paths (neither read nor written; a folder looks empty, a file
 * reads as empty), so that a model, or a repository's script, cannot copy them into the
 * conversation or send them away. Also the source of the list in `docs/sandbox.md` (a test
 * checks that every path is named there).
 *
 * A path is listed when what it holds gives access to something: a token, a password, a key, a
 * session cookie, or the history of commands typed with them. Configuration that only says how
 * a tool works (`~/.gitconfig`, `~/.cargo/config.toml`) stays readable. Some files mix both
 * (`~/.npmrc` names the registry as well as its token): they are hidden whole, and the tool
 * falls back to its defaults inside the sandbox.
 */

/** One credential store: its path under the home folder, and what it holds, for the docs. */
export interface CredentialStore {
  /** Relative to the home folder, with `/` separators: `.npmrc`, `.config/gh`. */
  path: string;
  /** The tool it belongs to and what it holds, in a few words. */
  what: string;
}

/** The credential stores denied by default, grouped by tool. */
export const CREDENTIAL_STORES: readonly CredentialStore[] = [
  // Keys and generic password files.
  { path: '.ssh', what: 'SSH keys' },
  { path: '.gnupg', what: 'GnuPG keys' },
  { path: '.netrc', what: 'passwords for hosts (curl, git, ftp, heroku)' },
  { path: '.pki', what: 'NSS certificates and keys' },
  { path: '.local/share/keyrings', what: 'GNOME keyring' },
  { path: '.local/share/kwalletd', what: 'KDE wallet' },
  { path: '.password-store', what: 'pass' },
  { path: '.config/op', what: '1Password CLI' },
  { path: '.op', what: '1Password CLI (older versions)' },
  { path: '.vault-token', what: 'HashiCorp Vault token' },
  // Package registries.
  { path: '.npmrc', what: 'npm registry tokens (and the registry: npm falls back to its default one)' },
  { path: '.yarnrc.yml', what: 'Yarn registry tokens' },
  { path: '.pypirc', what: 'PyPI upload tokens' },
  { path: '.config/pip/pip.conf', what: 'pip index URLs, which may carry a password' },
  { path: '.pip/pip.conf', what: 'pip index URLs (older place)' },
  { path: '.cargo/credentials', what: 'crates.io token' },
  { path: '.cargo/credentials.toml', what: 'crates.io token' },
  { path: '.gem/credentials', what: 'RubyGems API key' },
  { path: '.bundle/config', what: 'Bundler credentials for gem servers' },
  { path: '.m2/settings.xml', what: 'Maven server passwords (and mirrors: Maven falls back to its defaults)' },
  { path: '.m2/settings-security.xml', what: 'Maven master password' },
  { path: '.gradle/gradle.properties', what: 'Gradle repository and signing credentials' },
  { path: '.config/composer/auth.json', what: 'Composer tokens' },
  { path: '.composer/auth.json', what: 'Composer tokens (older place)' },
  { path: '.nuget/NuGet/NuGet.Config', what: 'NuGet feed credentials' },
  // Code hosts and git.
  { path: '.git-credentials', what: 'git credential store' },
  { path: '.config/git/credentials', what: 'git credential store' },
  { path: '.config/gh', what: 'GitHub CLI token' },
  { path: '.config/hub', what: 'hub token' },
  { path: '.config/glab-cli', what: 'GitLab CLI token' },
  // Containers and clusters.
  { path: '.docker', what: "Docker credentials, and Docker Desktop's socket" },
  { path: '.dockercfg', what: 'Docker credentials (older place)' },
  { path: '.config/containers/auth.json', what: 'Podman registry credentials' },
  { path: '.kube', what: 'Kubernetes cluster credentials' },
  { path: '.config/helm', what: 'Helm repository passwords' },
  // Clouds and hosting.
  { path: '.aws', what: 'AWS keys' },
  { path: '.config/gcloud', what: 'Google Cloud credentials' },
  { path: '.azure', what: 'Azure CLI tokens' },
  { path: '.oci', what: 'Oracle Cloud keys' },
  { path: '.config/doctl', what: 'DigitalOcean token' },
  { path: '.terraform.d/credentials.tfrc.json', what: 'Terraform Cloud tokens' },
  { path: '.terraformrc', what: 'Terraform credentials blocks' },
  { path: '.config/heroku', what: 'Heroku CLI' },
  { path: '.fly', what: 'Fly.io token' },
  { path: '.config/netlify', what: 'Netlify token' },
  { path: '.local/share/com.vercel.cli', what: 'Vercel token' },
  { path: '.vercel', what: 'Vercel token (older place)' },
  { path: '.supabase', what: 'Supabase token' },
  { path: '.config/rclone', what: 'rclone remotes and their passwords' },
  { path: '.s3cfg', what: 's3cmd keys' },
  { path: '.boto', what: 'boto and gsutil keys' },
  { path: '.huggingface', what: 'Hugging Face token (older place)' },
  { path: '.cache/huggingface/token', what: 'Hugging Face token' },
  { path: '.config/huggingface', what: 'Hugging Face token' },
  // Databases.
  { path: '.pgpass', what: 'PostgreSQL passwords' },
  { path: '.my.cnf', what: 'MySQL passwords' },
  { path: '.mylogin.cnf', what: 'MySQL login paths' },
  // A home folder's .env, read by some tools (aider among them).
  { path: '.env', what: 'environment files with keys' },
  // Other coding agents: their keys and their logs of other work.
  { path: '.codex', what: 'Codex CLI key and sessions' },
  { path: '.claude', what: 'Claude Code credentials and sessions' },
  { path: '.claude.json', what: 'Claude Code account' },
  { path: '.gemini', what: 'Gemini CLI credentials' },
  { path: '.config/gptme', what: 'gptme keys' },
  { path: '.aider', what: 'aider' },
  { path: '.aider.conf.yml', what: 'aider keys' },
  { path: '.continue', what: 'Continue keys' },
  { path: '.cursor', what: 'Cursor' },
  { path: '.config/github-copilot', what: 'GitHub Copilot token' },
  { path: '.local/share/opencode', what: 'opencode keys and sessions' },
  { path: '.config/opencode', what: 'opencode' },
  // Browser profiles: cookies and saved passwords.
  { path: '.mozilla', what: 'Firefox profiles' },
  { path: 'snap/firefox', what: 'Firefox profiles (snap)' },
  { path: '.config/google-chrome', what: 'Chrome profiles' },
  { path: '.config/chromium', what: 'Chromium profiles' },
  { path: 'snap/chromium', what: 'Chromium profiles (snap)' },
  { path: '.config/BraveSoftware', what: 'Brave profiles' },
  { path: '.config/microsoft-edge', what: 'Edge profiles' },
  { path: '.config/vivaldi', what: 'Vivaldi profiles' },
  // Shell and REPL histories: commands typed with passwords and tokens in them.
  { path: '.bash_history', what: 'bash history' },
  { path: '.zsh_history', what: 'zsh history' },
  { path: '.histfile', what: 'zsh history' },
  { path: '.local/share/fish/fish_history', what: 'fish history' },
  { path: '.python_history', what: 'Python history' },
  { path: '.node_repl_history', what: 'Node history' },
  { path: '.irb_history', what: 'Ruby history' },
  { path: '.psql_history', what: 'psql history' },
  { path: '.mysql_history', what: 'MySQL history' },
  { path: '.sqlite_history', what: 'SQLite history' },
  { path: '.rediscli_history', what: 'redis-cli history' },
  { path: '.lesshst', what: 'less search history' },
];

/**
 * The absolute paths of the credential stores for a home folder `home`: each path under it,
 * and, where `env` moves a tool's folders elsewhere (`XDG_CONFIG_HOME`, `XDG_DATA_HOME`,
 * `XDG_CACHE_HOME`, when absolute), the same path there too, since the tools that follow those
 * variables keep their credentials there (`$XDG_CONFIG_HOME/gh/hosts.yml`).
 */
export function credentialStorePaths(home: string, env: NodeJS.ProcessEnv): string[] {
  const moved: [string, string | undefined][] = [
    ['.config/', env.XDG_CONFIG_HOME],
    ['.local/share/', env.XDG_DATA_HOME],
    ['.cache/', env.XDG_CACHE_HOME],
  ];
  const paths = CREDENTIAL_STORES.flatMap(({ path }) => [
    join(home, path),
    ...moved.filter(([prefix, folder]) => folder !== undefined && isAbsolute(folder) && path.startsWith(prefix)).map(([prefix, folder]) => join(folder as string, path.slice(prefix.length))),
  ]);
  return [...new Set(paths)];
}
