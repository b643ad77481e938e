# solvergate's warm forker: a Python that has already imported what scripts
# need and forks a fresh child per request. It never runs user code itself.
#
# Protocol, on the UNIX socket that is fd 0:
#   forker -> server  {"ready": true}                      once the preload is imported
#   server -> forker  one JSON line + fds (SCM_RIGHTS): the child's stdout and stderr,
#                     then the descriptors its confinement names by index
#       {"script": path, "argv": [...], "cwd": dir, "env": {k: v} (the whole environment),
#        "confine": {"cgroups": [join file], "rlimits": {"fsize"|"data"|"nproc": n},
#                    "userns": bool, "network": null | "own" | {"userns": i, "netns": i},
#                    "drop_caps": [capability] | null, "landlock": i | null,
#                    "own_proc": bool}}
#   forker -> server  {"pid": N}                           the child leads its own session
#   forker -> server  {"pid": N, "wait_status": S}         the raw waitpid status
import ctypes
import json
import os
import socket
import struct
import sys

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long

PRELOAD = sys.argv[1:]


def main():
    sock = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)
    for name in PRELOAD:
        __import__(name)
    base_path = list(sys.path[1:])
    reader = b""
    sock.sendall(b'{"ready": true}\n')
    while True:
        line = None
        fds = []
        while b"\n" not in reader:
            data, got, _flags, _addr = socket.recv_fds(sock, 65536, 8)
            fds.extend(got)
            if not data:
                return
            reader += data
        line, reader = reader.split(b"\n", 1)
        request = json.loads(line)
        if len(fds) < 2:
            for fd in fds:
                os.close(fd)
            sock.sendall(b'{"error": "expected at least two descriptors"}\n')
            continue
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            child(request, fds, ready_w, base_path)
        os.close(ready_w)
        for fd in fds:
            os.close(fd)
        os.read(ready_r, 1)
        os.close(ready_r)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        sock.sendall(json.dumps({"pid": pid, "wait_status": status}).encode() + b"\n")


def child(request, fds, ready_w, base_path):
    code = 1
    try:
        os.setsid()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        # Nothing of the forker's stays open (its socket, the pipes passed
        # in) but what the confinement still needs, until it has used it.
        keep = sorted(set(fd for fd in fds[2:] if fd > 2))
        low = 3
        for fd in keep:
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 65536)
        # Before any user code: the same confinement a cold run applies
        # between fork and exec (src/exec/confine.rs).
        try:
            confine(request.get("confine") or {}, fds)
        except BaseException as error:  # noqa: BLE001 - never run unconfined
            os.write(2, ("solvergate confine: %s\n" % error).encode())
            os._exit(127)
        finally:
            for fd in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        import io
        import signal

        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.stdout = io.TextIOWrapper(
            io.FileIO(1, "w", closefd=False), write_through=True
        )
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False),
            errors="backslashreplace",
            write_through=True,
        )
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        os.environ.clear()
        os.environ.update(request["env"])
        sys.dont_write_bytecode = "PYTHONDONTWRITEBYTECODE" in os.environ
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
        extra = [p for p in extra if p not in base_path]
        script = request["script"]
        os.chdir(request["cwd"])
        sys.path[:] = [os.path.dirname(os.path.abspath(script))] + extra + base_path
        sys.argv[:] = [script] + request["argv"]
        # A fresh child must not share the forker's random streams.
        if "random" in sys.modules:
            sys.modules["random"].seed()
        if "numpy.random" in sys.modules:
            sys.modules["numpy.random"].seed()
        code = run_script(script)
    except BaseException:  # noqa: BLE001 - the child reports and exits
        try:
            import traceback

            traceback.print_exc()
        finally:
            code = 1
    finally:
        os._exit(code)


