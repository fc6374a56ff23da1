import { realPathOf, type SandboxPolicy } from '../os-sandbox/policy';
import { isEmptyFolder } from '../os-sandbox/path-kinds';

/**
 * Which real paths are the sandbox's placeholders (see `SandboxPolicy.placeholders`): empty
 * folders fence made to hold the place of a protected path that does not exist. A file tool
 * shows none of them, as if nothing were there: the model did not make them and has nothing to
 * do with them. A placeholder counts only while it is still an empty folder. Without a sandbox
 * or placeholders, nothing is one.
 */
export function sandboxPlaceholders(policy: SandboxPolicy | undefined): (realPath: string) => boolean {
  const made = policy?.placeholders ?? [];
  if (made.length === 0) return () => false;
  const paths = new Set(made.flatMap((path) => [path, realPathOf(path)]));
  return (realPath) => paths.has(realPath) && isEmptyFolder(realPath);
}

