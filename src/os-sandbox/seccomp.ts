import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The seccomp filter of the Linux sandbox: the few system calls that no process inside may
 * make, kept as a table and rendered to the classic BPF program that bubblewrap loads with
 * `--seccomp FD` before it starts the command. Everything not in the table is allowed; the
 * filesystem, process and network rules are bubblewrap's namespaces, not this filter.
 *
 * Today the table keeps terminals out: `ioctl(TIOCSTI)` pushes bytes into a terminal's input
 * as if they were typed, and `ioctl(TIOCLINUX)` can do the same on a Linux console (its paste
 * of the selection). A process that reached the person's terminal could type a command there
 * that their shell runs after fence exits, outside the sandbox. The shell's own pty is a
 * terminal too, and is covered the same way.
 */

/** What the filter does with a system call. */
export type SeccompAction = { kind: 'allow' } | { kind: 'errno'; errno: number } | { kind: 'kill' };

/** One rule: a system call, by name, refused when an argument (its low 32 bits) has a value. */
export interface SeccompRule {
  syscall: 'ioctl';
  /** Which argument is compared (0-based). */
  arg: number;
  /** The value compared with the argument's low 32 bits. */
  equals: number;
  action: SeccompAction;
  /** Why, for people reading the table. */
  why: string;
}

/** `ioctl` request that pushes one byte into a terminal's input queue. */
export const TIOCSTI = 0x5412;
/** `ioctl` request of the Linux console, whose subcodes include pasting the selection as input. */
export const TIOCLINUX = 0x541c;
/** errno "Operation not permitted". */
export const EPERM = 1;

/** The rules every sandboxed process gets. */
export const TERMINAL_RULES: readonly SeccompRule[] = [
  { syscall: 'ioctl', arg: 1, equals: TIOCSTI, action: { kind: 'errno', errno: EPERM }, why: 'types into a terminal' },
  { syscall: 'ioctl', arg: 1, equals: TIOCLINUX, action: { kind: 'errno', errno: EPERM }, why: 'pastes into a Linux console' },
];

/** An architecture the filter can be made for, as the kernel names it in `seccomp_data.arch`. */
export interface SeccompArchitecture {
  /** Node's name (`process.arch`). */
  name: 'x64' | 'arm64';
  /** `AUDIT_ARCH_*`. */
  audit: number;
  /** System call numbers of this architecture. */
  syscalls: Record<SeccompRule['syscall'], number>;
  /**
   * Set on x86_64: system call numbers with this bit are the x32 ABI, which shares the
   * architecture value but numbers its calls apart (its `ioctl` is not 16), so it is killed.
   */
  x32Bit?: number;
}

/** The architectures fence makes the filter for; any other gets no sandbox rather than a filter with a gap. */
export const SECCOMP_ARCHITECTURES: readonly SeccompArchitecture[] = [
  { name: 'x64', audit: 0xc000003e, syscalls: { ioctl: 16 }, x32Bit: 0x40000000 },
  { name: 'arm64', audit: 0xc00000b7, syscalls: { ioctl: 29 } },
];

/** One classic BPF instruction (`struct sock_filter`). */
export interface BpfInstruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_KILL_PROCESS = 0x80000000;
/** Offsets in `struct seccomp_data`: `int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];`. */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARGS = 16;

/** The architecture of `name` (Node's `process.arch`), or an error saying the filter cannot be made for it. */
export function seccompArchitecture(name: string = process.arch): SeccompArchitecture | { error: string } {
  const found = SECCOMP_ARCHITECTURES.find((arch) => arch.name === name);
  if (found) return found;
  const known = SECCOMP_ARCHITECTURES.map((arch) => arch.name).join(' and ');
  return { error: `fence's sandbox filter that keeps commands from typing into your terminal is made for ${known} only, not ${name}` };
}

/**
 * The BPF program for `rules` on `arch`. It first checks the architecture: a system call made
 * through another ABI (32-bit code on a 64-bit kernel, x32 on x86_64) kills the process, since
 * its numbers are not the ones the rules name. Then each rule's call and argument; a match
 * takes the rule's action; anything else is allowed. Arguments are compared on their low 32
 * bits, as the kernel reads an `ioctl` request (an `unsigned int`): a request with high bits
 * set is the same request. Little-endian architectures only (both of the table).
 */
