"""The warm CP-SAT executor through the real client: forked runs give the
same results as cold ones, leave no state behind, die whole on timeout,
survive a killed forker, and `SOLVERGATE_CPSAT_WARM=0` keeps every run cold
— each shown by process ancestry (who is the script's parent). And
`check_runtime` introspection is cached: counted through wrappers that log
every start of the interpreter and of `minizinc`.
"""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import anyio
import pytest

from cpsat_helpers import (
    PPID_SCRIPT,
    PYTHON,
    cpsat_server,
    describe,
    leftover_marked_async,
    wait_marked_async,
    warm_server_ready,
)
from helpers import _stat, call_ok, declare_wrapped, warm_forkers

pytestmark = pytest.mark.anyio

#: Prints, beside a seeded solve, what the script sees of its process.
PROBE_SCRIPT = """
import json, os, sys
from ortools.sat.python import cp_model
import solvergate
m = cp_model.CpModel()
xs = [m.NewIntVar(0, 20, f"x{i}") for i in range(6)]
m.Add(sum(xs) == 37)
m.AddAllDifferent(xs)
m.Maximize(sum((i + 1) * x for i, x in enumerate(xs)))
s = cp_model.CpSolver()
s.parameters.random_seed = int(os.environ.get("SOLVERGATE_CPSAT_SEED", "0"))
s.parameters.num_workers = 1
status = s.Solve(m)
here = os.path.dirname(os.path.abspath(sys.argv[0]))
print("to stderr", file=sys.stderr)
print(json.dumps({
    "status": "optimal" if status == cp_model.OPTIMAL else "error",
    "objective": s.ObjectiveValue(),
    "solution": {
        "x": [s.Value(x) for x in xs],
        "argv": sys.argv[1:],
        "argv0": os.path.basename(sys.argv[0]),
        "cwd_is_script_dir": os.getcwd() == here,
        "path0_is_script_dir": sys.path[0] == here,
        "helper_second": sys.path[1].endswith("/lib") and solvergate.__file__.startswith(sys.path[1]),
        "pythonpath_first_is_helper": os.environ["PYTHONPATH"].split(":")[0] == sys.path[1],
        "seed": os.environ.get("SOLVERGATE_CPSAT_SEED"),
        "config": os.environ.get("SOLVERGATE_CPSAT_CONFIG") is not None,
        "stdin": sys.stdin.read(),
        "name": __name__,
        "session_leader": os.getsid(0) == os.getpid(),
        "ppid": os.getppid(),
    },
}))
"""


def parent_comm(pid: int) -> str | None:
    proc = _stat(pid)
    return proc.comm if proc else None


async def wait_forkers(marker: str, count: int, timeout: float = 30.0) -> set:
    with anyio.move_on_after(timeout):
        while True:
            found = warm_forkers(marker)
            if len(found) >= count:
                return found
            await anyio.sleep(0.1)
    return warm_forkers(marker)


async def run_watched(session, marker, tool, arguments, predicate):
    """Runs one tool call while scanning /proc: the reply and the marked
    processes seen while it ran (once `predicate` held)."""
    seen: dict[str, set] = {}
    result: dict[str, object] = {}

    async def call() -> None:
        result["value"] = await session.call_tool(tool, arguments)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        seen["procs"] = await wait_marked_async(marker, predicate, timeout=15)
    return result["value"], seen["procs"]


def comparable(result: dict) -> dict:
    result = dict(result)
    result.pop("duration_ms")
    solution = dict(result["solution"])
    solution.pop("ppid")
    result["solution"] = solution
    result.pop("stdout")
    return result


async def test_warm_and_cold_runs_agree_and_differ_only_in_the_parent(harness):
    arguments = {"source": PROBE_SCRIPT, "seed": 11, "args": ["--n", "3"], "script_timeout_ms": 20000}
    async with warm_server_ready(harness) as (launched, marker, forkers):
        warm = await call_ok(launched.session, "run_cpsat_python", arguments)
        assert warm["solution"]["ppid"] in {p.pid for p in forkers}, (warm, describe(forkers))
    async with cpsat_server(harness, SOLVERGATE_CPSAT_WARM="0") as (launched, marker):
        cold = await call_ok(launched.session, "run_cpsat_python", arguments)
        assert parent_comm(cold["solution"]["ppid"]) == "solvergate", cold
        assert not warm_forkers(marker)
    assert warm["status"] == "optimal", warm
    assert warm["solution"]["seed"] == "11" and warm["solution"]["argv"] == ["--n", "3"], warm
    assert warm["solution"]["session_leader"] and warm["solution"]["name"] == "__main__", warm
    assert warm["stderr"] == "to stderr\n", warm
    assert comparable(warm) == comparable(cold)
    # stdout differs only in the parent pid.
    assert json.loads(warm["stdout"])["objective"] == json.loads(cold["stdout"])["objective"]


