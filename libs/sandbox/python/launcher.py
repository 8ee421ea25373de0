"""Toolplane launcher for reused remote sandboxes (runner-e2b, runner-modal).

Runs one tool call with the shared harness of libs/sandbox (python/harness.py, or
python/node_harness.cjs for TypeScript/JavaScript) and then proves that the call left nothing
behind, so the sandbox may serve the next call. Uploaded once per sandbox, next to the harnesses.

  python3 -I -B launcher.py setup <spec.json>   a new sandbox: state dirs, requirements, baseline
  python3 -I -B launcher.py run <call.json>     one call
  python3 -I -B launcher.py prove <spec.json>   a shared sandbox once drained, or one found again

Each mode writes exactly one JSON report (atomically, never through a link) at the path its input
names and exits 0 once it is written. Any other exit means nothing about the sandbox can be
trusted: the runner kills it. Exit 75 (run, prove): every lane of the sandbox is taken (another
runner replica uses it); nothing ran.

The result channel: the harness writes its frame on fd 3, the write end of a pipe whose read end
only this launcher holds (the harness marks fd 3 close-on-exec, so the tool's subprocesses never
get it). A frame printed on stdout is just output. The frame reaches the runner inside the report,
written only after every process of the call is dead.

The proof (exclusive lanes, and `prove`): no process of the tool's uid besides the sandbox's
baseline survives (any survivor is killed and makes the sandbox dirty), no new System V IPC
object exists, and no entry under the watched paths changed (ctime) since the last proof or
disappeared from one of them, other than the runner's own state (its call dirs, locks, proof
file). A dirty sandbox keeps its lock: it is never adopted again, and the runner kills it.
"""

import json
import os
import selectors
import shutil
import signal
import sys
import time

RESULT_FD = 3
NODE_JOB_FD = 5
EXIT_BUSY = 75
# The kernel stamps ctime from a clock that lags real time by up to one tick: a change made just
# after a proof may carry a ctime a little before it.
CLOCK_SLACK_S = 0.05
MAX_SCANNED = 2_000_000
KILL_ROUNDS = 50


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _not_dumpable():
    # No ptrace, no /proc/<pid>/mem or environ of this process for the tool (same uid or not).
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def _write_json_atomic(path, obj):
    """Writes a file by a fresh temp name and a rename: a link planted at `path` is replaced, never followed."""
    data = json.dumps(obj, separators=(",", ":")).encode()
    tmp = "%s.%d.%s.tmp" % (path, os.getpid(), os.urandom(6).hex())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _read_json(path):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return json.loads(f.read())


def _remove_tree(path):
    """Removes a file or tree whatever its modes; True when it is gone."""
    def fix(_func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
        except OSError:
            pass
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=fix)
        elif os.path.lexists(path):
            os.unlink(path)
    except OSError:
        pass
    return not os.path.lexists(path)


# ---------------------------------------------------------------------------------------------
# Processes, IPC objects, files


def _proc_stat(pid):
    """(ppid, state, starttime) of a process, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2:].split()
    try:
        return int(rest[1]), rest[0], rest[19]
    except (IndexError, ValueError):
        return None


def _proc_uids(pid):
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            for line in f.read().decode("utf-8", "replace").splitlines():
                if line.startswith("Uid:"):
                    return {int(x) for x in line.split()[1:]}
    except (OSError, ValueError):
        return None
    return None


def _ancestors():
    out = set()
    pid = os.getpid()
    while pid > 0 and pid not in out:
        out.add(pid)
        st = _proc_stat(pid)
        if st is None:
            break
        pid = st[0]
    return out


def processes(uid):
    """Live processes (not zombies, not kernel threads) whose real or effective uid is `uid`: {pid: starttime}."""
    if uid == 0:
        raise RuntimeError("the process proof never covers root")
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        st = _proc_stat(pid)
        if st is None or st[1] in ("Z", "X") or pid == 2 or st[0] == 2:
            continue
        uids = _proc_uids(pid)
        if uids is None or uid not in uids:
            continue
        found[pid] = st[2]
    return found


def leftovers(uid, baseline):
    """The call's processes still alive: the uid's processes minus the baseline and this launcher's ancestry."""
    mine = _ancestors()
    base = {(int(p), str(s)) for p, s in baseline}
    return {p: s for p, s in processes(uid).items() if p not in mine and (p, s) not in base}


