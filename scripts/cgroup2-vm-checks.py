"""The checks scripts/cgroup2-vm runs inside its VM, on a kernel with the unified cgroup
hierarchy only: the real solvergate binary's cgroup v2 path in a delegated subtree.

Started by the VM's init (scripts/cgroup2-vm-init) as root inside the delegated group; it drops
to the delegated uid at once and then acts as a user's systemd manager does: moves itself into
`init.scope`, hands memory and pids down to `app.slice`, and starts each solvergate in a fresh
scope of its own there (as `systemd-run --user --scope` would). CP-SAT scripts run through
`solvergate run-cpsat` with the VM's python3 and a stand-in `ortools` module (the server only
probes that it imports; the scripts here do not use it).

Prints one line per check as it goes, then a block:

    ==== cgroup2-vm: results ====
    PASS name: detail
    FAIL name: detail
    ==== cgroup2-vm: ALL PASS (n checks) ====      (or: FAILED (k of n checks))

and the join-cost figures, which are measurements, not checks. Exit 0 when every check passed.

With --join-only it takes only the join figures, in the group --delegated names, as the user it
runs as (the init runs it as root once more after remounting the hierarchy with favordynmods).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

MIB = 1024 * 1024
ENVELOPE = 'print(json.dumps({"status": "feasible", "objective": None, "solution": %s}))'

# A run's own view: its cgroup, its parent's (the server's), and its group's limits.
WHERE = (
    "import json, os\n"
    "def cgroup(pid):\n"
    "    with open('/proc/%s/cgroup' % pid) as f:\n"
    "        return f.read().strip().split('::', 1)[1]\n"
    "own = cgroup('self')\n"
    "def control(name):\n"
    "    with open('/sys/fs/cgroup' + own + '/' + name) as f:\n"
    "        return f.read().strip()\n"
    "found = {'own': own, 'parent': cgroup(os.getppid()),\n"
    "         'memory.max': control('memory.max'), 'memory.oom.group': control('memory.oom.group'),\n"
    "         'memory.swap.max': control('memory.swap.max'), 'pids.max': control('pids.max')}\n"
) + ENVELOPE % "found"

# Three children that only sleep, then a parent that allocates without bound: with
# memory.oom.group the kernel kills all four, not just the allocator.
MEMORY_BOMB = (
    "import json, os, time\n"
    "for _ in range(3):\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        time.sleep(120)\n"
    "        os._exit(0)\n"
    "    print('child', pid, flush=True)\n"
    "hold = []\n"
    "while True:\n"
    "    hold.append(b'x' * (8 << 20))\n"
)

# Sleeping children until fork is refused; each child's pid printed.
FORK_BOMB = (
    "import json, os, time\n"
    "for _ in range(10000):\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        time.sleep(120)\n"
    "        os._exit(0)\n"
    "    print('child', pid, flush=True)\n"
) + ENVELOPE % "{}"

# Three sleeping children, then a long sleep: a run to kill the server under.
SLEEPER = (
    "import os, time\n"
    "for _ in range(3):\n"
    "    if os.fork() == 0:\n"
    "        time.sleep(120)\n"
    "        os._exit(0)\n"
    "time.sleep(120)\n"
)

TRIVIAL = "import json\n" + ENVELOPE % '{"x": 1}'

STUB_CP_MODEL = '''"""A stand-in for OR-Tools' CP-SAT API: enough for solvergate's runtime probe."""


class CpSolver:
    def solve(self, model, callback=None):
        return 0

    Solve = solve
'''


class Checks:
    """Results so far, printed as they come and again as a block at the end."""

    def __init__(self):
        self.results = []

    def record(self, name, ok, detail):
        line = "%s %s: %s" % ("PASS" if ok else "FAIL", name, detail)
        self.results.append(line)
        print("cgroup2-vm: " + line, flush=True)
        return ok

    def block(self):
        failed = sum(1 for line in self.results if line.startswith("FAIL"))
        print("==== cgroup2-vm: results ====")
        for line in self.results:
            print(line)
        if failed:
            print("==== cgroup2-vm: FAILED (%d of %d checks) ====" % (failed, len(self.results)))
        else:
            print("==== cgroup2-vm: ALL PASS (%d checks) ====" % len(self.results))
        sys.stdout.flush()
        return failed == 0


class Vm:
    """The delegated subtree as the user's manager lays it out, and solvergate runs in it."""

    def __init__(self, delegated, solvergate, home):
        self.delegated = delegated
        self.solvergate = solvergate
        self.home = home
        self.apps = os.path.join(delegated, "app.slice")
        self.scopes = 0
        self.env = {
            "PATH": "/usr/bin:/bin",
            "HOME": home,
            "SOLVERGATE_CPSAT_PYTHON": "/usr/bin/python3",
            "PYTHONPATH": os.path.join(home, "stub"),
        }

    def set_up(self):
        init = os.path.join(self.delegated, "init.scope")
        os.mkdir(init)
        write(os.path.join(init, "cgroup.procs"), str(os.getpid()))
        write(os.path.join(self.delegated, "cgroup.subtree_control"), "+memory +pids")
        os.mkdir(self.apps)
        write(os.path.join(self.apps, "cgroup.subtree_control"), "+memory +pids")
        package = os.path.join(self.home, "stub", "ortools", "sat", "python")
        os.makedirs(package)
        stub = os.path.join(self.home, "stub", "ortools")
        write(os.path.join(stub, "__init__.py"), '__version__ = "0+stub"\n')
        write(os.path.join(self.home, "stub", "ortools", "sat", "__init__.py"), "")
        write(os.path.join(package, "__init__.py"), "")
        write(os.path.join(package, "cp_model.py"), STUB_CP_MODEL)
        for name, text in [
            ("where.py", WHERE),
            ("memory_bomb.py", MEMORY_BOMB),
            ("fork_bomb.py", FORK_BOMB),
            ("sleeper.py", SLEEPER),
            ("trivial.py", TRIVIAL),
        ]:
            write(os.path.join(self.home, name), text)

    def scope(self, name):
        """A fresh scope under app.slice."""
        self.scopes += 1
        path = os.path.join(self.apps, "%s-%d.scope" % (name, self.scopes))
        os.mkdir(path)
        return path

    def start(self, scope, args, env=None):
        """solvergate ARGS, started in `scope`."""
        # A shell joins the scope, then becomes solvergate: a refused join says why on stderr.
        join = 'echo 0 >"$0/cgroup.procs" && exec "$@"'
        return subprocess.Popen(
            ["/bin/sh", "-c", join, scope, self.solvergate, *args],
            cwd=self.home,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def beside(self, name, count):
        """`count` trivial scripts started now, each by a server in a scope of its own (a
        scope a server has handed controllers down in takes no other process)."""
        return [
            self.start(self.scope(name), ["run-cpsat", "--json", "trivial.py"])
            for _ in range(count)
        ]

    def run(self, scope, args, env=None, timeout=120):
        child = self.start(scope, args, env)
        out, err = child.communicate(timeout=timeout)
        return child.returncode, out, err

    def cpsat(self, scope, script, *limits, env=None):
        """run-cpsat --json SCRIPT: (exit code, result or None, stderr)."""
        return finish(self.start(scope, ["run-cpsat", "--json", *limits, script], env))


def finish(child):
    """A started run-cpsat --json: (exit code, result or None, stderr)."""
    out, err = child.communicate(timeout=120)
    try:
        return child.returncode, json.loads(out), err
    except ValueError:
        return child.returncode, None, err + out


def write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError as error:
        return "<%s>" % error.strerror


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def run_groups(scope):
    return sorted(name for name in os.listdir(scope) if name.startswith("solvergate-"))


def children(result):
    return [int(pid) for pid in re.findall(r"^child (\d+)$", result.get("stdout", ""), re.M)]


def brief(result):
    if result is None:
        return "no JSON result"
    diagnostic = result.get("diagnostic") or {}
    return "status %s, return_code %s, diagnostic %s" % (
        result.get("status"),
        result.get("return_code"),
        json.dumps({key: diagnostic.get(key) for key in ("category", "message", "details")}),
    )


LIMITS_LINE = re.compile(r"limits: memory (\d+) MiB \((\w+)\), processes (\d+) \((\w+)\)")


def check_detection(vm, checks):
    scope = vm.scope("check-runtime")
    code, out, err = vm.run(scope, ["check-runtime"])
    found = LIMITS_LINE.search(out)
    checks.record(
        "check-runtime says cgroup_v2",
        bool(found) and found.group(2) == "cgroup_v2" and found.group(4) == "cgroup_v2",
        found.group(0) if found else "no limits line (exit %d): %s %s" % (code, out, err),
    )
    control = read(os.path.join(scope, "cgroup.subtree_control")).split()
    leaf = os.path.join(scope, "server")
    checks.record(
        "the server made a leaf and handed memory and pids down",
        os.path.isdir(leaf) and "memory" in control and "pids" in control,
        "%s: subtree_control %r, server leaf %s"
        % (scope, " ".join(control), "present" if os.path.isdir(leaf) else "missing"),
    )
    scope = vm.scope("stdio")
    code, out, err = vm.run(scope, ["stdio"])
    found = LIMITS_LINE.search(err)
    checks.record(
        "the stdio server's start-up banner says cgroup_v2",
        bool(found) and found.group(2) == "cgroup_v2" and found.group(4) == "cgroup_v2",
        found.group(0) if found else "no limits line on stderr: %s" % err,
    )


def check_run_group(vm, checks):
    scope = vm.scope("where")
    code, result, err = vm.cpsat(
        scope, "where.py", "--memory-limit-mb", "128", "--max-processes", "32"
    )
    found = (result or {}).get("solution") or {}
    rel = scope[len("/sys/fs/cgroup") :]
    own = found.get("own", "")
    expected = {
        "memory.max": str(128 * MIB),
        "memory.oom.group": "1",
        "memory.swap.max": "0",
        "pids.max": "32",
    }
    ok = (
        code == 0
        and re.fullmatch(re.escape(rel) + r"/solvergate-\d+-\d+", own) is not None
        and found.get("parent") == rel + "/server"
        and all(found.get(key) == value for key, value in expected.items())
    )
    checks.record(
        "a run lives in its own group beside the server's leaf, with its limits",
        ok,
        json.dumps(found) if found else "exit %d, %s %s" % (code, brief(result), err),
    )
    left = run_groups(scope)
    checks.record("the run's group is removed after it", not left, "left: %s" % left)


def check_memory_bomb(vm, checks):
    scope = vm.scope("memory-bomb")
    bomb = vm.start(scope, ["run-cpsat", "--json", "--memory-limit-mb", "128", "memory_bomb.py"])
    normal = vm.beside("beside-memory-bomb", 2)
    _, result, err = finish(bomb)
    normal = [finish(run) for run in normal]
    details = ((result or {}).get("diagnostic") or {}).get("details") or {}
    killed = re.search(r"killed (\d+) process", details.get("observed", ""))
    ok = (
        result is not None
        and result["status"] == "error"
        and result["diagnostic"]["category"] == "resource_limit"
        and details.get("limit") == "memory"
        and details.get("mechanism") == "cgroup_v2"
        and details.get("value") == 128
    )
    checks.record("a memory bomb at 128 MiB is a memory resource_limit", ok, brief(result) + err)
    kids = children(result or {})
    checks.record(
        "memory.oom.group: the kernel killed the whole tree (3 sleeping children + allocator)",
        killed is not None and int(killed.group(1)) >= 4 and len(kids) == 3,
        "observed %r, children %s" % (details.get("observed"), kids),
    )
    time.sleep(0.2)
    survivors = [pid for pid in kids if alive(pid)]
    left = run_groups(scope)
    checks.record(
        "nothing of the memory bomb is left",
        bool(kids) and not survivors and not left,
        "children alive %s, groups left %s" % (survivors, left),
    )
    checks.record(
        "runs beside the memory bomb are unharmed",
        all(code == 0 and res and res["status"] == "feasible" for code, res, _ in normal),
        "; ".join("exit %d: %s %s" % (code, brief(res), err) for code, res, err in normal),
    )


def check_fork_bomb(vm, checks):
    scope = vm.scope("fork-bomb")
    bomb = vm.start(scope, ["run-cpsat", "--json", "--max-processes", "32", "fork_bomb.py"])
    normal = vm.beside("beside-fork-bomb", 2)
    _, result, err = finish(bomb)
    normal = [finish(run) for run in normal]
    details = ((result or {}).get("diagnostic") or {}).get("details") or {}
    ok = (
        result is not None
        and result["status"] == "error"
        and result["diagnostic"]["category"] == "resource_limit"
        and details.get("limit") == "processes"
        and details.get("mechanism") == "cgroup_v2"
        and details.get("value") == 32
    )
    checks.record(
        "a fork bomb at 32 processes is a processes resource_limit", ok, brief(result) + err
    )
    kids = children(result or {})
    time.sleep(0.2)
    survivors = [pid for pid in kids if alive(pid)]
    left = run_groups(scope)
    checks.record(
        "nothing of the fork bomb is left",
        len(kids) >= 20 and not survivors and not left,
        "%d children forked, alive %s, groups left %s" % (len(kids), survivors, left),
    )
    checks.record(
        "runs beside the fork bomb are unharmed",
        all(code == 0 and res and res["status"] == "feasible" for code, res, _ in normal),
        "; ".join("exit %d: %s %s" % (code, brief(res), err) for code, res, err in normal),
    )


def check_server_killed(vm, checks):
    """The server SIGKILLed while a run's tree (4 processes) sleeps in its group: its watchdog
    kills the tree. Whether the run's (now empty) group directory stays is printed, not
    checked: nothing but a later server in the same group removes it."""
    scope = vm.scope("killed")
    server = vm.start(scope, ["run-cpsat", "--json", "sleeper.py"])
    deadline = time.monotonic() + 60
    pids = []
    while time.monotonic() < deadline and len(pids) < 4:
        time.sleep(0.2)
        pids = [
            int(pid)
            for group in run_groups(scope)
            for pid in read(os.path.join(scope, group, "cgroup.procs")).split()
            if pid.isdigit()
        ]
    server.kill()
    server.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.2)
    survivors = [pid for pid in pids if alive(pid)]
    checks.record(
        "a SIGKILLed server's run tree is killed (its watchdog)",
        len(pids) == 4 and not survivors,
        "tree %s, alive after 10 s %s" % (pids, survivors),
    )
    left = run_groups(scope)
    print("cgroup2-vm: note: run groups left in a killed server's scope: %s" % left, flush=True)


