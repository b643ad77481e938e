"""Runs a command where no new user namespace can be made, as on a kernel
that refuses unprivileged ones (Ubuntu's AppArmor restriction).

    python no_user_namespaces.py COMMAND ARGS...

Needs root. It moves into a user namespace of its own that maps every id to
itself, so files, users and `setpriv` behave as outside, sets that
namespace's `user.max_user_namespaces` to 0, which refuses any namespace
made inside it, and execs COMMAND. Only this process's descendants are
affected: the host's own limit is untouched.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000
#: Every id, mapped to itself.
IDENTITY = "0 0 4294967295\n"


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    # A namespace's id maps are written from outside it: a helper does it
    # once this process has moved in.
    moved_read, moved_write = os.pipe()
    helper = os.fork()
    if helper == 0:
        os.close(moved_write)
        os.read(moved_read, 1)
        parent = os.getppid()
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{parent}/{name}", "w") as file:
                file.write(IDENTITY)
        os._exit(0)
    os.close(moved_read)
    if libc.unshare(CLONE_NEWUSER) != 0:
        print(f"no_user_namespaces: unshare: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    os.write(moved_write, b"x")
    _, status = os.waitpid(helper, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        print("no_user_namespaces: could not map the namespace's ids", file=sys.stderr)
        return 1
    with open("/proc/sys/user/max_user_namespaces", "w") as file:
        file.write("0\n")
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
