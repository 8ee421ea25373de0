"""Writes the tool seccomp filter as a raw BPF program (stdout), with python3-seccomp (libseccomp).

Run once by the BwrapDriver on the host with /usr/bin/python3; each call's child loads the program
with prctl(PR_SET_SECCOMP) right before the tool runs. Default: allow. Denied with EPERM: kernel
and namespace administration, tracing other processes, new namespaces, io_uring, BPF, keyrings,
SysV/POSIX message IPC (the IPC namespace is shared by the calls of one slot). clone3 answers
ENOSYS so the C library falls back to clone, whose namespace flags are checked. Other
architectures (x32, i386 on x86_64) kill the process.
"""

import errno
import sys

import seccomp

DENY = [
    "acct", "add_key", "adjtimex", "bpf", "chroot", "clock_adjtime", "clock_settime", "delete_module",
    "fanotify_init", "finit_module", "fsconfig", "fsmount", "fsopen", "fspick", "init_module",
    "io_uring_enter", "io_uring_register", "io_uring_setup", "ioperm", "iopl", "kexec_file_load",
    "kexec_load", "keyctl", "lookup_dcookie", "mount", "mount_setattr", "move_mount", "mq_open",
    "msgget", "name_to_handle_at", "open_by_handle_at", "open_tree", "perf_event_open", "pivot_root",
    "process_vm_readv", "process_vm_writev", "ptrace", "quotactl", "reboot", "request_key", "semget",
    "setdomainname", "sethostname", "setns", "settimeofday", "shmget", "swapoff", "swapon", "syslog",
    "umount2", "unshare", "userfaultfd", "vhangup",
]
NAMESPACE_FLAGS = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000]


def build():
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENY:
        try:
            f.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except Exception:  # unknown on this kernel/arch: nothing to deny
            pass
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in NAMESPACE_FLAGS:
        f.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    return f


if __name__ == "__main__":
    build().export_bpf(sys.stdout)