def check_shared_group(vm, checks):
    """A server whose group holds another process too (started from a shell or an MCP client
    in the same scope): the kernel refuses controllers for the children of a group with
    processes, so the server must fall back to rlimits, say so, and still run scripts."""
    scope = vm.scope("shared")
    neighbour = subprocess.Popen(
        ["sleep", "600"], preexec_fn=lambda: write(os.path.join(scope, "cgroup.procs"), "0")
    )
    try:
        code, out, err = vm.run(scope, ["check-runtime"])
        found = LIMITS_LINE.search(out)
        checks.record(
            "in a group shared with another process the limits fall back to rlimits",
            bool(found) and found.group(2) == "rlimit" and found.group(4) == "rlimit",
            found.group(0) if found else "no limits line (exit %d): %s %s" % (code, out, err),
        )
        note = re.search(r"note: our cgroup v2 group .*", out)
        checks.record(
            "check-runtime says why, and the shared group is left as it was",
            note is not None
            and "other process" in note.group(0)
            and not os.path.exists(os.path.join(scope, "server")),
            "%s; server leaf %s"
            % (
                note.group(0) if note else "no note in: %s" % out,
                "made" if os.path.exists(os.path.join(scope, "server")) else "not made",
            ),
        )
        code, result, err = vm.cpsat(scope, "trivial.py")
        checks.record(
            "and a script still runs there",
            code == 0 and result is not None and result["status"] == "feasible",
            "exit %d, %s %s" % (code, brief(result), err),
        )
        code, result, err = vm.cpsat(scope, "fork_bomb.py", "--max-processes", "32")
        details = ((result or {}).get("diagnostic") or {}).get("details") or {}
        checks.record(
            "and a fork bomb there is a processes resource_limit (rlimit)",
            details.get("limit") == "processes" and details.get("mechanism") == "rlimit",
            brief(result) + err,
        )
    finally:
        neighbour.kill()
        neighbour.wait()


