import { fstatSync } from 'node:fs';
import { isatty } from 'node:tty';

/**
 * Whether file descriptors `a` and `b` are one and the same terminal: both are terminals and
 * they are the same device. False for pipes and files, even one file both are redirected to
 * (`> out.txt 2>&1`), for two different terminals, and whenever either cannot be looked at.
 * Never throws.
 */
export function sameTerminal(a: number, b: number): boolean {
  try {
    if (!isatty(a) || !isatty(b)) return false;
    const first = fstatSync(a);
    const second = fstatSync(b);
    return first.isCharacterDevice() && second.isCharacterDevice() && first.rdev === second.rdev;
  } catch {
    return false;
  }
}
