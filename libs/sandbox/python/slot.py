"""Toolplane warm slot: pid 1 of one bubblewrap sandbox, forking one fresh child per call.

Started by the BwrapDriver as `python3 -I -B -u /opt/toolplane/slot.py` inside
`bwrap --unshare-all --as-pid-1 --cap-add CAP_SYS_ADMIN ...`, as an unprivileged host uid.

File descriptors (see libs/sandbox/README.md, "Warm slots"):
  0  control in   <- per call: [u32 len][job JSON: nonce, env, limits, source, function, args, agent_id]
                     The slot never reads it: the child, forked ahead of the call, reads its job
                     itself, so call data (source, args, env with secrets) never enters the
                     slot's memory and cannot be inherited by a later call's child.
  1  tool stdout, 2 tool stderr, 3 result channel: inherited by the child as they are.
  4  control out  -> [u32 len][JSON]: {"ready": ...} once, then per call {"child": "ready"} once
                     the next child is confined, warmed and waiting for its job (the runner
                     prefers such slots), and {"exit", "signal", "sentinel"}
                     after each call, once every process of the call is dead; right after it the
                     sentinel is written last on fds 1, 2 and 3 (the runner splits the streams on
                     it). The control frame goes first: a runner that has read any sentinel byte
                     has the control frame too (see Slot in slot.ts).

Start-up (environment set by the runner through bwrap):
  TOOLPLANE_CGROUP_FDS  fds of cgroup.procs files (one per hierarchy) the runner opened for this
                        slot: the slot writes "0" (itself) to each, so the slot and every process of
                        its calls live in the slot's cgroup (limits per call, see cgroups.ts).
  TOOLPLANE_NET         network-enabled slots: the egress routes (JSON). The slot makes its own
                        network namespace, says {"netns": true} on fd 4, waits for one byte on
                        TOOLPLANE_NET_GO_FD (the runner has attached slirp4netns to it), then
                        installs the routes (netconf.py) while it still holds CAP_NET_ADMIN.
  Every other inherited fd above 4 is closed.

Per call: an empty tmpfs on /tmp (size-capped, the work dir, HOME and TMPDIR) and on /dev/shm
(size-capped; /dev itself is read-only): a new one, or the previous call's when that call left it
exactly as mounted (see _reusable); then a fork made before the call arrives. The child drops every capability, sets no-new-privileges, loads the
seccomp filter and warms its copy-on-write pages with a dummy tool, all while idle; then it reads
its job, applies the call's rlimits and env and runs the tool through harness.run_job. When the child exits, kill(-1, SIGKILL) ends
every other process of the call (pid 1 is never hit by it, nor by signals from inside the
namespace it has no handler for), they are reaped, and the slot proves it is clean (_dirt: no
process, no socket — TIME_WAIT included — and no mount of the call left). The result is reported
with the proof; a slot that is not clean says why ("dirty") and exits, it is never reused. Then
the tmpfs mounts are detached (unless reusable) before the next child is forked.
"""

import _signal
import fcntl
import gc
import json
import os
import resource
import signal
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import confinement  # noqa: E402
import harness  # noqa: E402
import linecache  # noqa: E402,F401  - the harness registers each tool's source there
import traceback  # noqa: E402,F401  - exceptions of tools print their traceback
import warnings  # noqa: E402,F401  - harness.run_job uses it: imported once here, not in every child

del sys.path[0]

CTRL_IN, OUT, ERR, RESULT, CTRL_OUT = 0, 1, 2, 3, 4
NODE_JOB = 5  # the job of a Node tool (a memfd), read by node_harness.cjs
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
MNT_DETACH = 2
FS_IOC_GETFLAGS = 0x80086601
PR_SET_DUMPABLE = 4
EXIT_SETUP_FAILED = 70
EXIT_NO_MORE_JOBS = 75  # control in closed: the slot exits
_SIGINT, _SIG_DFL = int(signal.SIGINT), int(signal.SIG_DFL)
_DEFAULT_SIGNALS = tuple(int(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT))