def figures(name, values):
    values = sorted(values)
    return "%s: n=%d median %.2f mean %.2f min %.2f p90 %.2f max %.2f" % (
        name,
        len(values),
        statistics.median(values),
        statistics.mean(values),
        values[0],
        values[int(0.9 * (len(values) - 1))],
        values[-1],
    )


def measure_join_cost(vm, rounds):
    """Figures only. A trivial run-cpsat with SOLVERGATE_LIMITS=auto against off, alternated,
    each in a fresh scope: the run's duration_ms as the result says and the command's wall time.
    Then the join itself: a forked child writes 0 to a v2 group's cgroup.procs (what the
    trampoline does), timed around the write."""
    samples = {mode: {"duration_ms": [], "wall_ms": []} for mode in ("auto", "off")}
    for _ in range(rounds):
        for mode in ("auto", "off"):
            scope = vm.scope("timing-" + mode)
            began = time.perf_counter()
            code, result, err = vm.cpsat(scope, "trivial.py", env={"SOLVERGATE_LIMITS": mode})
            wall = (time.perf_counter() - began) * 1000
            if code != 0 or result is None:
                print("cgroup2-vm: timing run failed (%s): %s %s" % (mode, brief(result), err))
                continue
            samples[mode]["duration_ms"].append(result["duration_ms"])
            samples[mode]["wall_ms"].append(wall)
    lines = []
    for mode in ("auto", "off"):
        for key in ("duration_ms", "wall_ms"):
            if samples[mode][key]:
                name = "run-cpsat trivial, limits %s, %s" % (mode, key)
                lines.append(figures(name, samples[mode][key]))
    lines.extend(measure_join(vm.apps, rounds * 2, read("/proc/self/mounts")))
    lines.extend(measure_trampoline(vm.solvergate, vm.apps, rounds * 2))
    return lines