def kill_leftovers(uid, baseline):
    """Kills every leftover process (rounds, for forks racing the kill); returns (how many were seen, whether any survives)."""
    seen = set()
    for _ in range(KILL_ROUNDS):
        left = leftovers(uid, baseline)
        if not left:
            return len(seen), False
        for pid, start in left.items():
            seen.add((pid, start))
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap_children()
        time.sleep(0.01)
    return len(seen), bool(leftovers(uid, baseline))


def _reap_children():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def ipc_objects():
    """System V IPC objects (shared memory, semaphores, message queues): {"kind:id"}."""
    out = set()
    for kind in ("shm", "sem", "msg"):
        try:
            with open("/proc/sysvipc/%s" % kind, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 1:
                out.add("%s:%s" % (kind, parts[1]))
    return out


MAX_ROOT_NAMES = 10_000


def root_names(roots):
    """The names directly in each watched path: {path: [names]} (a deletion there changes only the root's own ctime)."""
    out = {}
    for root in roots:
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        out[root] = names[:MAX_ROOT_NAMES]
    return out


def changed_entries(roots, since, ignore, ignore_trees, known_names, limit=5):
    """Entries under `roots` whose ctime is at or after `since` (symlinks not followed), but the ignored
    ones; and entries of a root that were there at the proof and are gone. A root's own ctime is not
    compared: some are mounted afresh for each command (a sandbox's /dev/shm), their entries count."""
    hits = []
    scanned = 0
    stack = []
    for root in roots:
        try:
            now = set(os.listdir(root))
        except OSError:
            continue
        for name in sorted(set(known_names.get(root, [])) - now):
            hits.append("%s (deleted)" % os.path.join(root, name))
        stack.append(root)
    while stack:
        d = stack.pop()
        if any(d == t or d.startswith(t + "/") for t in ignore_trees):
            continue
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                scanned += 1
                if scanned > MAX_SCANNED:
                    hits.append("(more than %d entries)" % MAX_SCANNED)
                    return hits
                p = e.path
                if any(p == t or p.startswith(t + "/") for t in ignore_trees):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if p not in ignore and st.st_ctime >= since:
                    hits.append(p)
                    if len(hits) >= limit:
                        return hits
                if e.is_dir(follow_symlinks=False) and p not in ("/proc", "/sys", "/dev/pts"):
                    stack.append(p)
    return hits


# ---------------------------------------------------------------------------------------------
# Locks (lanes)


def take_lane(state, lanes):
    for lane in range(lanes):
        path = os.path.join(state, "lock-%d" % lane)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return lane, path
    return None, None


def take_all_lanes(state, lanes):
    taken = []
    for lane in range(lanes):
        path = os.path.join(state, "lock-%d" % lane)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            for p in taken:
                os.unlink(p)
            return None
        os.close(fd)
        taken.append(path)
    return taken


def state_ignores(state, lanes):
    """The runner's own state under the watched paths: the dirs whose entries it adds and removes, its locks and proof."""
    names = [state, os.path.join(state, "calls"), os.path.join(state, "work"), os.path.join(state, "proof.json")]
    names += [os.path.join(state, "lock-%d" % i) for i in range(lanes)]
    return set(names)


# ---------------------------------------------------------------------------------------------
# run


def _tool_env(call, work):
    env = {k: os.environ[k] for k in call["env_keys"] if k in os.environ}
    env["HOME"] = work
    env["TMPDIR"] = work
    return env


def _drop_privileges(tool_uid):
    if os.getuid() == 0 and tool_uid is not None:
        os.setgroups([])
        os.setgid(tool_uid)
        os.setuid(tool_uid)


def _move_fd(fd, target):
    if fd != target:
        os.dup2(fd, target)
        os.close(fd)
    os.set_inheritable(target, True)


def _spawn(call, work, job_path, out_w, err_w, res_w):
    """Forks the tool's process: its own session, stdin the job (Node: fd 5), stdout/stderr/fd 3 the
    pipes, nothing else open, the tool uid, the call's env. Python tools run in the fork itself,
    through the harness's `run_job` (this launcher runs on the environment's interpreter: no second
    interpreter start); Node tools exec the Node harness."""
    runtime = call["runtime"]
    env = _tool_env(call, work)
    job_fd = os.open(job_path, os.O_RDONLY | os.O_NOFOLLOW)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            # Move every fd the child keeps above the ones it needs, then into place.
            fds = [os.dup(fd) for fd in (job_fd, out_w, err_w, res_w)]
            job, out, err, res = [fcntl_high(fd) for fd in fds]
            devnull = os.open(os.devnull, os.O_RDONLY)
            if runtime == "node":
                _move_fd(devnull, 0)
                _move_fd(job, NODE_JOB_FD)
            else:
                _move_fd(job, 0)
                os.close(devnull)
            _move_fd(out, 1)
            _move_fd(err, 2)
            _move_fd(res, RESULT_FD)
            # Every other fd goes: the pipes' read ends, the launcher's own.
            os.closerange(4, NODE_JOB_FD)
            os.closerange(NODE_JOB_FD + 1 if runtime == "node" else NODE_JOB_FD, os.sysconf("SC_OPEN_MAX"))
            _drop_privileges(call.get("tool_uid"))
            os.chdir(work)
            if runtime == "node":
                os.execve(call["node"], [call["node"], call["node_harness"]], env)
            _run_python_tool(call, env)
        except BaseException as exc:  # noqa: B036
            try:
                os.write(2, ("[toolplane] the tool could not start: %s\n" % exc).encode())
            finally:
                os._exit(127)
    os.close(job_fd)
    return pid


def _run_python_tool(call, env):
    """The harness's own `main`, in this fork: the job from stdin, the frame on fd 3. Never returns."""
    os.environ.clear()
    os.environ.update(env)
    sys.path.insert(0, os.path.dirname(call["harness"]))
    import harness  # noqa: E402  (libs/sandbox/python/harness.py, uploaded beside this file)

    del sys.path[0]
    os.set_inheritable(RESULT_FD, False)  # the tool's subprocesses never get the result channel
    chunks = []
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    job = json.loads(b"".join(chunks))
    nonce = job.pop("nonce")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    harness._hide_from_same_uid()
    harness.run_job(job, nonce)
    os._exit(70)


def fcntl_high(fd):
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


def _pidfd(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _make_work(call):
    work = call["work_dir"]
    if os.path.lexists(work):
        raise RuntimeError("work dir exists already")
    os.mkdir(work, 0o700)
    tool_uid = call.get("tool_uid")
    if os.getuid() == 0 and tool_uid is not None:
        os.chown(work, tool_uid, tool_uid)
    return work


def mode_run(call_path):
    t0 = time.time()
    call = _read_json(call_path)
    _refuse_root_tools(call)
    call_dir = os.path.dirname(call_path)
    state = call["state_dir"]
    lanes = int(call.get("lanes", 1))
    exclusive = lanes == 1
    lane, lock = take_lane(state, lanes)
    if lock is None:
        sys.exit(EXIT_BUSY)
    tool_uid = call["tool_uid"] if os.getuid() == 0 and call.get("tool_uid") is not None else os.getuid()
    report = {"v": 1, "nonce": call["nonce"], "lane": lane, "exit": None, "signal": None, "timed_out": False, "output_limit": False,
              "frame": None, "frame_too_large": False, "stdout_bytes": 0, "stderr_bytes": 0, "dirty": [], "proved_at": None}
    calls = os.path.join(state, "calls")
    # What earlier calls left in the runner's dirs goes before this tool runs (their reports are read).
    for name in call.get("remove", []) if not exclusive else os.listdir(calls):
        p = os.path.join(calls, os.path.basename(name))
        if p != call_dir:
            _remove_tree(p)
    work = _make_work(call)
    job_path = os.path.join(call_dir, "job.json")
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = _spawn(call, work, job_path, out_w, err_w, res_w)
    for fd in (out_w, err_w, res_w):
        os.close(fd)

    max_output = int(call["max_output_bytes"])
    max_frame = int(call["max_frame_bytes"])
    deadline = t0 + call["timeout_ms"] / 1000.0
    frame = bytearray()
    sel = selectors.DefaultSelector()
    for fd, what in ((out_r, 1), (err_r, 2), (res_r, 3)):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, what)
    pfd = _pidfd(pid)
    if pfd is not None:
        sel.register(pfd, selectors.EVENT_READ, 0)
    status = None
    stopped = False

    def stop():
        # The harness and what it started in its session; anything that left the session is a leftover (below).
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    def pump(fd, what):
        nonlocal stopped
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            sel.unregister(fd)
            return False
        if what == 3:
            if len(frame) + len(chunk) > max_frame:
                report["frame_too_large"] = True
                if not stopped:
                    stopped = True
                    stop()
            else:
                frame.extend(chunk)
            return True
        key = "stdout_bytes" if what == 1 else "stderr_bytes"
        report[key] += len(chunk)
        if report["stdout_bytes"] + report["stderr_bytes"] > max_output:
            if not report["output_limit"]:
                report["output_limit"] = True
                stopped = True
                stop()
            return True
        _write_all(what, chunk)
        return True

    while status is None:
        now = time.time()
        if not stopped and now >= deadline:
            report["timed_out"] = True
            stopped = True
            stop()
        wait = 0.05 if pfd is None or stopped else max(0.001, deadline - now)
        for key, _ in sel.select(timeout=wait):
            if key.data:
                pump(key.fd, key.data)
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
    if pfd is not None:
        sel.unregister(pfd)
        os.close(pfd)
    if os.WIFEXITED(status):
        report["exit"] = os.WEXITSTATUS(status)
    elif os.WIFSIGNALED(status):
        report["signal"] = signal.Signals(os.WTERMSIG(status)).name

    dirty = report["dirty"]
    baseline = call["proof"]["baseline"]
    if exclusive:
        seen, survives = kill_leftovers(tool_uid, baseline)
        if seen:
            dirty.append("processes: %d left running after the call" % seen)
        if survives:
            dirty.append("processes could not be killed")
    # The pipes end once every writer is gone (exclusive: all are dead; shared: the call's own).
    end = time.time() + (2.0 if exclusive else 0.5)
    while sel.get_map() and time.time() < end:
        for key, _ in sel.select(timeout=0.05):
            pump(key.fd, key.data)
    if sel.get_map():
        dirty.append("output pipes still open after the call")
    sel.close()
    for fd in (out_r, err_r, res_r):
        try:
            os.close(fd)
        except OSError:
            pass
    proof = call["proof"]
    if not _remove_tree(work):
        dirty.append("the work dir could not be removed")
    if exclusive:
        mark = time.time()
        new_ipc = sorted(ipc_objects() - set(proof["baseline_ipc"]))
        if new_ipc:
            dirty.append("System V IPC objects left: %d" % len(new_ipc))
        changed = changed_entries(call["watch"], proof["proved_at"] - CLOCK_SLACK_S, state_ignores(state, lanes), [call_dir], proof["roots"])
        if changed:
            dirty.append("files changed outside the work dir: %s" % ", ".join(changed))
        if not dirty:
            report["proved_at"] = mark
    if not report["frame_too_large"]:
        report["frame"] = bytes(frame).decode("utf-8", "replace")
    report["duration_s"] = time.time() - t0
    _write_json_atomic(os.path.join(call_dir, "report.json"), report)
    if exclusive and not dirty:
        _write_json_atomic(os.path.join(state, "proof.json"), dict(proof, proved_at=report["proved_at"]))
    if not dirty:
        os.unlink(lock)  # a dirty sandbox keeps its lock: nothing adopts it again


# ---------------------------------------------------------------------------------------------
# setup and prove


def _run_streaming(argv, env, timeout_s, tail, uid=None):
    """Runs a build command (as `uid` when given), forwarding its output to stdout (the runner's progress) and keeping the last lines."""
    import subprocess

    ids = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True, **ids)
    deadline = time.time() + timeout_s
    os.set_blocking(proc.stdout.fileno(), False)
    buf = b""
    timed_out = False
    while True:
        if time.time() > deadline:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            chunk = os.read(proc.stdout.fileno(), 65536)
        except BlockingIOError:
            chunk = None
        if chunk:
            _write_all(1, chunk)
            buf = (buf + chunk)[-65536:]
            continue
        if chunk == b"" or proc.poll() is not None:
            if chunk == b"":
                break
        time.sleep(0.02)
    code = proc.wait()
    tail.extend(buf.decode("utf-8", "replace").splitlines()[-60:])
    return code, timed_out


