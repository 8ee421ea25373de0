"""Confines the command of a one-shot sandbox (a package build) like a slot confines a tool call,
then execs it: `python3 -I -B /opt/toolplane/confine.py -- COMMAND...` inside bwrap.

- Network (TOOLPLANE_NET set: the routes; TOOLPLANE_NET_FDS "made,go"): a network namespace of its
  own, loopback up, one byte on `made` so the runner attaches slirp4netns to it, one byte awaited
  on `go`, then the routes (netconf.py) — while CAP_NET_ADMIN is still held.
- Then every capability is dropped, no new privileges, the tool seccomp filter
  (TOOLPLANE_SECCOMP), every fd above 2 closed, the TOOLPLANE_* variables removed: build scripts
  (setup.py, npm lifecycle scripts) run exactly as confined as tool code.
"""

import json
import os
import sys

CLONE_NEWNET = 0x40000000
EXIT_SETUP_FAILED = 70

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import confinement  # noqa: E402

del sys.path[0]
libc = confinement.libc
_check = confinement.check


def _network(routes, made_fd, go_fd):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import netconf  # noqa: E402

    del sys.path[0]
    _check(libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
    netconf.link_up("lo")
    os.write(made_fd, b"n")
    os.close(made_fd)
    if not os.read(go_fd, 1):
        raise OSError("the runner did not attach the network")
    os.close(go_fd)
    netconf.apply(routes)


def main():
    argv = sys.argv[sys.argv.index("--") + 1 :]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPLANE_")}
    if os.environ.get("TOOLPLANE_NET"):
        made, go = (int(x) for x in os.environ["TOOLPLANE_NET_FDS"].split(","))
        _network(json.loads(os.environ["TOOLPLANE_NET"]), made, go)
    keep_alive, fprog = confinement.load_filter(os.environ["TOOLPLANE_SECCOMP"])
    confinement.confine(fprog, confinement.no_capabilities())
    os.closerange(3, 65536)
    os.execve(argv[0], argv, env)


if __name__ == "__main__":
    try:
        main()
    except BaseException as exc:  # noqa: B036
        sys.stderr.write("toolplane build sandbox setup failed: %s\n" % exc)
        sys.stderr.flush()
        os._exit(EXIT_SETUP_FAILED)
