"""Toolplane sandbox harness: runs one tool function in a fresh interpreter.

Protocol (see libs/sandbox/README.md):
  stdin  <- one JSON job: {"nonce", "source", "function", "args", "agent_id"}
  fd 3   -> exactly one line: {"v": 1, "nonce", "status": "success", "value"}
                          or {"v": 1, "nonce", "status": "error", "type", "message"}
  stdout/stderr belong to the tool. Arguments arrive as data, never as Python source.

Started as `python3 -I -B -u harness.py`. Heavy modules (inspect, asyncio, traceback,
dataclasses) are imported only when a call needs them: interpreter start-up is the cost of a run.
"""

import json
import math
import os
import sys

RESULT_FD = 3
HARNESS_FILE = __file__


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _hide_from_same_uid():
    # Not dumpable: /proc/<pid>/environ and /proc/<pid>/mem become root-only, so a tool running
    # concurrently under the same uid cannot read this run's environment (its secrets).
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def _wants_agent_id(fn):
    code = getattr(fn, "__code__", None)
    if code is not None and not hasattr(fn, "__wrapped__"):
        return "agent_id" in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    try:
        import inspect

        return "agent_id" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _jsonable(value, seen):
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    if id(value) in seen:
        return "<circular reference>"
    seen = seen | {id(value)}
    if isinstance(value, dict):
        return {_key(k): _jsonable(v, seen) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, seen) for v in value]
    dumped = _model_dump(value)
    if dumped is not None:
        return _jsonable(dumped, seen)
    return _text(value)


def _model_dump(value):
    """pydantic v2 model_dump(), pydantic v1 dict(), dataclass asdict(); None when not a model."""
    if isinstance(value, type):
        return None
    try:
        if callable(getattr(value, "model_dump", None)):
            return value.model_dump()
        if hasattr(value, "__fields__") and callable(getattr(value, "dict", None)):
            return value.dict()
        if hasattr(value, "__dataclass_fields__"):
            import dataclasses

            return dataclasses.asdict(value)
    except Exception:
        return None
    return None


def _key(key):
    return key if isinstance(key, str) and type(key) is str else _text(key)


def _text(value):
    try:
        return str(value)
    except Exception:
        try:
            return repr(value)
        except Exception:
            return "<unprintable %s>" % type(value).__name__


def _print_traceback(exc):
    import traceback

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == HARNESS_FILE:
        tb = tb.tb_next
    try:
        traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    except Exception:
        sys.stderr.write("%s: %s\n" % (type(exc).__name__, _text(exc)))


def _flush_stdio():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass


async def _awaited(awaitable):
    return await awaitable


def _run(job):
    name = job["function"]
    source = job["source"]
    filename = "<tool:%s>" % name
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__tool__", "__builtins__": __builtins__}
    exec(compile(source, filename, "exec"), namespace)
    fn = namespace.get(name)
    if not callable(fn):
        raise NameError("function %r is not defined by the tool source" % name)
    kwargs = dict(job.get("args") or {})
    if job.get("agent_id") is not None and _wants_agent_id(fn):
        kwargs["agent_id"] = job["agent_id"]
    result = fn(**kwargs)
    if hasattr(result, "__await__"):  # async def, or a sync function returning an awaitable
        import asyncio

        result = asyncio.run(result if asyncio.iscoroutine(result) else _awaited(result))
    return result


def run_job(job, nonce):
    """Runs one job and writes its frame on fd 3, then exits the process (never returns)."""
    import warnings  # already loaded by the interpreter: free

    try:
        value = _run(job)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. pydantic's deprecation of .dict(): never fails a call
            frame = {"v": 1, "nonce": nonce, "status": "success", "value": _jsonable(value, frozenset())}
    except BaseException as exc:  # noqa: B036 - SystemExit/KeyboardInterrupt from a tool are errors too
        _print_traceback(exc)
        frame = {"v": 1, "nonce": nonce, "status": "error", "type": type(exc).__name__, "message": _text(exc)}
    _flush_stdio()
    line = json.dumps(frame, allow_nan=False, separators=(",", ":")) + "\n"
    _write_all(RESULT_FD, line.encode("ascii"))
    os.close(RESULT_FD)
    # Skip atexit hooks and joins of threads the tool left running: the result is delivered.
    os._exit(0)


def main():
    os.set_inheritable(RESULT_FD, False)  # subprocesses of the tool never get the result channel
    job = json.loads(sys.stdin.buffer.read())
    nonce = job.pop("nonce")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _hide_from_same_uid()
    run_job(job, nonce)


if __name__ == "__main__":
    main()