def _lock_down(path):
    """A finished environment: the launcher's (root's) and read-only for everyone else."""
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            p = os.path.join(root, name)
            os.lchown(p, 0, 0)
            if not os.path.islink(p):
                os.chmod(p, os.lstat(p).st_mode & ~0o022)
    os.chown(path, 0, 0)
    os.chmod(path, 0o755)


def _install(spec, report, build_uid):
    """Installs the environment's requirements once (its marker says so). As root the build runs as
    the tool uid (build scripts are tool code too), and the result is then locked down."""
    env_dir = spec.get("env_dir")
    if not env_dir:
        return True
    marker = os.path.join(env_dir, ".toolplane-ready")
    if os.path.exists(marker):
        return True
    _remove_tree(env_dir)
    os.makedirs(env_dir, mode=0o755)
    home = env_dir + ".home"
    _remove_tree(home)
    os.makedirs(home, mode=0o700)
    if build_uid is not None:
        for p in (env_dir, home):
            os.chown(p, build_uid, build_uid)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "PIP_NO_CACHE_DIR": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "npm_config_cache": os.path.join(home, "npm-cache"), "npm_config_update_notifier": "false"}
    tail = []
    timeout_s = spec["build_timeout_ms"] / 1000.0
    steps = []
    if spec.get("pip_args"):
        steps.append(("pip", [spec["python"], "-I", "-m", "venv", "--without-pip", env_dir]))
        steps.append(("pip", [spec["python"], "-I", "-m", "pip", "--python", os.path.join(env_dir, "bin", "python3")] + spec["pip_args"]))
    if spec.get("npm_args"):
        steps.append(("npm", [spec["npm"]] + spec["npm_args"]))
    try:
        for tool, argv in steps:
            code, timed_out = _run_streaming(argv, env, timeout_s, tail, build_uid)
            if code != 0:
                report["install"] = {"ok": False, "tool": tool, "timed_out": timed_out, "output": tail}
                _remove_tree(env_dir)
                return False
    finally:
        _remove_tree(home)
    if build_uid is not None:
        _lock_down(env_dir)
    with open(marker, "w") as f:
        f.write(spec.get("requirements_hash", ""))
    report["install"] = {"ok": True}
    return True


