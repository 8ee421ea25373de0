import {
  CLONE_NAMESPACE_FLAGS,
  evaluateSeccomp,
  SECCOMP_ARCHES,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  seccompProgram,
  UnsupportedArchitectureError,
} from './seccomp';

const EPERM = SECCOMP_RET_ERRNO | 1;
const ENOSYS = SECCOMP_RET_ERRNO | 38;

describe('seccompProgram', () => {
  // Numbers checked against the kernel's tables (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h).
  const cases = {
    x64: {
      audit: 0xc000003e,
      unshare: 272,
      mount: 165,
      ptrace: 101,
      setns: 308,
      clone: 56,
      clone3: 435,
      read: 0,
      write: 1,
      openat: 257,
      socket: 41,
      shmget: 29,
    },
    arm64: {
      audit: 0xc00000b7,
      unshare: 97,
      mount: 40,
      ptrace: 117,
      setns: 268,
      clone: 220,
      clone3: 435,
      read: 63,
      write: 64,
      openat: 56,
      socket: 198,
      shmget: 194,
    },
  };

  it.each(Object.entries(cases))(
    'on %s: allows ordinary calls, refuses namespace, mount and tracing calls',
    (arch, c) => {
      const sut = seccompProgram(arch);
      const run = (nr: number, args: number[] = []) => evaluateSeccomp(sut, { arch: c.audit, nr, args });
      for (const nr of [c.read, c.write, c.openat, c.socket]) expect(run(nr)).toBe(SECCOMP_RET_ALLOW);
      for (const nr of [c.unshare, c.mount, c.ptrace, c.setns, c.shmget]) expect(run(nr)).toBe(EPERM);
      expect(run(c.clone3)).toBe(ENOSYS);
      expect(run(c.clone, [0x01200011])).toBe(SECCOMP_RET_ALLOW); // fork(): CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
      expect(run(c.clone, [0x003d0f00])).toBe(SECCOMP_RET_ALLOW); // pthread_create
      for (let bit = 0; bit < 32; bit++) {
        const flag = 2 ** bit;
        if (CLONE_NAMESPACE_FLAGS & flag) expect(run(c.clone, [0x01200011 + flag])).toBe(EPERM);
      }
      // Another architecture's calls (i386 on x86_64, arm32 on arm64) kill the process.
      expect(evaluateSeccomp(sut, { arch: 0x40000003, nr: c.read })).toBe(SECCOMP_RET_KILL_PROCESS);
    },
  );

  it('kills the x32 ABI on x86_64, but lets a tracer skip a call (nr -1)', () => {
    const sut = seccompProgram('x64');
    expect(evaluateSeccomp(sut, { arch: 0xc000003e, nr: 0x40000000 | 1 })).toBe(SECCOMP_RET_KILL_PROCESS);
    expect(evaluateSeccomp(sut, { arch: 0xc000003e, nr: 0xffffffff })).toBe(SECCOMP_RET_ALLOW);
  });

  it('denies every listed call that exists on the architecture, and only those (plus clone3)', () => {
    for (const [arch, spec] of Object.entries(SECCOMP_ARCHES)) {
      const sut = seccompProgram(arch);
      const denied = new Set(
        Object.entries(spec.table)
          .filter(([n]) => n !== 'clone' && n !== 'clone3')
          .map(([, nr]) => nr),
      );
      for (let nr = 0; nr < 512; nr++) {
        const verdict = evaluateSeccomp(sut, { arch: spec.audit, nr });
        if (nr === spec.table.clone3) expect(verdict).toBe(ENOSYS);
        else expect([nr, verdict]).toEqual([nr, denied.has(nr) ? EPERM : SECCOMP_RET_ALLOW]);
      }
    }
  });

  it('refuses an architecture it has no table for, with a typed error', () => {
    expect(() => seccompProgram('riscv64')).toThrow(UnsupportedArchitectureError);
  });
});
