#!/usr/bin/python3
"""The fake's /__modal/.bin/modal-sandbox-fs-tools: what the SDK's `sandbox.filesystem` execs inside
a sandbox. argv[1] is one JSON command ({"ReadFile": {"path"}}, {"WriteFile": {"path"}},
{"ListFiles": {"path"}}, {"MakeDirectory": {"path", ...}}, {"Remove": {"path", ...}}, {"Stat": {"path"}});
file bytes travel on stdout/stdin; a failure is one JSON line {error_kind, message, detail} on stderr
and a non-zero exit, the shape the SDK parses."""
import errno
import json
import os
import shutil
import stat
import sys

KINDS = {errno.ENOENT: "NotFound", errno.EACCES: "PermissionDenied", errno.EPERM: "PermissionDenied", errno.EISDIR: "IsDirectory",
         errno.ENOTDIR: "NotDirectory", errno.EEXIST: "AlreadyExists", errno.ENOTEMPTY: "DirectoryNotEmpty"}


def fail(kind, message):
    sys.stderr.write(json.dumps({"error_kind": kind, "message": message, "detail": ""}))
    sys.exit(1)


def entry(path, name):
    st = os.lstat(path)
    kind = "Directory" if stat.S_ISDIR(st.st_mode) else "Symlink" if stat.S_ISLNK(st.st_mode) else "File"
    return {"name": name, "path": path, "type": kind, "size": st.st_size, "mtime": int(st.st_mtime), "mode": stat.S_IMODE(st.st_mode)}


def main():
    (op, args), = json.loads(sys.argv[1]).items()
    path = args["path"]
    try:
        if op == "ReadFile":
            if os.path.isdir(path):
                fail("IsDirectory", "Is a directory")
            with open(path, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
        elif op == "WriteFile":
            if os.path.isdir(path):
                fail("IsDirectory", "Is a directory")
            os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
            with open(path, "wb") as f:
                shutil.copyfileobj(sys.stdin.buffer, f)
        elif op == "ListFiles":
            if not os.path.isdir(path):
                fail("NotDirectory" if os.path.exists(path) else "NotFound", "Not a directory" if os.path.exists(path) else "No such file or directory")
            print(json.dumps([entry(os.path.join(path, n), n) for n in sorted(os.listdir(path))]))
        elif op == "MakeDirectory":
            if args.get("create_parents", args.get("createParents", True)):
                os.makedirs(path, exist_ok=True)
            else:
                os.mkdir(path)
        elif op == "Remove":
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path) if args.get("recursive") else os.rmdir(path)
            else:
                os.remove(path)
        elif op == "Stat":
            print(json.dumps(entry(path, os.path.basename(path))))
        else:
            fail("NotSupported", f"unsupported operation {op}")
    except OSError as e:
        fail(KINDS.get(e.errno, "Other"), e.strerror or str(e))


main()
