/**
 * The seccomp filter of tool processes and package builds, compiled here to a raw classic-BPF
 * program (no libseccomp, no python3-seccomp). Loaded with `prctl(PR_SET_SECCOMP)` by the slot's
 * children (python/slot.py) and by build sandboxes (python/confine.py).
 *
 * Policy: allow by default; EPERM for kernel and namespace administration, mounts, tracing,
 * io_uring, BPF, keyrings, SysV / POSIX message IPC (the IPC namespace belongs to the slot, not
 * to the call); `clone` with any CLONE_NEW* flag is EPERM, `clone3` answers ENOSYS (its flags sit
 * in memory a filter cannot read, so the C library falls back to `clone`); other architectures
 * and the x32 ABI kill the process.
 */

/** Denied with EPERM. Names absent from an architecture's table do not exist there. */
export const DENIED_SYSCALLS = [
  'acct',
  'add_key',
  'adjtimex',
  'bpf',
  'chroot',
  'clock_adjtime',
  'clock_settime',
  'delete_module',
  'fanotify_init',
  'finit_module',
  'fsconfig',
  'fsmount',
  'fsopen',
  'fspick',
  'init_module',
  'io_uring_enter',
  'io_uring_register',
  'io_uring_setup',
  'ioperm',
  'iopl',
  'kcmp',
  'kexec_file_load',
  'kexec_load',
  'keyctl',
  'lookup_dcookie',
  'mount',
  'mount_setattr',
  'move_mount',
  'mq_open',
  'msgget',
  'name_to_handle_at',
  'open_by_handle_at',
  'open_tree',
  'perf_event_open',
  'pidfd_getfd',
  'pivot_root',
  'process_madvise',
  'process_vm_readv',
  'process_vm_writev',
  'ptrace',
  'quotactl',
  'quotactl_fd',
  'reboot',
  'request_key',
  'semget',
  'setdomainname',
  'sethostname',
  'setns',
  'settimeofday',
  'shmget',
  'swapoff',
  'swapon',
  'syslog',
  'umount2',
  'unshare',
  'userfaultfd',
  'vhangup',
] as const;

/** CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET. */
export const CLONE_NAMESPACE_FLAGS =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;

type Table = Readonly<Record<string, number>>;

/** System call numbers (from the kernel's syscall tables; arm64 uses the generic table). */
const X86_64: Table = {
  acct: 163,
  add_key: 248,
  adjtimex: 159,
  bpf: 321,
  chroot: 161,
  clock_adjtime: 305,
  clock_settime: 227,
  clone: 56,
  clone3: 435,
  delete_module: 176,
  fanotify_init: 300,
  finit_module: 313,
  fsconfig: 431,
  fsmount: 432,
  fsopen: 430,
  fspick: 433,
  init_module: 175,
  io_uring_enter: 426,
  io_uring_register: 427,
  io_uring_setup: 425,
  ioperm: 173,
  iopl: 172,
  kcmp: 312,
  kexec_file_load: 320,
  kexec_load: 246,
  keyctl: 250,
  lookup_dcookie: 212,
  mount: 165,
  mount_setattr: 442,
  move_mount: 429,
  mq_open: 240,
  msgget: 68,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  open_tree: 428,
  perf_event_open: 298,
  pidfd_getfd: 438,
  pivot_root: 155,
  process_madvise: 440,
  process_vm_readv: 310,
  process_vm_writev: 311,
  ptrace: 101,
  quotactl: 179,
  quotactl_fd: 443,
  reboot: 169,
  request_key: 249,
  semget: 64,
  setdomainname: 171,
  sethostname: 170,
  setns: 308,
  settimeofday: 164,
  shmget: 29,
  swapoff: 168,
  swapon: 167,
  syslog: 103,
  umount2: 166,
  unshare: 272,
  userfaultfd: 323,
  vhangup: 153,
};
const AARCH64: Table = {
  acct: 89,
  add_key: 217,
  adjtimex: 171,
  bpf: 280,
  chroot: 51,
  clock_adjtime: 266,
  clock_settime: 112,
  clone: 220,
  clone3: 435,
  delete_module: 106,
  fanotify_init: 262,
  finit_module: 273,
  fsconfig: 431,
  fsmount: 432,
  fsopen: 430,
  fspick: 433,
  init_module: 105,
  io_uring_enter: 426,
  io_uring_register: 427,
  io_uring_setup: 425,
  kcmp: 272,
  kexec_file_load: 294,
  kexec_load: 104,
  keyctl: 219,
  lookup_dcookie: 18,
  mount: 40,
  mount_setattr: 442,
  move_mount: 429,
  mq_open: 180,
  msgget: 186,
  name_to_handle_at: 264,
  open_by_handle_at: 265,
  open_tree: 428,
  perf_event_open: 241,
  pidfd_getfd: 438,
  pivot_root: 41,
  process_madvise: 440,
  process_vm_readv: 270,
  process_vm_writev: 271,
  ptrace: 117,
  quotactl: 60,
  quotactl_fd: 443,
  reboot: 142,
  request_key: 218,
  semget: 190,
  setdomainname: 162,
  sethostname: 161,
  setns: 268,
  settimeofday: 170,
  shmget: 194,
  swapoff: 225,
  swapon: 224,
  syslog: 116,
  umount2: 39,
  unshare: 97,
  userfaultfd: 282,
  vhangup: 58,
};

