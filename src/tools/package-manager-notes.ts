import { OFFLINE_SETTINGS } from '../os-sandbox/package-caches';
import type { SandboxPolicy } from '../os-sandbox/policy';

/**
 * How each package manager says it could not fetch what it needed because it runs offline
 * (the settings of `OFFLINE_SETTINGS`, set when the sandbox has no network), or, without its
 * offline setting, that its registry could not be reached. Taken from the tools' own output.
 */
const OFFLINE_FAILURES: readonly { tool: string; pattern: RegExp }[] = [
  // npm error code ENOTCACHED ... cache mode is 'only-if-cached'; without the offline setting, getaddrinfo EAI_AGAIN.
  { tool: 'npm', pattern: /\bENOTCACHED\b|npm (?:ERR!|error) code EAI_AGAIN|request to https:\/\/registry\.npmjs\.org\/\S* failed, reason: getaddrinfo/ },
  { tool: 'pnpm', pattern: /ERR_PNPM_NO_OFFLINE_(?:META|TARBALL)/ },
  // Yarn 2 and later with enableNetwork off (YN0080).
  { tool: 'yarn', pattern: /has been blocked because of your configuration settings/ },
  // uv's hint under its resolver's error.
  { tool: 'uv', pattern: /Packages were unavailable because the network was disabled/ },
  // pip with no index: "ERROR: No matching distribution found for requests".
  { tool: 'pip', pattern: /No matching distribution found for / },
  // "As a reminder, you're using offline mode (--offline)", "attempting to make an HTTP request, but --offline was specified".
  { tool: 'cargo', pattern: /you're using offline mode \(--offline\)|--offline was specified|you are in the offline mode \(--offline\)/ },
  { tool: 'go', pattern: /module lookup disabled by GOPROXY=off/ },
  // "Cannot access central (https://repo.maven.apache.org/maven2) in offline mode and the artifact ... has not been downloaded from it before."
  { tool: 'maven', pattern: /Cannot access \S+ \(\S+\) in offline mode/ },
];

/**
 * A write refused by the sandbox as package managers word it where it is not the errno's text
 * (bash's `Read-only file system`, Node's `EROFS`, which the sandbox notes know already):
 * Bun's `ReadOnlyFileSystem` (a Zig error name) and Maven's `Could not create local repository`.
 */
export const PACKAGE_MANAGER_REFUSED_WRITE = /\bReadOnlyFileSystem\b|Could not create local repository at /;

/**
 * A note for a package manager that failed for want of the network in a sandbox that has
 * none: which tool, that fence set it to work offline, and the setting the user would change
 * to let it reach its registry. Undefined for other output, and when the sandbox has a
 * network (the notes on the proxy's hosts say what there is to say).
 */
export function packageManagerNote(output: string, sandbox: SandboxPolicy | undefined): string | undefined {
  if (!sandbox || sandbox.mode === 'off' || sandbox.network !== false) return undefined;
  const failure = OFFLINE_FAILURES.find((candidate) => candidate.pattern.test(output));
  if (failure === undefined) return undefined;
  const setting = OFFLINE_SETTINGS.find((candidate) => candidate.tool === failure.tool);
  if (setting === undefined) return undefined;
  const hosts = setting.hosts.map((host) => JSON.stringify(host)).join(', ');
  return (
    `Note: the sandbox has no network in this session, so fence runs ${failure.tool} offline (${setting.variable}=${setting.value}): ` +
    `it can use only what is already downloaded, and this was not. Work with what is installed, or ask the user to let ${failure.tool} reach its registry: ` +
    `[sandbox] network = [${hosts}] in their config.toml (or the registry the project uses).`
  );
}