def measure_trampoline(solvergate, parent, count):
    """The trampoline as the executor starts it, to /bin/true: into a fresh group (cloned there
    with CLONE_INTO_CGROUP, waiting outside) against no group at all, alternated; wall ms of
    the whole start and end."""
    timed = {"group": [], "none": []}
    for index in range(count):
        group = os.path.join(parent, "trampoline-%d" % index)
        os.mkdir(group)
        for mode in ("group", "none"):
            joins = ["--cgroup", os.path.join(group, "cgroup.procs")] if mode == "group" else []
            began = time.perf_counter()
            subprocess.run([solvergate, "__confine", *joins, "--", "/bin/true"], check=True)
            timed[mode].append((time.perf_counter() - began) * 1000)
        os.rmdir(group)
    return [
        figures("trampoline to /bin/true into a fresh group, ms", timed["group"]),
        figures("trampoline to /bin/true, no group, ms", timed["none"]),
    ]


def check_clone_into(vm, checks):
    """The trampoline clones the program into its run's group and waits outside it."""
    group = os.path.join(vm.apps, "clone-probe")
    os.mkdir(group)
    try:
        child = subprocess.Popen(
            [vm.solvergate, "__confine", "--cgroup", os.path.join(group, "cgroup.procs"), "--",
             "/bin/sh", "-c", "echo $PPID; cat /proc/self/cgroup; cat /proc/$PPID/cgroup"],
            stdout=subprocess.PIPE, text=True,
        )
        out, _ = child.communicate(timeout=60)
        lines = out.split()
        name = "0::" + group[len("/sys/fs/cgroup"):]
        checks.record(
            "the trampoline clones the program into the run's group and waits outside it",
            child.returncode == 0 and lines[:1] == [str(child.pid)] and lines[1:2] == [name]
            and name not in lines[2:],
            "exit %s; program's parent, own group, parent's group: %s" % (child.returncode, lines),
        )
    finally:
        os.rmdir(group)