def confine(spec, fds):
    """Applies what src/exec/confine.rs applies to a cold child, in the same
    order: the run's cgroups, the network, a user namespace of its own, the
    rlimits, the capabilities dropped, Landlock. A step that fails raises,
    and the child ends with 127 rather than run with less."""
    # "0" is the writer itself; a forked child is one thread, which a v1
    # `tasks` file takes without the kernel's global lock (see cgroup.rs).
    for join in spec.get("cgroups", []):
        with open(join, "w") as handle:
            handle.write("0")
    network = spec.get("network")
    if network == "own":
        if os.geteuid() == 0:
            check("make a network namespace", LIBC.unshare(CLONE_NEWNET))
        else:
            check("make a network namespace", LIBC.unshare(CLONE_NEWUSER | CLONE_NEWNET))
            map_ids()
    elif isinstance(network, dict):
        if network.get("userns") is not None:
            check("enter the network's user namespace", LIBC.setns(fds[network["userns"]], CLONE_NEWUSER))
        check("enter the shared network namespace", LIBC.setns(fds[network["netns"]], CLONE_NEWNET))
    if spec.get("userns"):
        check("make a user namespace for the process limit", LIBC.unshare(CLONE_NEWUSER))
        map_ids()
    import resource

    names = {"fsize": resource.RLIMIT_FSIZE, "data": resource.RLIMIT_DATA, "nproc": resource.RLIMIT_NPROC}
    for name, value in spec.get("rlimits", {}).items():
        resource.setrlimit(names[name], (value, value))
    for capability in spec.get("drop_caps") or []:
        check("drop a capability", LIBC.prctl(24, capability, 0, 0, 0))  # PR_CAPBSET_DROP
    ruleset = spec.get("landlock")
    if ruleset is not None:
        if spec.get("own_proc"):
            # The child's own /proc entry and no other process's
            # (confine.rs, read_own_proc_dir).
            own = os.open("/proc/self", os.O_PATH | os.O_DIRECTORY)
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", (1 << 2) | (1 << 3), own))
                check(
                    "let the run read its own /proc entry",
                    LIBC.syscall(445, fds[ruleset], 1, rule, ctypes.c_uint32(0)),
                )
            finally:
                os.close(own)
        check("set no_new_privs", LIBC.prctl(38, 1, 0, 0, 0))  # PR_SET_NO_NEW_PRIVS
        check(
            "apply the Landlock ruleset",
            LIBC.syscall(446, fds[ruleset], ctypes.c_uint32(0)),  # landlock_restrict_self
        )


def check(step, result):
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, "could not %s: %s" % (step, os.strerror(errno)))


CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


def map_ids():
    uid, gid = os.getuid(), os.getgid()
    for path, text in (
        ("/proc/self/setgroups", "deny"),
        ("/proc/self/uid_map", "%d %d 1" % (uid, uid)),
        ("/proc/self/gid_map", "%d %d 1" % (gid, gid)),
    ):
        with open(path, "w") as handle:
            handle.write(text)


def run_script(script):
    import atexit
    import traceback
    import types

    code = 0
    try:
        with open(script, "rb") as handle:
            source = handle.read()
        try:
            compiled = compile(source, script, "exec")
        except SyntaxError as error:
            traceback.print_exception(type(error), error, None)
            return flush(1)
        module = types.ModuleType("__main__")
        module.__file__ = script
        module.__cached__ = None
        module.__builtins__ = __builtins__
        sys.modules["__main__"] = module
        exec(compiled, module.__dict__)
    except SystemExit as stop:
        code = exit_code(stop.code)
    except KeyboardInterrupt:
        flush(0)
        import signal

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException as error:  # noqa: BLE001 - as Python itself reports it
        tb = error.__traceback__.tb_next if error.__traceback__ else None
        traceback.print_exception(type(error), error, tb)
        code = 1
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    return flush(code)


def exit_code(value):
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        print(value, file=sys.stderr)
    except BaseException:  # noqa: BLE001
        pass
    return 1


def flush(code):
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    return code


main()
