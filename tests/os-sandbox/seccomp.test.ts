import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bubblewrapSandbox, offPolicy, sandboxSupport } from '../../src/os-sandbox/os-sandbox';
import {
  EPERM,
  SECCOMP_ARCHITECTURES,
  TERMINAL_RULES,
  TIOCLINUX,
  TIOCSTI,
  encodeProgram,
  seccompArchitecture,
  seccompProgram,
  writeTerminalFilter,
  type BpfInstruction,
  type SeccompArchitecture,
} from '../../src/os-sandbox/seccomp';

/**
 * The terminal filter without a kernel: the table, and the rendered program run by a small
 * classic-BPF interpreter over made-up system calls, for each architecture.
 */

/** What the kernel would do with one system call: the 32-bit value the program returns. */
function runProgram(program: readonly BpfInstruction[], call: { arch: number; nr: number; args?: readonly bigint[] }): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(call.nr, 0);
  data.writeUInt32LE(call.arch, 4);
  (call.args ?? []).forEach((arg, index) => data.writeBigUInt64LE(BigInt.asUintN(64, arg), 16 + 8 * index));
  let accumulator = 0;
  for (let pc = 0; pc < program.length; pc++) {
    const { code, jt, jf, k } = program[pc] as BpfInstruction;
    if (code === 0x20) accumulator = data.readUInt32LE(k);
    else if (code === 0x15) pc += accumulator === k ? jt : jf;
    else if (code === 0x45) pc += (accumulator & k) !== 0 ? jt : jf;
    else if (code === 0x06) return k;
    else throw new Error(`instruction ${code.toString(16)} not expected`);
  }
  throw new Error('the program fell off its end');
}

const ALLOW = 0x7fff0000;
const KILL = 0x80000000;
const ERRNO_EPERM = 0x00050000 | EPERM;
const x64 = SECCOMP_ARCHITECTURES.find((arch) => arch.name === 'x64') as SeccompArchitecture;
const arm64 = SECCOMP_ARCHITECTURES.find((arch) => arch.name === 'arm64') as SeccompArchitecture;