libc = confinement.libc
_check = confinement.check


def _read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _read_frame(fd):
    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def _write_frame(fd, obj):
    data = json.dumps(obj, separators=(",", ":")).encode()
    harness._write_all(fd, struct.pack(">I", len(data)) + data)


def _set_limits(limits):
    def cap(name, value):
        if value is not None:
            resource.setrlimit(name, (int(value), int(value)))

    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_AS, limits.get("memory_bytes"))
    cpu = limits.get("cpu_seconds")
    if cpu is not None:
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu) + 1))  # SIGXCPU, then SIGKILL
    # Counted per uid inside this sandbox's user namespace: the slot itself is one of them.
    procs = limits.get("processes")
    cap(resource.RLIMIT_NPROC, None if procs is None else int(procs) + 1)
    cap(resource.RLIMIT_NOFILE, limits.get("open_files"))
    cap(resource.RLIMIT_FSIZE, limits.get("file_bytes"))
    # work_bytes is the size of the slot's tmpfs, chosen when the slot starts (TOOLPLANE_WORK_BYTES).


def _warm():
    # Take the copy-on-write faults of the call path before the call arrives: run a dummy tool
    # through the harness code (frame built, not written).
    value = harness._run({"function": "warm", "source": "def warm(x):\n    return {'x': [x, 1.5, None]}\n", "args": {"x": "y"}})
    json.dumps({"v": 1, "nonce": "", "status": "success", "value": harness._jsonable(value, frozenset())}, separators=(",", ":"))
    json.loads('{"a": [1, "b", null], "c": {"d": 1.5}}')
    # setenv() of the call's env: the first one grows the C environ and the malloc arena.
    os.environ.update({"TOOLPLANE_WARM_%d" % i: "x" * 32 for i in range(8)})
    os.environ.clear()


def _child(fprog, caps, ready_w):
    """Runs in the forked child: confine itself, wait for the job, run it. Never returns."""
    try:
        # _signal with plain ints: signal.signal() wraps values in enums, whose machinery touches
        # (and copies on write) many pages of the slot's memory.
        _signal.signal(_SIGINT, _signal.default_int_handler)
        for sig in _DEFAULT_SIGNALS:
            _signal.signal(sig, _SIG_DFL)
        os.close(CTRL_OUT)
        os.set_inheritable(RESULT, False)  # subprocesses of the tool never get the result channel
        os.chdir("/tmp")
        os.umask(0o077)
        _raise_oom_score()
        confinement.confine(fprog, caps)
        _warm()
        os.write(ready_w, b".")  # tell the slot this child waits for its job; closed before the job is read
        os.close(ready_w)
    except BaseException as exc:  # noqa: B036
        _setup_failed(exc)
    try:
        job = _read_frame(CTRL_IN)
        if job is None:
            os._exit(EXIT_NO_MORE_JOBS)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, CTRL_IN)
        os.close(devnull)
        nonce = job.pop("nonce")
        os.environ.update(job.pop("env"))
        _set_limits(job.pop("limits"))
        if job.get("runtime") == "node":
            job["nonce"] = nonce
            _exec_node(job)
    except BaseException as exc:  # noqa: B036
        _setup_failed(exc)
    harness.run_job(job, nonce)  # exits


def _exec_node(job):
    """TypeScript/JavaScript tools: exec Node (still confined: seccomp, no_new_privs and rlimits
    survive execve, and a non-root uid regains no capability) with the job in a memfd on fd 5 and
    the result channel on fd 3. Never returns."""
    node = job.pop("node")
    data = json.dumps(job, separators=(",", ":")).encode()
    fd = os.memfd_create("toolplane-job", 0)
    harness._write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    if fd != NODE_JOB:
        os.dup2(fd, NODE_JOB)
        os.close(fd)
    os.set_inheritable(NODE_JOB, True)
    os.set_inheritable(RESULT, True)
    argv = [node["path"], "--max-old-space-size=%d" % int(node["heap_mb"]), "--disable-warning=ExperimentalWarning"]
    argv.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_harness.cjs"))
    os.execve(node["path"], argv, dict(os.environ))