async def test_module_state_does_not_leak_between_warm_runs(harness):
    poison = (
        "import json, os, builtins, random\n"
        "from ortools.sat.python import cp_model\n"
        "cp_model.CpSolver.Solve = lambda self, model: 'patched'\n"
        "cp_model.POISONED = True\n"
        "builtins.POISONED = True\n"
        "os.environ['POISONED'] = '1'\n"
        "print(json.dumps({'status': 'feasible', 'objective': 0, 'solution': {'ppid': os.getppid(), 'r': random.random()}}))\n"
    )
    check = (
        "import json, os, builtins, random\n"
        "from ortools.sat.python import cp_model\n"
        "m = cp_model.CpModel(); x = m.NewIntVar(0, 5, 'x'); m.Maximize(x)\n"
        "s = cp_model.CpSolver(); st = s.Solve(m)\n"
        "print(json.dumps({'status': 'optimal' if st == cp_model.OPTIMAL else 'error', 'objective': s.Value(x),\n"
        "  'solution': {'patched': hasattr(cp_model, 'POISONED') or hasattr(builtins, 'POISONED'),\n"
        "               'env': 'POISONED' in os.environ, 'ppid': os.getppid(), 'r': random.random()}}))\n"
    )
    async with warm_server_ready(harness) as (launched, marker, forkers):
        pids = {p.pid for p in forkers}
        first = await call_ok(launched.session, "run_cpsat_python", {"source": poison})
        second = await call_ok(launched.session, "run_cpsat_python", {"source": check})
        third = await call_ok(launched.session, "run_cpsat_python", {"source": check})
    for run in (first, second, third):
        assert run["solution"]["ppid"] in pids, f"not a warm run: {run}"
    assert second["status"] == "optimal" and second["objective"] == 5, second
    assert second["solution"]["patched"] is False and second["solution"]["env"] is False, second
    # Every child draws its own random stream, as a fresh interpreter would.
    assert len({first["solution"]["r"], second["solution"]["r"], third["solution"]["r"]}) == 3