describe('the terminal filter, rendered', () => {
  it('refuses TIOCSTI and TIOCLINUX with EPERM, as a table', () => {
    expect(TERMINAL_RULES.map((rule) => [rule.syscall, rule.arg, rule.equals, rule.action])).toEqual([
      ['ioctl', 1, 0x5412, { kind: 'errno', errno: 1 }],
      ['ioctl', 1, 0x541c, { kind: 'errno', errno: 1 }],
    ]);
  });

  for (const arch of [x64, arm64]) {
    describe(arch.name, () => {
      const program = seccompProgram(arch);
      const ioctl = arch.syscalls.ioctl;
      const call = (nr: number, args: bigint[] = []) => runProgram(program, { arch: arch.audit, nr, args });

      it('refuses the two requests on any descriptor, whatever the high 32 bits of the request', () => {
        for (const fd of [0n, 1n, 2n, 9n]) {
          expect(call(ioctl, [fd, BigInt(TIOCSTI), 0n])).toBe(ERRNO_EPERM);
          expect(call(ioctl, [fd, BigInt(TIOCLINUX), 0n])).toBe(ERRNO_EPERM);
        }
        expect(call(ioctl, [0n, 0x1_0000_5412n, 0n])).toBe(ERRNO_EPERM);
        expect(call(ioctl, [0n, 0xffff_ffff_0000_541cn, 0n])).toBe(ERRNO_EPERM);
      });

      it('allows every other ioctl, and the same numbers as other system calls or other arguments', () => {
        expect(call(ioctl, [0n, 0x5413n, 0n])).toBe(ALLOW); // TIOCGWINSZ: what terminals use
        expect(call(ioctl, [0n, 0x5401n, 0n])).toBe(ALLOW); // TCGETS
        expect(call(ioctl, [BigInt(TIOCSTI), 0n, 0n])).toBe(ALLOW);
        expect(call(ioctl, [0n, 0n, BigInt(TIOCSTI)])).toBe(ALLOW);
        for (const nr of [0, 1, 2, 59, 63, 64, 221, ioctl + 1]) expect(call(nr, [0n, BigInt(TIOCSTI)])).toBe(ALLOW);
      });

      it('kills a system call made through another ABI, whose numbers the rules do not name', () => {
        const i386 = 0x40000003; // 32-bit x86: ioctl is 54 there
        const arm = 0x40000028;
        for (const other of [i386, arm, arch === x64 ? arm64.audit : x64.audit]) {
          expect(runProgram(program, { arch: other, nr: 54, args: [0n, BigInt(TIOCSTI)] })).toBe(KILL);
          expect(runProgram(program, { arch: other, nr: 1 })).toBe(KILL);
        }
      });
    });
  }

  it('kills the x32 ABI on x86_64, which shares its architecture value', () => {
    const program = seccompProgram(x64);
    // x32's ioctl is 514 with the x32 bit, not 16.
    expect(runProgram(program, { arch: x64.audit, nr: 0x40000000 | 514, args: [0n, BigInt(TIOCSTI)] })).toBe(KILL);
    expect(runProgram(program, { arch: x64.audit, nr: 0x40000000 | 1 })).toBe(KILL);
  });

  it('encodes 8 little-endian bytes per instruction, as bwrap passes them to the kernel', () => {
    const bytes = encodeProgram([{ code: 0x15, jt: 1, jf: 2, k: 0xc000003e }]);
    expect([...bytes]).toEqual([0x15, 0x00, 0x01, 0x02, 0x3e, 0x00, 0x00, 0xc0]);
    expect(encodeProgram(seccompProgram(x64)).length).toBe(seccompProgram(x64).length * 8);
  });

  it('refuses an architecture it has no table for, with a sentence and no file', () => {
    expect(seccompArchitecture('ia32')).toEqual({ error: expect.stringMatching(/made for x64 and arm64 only, not ia32/) });
    const folder = mkdtempSync('/var/tmp/fence-seccomp-test-');
    try {
      expect(() => writeTerminalFilter(folder, 'riscv64')).toThrow(/not riscv64\. Run with --sandbox off/);
      const path = writeTerminalFilter(folder, 'x64');
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(readFileSync(path)).toEqual(encodeProgram(seccompProgram(x64)));
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

const bubblewrapMissing = process.platform !== 'linux' || spawnSync('bwrap', ['--version']).error !== undefined;

describe.skipIf(bubblewrapMissing)('the terminal filter, loaded by bwrap', () => {
  it('refuses TIOCSTI on a terminal, and leaves the terminal working otherwise', () => {
    const folder = mkdtempSync('/var/tmp/fence-seccomp-test-');
    try {
      const filter = writeTerminalFilter(folder);
      const probe = [
        'import fcntl, os, pty, struct, termios',
        'main, side = pty.openpty()',
        'for request in (termios.TIOCSTI, 0x541C):',
        '    try:',
        '        fcntl.ioctl(side, request, b"x")',
        '        print("allowed")',
        '    except OSError as error:',
        '        print("refused", error.errno)',
        'print("rows", struct.unpack("HHHH", fcntl.ioctl(side, termios.TIOCGWINSZ, bytes(8)))[0] >= 0)',
      ].join('\n');
      const bwrap = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--', 'python3', '-c', probe];
      const filtered = spawnSync('/bin/sh', ['-c', 'exec bwrap --seccomp 9 "$@" 9< "$0"', filter, ...bwrap], { encoding: 'utf8' });
      expect(filtered.stderr).toBe('');
      // TIOCLINUX on a pty is refused by the kernel too (not a console), but by the filter first: EPERM.
      expect(filtered.stdout).toBe(`refused ${EPERM}\nrefused ${EPERM}\nrows True\n`);
      // Without the filter, the same ioctl types into the pty.
      const open = spawnSync('bwrap', bwrap, { encoding: 'utf8' });
      expect(open.stdout.split('\n')[0]).toBe('allowed');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('is written once per sandbox, readable by its owner alone, and given to every process; only pipes get a new session', () => {
    const support = sandboxSupport();
    if (support.kind !== 'bubblewrap') throw new Error('bwrap is installed but cannot sandbox here');
    const folder = mkdtempSync('/var/tmp/fence-seccomp-test-');
    const sandbox = bubblewrapSandbox({ ...offPolicy(folder), mode: 'workspace-write', network: false }, support.path);
    try {
      const onPipes = sandbox.wrap('true', [], { cwd: folder, terminal: 'none' });
      const onPty = sandbox.wrap('true', [], { cwd: folder, terminal: 'pty' });
      // /bin/sh -c <script> sh <filter> bwrap …
      const filter = onPipes.args[3] as string;
      expect(onPty.args[3]).toBe(filter);
      expect(statSync(filter).mode & 0o777).toBe(0o600);
      expect(readFileSync(filter)).toEqual(encodeProgram(seccompProgram(seccompArchitecture() as SeccompArchitecture)));
      for (const line of [onPipes, onPty]) expect(line.args.join(' ')).toContain('--seccomp 9');
      expect(onPipes.args).toContain('--new-session');
      expect(onPty.args).not.toContain('--new-session');
      expect(spawnSync(onPipes.command, onPipes.args).status).toBe(0);
      expect(spawnSync(onPty.command, onPty.args).status).toBe(0);
    } finally {
      sandbox.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it.skipIf(process.arch !== 'x64')('ends a process that makes a 32-bit system call (int 0x80), which the rules cannot read', () => {
    const folder = mkdtempSync('/var/tmp/fence-seccomp-test-');
    try {
      const filter = writeTerminalFilter(folder);
      // mov eax, 20 (getpid in the i386 table); int 0x80; ret
      const probe = [
        'import ctypes, mmap',
        'page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)',
        'page.write(bytes([0xB8, 0x14, 0, 0, 0, 0xCD, 0x80, 0xC3]))',
        'call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))',
        'print("returned", call() > 0)',
      ].join('\n');
      const bwrap = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--', 'python3', '-c', probe];
      const open = spawnSync('bwrap', bwrap, { encoding: 'utf8' });
      // Where the kernel runs 32-bit calls at all: otherwise there is nothing to refuse.
      if (open.stdout !== 'returned True\n') return;
      const filtered = spawnSync('/bin/sh', ['-c', 'exec bwrap --seccomp 9 "$@" 9< "$0"', filter, ...bwrap], { encoding: 'utf8' });
      expect(filtered.stdout).toBe('');
      expect(filtered.status).toBe(128 + 31); // bwrap exits with 128 + the signal that ended its command: SIGSYS
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