def _raise_oom_score():
    # When the call's cgroup runs out of memory, the kernel kills the call's processes, not the
    # slot: raising one's own score needs no privilege, and children inherit it.
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, b"1000")
        finally:
            os.close(fd)
    except OSError:
        pass


def _setup_failed(exc):
    try:
        os.write(ERR, ("toolplane sandbox setup failed: %s\n" % exc).encode())
    finally:
        os._exit(EXIT_SETUP_FAILED)


WORK_MOUNTS = ("/tmp", "/dev/shm")


def _fresh_mount(path, size_bytes):
    """Mounts a new tmpfs on `path`; returns what _reusable() compares it with after a call."""
    libc.umount2(path.encode(), MNT_DETACH)  # the previous call's tmpfs (EINVAL the first time)
    opts = ("size=%d,mode=0700" % max(int(size_bytes), 4096)).encode()
    _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts), "mount " + path)
    return _mount_state(path)


def _mount_state(path):
    """Everything a call could leave on the mount's root once its entries are gone: mode, owner,
    link count, extended attributes (ACLs included) and inode flags; plus its times, to restore them."""
    st = os.lstat(path)
    xattrs = tuple(sorted((n, os.getxattr(path, n, follow_symlinks=False)) for n in os.listxattr(path, follow_symlinks=False)))
    flags = bytearray(4)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags)
    except OSError:
        pass  # no inode flags on this kernel's tmpfs: none can be set either
    finally:
        os.close(fd)
    return (st.st_mode, st.st_uid, st.st_gid, st.st_nlink, xattrs, bytes(flags)), (st.st_atime_ns, st.st_mtime_ns)


def _reusable(path, mounted):
    """True when the call left the mount as it was mounted: no entry, and nothing else
    _mount_state() sees changed. Its times are then put back and the tmpfs serves the next call
    too (a new mount per call costs deferred kernel work that competes with the calls). Anything
    else, or any error, and the caller mounts a new one."""
    state, times = mounted
    try:
        with os.scandir(path) as entries:
            if next(entries, None) is not None:
                return False
        if _mount_state(path)[0] != state:
            return False
        os.utime(path, ns=times, follow_symlinks=False)
        return True
    except OSError:
        return False


def _count_lines(path):
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def _socket_counts():
    """Sockets in the slot's network namespace, and its TCP connections in any state without a
    process: in use (hashed: a FIN_WAIT2 orphan too), orphaned, or in TIME_WAIT. A connection the
    call closed first may still be on its way to TIME_WAIT when the call ends: it counts already."""
    with open("/proc/self/net/sockstat", "rb") as f:
        stats = f.read().split()
    tcp = stats.index(b"TCP:")
    count = lambda name, after=0: int(stats[stats.index(name, after) + 1])  # noqa: E731
    return count(b"used"), count(b"inuse", tcp) + count(b"orphan", tcp) + count(b"tw", tcp)


def _dirt(baseline):
    """Why the slot is not clean after a call (every process of the call is dead and reaped by
    now), or None. Processes: only pid 1 may be left. Sockets: none in the slot's network namespace,
    TIME_WAIT included (a socket sent over a socket and closed unread stays until the kernel's
    garbage collector runs; a port in TIME_WAIT is visible to the next call). Mounts: the slot's own
    set (no call can mount: no capability, and seccomp refuses). `baseline`: what the slot itself
    holds before any call (the mount count; the tap device of a network-enabled slot is a socket)."""
    left = [e for e in os.listdir("/proc") if e.isdigit() and e != "1"]
    if left:
        return "%d process(es) of the call are still alive" % len(left)
    used, tcp = _socket_counts()
    if used > baseline["sockets"] or tcp > baseline["tcp"]:
        return "the call left %d socket(s) and %d TCP connection(s) (orphaned or in TIME_WAIT)" % (used - baseline["sockets"], tcp - baseline["tcp"])
    if _count_lines("/proc/self/mountinfo") != baseline["mounts"]:
        return "the mounts changed"
    return None


