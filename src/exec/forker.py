# solvergate's warm forker: a Python that has already imported what scripts
# need and forks a fresh child per request. It never runs user code itself.
#
# Protocol, on the UNIX socket that is fd 0:
#   forker -> server  {"ready": true}                      once the preload is imported
#   server -> forker  one JSON line + 2 fds (SCM_RIGHTS):  the child's stdout and stderr
#       {"script": path, "argv": [...], "cwd": dir, "set": {k: v}, "remove": [k],
#        "confine": {"cgroups": [join file], "rlimits": {"fsize"|"data"|"nproc": n},
#                    "userns": bool, "sandbox": bool, "write": [dir], "report": path}}
#   forker -> server  {"pid": N}                           the child leads its own session
#   forker -> server  {"pid": N, "wait_status": S}         the raw waitpid status
import json
import os
import socket
import sys

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
            data, got, _flags, _addr = socket.recv_fds(sock, 65536, 4)
            fds.extend(got)
            if not data:
                return
            reader += data
        line, reader = reader.split(b"\n", 1)
        request = json.loads(line)
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            sock.sendall(b'{"error": "expected two descriptors"}\n')
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
        # Nothing of the forker's stays open: its socket, the fds passed in.
        os.closerange(3, ready_w)
        os.closerange(ready_w + 1, 65536)
        os.close(ready_w)
        # Before any user code: the same confinement a cold run gets from
        # solvergate's trampoline (src/exec/confine.rs).
        try:
            confine(request.get("confine") or {})
        except BaseException as error:  # noqa: BLE001 - never run unconfined
            os.write(2, ("solvergate confine: %s\n" % error).encode())
            os._exit(127)
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
        for key in request["remove"]:
            os.environ.pop(key, None)
        for key, value in request["set"].items():
            os.environ[key] = value
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


def confine(spec):
    """Joins the run's cgroups, sets its rlimits, and with `sandbox` cuts the
    network and restricts writes (Landlock), as the trampoline does. A step
    that must hold and fails ends the child with 127."""
    report = open(spec["report"], "w") if spec.get("report") else None
    # "0" is the writer itself; a forked child is one thread, which a v1
    # `tasks` file takes without the kernel's global lock (see cgroup.rs).
    for join in spec.get("cgroups", []):
        with open(join, "w") as handle:
            handle.write("0")
    import resource

    userns = bool(spec.get("userns")) and own_user_namespace()
    processes = "none"
    names = {"fsize": resource.RLIMIT_FSIZE, "data": resource.RLIMIT_DATA}
    for name, value in spec.get("rlimits", {}).items():
        if name == "nproc":
            if not userns:
                continue
            resource.setrlimit(resource.RLIMIT_NPROC, (value, value))
            processes = "rlimit"
        else:
            resource.setrlimit(names[name], (value, value))
    text = "processes=%s\n" % processes
    if spec.get("sandbox"):
        network = isolate_network()
        landlock = restrict_writes(spec.get("write", []))
        text += "landlock=%s\nnetwork=%s\n" % (landlock, network)
    if report is not None:
        report.write(text)
        report.close()


def libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


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


def own_user_namespace():
    if libc().unshare(CLONE_NEWUSER) != 0:
        return False
    try:
        map_ids()
    except OSError:
        return False
    return True


def isolate_network():
    c = libc()
    if c.unshare(CLONE_NEWNET) == 0:
        return "enforced"
    if c.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return "unsupported"
    try:
        map_ids()
    except OSError:
        sys.stderr.write("solvergate sandbox: could not map ids in the user namespace\n")
    return "enforced"


# Landlock, as the Rust side asks for it (ABI 3, best effort below):
# read and execute everywhere, everything beneath the write dirs, and
# writing /dev/null.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
REFER, TRUNCATE = 1 << 13, 1 << 14


def restrict_writes(dirs):
    import ctypes

    c = libc()
    syscall = c.syscall
    syscall.restype = ctypes.c_long
    abi = syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return "unsupported"
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= REFER
    if abi >= 3:
        handled |= TRUNCATE

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    attr = RulesetAttr(handled)
    ruleset = syscall(444, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return "unsupported"
    rules = [("/", EXECUTE | READ_FILE | READ_DIR)]
    rules += [(d, handled) for d in dirs]
    rules.append(("/dev/null", (EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE) & handled))
    try:
        for path, access in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = PathBeneath(access, fd)
                if syscall(445, ruleset, 1, ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    return "unsupported"
            finally:
                os.close(fd)
        if c.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            return "unsupported"
        if syscall(446, ruleset, ctypes.c_uint32(0)) != 0:
            return "unsupported"
    finally:
        os.close(ruleset)
    return "enforced" if abi >= 3 else "partial"


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