interface ArchSpec {
  /** AUDIT_ARCH_* of seccomp_data.arch. */
  audit: number;
  table: Table;
  /** x86_64: system call numbers with this bit are the x32 ABI. */
  x32Bit?: number;
}

export const SECCOMP_ARCHES: Readonly<Record<string, ArchSpec>> = {
  x64: { audit: 0xc000003e, table: X86_64, x32Bit: 0x40000000 },
  arm64: { audit: 0xc00000b7, table: AARCH64 },
};

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;
/** seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian: low word first). */
const OFF_NR = 0;
const OFF_ARCH = 4;
const OFF_ARG0_LO = 16;

interface Insn {
  code: number;
  k: number;
  /** Jump targets by label (resolved to relative offsets), for conditional jumps. */
  jt?: string;
  jf?: string;
  label?: string;
}

export class UnsupportedArchitectureError extends Error {}

/**
 * The filter for `arch` (Node's `process.arch`), as the bytes of a `struct sock_filter[]`
 * (8 bytes per instruction, host byte order = little-endian on both supported architectures).
 */
export function seccompProgram(arch: string = process.arch): Buffer {
  const spec = SECCOMP_ARCHES[arch];
  if (!spec)
    throw new UnsupportedArchitectureError(
      `no seccomp filter for the ${arch} architecture (supported: ${Object.keys(SECCOMP_ARCHES).join(', ')})`,
    );
  const nr = (name: string): number => {
    const n = spec.table[name];
    if (n === undefined) throw new Error(`no ${name} on ${arch}`);
    return n;
  };
  const p: Insn[] = [];
  p.push({ code: LD_W_ABS, k: OFF_ARCH });
  p.push({ code: JEQ_K, k: spec.audit, jt: 'next', jf: 'kill' });
  p.push({ code: LD_W_ABS, k: OFF_NR });
  if (spec.x32Bit !== undefined) {
    // nr >= 0x40000000 is the x32 ABI, except -1 (a tracer skipping a call): kill.
    p.push({ code: JGE_K, k: spec.x32Bit, jt: 'next', jf: 'native' });
    p.push({ code: JEQ_K, k: 0xffffffff, jt: 'native', jf: 'kill' });
  }
  p.push({ code: JEQ_K, k: nr('clone3'), jt: 'enosys', jf: 'next', label: 'native' });
  p.push({ code: JEQ_K, k: nr('clone'), jt: 'clone', jf: 'next' });
  for (const name of DENIED_SYSCALLS) {
    const n = spec.table[name];
    if (n !== undefined) p.push({ code: JEQ_K, k: n, jt: 'eperm', jf: 'next' });
  }
  p.push({ code: RET_K, k: SECCOMP_RET_ALLOW });
  p.push({ code: LD_W_ABS, k: OFF_ARG0_LO, label: 'clone' });
  p.push({ code: JSET_K, k: CLONE_NAMESPACE_FLAGS, jt: 'eperm', jf: 'next' });
  p.push({ code: RET_K, k: SECCOMP_RET_ALLOW });
  p.push({ code: RET_K, k: SECCOMP_RET_ERRNO | EPERM, label: 'eperm' });
  p.push({ code: RET_K, k: SECCOMP_RET_ERRNO | ENOSYS, label: 'enosys' });
  p.push({ code: RET_K, k: SECCOMP_RET_KILL_PROCESS, label: 'kill' });
  return assemble(p);
}

function assemble(p: Insn[]): Buffer {
  const at = new Map<string, number>();
  p.forEach((insn, i) => insn.label && at.set(insn.label, i));
  const out = Buffer.alloc(p.length * 8);
  p.forEach((insn, i) => {
    const rel = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const target = label === 'next' ? i + 1 : at.get(label);
      if (target === undefined) throw new Error(`unknown label ${label}`);
      const off = target - i - 1;
      if (off < 0 || off > 255) throw new Error(`jump to ${label} out of range (${off})`);
      return off;
    };
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(rel(insn.jt), i * 8 + 2);
    out.writeUInt8(rel(insn.jf), i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * Runs a program on one seccomp_data, as the kernel would (the subset of classic BPF the
 * compiler emits). For tests and for checking a shipped program.
 */
export function evaluateSeccomp(program: Buffer, data: { arch: number; nr: number; args?: number[] }): number {
  const words = new Map<number, number>([
    [OFF_NR, data.nr >>> 0],
    [OFF_ARCH, data.arch >>> 0],
  ]);
  (data.args ?? []).forEach((a, i) => words.set(OFF_ARG0_LO + i * 8, a >>> 0));
  let acc = 0;
  for (let pc = 0; pc < program.length / 8; ) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    switch (code) {
      case LD_W_ABS:
        acc = words.get(k) ?? 0;
        pc++;
        break;
      case JEQ_K:
        pc += 1 + (acc === k ? jt : jf);
        break;
      case JGE_K:
        pc += 1 + (acc >= k ? jt : jf);
        break;
      case JSET_K:
        pc += 1 + ((acc & k) !== 0 ? jt : jf);
        break;
      case RET_K:
        return k;
      default:
        throw new Error(`unexpected opcode ${code} at ${pc}`);
    }
  }
  throw new Error('the program fell off its end');
}