async def test_a_timeout_kills_the_forked_tree_and_the_pool_stays_healthy(harness):
    source = (
        "import json, os, subprocess, time\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        "print(json.dumps({'status': 'feasible', 'objective': 1,\n"
        "  'solution': {'grandchild': child.pid, 'ppid': os.getppid(), 'me': os.getpid()}}), flush=True)\n"
        "time.sleep(300)\n"
    )
    async with warm_server_ready(harness) as (launched, marker, forkers):
        pids = {p.pid for p in forkers}
        reply, during = await run_watched(
            launched.session,
            marker,
            "run_cpsat_python",
            {"source": source, "script_timeout_ms": 2500},
            lambda procs: len(procs) >= 2,
        )
        result = reply.structured_content
        assert result["status"] == "timeout", result
        assert result["solution"]["ppid"] in pids, result
        seen = {p.pid for p in during}
        assert {result["solution"]["grandchild"], result["solution"]["me"]} <= seen, describe(during)
        left = await leftover_marked_async(marker)
        assert not left, f"left running after the timeout: {describe(left)}"
        assert {p.pid for p in warm_forkers(marker)} == pids, "a forker was lost"
        again = await call_ok(launched.session, "run_cpsat_python", {"source": PROBE_SCRIPT, "seed": 1})
        assert again["status"] == "optimal" and again["solution"]["ppid"] in pids, again


async def test_a_forker_killed_from_outside_is_replaced(harness):
    async with warm_server_ready(harness) as (launched, marker, forkers):
        for proc in forkers:
            os.kill(proc.pid, signal.SIGKILL)
        after = await call_ok(launched.session, "run_cpsat_python", {"source": PROBE_SCRIPT, "seed": 2})
        assert after["status"] == "optimal", after
        killed = {p.pid for p in forkers}
        with anyio.move_on_after(30):
            while True:
                fresh = warm_forkers(marker)
                if len(fresh) == 2 and not {p.pid for p in fresh} & killed:
                    break
                await anyio.sleep(0.1)
        fresh = warm_forkers(marker)
        assert len(fresh) == 2 and not {p.pid for p in fresh} & killed, describe(fresh)
        # A new forker exists before it has imported ortools; until one is
        # ready a run starts cold. Within 30 s a run must come from one.
        fresh_pids = {p.pid for p in fresh}
        with anyio.move_on_after(30):
            while True:
                warm = await call_ok(launched.session, "run_cpsat_python", {"source": PROBE_SCRIPT, "seed": 2})
                if warm["solution"]["ppid"] in fresh_pids:
                    break
                await anyio.sleep(0.2)
        assert warm["solution"]["ppid"] in fresh_pids, (warm, launched.pid)
        assert comparable(warm) == comparable(after)


async def test_warm_zero_runs_every_script_cold(harness):
    async with cpsat_server(harness, SOLVERGATE_CPSAT_WARM="0") as (launched, marker):
        parents = set()
        for seed in range(3):
            run = await call_ok(launched.session, "run_cpsat_python", {"source": PROBE_SCRIPT, "seed": seed})
            assert run["status"] == "optimal", run
            parents.add(parent_comm(run["solution"]["ppid"]))
            await anyio.sleep(0.5)
            assert not warm_forkers(marker)
        assert parents == {"solvergate"}


# ---- cached introspection ------------------------------------------------------------


def logging_wrapper(path: Path, real: str, log: Path) -> Path:
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> {log}\nexec {real} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


async def test_check_runtime_is_cached_until_a_binary_changes(harness):
    work = harness.work()
    log = work / "starts.log"
    log.touch()
    python = logging_wrapper(work / "python", PYTHON, log)
    runtime = work / "runtime"
    (runtime / "bin").mkdir(parents=True)
    minizinc = logging_wrapper(runtime / "bin" / "minizinc", f"{harness.runtime_dir}/bin/minizinc", log)
    declare_wrapped(runtime, harness.runtime_dir)
    env, _marker = harness.tagged_env(SOLVERGATE_CPSAT_PYTHON=str(python), SOLVERGATE_RUNTIME_DIR=str(runtime))

    def starts() -> list[str]:
        return [line for line in log.read_text().splitlines() if "--solvers-json" in line or "--version" in line or "import ortools" in line]

    async with harness.open("full", env=env) as launched:
        first = await call_ok(launched.session, "check_runtime", {})
        after_first = starts()
        second = await call_ok(launched.session, "check_runtime", {})
        after_second = starts()
        assert first == second
        assert first["cpsat"]["installed"] and first["minizinc_version"], first
        assert after_second == after_first, "the second check_runtime started a process"
        # One probe each, whether start-up or the first call did it.
        assert sum("import ortools" in line for line in after_first) == 1, after_first
        assert sum("--version" in line for line in after_first) == 1, after_first
        assert sum("--solvers-json" in line for line in after_first) == 1, after_first
        # A changed interpreter or binary (size, mtime) is probed again.
        with python.open("a") as handle:
            handle.write("# changed\n")
        with minizinc.open("a") as handle:
            handle.write("# changed\n")
        third = await call_ok(launched.session, "check_runtime", {})
        after_third = starts()
        assert third == first
        assert sum("import ortools" in line for line in after_third) == 2, after_third
        assert sum("--version" in line for line in after_third) == 2, after_third
        assert sum("--solvers-json" in line for line in after_third) == 2, after_third


async def test_a_cancelled_warm_job_dies_whole_and_the_next_run_is_warm(harness):
    source = (
        "import json, os, subprocess, time\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        "time.sleep(300)\n"
    )
    async with warm_server_ready(harness) as (launched, marker, forkers):
        pids = {p.pid for p in forkers}
        submitted = await call_ok(launched.session, "submit_cpsat_python_job", {"source": source, "script_timeout_ms": 60000})
        during = await wait_marked_async(marker, lambda procs: len(procs) >= 2, timeout=15)
        assert len(during) >= 2, "script and grandchild never both showed up: the scan would prove nothing"
        assert {p.ppid for p in during} & pids, f"not a warm run: {describe(during)}"
        await call_ok(launched.session, "cancel_cpsat_python_job", {"job_id": submitted["job_id"]})
        left = await leftover_marked_async(marker, timeout=10)
        assert not left, f"left running after the cancel: {describe(left)}"
        job = await call_ok(launched.session, "get_cpsat_python_job", {"job_id": submitted["job_id"]})
        assert job["state"] == "cancelled", job
        # The pool is whole again (the borrowed forker kept or replaced) and serves the next run.
        refilled = await wait_forkers(marker, 2)
        assert len(refilled) == 2, describe(refilled)
        with anyio.move_on_after(30):
            while True:
                run = await call_ok(launched.session, "run_cpsat_python", {"source": PROBE_SCRIPT, "seed": 3})
                if run["solution"]["ppid"] in {p.pid for p in warm_forkers(marker)}:
                    break
                await anyio.sleep(0.2)
        assert run["status"] == "optimal" and run["solution"]["ppid"] in {p.pid for p in warm_forkers(marker)}, run


async def test_a_warm_flood_keeps_head_tail_and_answer(harness):
    source = (
        "import json, os, sys\n"
        "sys.stdout.write('o' * 3_000_000 + '\\n')\n"
        "sys.stderr.write('e' * 3_000_000 + '\\n')\n"
        "print(json.dumps({'status': 'feasible', 'objective': 1, 'solution': {'ppid': os.getppid()}}))\n"
    )
    async with warm_server_ready(harness) as (launched, marker, forkers):
        run = await call_ok(launched.session, "run_cpsat_python", {"source": source, "script_timeout_ms": 30000})
    assert run["solution"]["ppid"] in {p.pid for p in forkers}, run
    assert run["status"] == "feasible" and run["truncated"] is True, {k: run[k] for k in ("status", "truncated")}
    assert len(run["stdout"]) + len(run["stderr"]) <= 1024 * 1024 + 200
    assert "bytes of output dropped here" in run["stdout"] and run["stderr"].startswith("eee")


def test_sigkill_of_the_server_takes_the_forkers_and_a_forked_tree_with_it(harness):
    """The watchdog knows the forkers' sessions and each forked child's: a
    SIGKILLed server leaves neither a forker nor a warm script nor its child."""
    import time

    from cpsat_helpers import cpsat_env
    from helpers import RawServer, leftover_marked, marked_procs

    env, marker = cpsat_env(harness)
    server = RawServer([harness.binary, "stdio", "--toolset", "full"], env, harness.scratch("warm-kill") / "stderr.txt")
    try:
        server.initialize()
        deadline = time.monotonic() + 60
        while True:
            reply = server.call("tools/call", {"name": "run_cpsat_python", "arguments": {"source": PPID_SCRIPT}})
            ppid = reply["result"]["structuredContent"]["solution"]["ppid"]
            forkers = warm_forkers(marker)
            if ppid in {p.pid for p in forkers} or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ppid in {p.pid for p in forkers}, "no run was ever warm"
        source = "import subprocess, time\nchild = subprocess.Popen(['sleep', '300'])\ntime.sleep(300)\n"
        submitted = server.call(
            "tools/call",
            {"name": "submit_cpsat_python_job", "arguments": {"source": source, "script_timeout_ms": 60000}},
        )
        assert "result" in submitted, submitted
        deadline = time.monotonic() + 15
        while not any(p.comm == "sleep" for p in marked_procs(marker)) and time.monotonic() < deadline:
            time.sleep(0.05)
        running = marked_procs(marker)
        assert "sleep" in {p.comm for p in running}, describe(running)
        assert {p.ppid for p in running} & {p.pid for p in forkers}, f"not a warm run: {describe(running)}"
        server.proc.kill()
        assert server.wait(timeout=5) is not None
        # Orphaned forkers lose their solvergate parent, so the scan counts them.
        left = leftover_marked(marker, timeout=15.0)
        assert not left, f"alive after the server was killed: {describe(left)}"
    finally:
        server.stop()