def _prove(spec, state, lanes, proof, report):
    tool_uid = spec["tool_uid"] if os.getuid() == 0 and spec.get("tool_uid") is not None else os.getuid()
    dirty = report["dirty"]
    seen, survives = kill_leftovers(tool_uid, proof["baseline"])
    if seen:
        dirty.append("processes: %d left running" % seen)
    if survives:
        dirty.append("processes could not be killed")
    for sub in ("calls", "work"):
        d = os.path.join(state, sub)
        for name in os.listdir(d):
            if not _remove_tree(os.path.join(d, name)):
                dirty.append("%s/%s could not be removed" % (sub, name))
    mark = time.time()
    new_ipc = sorted(ipc_objects() - set(proof["baseline_ipc"]))
    if new_ipc:
        dirty.append("System V IPC objects left: %d" % len(new_ipc))
    changed = changed_entries(spec["watch"], proof["proved_at"] - CLOCK_SLACK_S, state_ignores(state, lanes), [], proof["roots"])
    if changed:
        dirty.append("files changed: %s" % ", ".join(changed))
    if not dirty:
        report["proved_at"] = mark
        report["proof"] = dict(proof, proved_at=mark)
        _write_json_atomic(os.path.join(state, "proof.json"), report["proof"])


def _runtime(spec, report):
    report["node"] = bool(spec.get("node")) and os.access(spec["node"], os.X_OK)
    report["python"] = os.access(spec["python"], os.X_OK)
    report["uid"] = os.getuid()


