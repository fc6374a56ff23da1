import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, parse, relative, resolve, sep } from 'node:path';

/** Symlinks followed for one path before giving up, as the kernel's own limit (ELOOP). */
const MAX_SYMLINK_HOPS = 40;

/**
 * A path as policy sees it, so that rules cannot be dodged by writing the same file another
 * way. The path is read the way file tools read it (surrounding whitespace and one pair of
 * matching quotes dropped, `~` and `~/…` expanded to `home`, relative paths resolved against
 * `workspace`, `.` and `..` collapsed), then every symlink on it is resolved: the real path of
 * the longest existing prefix, with the rest appended, so a file that does not exist yet
 * resolves through its existing parent, and a dangling symlink through its target. The
 * workspace itself is resolved the same way (it may sit behind a symlink, as macOS's /tmp).
 *
 * The result is workspace-relative with `/` separators when inside the workspace (`.` for the
 * workspace itself), else absolute. Never throws; reads the file system, never writes it.
 */
export function workspaceResource(workspace: string, path: string, home: string = homedir()): string {
  const root = realPath(resolve(workspace));
  const target = realPath(lexicalPath(workspace, path, home));
  const inside = relative(root, target);
  if (inside === '') return '.';
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) return target;
  return sep === '/' ? inside : inside.split(sep).join('/');
}

function lexicalPath(workspace: string, path: string, home: string): string {
  const written = unquote(path.trim());
  if (written === '~') return resolve(home);
  if (written.startsWith('~/')) return join(resolve(home), written.slice(2));
  return resolve(workspace, written);
}

function unquote(text: string): string {
  const first = text[0];
  if (text.length >= 2 && (first === '"' || first === "'") && text.endsWith(first)) return text.slice(1, -1).trim();
  return text;
}

/**
 * Resolves every symlink on an absolute, normalised path. The existing part is walked one
 * segment at a time; at the first segment that does not exist the rest is appended as written.
 */
function realPath(absolute: string): string {
  const whole = tryRealpath(absolute);
  if (whole !== undefined) return whole;
  let pending = absolute;
  for (let hops = 0; hops <= MAX_SYMLINK_HOPS; hops++) {
    const step = walk(pending);
    if (step.kind === 'done') return step.path;
    pending = step.path;
  }
  return pending;
}

type WalkStep = { kind: 'done'; path: string } | { kind: 'symlink'; path: string };

/** Walks `absolute` from its root until a segment is missing (done) or is a symlink (restart at its target). */
function walk(absolute: string): WalkStep {
  const { root } = parse(absolute);
  const segments = absolute.slice(root.length).split(sep).filter(Boolean);
  let current = root;
  for (let i = 0; i < segments.length; i++) {
    const next = join(current, segments[i] ?? '');
    const rest = segments.slice(i + 1);
    const kind = entryKind(next);
    if (kind === 'missing') return { kind: 'done', path: join(tryRealpath(current) ?? current, ...segments.slice(i)) };
    if (kind === 'symlink') {
      const link = tryReadlink(next);
      if (link === undefined) return { kind: 'done', path: join(current, ...segments.slice(i)) };
      // The parent is already free of symlinks, so `..` in the target is resolved lexically, as the kernel does.
      return { kind: 'symlink', path: join(resolve(current, link), ...rest) };
    }
    current = next;
  }
  return { kind: 'done', path: current };
}

function entryKind(path: string): 'missing' | 'symlink' | 'other' {
  try {
    return lstatSync(path).isSymbolicLink() ? 'symlink' : 'other';
  } catch {
    return 'missing';
  }
}

function tryRealpath(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

function tryReadlink(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}
