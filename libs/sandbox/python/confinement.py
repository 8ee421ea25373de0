"""The confinement every process of tool or build code runs under, in one place: no
capabilities (effective, permitted, inheritable, ambient), no new privileges, and the tool seccomp
filter. Used by slot.py (each call's child) and confine.py (one-shot sandboxes: package builds,
stdio MCP servers).
"""

import ctypes
import os

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAP_AMBIENT = 38, 22, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522

libc = ctypes.CDLL(None, use_errno=True)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def load_filter(path):
    """The BPF program at `path`, ready for confine(): (buffer to keep alive, sock_fprog)."""
    with open(path, "rb") as f:
        program = f.read()
    if not program or len(program) % 8:
        raise ValueError("%s is not a BPF program" % path)
    buf = ctypes.create_string_buffer(program, len(program))
    return buf, _SockFprog(len(program) // 8, ctypes.addressof(buf))


def no_capabilities():
    """capset() arguments that clear the effective, permitted and inheritable sets (made once, used per process)."""
    return ctypes.byref(_CapHeader(LINUX_CAPABILITY_VERSION_3, 0)), (_CapData * 2)()


def confine(fprog, caps):
    """Drops every capability, sets no-new-privileges and loads the filter: irreversible."""
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    check(libc.capset(caps[0], caps[1]), "capset")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