def mode_setup(spec_path):
    spec = _read_json(spec_path)
    _refuse_root_tools(spec)
    state = spec["state_dir"]
    lanes = int(spec.get("lanes", 1))
    report = {"v": 1, "nonce": spec["nonce"], "dirty": [], "proved_at": None}
    for sub in ("", "calls", "work"):
        os.makedirs(os.path.join(state, sub), exist_ok=True)
    root = os.getuid() == 0 and spec.get("tool_uid") is not None
    # The tool reads the harnesses and its environment; it may enter its own work dir, not list the others.
    os.chmod(state, 0o755)
    os.chmod(os.path.join(state, "work"), 0o711 if root else 0o700)
    os.chmod(os.path.join(state, "calls"), 0o755 if root else 0o700)
    _runtime(spec, report)
    tool_uid = spec["tool_uid"] if root else os.getuid()
    # The sandbox's own processes of that uid (a template's), before anything of ours ran.
    baseline = sorted([pid, start] for pid, start in processes(tool_uid).items() if pid not in _ancestors())
    installed = _install(spec, report, spec["tool_uid"] if root else None)
    # Whatever the build left running goes (build scripts are tool code).
    seen, survives = kill_leftovers(tool_uid, baseline)
    if survives:
        report["dirty"].append("processes the build started could not be killed")
    if not installed or survives:
        _write_json_atomic(spec["report"], report)
        return
    if seen:
        report["build_processes_killed"] = seen
    # Nothing the setup wrote may look newer than the proof.
    time.sleep(2 * CLOCK_SLACK_S)
    report["proved_at"] = time.time()
    report["proof"] = {"proved_at": report["proved_at"], "baseline": baseline, "baseline_ipc": sorted(ipc_objects()), "roots": root_names(spec["watch"])}
    _write_json_atomic(os.path.join(state, "proof.json"), report["proof"])
    _write_json_atomic(spec["report"], report)