export function seccompProgram(arch: SeccompArchitecture, rules: readonly SeccompRule[] = TERMINAL_RULES): BpfInstruction[] {
  const lines: AsmLine[] = [{ code: BPF_LD_W_ABS, k: OFFSET_ARCH }, { code: BPF_JEQ_K, k: arch.audit, jf: 'kill' }];
  if (arch.x32Bit !== undefined) lines.push({ code: BPF_LD_W_ABS, k: OFFSET_NR }, { code: BPF_JSET_K, k: arch.x32Bit, jt: 'kill' });
  const actions = new Map<string, SeccompAction>([['kill', { kind: 'kill' }]]);
  const bySyscall = new Map<SeccompRule['syscall'], SeccompRule[]>();
  for (const rule of rules) bySyscall.set(rule.syscall, [...(bySyscall.get(rule.syscall) ?? []), rule]);
  let block = 0;
  for (const [syscall, syscallRules] of bySyscall) {
    const args = new Set(syscallRules.map((rule) => rule.arg));
    const [arg] = args;
    if (args.size !== 1 || arg === undefined || arg < 0 || arg > 5) throw new Error(`the seccomp rules for ${syscall} must compare one argument, 0 to 5`);
    const next = `after-${block++}`;
    lines.push({ code: BPF_LD_W_ABS, k: OFFSET_NR }, { code: BPF_JEQ_K, k: arch.syscalls[syscall], jf: next });
    // The low 32 bits of a 64-bit argument come first on a little-endian machine.
    lines.push({ code: BPF_LD_W_ABS, k: OFFSET_ARGS + 8 * arg });
    for (const rule of syscallRules) {
      const label = actionLabel(rule.action);
      actions.set(label, rule.action);
      lines.push({ code: BPF_JEQ_K, k: rule.equals, jt: label });
    }
    lines.push({ code: BPF_RET_K, k: returnValue({ kind: 'allow' }) }, { label: next });
  }
  lines.push({ code: BPF_RET_K, k: returnValue({ kind: 'allow' }) });
  for (const [label, action] of actions) lines.push({ label }, { code: BPF_RET_K, k: returnValue(action) });
  return assemble(lines);
}

/** An instruction with jumps to labels, or a label naming the instruction after it. */
type AsmLine = { code: number; k: number; jt?: string; jf?: string } | { label: string };

/** Resolves the labels into relative jumps (0–255 instructions forward, as BPF requires). */
function assemble(lines: readonly AsmLine[]): BpfInstruction[] {
  const at = new Map<string, number>();
  let count = 0;
  for (const line of lines) {
    if ('label' in line) at.set(line.label, count);
    else count++;
  }
  const program: BpfInstruction[] = [];
  for (const line of lines) {
    if ('label' in line) continue;
    const from = program.length + 1;
    const jump = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = at.get(label);
      if (target === undefined || target - from < 0 || target - from > 255) throw new Error(`seccomp: no reachable label ${label}`);
      return target - from;
    };
    program.push({ code: line.code, jt: jump(line.jt), jf: jump(line.jf), k: line.k >>> 0 });
  }
  return program;
}

function actionLabel(action: SeccompAction): string {
  return action.kind === 'errno' ? `errno-${action.errno}` : action.kind;
}

function returnValue(action: SeccompAction): number {
  if (action.kind === 'allow') return SECCOMP_RET_ALLOW;
  if (action.kind === 'kill') return SECCOMP_RET_KILL_PROCESS;
  return SECCOMP_RET_ERRNO | (action.errno & 0xffff);
}

/** The program as the kernel reads it: 8 bytes per instruction (`u16 code, u8 jt, u8 jf, u32 k`), little-endian. */
export function encodeProgram(program: readonly BpfInstruction[]): Buffer {
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach((instruction, index) => {
    bytes.writeUInt16LE(instruction.code, index * 8);
    bytes.writeUInt8(instruction.jt, index * 8 + 2);
    bytes.writeUInt8(instruction.jf, index * 8 + 3);
    bytes.writeUInt32LE(instruction.k >>> 0, index * 8 + 4);
  });
  return bytes;
}

/**
 * Writes the terminal filter for this machine's architecture into `folder` (readable by the
 * owner alone) and gives its path. Throws, saying why, on an architecture the table does not
 * know: a sandbox without the filter would let a command type into the person's terminal.
 */
export function writeTerminalFilter(folder: string, arch: string = process.arch): string {
  const found = seccompArchitecture(arch);
  if ('error' in found) throw new Error(`${found.error}. Run with --sandbox off to go on without the sandbox.`);
  const path = join(folder, 'terminal.bpf');
  writeFileSync(path, encodeProgram(seccompProgram(found)), { mode: 0o600 });
  return path;
}