def _isolate_network(routes, go_fd):
    """A network namespace of the slot's own (owned by its user namespace, so it holds
    CAP_NET_ADMIN there), loopback up, attached to the outside by the runner (slirp4netns), then
    the egress routes. Tools inherit it without any capability."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import netconf  # noqa: E402 - network-enabled slots only

    del sys.path[0]
    _check(libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
    netconf.link_up("lo")
    _write_frame(CTRL_OUT, {"netns": True})
    if not os.read(go_fd, 1):
        raise OSError("the runner did not attach the network")
    os.close(go_fd)
    netconf.apply(routes)


def _reap_all():
    try:
        os.kill(-1, signal.SIGKILL)  # every process of the namespace except pid 1
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def main():
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no /proc/1/mem or /proc/1/environ for the tools
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    for fd in filter(None, os.environ.get("TOOLPLANE_CGROUP_FDS", "").split(",")):
        os.write(int(fd), b"0")  # into the slot's cgroup: every process forked from now on is in it
        os.close(int(fd))
    for name in filter(None, os.environ.get("TOOLPLANE_PRELOAD", "").split(",")):
        try:
            __import__(name)
        except Exception:
            pass
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    if os.environ.get("TOOLPLANE_NET"):
        _isolate_network(json.loads(os.environ["TOOLPLANE_NET"]), int(os.environ["TOOLPLANE_NET_GO_FD"]))
    os.closerange(CTRL_OUT + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])  # nothing else inherited reaches a call
    keep_alive, fprog = confinement.load_filter(os.environ["TOOLPLANE_SECCOMP"])
    caps = confinement.no_capabilities()
    sizes = {"/tmp": int(os.environ.get("TOOLPLANE_WORK_BYTES") or (64 << 20)), "/dev/shm": int(os.environ.get("TOOLPLANE_SHM_BYTES") or (64 << 20))}
    os.environ.clear()
    mounted = {path: _fresh_mount(path, sizes[path]) for path in WORK_MOUNTS}
    sockets, tcp = _socket_counts()
    baseline = {"mounts": _count_lines("/proc/self/mountinfo"), "sockets": sockets, "tcp": tcp}
    _write_frame(CTRL_OUT, {"ready": True, "python": sys.version.split()[0]})
    first = True
    while True:
        for path in WORK_MOUNTS:
            if not first and not _reusable(path, mounted[path]):
                mounted[path] = _fresh_mount(path, sizes[path])
        first = False
        # The slot's own objects move to the permanent generation: a collection in the child never
        # walks (and copies on write) the pages they live on.
        gc.freeze()
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            _child(fprog, caps, ready_w)
        os.close(ready_w)
        if os.read(ready_r, 1):  # b"" when the child died first: its exit is reported below
            _write_frame(CTRL_OUT, {"child": "ready"})
        os.close(ready_r)
        status = os.waitpid(pid, 0)[1]
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_NO_MORE_JOBS:
            _reap_all()
            os._exit(0)
        _reap_all()
        # Every process of the call is dead: prove the slot clean and report first, then (unless
        # _reusable) _fresh_mount() detaches this call's tmpfs mounts before the next child is
        # forked (off the reply's critical path). The control frame is written before the
        # sentinels, so the runner never sees sentinel bytes it cannot recognize yet.
        try:
            dirt = _dirt(baseline)
        except Exception as exc:  # noqa: BLE001 - a proof that cannot be made is no proof
            dirt = "the cleanliness check failed: %s" % exc
        sentinel = os.urandom(24).hex().encode()
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        sig = signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else None
        frame = {"exit": code, "signal": sig, "sentinel": sentinel.decode()}
        if dirt:
            frame["dirty"] = dirt
        _write_frame(CTRL_OUT, frame)
        for fd in (OUT, ERR, RESULT):
            harness._write_all(fd, sentinel)
        if dirt:
            os._exit(0)  # never reused: the runner starts a new slot
    del keep_alive


if __name__ == "__main__":
    main()