def mode_prove(spec_path):
    spec = _read_json(spec_path)
    _refuse_root_tools(spec)
    state = spec["state_dir"]
    lanes = int(spec.get("lanes", 1))
    report = {"v": 1, "nonce": spec["nonce"], "dirty": [], "proved_at": None}
    locks = take_all_lanes(state, lanes)
    if locks is None:
        sys.exit(EXIT_BUSY)
    _runtime(spec, report)
    env_dir = spec.get("env_dir")
    if env_dir and not os.path.exists(os.path.join(env_dir, ".toolplane-ready")):
        report["dirty"].append("its environment is not installed")
    proof = spec.get("proof")
    if spec.get("from_state"):
        try:
            proof = _read_json(os.path.join(state, "proof.json"))
        except (OSError, ValueError):
            report["dirty"].append("no proof file")
    if proof is None:
        report["dirty"].append("no earlier proof to compare with")
    if not report["dirty"]:
        _prove(spec, state, lanes, proof, report)
    report_dir = os.path.dirname(spec["report"])
    os.makedirs(report_dir, exist_ok=True)
    _write_json_atomic(spec["report"], report)
    if not report["dirty"]:
        for p in locks:
            os.unlink(p)


def _refuse_root_tools(spec):
    # Tools never run as root, and the process proof never looks at (let alone kills) root's processes.
    if os.getuid() == 0 and not (isinstance(spec.get("tool_uid"), int) and spec["tool_uid"] > 0):
        sys.stderr.write("[toolplane] refusing: running as root without a tool uid to drop to\n")
        sys.exit(64)


def main():
    _not_dumpable()
    os.umask(0o022)
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "run":
        mode_run(path)
    elif mode == "setup":
        mode_setup(path)
    elif mode == "prove":
        mode_prove(path)
    else:
        sys.exit(64)


if __name__ == "__main__":
    main()