def measure_join(parent, count, mounts):
    """A forked child writes 0 to a fresh group's cgroup.procs (what the trampoline does),
    timed around the write; beside it, a write that moves nothing (memory.high) for what any
    cgroup write costs here."""
    options = re.search(r"cgroup2 /sys/fs/cgroup cgroup2 (\S+)", mounts)
    label = "favordynmods" if options and "favordynmods" in options.group(1) else "default mount"
    group = os.path.join(parent, "join-probe")
    os.mkdir(group)
    timed = {"cgroup.procs": [], "memory.high": []}
    for _ in range(count):
        for name, value in (("cgroup.procs", "0"), ("memory.high", "max")):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_end)
                began = time.perf_counter_ns()
                write(os.path.join(group, name), value)
                os.write(write_end, str(time.perf_counter_ns() - began).encode())
                os._exit(0)
            os.close(write_end)
            took = os.read(read_end, 64)
            os.close(read_end)
            os.waitpid(pid, 0)
            timed[name].append(int(took) / 1e6)
    os.rmdir(group)
    return [
        figures("join (%s): write 0 to cgroup.procs, ms" % label, timed["cgroup.procs"]),
        figures("baseline (%s): write max to memory.high, ms" % label, timed["memory.high"]),
    ]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--uid", type=int, required=True)
    parser.add_argument("--delegated", required=True)
    parser.add_argument("--solvergate", required=True)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--join-only", action="store_true", help="only the join figures, in --delegated, as is"
    )
    args = parser.parse_args()
    if args.join_only:
        for line in measure_join(args.delegated, args.rounds * 2, read("/proc/self/mounts")):
            print(line)
        return 0
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(args.uid)
        os.setuid(args.uid)
    where = read("/proc/self/cgroup")
    print("cgroup2-vm: checks as uid %d in %s" % (os.getuid(), where), flush=True)
    vm = Vm(args.delegated, args.solvergate, "/home/user")
    vm.set_up()
    checks = Checks()
    for check in (
        check_detection,
        check_clone_into,
        check_run_group,
        check_memory_bomb,
        check_fork_bomb,
        check_server_killed,
        check_shared_group,
    ):
        try:
            check(vm, checks)
        except Exception as error:  # noqa: BLE001 - a check that breaks is a failed check
            checks.record(check.__name__, False, "raised %s: %s" % (type(error).__name__, error))
    try:
        lines = measure_join_cost(vm, args.rounds)
    except Exception as error:  # noqa: BLE001 - figures are not checks
        lines = ["the figures could not be taken: %s: %s" % (type(error).__name__, error)]
    passed = checks.block()
    print("==== cgroup2-vm: figures (not checks) ====")
    for line in lines:
        print(line)
    sys.stdout.flush()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
