"""What bounds a run, each shown through the official client.

The output cap and the hard wall-clock kill stop the whole process tree, and
the result says what happened.

The resource limits (issue 26): servers started with low limits (512 MiB,
64 processes, 64 MiB files, 64 MiB scratch), once with the host's best
mechanism (`SOLVERGATE_LIMITS=auto`) and once with rlimits only, run a memory
bomb, a fork bomb, a file-size filler, a scratch filler of many small files,
a MiniZinc model whose flattening exhausts memory, a checker that allocates
without bound and a warm-forked memory bomb: each ends `resource_limit`
naming the right limit and its value, with no process of the run left and
no scratch entry left in the server's TMPDIR. A solve in a second server
beside a memory bomb answers normally, and servers with the default limits
run ordinary models and three typical OR-Tools programs (job shop, nurses,
a TSP on an 8-worker thread pool) to their known optima.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from cpsat_helpers import (
    KNAPSACK,
    PYTHON,
    check_knapsack_answer,
    check_result_shape,
    cpsat_env,
    has_python,
    knapsack_script,
    leftover_marked_async,
    wait_marked_async,
    write,
)
from helpers import (
    HARD_MODEL,
    kept_whole,
    NEVER_CHECKER,
    NEVER_MODEL,
    OPT_MODEL,
    OPT_OBJECTIVE,
    PRINTER_MODEL,
    SAT_MODEL,
    Proc,
    call_ok,
    describe,
    leftover_solver_procs,
    solver_procs,
    structured,
    warm_forkers,
)

pytestmark = pytest.mark.anyio

ONE_MIB = 1024 * 1024


async def test_three_megabyte_printer_is_cut_at_the_cap(full, harness):
    before = solver_procs(harness.marker)
    with anyio.fail_after(60):
        result = await full.session.call_tool(
            "solve_minizinc_model",
            {"model": PRINTER_MODEL, "all_solutions": True, "timeout_ms": 30000},
        )
    # The response holds 128 KiB (its `solutions` their last); the capture is
    # read whole from the kept result.
    response = structured(result)
    assert response["solutions"][-1] == response["solution"]
    res = await kept_whole(full.session, result)
    assert res["truncated"] is True
    assert res["return_code"] is None, "the server killed the process: no exit code of its own"
    assert res["timed_out"] is False
    assert res["status"] == "satisfied"
    assert res["diagnostic"]["category"] == "output_truncated"
    assert "num_solutions" in res["diagnostic"]["message"], "the message says how to page"
    # Solutions parsed before the cut are kept, each a complete record.
    solutions = res["solutions"]
    assert 100 < len(solutions) < 1_000_000
    assert all(len(s["x"]) == 6 for s in solutions)
    assert res["solution"] == solutions[-1]
    assert len({tuple(s["x"]) for s in solutions}) == len(solutions), "duplicate solutions"
    assert len(res["stdout"]) + len(res["stderr"]) < 4 * ONE_MIB
    left = leftover_solver_procs(before, harness.marker, timeout=5)
    assert not left, f"left running after the cap: {describe(left)}"


async def test_never_finishing_model_is_killed_at_the_wall_clock(full, harness):
    before = solver_procs(harness.marker)
    started = time.monotonic()
    with anyio.fail_after(30):
        result = await full.session.call_tool(
            "solve_minizinc_model",
            {"model": NEVER_MODEL, "checker": NEVER_CHECKER, "timeout_ms": 1000},
        )
    wall = time.monotonic() - started
    res = structured(result)
    assert res["status"] == "timeout"
    assert res["timed_out"] is True
    assert res["return_code"] is None
    assert 1000 <= res["elapsed_ms"] < 15000, res["elapsed_ms"]
    assert wall < 15, wall
    assert res["diagnostic"]["category"] in ("timeout_no_incumbent", "timeout_with_incumbent")
    assert res["diagnostic"]["details"]["timed_out"] is True
    assert res["checker"]["status"] == "timeout"
    left = leftover_solver_procs(before, harness.marker, timeout=5)
    assert not left, f"left running after the timeout: {describe(left)}"


async def test_compile_check_has_the_same_hard_cap(full, harness):
    # A model whose flattening evaluates the 2e9-term sum: the check is killed.
    model = "int: s = sum(i in 1..2000000000)(i mod 3);\nvar 0..s: x;\nsolve satisfy;\n"
    before = solver_procs(harness.marker)
    with anyio.fail_after(30):
        result = await full.session.call_tool("check_minizinc_model", {"model": model, "timeout_ms": 1000})
    res = structured(result)
    assert res["status"] == "timeout"
    assert res["diagnostic"]["category"] == "timeout_no_incumbent"
    assert res["elapsed_ms"] < 15000
    left = leftover_solver_procs(before, harness.marker, timeout=5)
    assert not left, f"left running after the check timeout: {describe(left)}"


async def test_optimisation_stopped_by_its_time_limit_keeps_the_incumbent(full):
    with anyio.fail_after(30):
        result = await full.session.call_tool("solve_minizinc_model", {"model": HARD_MODEL, "timeout_ms": 1500})
    res = structured(result)
    # MiniZinc stopped itself at --time-limit: our wall clock did not fire.
    assert res["timed_out"] is False
    assert res["return_code"] == 0
    assert res["status"] == "satisfied"
    assert res["solutions"] and res["objective"] is not None
    assert res["diagnostic"]["category"] == "timeout_with_incumbent"
    assert 1500 <= res["elapsed_ms"] < 10000


# --------------------------------------------------------------------------
# Resource limits: servers with low limits, each breach a result
# --------------------------------------------------------------------------

#: The low limits every breach test's server starts with.
LOW_LIMITS = {
    "SOLVERGATE_MEMORY_LIMIT_MB": "512",
    "SOLVERGATE_MAX_PROCESSES": "64",
    "SOLVERGATE_FILE_SIZE_LIMIT_MB": "64",
    "SOLVERGATE_SCRATCH_LIMIT_MB": "64",
}

#: The host's best mechanism, and rlimits only.
MODES = ["auto", "rlimit"]

#: Script budget of a bomb: every breach ends well before it.
BOMB_TIMEOUT_MS = 20000

#: Touches 2 GiB (a repeated byte is written, unlike bytes(n)'s zero pages).
MEMORY_BOMB = """
import json
hog = b"\\x01" * (2 << 30)
print(json.dumps({"status": "feasible", "objective": len(hog), "solution": {}}))
"""

#: 3000 children, each asleep: far past 64 processes.
FORK_BOMB = """
import json, os, time
children = []
for _ in range(3000):
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children.append(pid)
print(json.dumps({"status": "feasible", "objective": len(children), "solution": {}}))
"""

#: 200 MiB into one file in the script's working dir (not its TMPDIR, so the
#: file-size limit and not the scratch measurement is what stops it).
FILE_FILLER = """
import json, os, sys
print(f"cwd={os.getcwd()}", file=sys.stderr, flush=True)
block = b"\\x01" * (1 << 20)
with open("filler.bin", "wb") as out:
    for _ in range(200):
        out.write(block)
print(json.dumps({"status": "feasible", "objective": 200, "solution": {}}))
"""

#: 100,000 files of 1 KB in the run's TMPDIR: each far under the file-size
#: limit, together far over the scratch limit.
SCRATCH_FILLER = """
import json, os, sys, tempfile
where = tempfile.gettempdir()
print(f"tmp={where}", file=sys.stderr, flush=True)
kilobyte = b"\\x01" * 1024
for i in range(100_000):
    with open(os.path.join(where, f"f{i}"), "wb") as out:
        out.write(kilobyte)
print(json.dumps({"status": "feasible", "objective": 100_000, "solution": {}}))
"""

#: Flattening 6.25 million variables and their sums takes several GiB.
FLATTEN_BOMB = (
    "int: n = 2500;\n"
    "array[1..n,1..n] of var 0..10: x;\n"
    "constraint forall(i in 1..n)(sum(j in 1..n)(x[i,j]) <= 7);\n"
    "solve satisfy;\n"
)

#: A checker that touches 2 GiB before it would accept.
CHECKER_BOMB = """
import json
hog = b"\\x01" * (2 << 30)
print(json.dumps({"status": "accepted", "errors": [], "details": {"held": len(hog)}}))
"""

#: Says who forked it (stderr), then touches 2 GiB.
PARENT_THEN_BOMB = """
import os, sys
print(f"ppid={os.getppid()}", file=sys.stderr, flush=True)
""" + MEMORY_BOMB

#: Grows 8 MiB every 0.1 s (over 512 MiB after about 6 s), so a call in
#: another server can start while it lives.
SLOW_BOMB = """
import json, time
held = []
for i in range(400):
    held.append(bytes([i % 251 + 1]) * (8 << 20))
    time.sleep(0.1)
print(json.dumps({"status": "feasible", "objective": len(held), "solution": {}}))
"""


def host_mechanism(controller: str, uid: int) -> str:
    """How the server can bound `controller` (`memory` or `pids`) on this
    host in auto mode, probed here independently of it: a delegated cgroup
    v2 controller, else a writable cgroup v1 hierarchy, else rlimits (and
    for processes, nothing at all when `uid` is root, whom RLIMIT_NPROC
    exempts)."""
    v1 = v2 = None
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, point, fstype, options, *_ = line.split()
        if fstype == "cgroup2":
            v2 = Path(point)
        elif fstype == "cgroup" and controller in options.split(","):
            v1 = Path(point)
    if v2 is not None:
        own = next(
            (line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")), None
        )
        try:
            offered = (v2 / "cgroup.controllers").read_text().split()
        except OSError:
            offered = []
        if own is not None and controller in offered and os.access(v2 / own.lstrip("/"), os.W_OK):
            return "cgroup_v2"
    if v1 is not None and os.access(v1, os.W_OK):
        return "cgroup_v1"
    return rlimit_mechanism(controller, uid)


def rlimit_mechanism(controller: str, uid: int) -> str:
    """How `controller` is bounded with rlimits only, for a server run by `uid`."""
    if controller == "pids" and uid == 0:
        return "none"
    return "rlimit"


def find_enforcement(value: Any) -> dict[str, Any] | None:
    """The limits part of a check_runtime result (an object with
    `memory_via` and `processes_via`), wherever it sits; None when the
    server does not report one."""
    if isinstance(value, dict):
        if "memory_via" in value and "processes_via" in value:
            return value
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = find_enforcement(item)
            if found is not None:
                return found
    return None


@dataclass
class LimitedServer:
    """A server with its own marker, its own TMPDIR and a known mode."""

    launched: Any
    marker: str
    tmpdir: Path
    mode: str
    #: How memory and processes are bounded: check_runtime's word when it
    #: reports it, otherwise what this host offers the mode (probed here).
    memory_via: str
    processes_via: str

    @property
    def session(self) -> Any:
        return self.launched.session

    def scratch_left(self) -> list[str]:
        """Everything under the server's TMPDIR but its scratch root, the
        root's owner file and the warm pool's helper dir (which lives as
        long as the pool): what a finished run left behind."""
        left = []
        for path in sorted(self.tmpdir.rglob("*")):
            relative = path.relative_to(self.tmpdir)
            parts = relative.parts
            if len(parts) == 1 and relative.name.startswith("solvergate-run-") and path.is_dir():
                continue
            in_root = len(parts) >= 2 and parts[0].startswith("solvergate-run-")
            if in_root and len(parts) == 2 and relative.name == "owner":
                continue
            if in_root and parts[1].startswith("solvergate-warm-helper-"):
                continue
            left.append(str(relative))
        return left

    async def assert_nothing_left(self, what: str) -> None:
        """No process of the run and no scratch entry is left, within 5 s."""
        roots = list(self.tmpdir.glob(f"solvergate-run-{self.launched.pid}-*"))
        assert len(roots) == 1, f"the server's scratch root is not in its TMPDIR {self.tmpdir}: {roots}"
        procs = await leftover_marked_async(self.marker, timeout=5)
        assert not procs, f"left running after {what}: {describe(procs)}"
        left: list[str] = []
        with anyio.move_on_after(5):
            while left := self.scratch_left():
                await anyio.sleep(0.1)
        assert not left, f"scratch left after {what}: {left[:20]} ({len(left)} entries)"


@asynccontextmanager
async def limited_server(
    harness: Any, tmpdir: Path, mode: str, env_extra: dict[str, str] | None = None, wrapper: list[str] | None = None
) -> AsyncIterator[LimitedServer]:
    """A server with the low limits in `mode`, TMPDIR `tmpdir`, cold CP-SAT
    runs unless `env_extra` says otherwise."""
    extra = {**LOW_LIMITS, "SOLVERGATE_LIMITS": mode, "SOLVERGATE_CPSAT_WARM": "0", "TMPDIR": str(tmpdir)}
    extra.update(env_extra or {})
    python = extra.pop("SOLVERGATE_CPSAT_PYTHON", PYTHON)
    env, marker = harness.tagged_env(SOLVERGATE_CPSAT_PYTHON=python, **extra)
    async with harness.open("full", env=env, cwd=tmpdir, wrapper=wrapper) as launched:
        reported = find_enforcement(structured(await launched.session.call_tool("check_runtime", {})))
        probe = host_mechanism if mode == "auto" else rlimit_mechanism
        if reported is not None:
            memory_via, processes_via = reported["memory_via"], reported["processes_via"]
        else:
            uid = os.stat(f"/proc/{launched.pid}").st_uid
            memory_via, processes_via = probe("memory", uid), probe("pids", uid)
        yield LimitedServer(launched, marker, tmpdir, mode, memory_via, processes_via)


@pytest.fixture(scope="module", params=MODES)
async def limited(request, harness, tmp_path_factory) -> AsyncIterator[LimitedServer]:
    """One low-limit server per mode, shared by the breach tests (cold runs:
    the warm pool is off; the warm case has its own server)."""
    tmpdir = tmp_path_factory.mktemp(f"limited-{request.param}-tmp")
    async with limited_server(harness, tmpdir, request.param) as server:
        yield server


def assert_breach(result: dict[str, Any], limit: str, value: int, mechanism: str) -> dict[str, Any]:
    """The run ended `error` with a `resource_limit` diagnostic naming
    `limit`, its value, its unit and how it was enforced. Returns the
    diagnostic's details."""
    assert result["status"] == "error", result
    diagnostic = result["diagnostic"]
    assert diagnostic is not None and diagnostic["category"] == "resource_limit", diagnostic
    details = diagnostic["details"]
    assert details["limit"] == limit, details
    assert details["value"] == value, details
    assert details["unit"] == ("processes" if limit == "processes" else "MiB"), details
    assert details["mechanism"] == mechanism, details
    assert isinstance(details["observed"], str) and details["observed"], details
    variable = {
        "memory": "SOLVERGATE_MEMORY_LIMIT_MB",
        "processes": "SOLVERGATE_MAX_PROCESSES",
        "file_size": "SOLVERGATE_FILE_SIZE_LIMIT_MB",
        "scratch": "SOLVERGATE_SCRATCH_LIMIT_MB",
    }[limit]
    assert f" {value} " in diagnostic["message"] and variable in diagnostic["message"], diagnostic["message"]
    return details


def said(result: dict[str, Any], key: str) -> str:
    """The value of the `key=value` line a script wrote to stderr."""
    found = re.search(rf"^{key}=(.+)$", result["stderr"], re.M)
    assert found, f"no {key}= line on the script's stderr: {result['stderr'][-2000:]!r}"
    return found[1]


async def run_script(server: LimitedServer, source: str, timeout: float = 40) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        result = await call_ok(
            server.session, "run_cpsat_python", {"source": source, "script_timeout_ms": BOMB_TIMEOUT_MS}
        )
    check_result_shape(result)
    assert result["timed_out"] is False, "a breach ends the run well before its budget"
    return result


async def test_a_memory_bomb_ends_at_the_memory_limit(limited):
    result = await run_script(limited, MEMORY_BOMB)
    assert_breach(result, "memory", 512, limited.memory_via)
    assert result["solution"] is None and result["objective"] is None, result
    await limited.assert_nothing_left("the memory bomb")


async def test_a_fork_bomb_ends_at_the_process_limit(limited):
    if limited.processes_via == "none":
        pytest.skip(
            "SOLVERGATE_LIMITS=rlimit as root: the kernel exempts root from RLIMIT_NPROC, so the server "
            "reports processes_via none; test_a_fork_bomb_as_an_unprivileged_user_under_rlimits covers it"
        )
    result = await run_script(limited, FORK_BOMB)
    assert_breach(result, "processes", 64, limited.processes_via)
    await limited.assert_nothing_left("the fork bomb")


async def test_a_file_past_the_size_limit_ends_the_run(limited):
    result = await run_script(limited, FILE_FILLER)
    # RLIMIT_FSIZE in every mode; Python ignores SIGXFSZ and sees EFBIG.
    details = assert_breach(result, "file_size", 64, "rlimit")
    assert "File too large" in details["observed"] or "SIGXFSZ" in details["observed"], details
    cwd = Path(said(result, "cwd"))
    assert cwd.is_relative_to(limited.tmpdir), f"the script ran outside the server's TMPDIR: {cwd}"
    await limited.assert_nothing_left("the file filler")
    assert not cwd.exists(), f"the script's dir and its 64 MiB file are still there: {cwd}"


async def test_many_small_files_end_at_the_scratch_limit(limited):
    result = await run_script(limited, SCRATCH_FILLER)
    details = assert_breach(result, "scratch", 64, "watchdog")
    assert result["return_code"] is None, "the executor stopped the tree: no exit code of its own"
    assert re.fullmatch(r"the scratch dir held \d+ MiB", details["observed"]), details
    held = int(details["observed"].split()[-2])
    assert 64 < held < 200, details
    scratch = Path(said(result, "tmp"))
    root = next(limited.tmpdir.glob(f"solvergate-run-{limited.launched.pid}-*"))
    assert scratch.is_relative_to(root), f"the run's TMPDIR {scratch} is not in the server's scratch root {root}"
    await limited.assert_nothing_left("the scratch filler")
    assert not scratch.exists(), f"the run's scratch dir is still there: {scratch}"


async def test_minizinc_flattening_out_of_memory_is_a_resource_limit(limited):
    before = solver_procs(limited.marker)
    with anyio.fail_after(60):
        result = await limited.session.call_tool(
            "solve_minizinc_model", {"model": FLATTEN_BOMB, "timeout_ms": BOMB_TIMEOUT_MS}
        )
    res = structured(result)
    assert res["timed_out"] is False, res
    assert res["status"] == "error", f"not unknown, not timeout: {res['status']} {res['diagnostic']}"
    assert_breach(res, "memory", 512, limited.memory_via)
    left = leftover_solver_procs(before, limited.marker, timeout=5)
    assert not left, f"left running after the flattening bomb: {describe(left)}"
    await limited.assert_nothing_left("the flattening bomb")


async def test_a_checker_that_allocates_without_bound_verifies_nothing(limited, workdir):
    script = write(workdir / "knapsack.py", knapsack_script())
    checker = write(workdir / "hog_checker.py", CHECKER_BOMB)
    with anyio.fail_after(60):
        result = await call_ok(
            limited.session,
            "run_cpsat_python_file_checked",
            {
                "script_path": str(script),
                "checker_path": str(checker),
                "problem": KNAPSACK,
                "script_timeout_ms": BOMB_TIMEOUT_MS,
            },
        )
    # The script's own answer is still the optimum ...
    check_knapsack_answer(result)
    # ... but the checker hit the memory limit: nothing is verified.
    report = result["checker"]
    assert report is not None, result
    assert report["status"] != "accepted" and report["verdict"] != "accepted", report
    diagnostic = result["diagnostic"]
    assert diagnostic is not None and diagnostic["category"] == "resource_limit", diagnostic
    assert diagnostic["details"]["limit"] == "memory", diagnostic
    assert diagnostic["details"]["value"] == 512, diagnostic
    assert diagnostic["details"]["mechanism"] == limited.memory_via, diagnostic
    await limited.assert_nothing_left("the checker bomb")


@pytest.mark.parametrize("mode", MODES)
async def test_a_warm_forked_memory_bomb_ends_at_the_memory_limit(harness, tmp_path, mode):
    # The warm pool at its default size (SOLVERGATE_CPSAT_WARM unset).
    async with limited_server(harness, tmp_path, mode, {"SOLVERGATE_CPSAT_WARM": ""}) as server:
        # An ordinary first run starts the pool (and is itself cold).
        first = await run_script(server, knapsack_script())
        assert first["status"] == "optimal", first
        check_knapsack_answer(first)
        forkers = await wait_forkers(server.marker, 1)
        assert forkers, "the warm pool never started a forker"
        result = await run_script(server, PARENT_THEN_BOMB)
        parent = int(said(result, "ppid"))
        assert parent in {p.pid for p in forkers}, (
            f"the bomb ran cold, not in a forked child: its parent {parent}, the forkers {describe(forkers)}"
        )
        assert_breach(result, "memory", 512, server.memory_via)
        await server.assert_nothing_left("the warm-forked bomb")
        # The server still answers, warm or cold.
        again = await run_script(server, knapsack_script())
        check_knapsack_answer(again)


async def wait_forkers(marker: str, count: int, timeout: float = 30.0) -> set[Proc]:
    """Waits until `count` forkers exist and have finished warming up: a
    forker still importing OR-Tools runs (state R), and the server runs a
    script cold rather than wait for it; a ready one sleeps on its socket
    (state S), seen so three polls in a row."""
    asleep = 0
    with anyio.move_on_after(timeout):
        while True:
            found = warm_forkers(marker)
            ready = len(found) >= count and all(p.state == "S" for p in found)
            asleep = asleep + 1 if ready else 0
            if asleep >= 3:
                return found
            await anyio.sleep(0.1)
    return warm_forkers(marker)


async def test_a_solve_in_a_second_server_beside_a_memory_bomb_answers_normally(limited, harness, tmp_path):
    async with limited_server(harness, tmp_path, limited.mode) as second:
        outcome: dict[str, Any] = {}

        async def bomb() -> None:
            outcome["bomb"] = await run_script(limited, SLOW_BOMB)

        async with anyio.create_task_group() as group:
            group.start_soon(bomb)
            alive = await wait_marked_async(limited.marker, has_python, timeout=15)
            assert alive, "the bomb never started"
            solved = await run_script(second, knapsack_script())
            with anyio.fail_after(30):
                minizinc = await call_ok(second.session, "solve_minizinc_model", {"model": OPT_MODEL, "timeout_ms": 20000})
            # Both answered while the bomb still grew in the first server.
            assert "bomb" not in outcome, "the bomb ended before the second server's solves: no overlap shown"
        assert solved["status"] == "optimal", solved
        check_knapsack_answer(solved)
        assert solved["diagnostic"] is None, solved["diagnostic"]
        assert minizinc["status"] == "optimal" and minizinc["objective"] == OPT_OBJECTIVE, minizinc
        assert_breach(outcome["bomb"], "memory", 512, limited.memory_via)
        await limited.assert_nothing_left("the slow bomb")
        await second.assert_nothing_left("the second server's solves")


# --------------------------------------------------------------------------
# The tree's memory, and breaches read only from a runtime's own last words
# --------------------------------------------------------------------------

#: 20 forked children, each touching 200 MiB of its own: each far under the
#: 512 MiB limit (RLIMIT_DATA alone lets every one through), together 4 GiB.
#: Each holds it 60 s, past the budget: a cgroup v1 OOM kill takes single
#: processes and the survivors would go on, so only the executor stopping
#: the tree at the first kill (or the rlimit tree watch) ends it in time.
MANY_HOLDERS = """
import json, os, sys, time
print(f"pid={os.getpid()}", file=sys.stderr, flush=True)
children = []
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        held = bytearray(b"\\x01") * (200 << 20)
        time.sleep(60)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print(json.dumps({"status": "feasible", "objective": len(children), "solution": {}}))
"""

#: A parent touching 300 MiB, then forking four children that share it and
#: exit: resident sets add up to 1.5 GiB, the tree holds 300 MiB.
SHARED_BY_FORKS = """
import json, os, time
held = bytearray(b"\\x01") * (300 << 20)
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print(json.dumps({"status": "feasible", "objective": len(held) >> 20, "solution": {}}))
"""

#: Logs the word on both streams, then fails of something else.
MENTIONS_MEMORY_ERROR = """
import json, sys
print("retrying after MemoryError", flush=True)
print("retrying after MemoryError: std::bad_alloc, out of memory", file=sys.stderr, flush=True)
raise ValueError("no feasible plan")
"""

#: A refused allocation (2^50 bytes: refused in every mode, no page touched)
#: caught and turned into another failure: the traceback shows MemoryError,
#: but the run ended on the ValueError.
CAUGHT_THEN_FAILED = """
try:
    held = bytearray(1 << 50)
except MemoryError:
    raise ValueError("gave up: no room for the table")
"""

#: The same refusal caught, and an answer printed: exit 0.
CAUGHT_AND_ANSWERED = """
import json
try:
    held = bytearray(1 << 50)
except MemoryError:
    held = bytearray(1 << 20)
print(json.dumps({"status": "feasible", "objective": len(held), "solution": {}}))
"""

#: A checker that rejects, quoting the word, and fails.
CHECKER_MENTIONS_MEMORY_ERROR = """
import json, sys
print("MemoryError", file=sys.stderr)
print(json.dumps({"status": "rejected", "errors": ["the plan would raise MemoryError on a real fleet"]}))
sys.exit(1)
"""


def assert_no_breach(result: dict[str, Any]) -> None:
    diagnostic = result["diagnostic"]
    assert diagnostic is None or diagnostic["category"] != "resource_limit", diagnostic


async def test_a_tree_of_processes_together_over_the_memory_limit_ends_at_it(limited):
    result = await run_script(limited, MANY_HOLDERS)
    details = assert_breach(result, "memory", 512, limited.memory_via)
    if limited.memory_via == "rlimit":
        # Stopped by the tree watch: no exit code of its own.
        assert result["return_code"] is None, result
        held = re.fullmatch(r"the tree's (\d+) process\(es\) held (\d+) MiB together", details["observed"])
        assert held, details
        assert int(held[1]) >= 2 and int(held[2]) > 512, details
    else:
        # The kernel killed a process at the limit (v2: the whole tree; v1:
        # one, and the executor stopped the rest at once).
        assert re.match(r"the kernel killed \d+ process\(es\) of the tree at the limit", details["observed"]), details
    assert result["solution"] is None, result
    await limited.assert_nothing_left("the many holders")


async def test_pages_shared_by_forked_processes_are_not_charged_per_process(limited):
    result = await run_script(limited, SHARED_BY_FORKS)
    assert_no_breach(result)
    assert result["status"] == "feasible" and result["objective"] == 300, result
    await limited.assert_nothing_left("the sharing forks")


@pytest.mark.parametrize(
    "source", [MENTIONS_MEMORY_ERROR, CAUGHT_THEN_FAILED], ids=["mentions", "caught_then_failed"]
)
async def test_a_failed_script_that_only_mentions_memory_error_is_no_breach(limited, source):
    result = await run_script(limited, source)
    assert result["return_code"] == 1, result
    assert "MemoryError" in result["stdout"] + result["stderr"], result
    assert result["stderr"].rstrip().endswith("ValueError: " + source.split('ValueError("')[1].split('"')[0]), result
    assert_no_breach(result)
    assert result["diagnostic"] is not None, "a failed script still says it failed"
    await limited.assert_nothing_left("the mention")


async def test_a_script_that_catches_memory_error_and_answers_is_no_breach(limited):
    """The limit held and the program went on: not a kill by a limit."""
    result = await run_script(limited, CAUGHT_AND_ANSWERED)
    assert result["return_code"] == 0, result
    assert result["status"] == "feasible" and result["objective"] == 1 << 20, result
    assert_no_breach(result)


async def test_a_failed_checker_that_quotes_memory_error_is_no_breach(limited, workdir):
    script = write(workdir / "knapsack.py", knapsack_script())
    checker = write(workdir / "quoting_checker.py", CHECKER_MENTIONS_MEMORY_ERROR)
    with anyio.fail_after(60):
        result = await call_ok(
            limited.session,
            "run_cpsat_python_file_checked",
            {
                "script_path": str(script),
                "checker_path": str(checker),
                "problem": KNAPSACK,
                "script_timeout_ms": BOMB_TIMEOUT_MS,
            },
        )
    check_knapsack_answer(result)
    report = result["checker"]
    assert report is not None and report["status"] != "accepted", report
    assert_no_breach(result)
    await limited.assert_nothing_left("the quoting checker")


async def test_the_tree_watch_leaves_a_thread_pool_and_a_solve_alone(limited):
    """At the low limits, with the tree watch sampling: CP-SAT on eight
    workers and a MiniZinc solve (minizinc and its solver, one tree)."""
    with anyio.fail_after(60):
        tsp = await call_ok(limited.session, "run_cpsat_python", {"source": TSP, "script_timeout_ms": 30000})
        minizinc = await call_ok(limited.session, "solve_minizinc_model", {"model": OPT_MODEL, "timeout_ms": 20000})
    check_sample(tsp, TSP_LENGTH)
    assert minizinc["status"] == "optimal" and minizinc["objective"] == OPT_OBJECTIVE, minizinc
    assert_no_breach(minizinc)
    await limited.assert_nothing_left("the thread pool and the solve")


# --------------------------------------------------------------------------
# The rlimit fork bomb as an unprivileged user (root is exempt from RLIMIT_NPROC)
# --------------------------------------------------------------------------

NOBODY = 65534


def as_nobody(*command: str, cwd: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command],
        capture_output=True, text=True, timeout=60, cwd=cwd, env=env,
    )  # fmt: skip


def python_for(home: Path) -> tuple[str | None, str]:
    """A Python that the unprivileged user can run and that imports
    ortools: this test run's own, or else a venv in `home` over the
    system's interpreter of the same version with this run's site-packages
    on its path. Returns it (None when there is none) and what was tried."""
    # Through a shell, and checked with `test -x` as the server checks it
    # (a stat of the path), not only by an exec.
    probe = ("sh", "-c", 'test -x "$0" && exec "$0" -c "import ortools.sat.python.cp_model"')
    tried = as_nobody(*probe, PYTHON, cwd=str(home))
    if tried.returncode == 0:
        return PYTHON, ""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = next((p for p in (f"/usr/bin/{version}", f"/usr/local/bin/{version}") if os.access(p, os.X_OK)), None)
    if system is None:
        return None, f"{PYTHON} is not usable by uid {NOBODY} ({tried.stderr.strip()[-200:]}) and no /usr/bin/{version}"
    import ortools

    site = str(Path(ortools.__file__).resolve().parent.parent)
    venv = home / "venv"
    made = subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True, timeout=60)
    if made.returncode != 0:
        return None, f"{system} -m venv failed: {made.stderr.strip()[-200:]}"
    (venv / "lib" / version / "site-packages" / "host.pth").write_text(site + "\n")
    subprocess.run(["chmod", "-R", "a+rX", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    tried = as_nobody(*probe, python, cwd=str(home))
    if tried.returncode != 0:
        return None, f"uid {NOBODY} cannot import ortools from {site}: {tried.stderr.strip()[-200:]}"
    return python, ""


@pytest.fixture
def nobody_home():
    """A 0777 dir outside pytest's root-only tmp tree, removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix="sgtest-nobody-"))
    home.chmod(0o777)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def unprivileged(harness: Any, home: Path) -> tuple[dict[str, str], list[str]]:
    """The environment and command prefix that start a server as uid
    NOBODY with its dirs in `home`; skips where that cannot be done."""
    if os.geteuid() != 0:
        pytest.skip("not root: the rlimit tests already run unprivileged")
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: cannot start the server as an unprivileged user")
    binary = as_nobody(harness.binary, "--version", cwd=str(home))
    if binary.returncode != 0:
        pytest.skip(f"uid {NOBODY} cannot run {harness.binary}: {binary.stderr.strip()[-200:]}")
    python, why = python_for(home)
    if python is None:
        pytest.skip(f"no Python with ortools usable by uid {NOBODY}: {why}")
    for name in ("home", "config", "data", "tmp"):
        (home / name).mkdir()
        (home / name).chmod(0o777)
    env_extra = {
        "HOME": str(home / "home"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "SOLVERGATE_CPSAT_PYTHON": python,
        # The suite's writable work dir lies in pytest's root-only tree,
        # which this user cannot see (start-up would refuse it).
        "SOLVERGATE_SANDBOX_WRITABLE": "",
    }
    return env_extra, ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


async def test_a_fork_bomb_as_an_unprivileged_user_under_rlimits(harness, nobody_home):
    env_extra, wrapper = unprivileged(harness, nobody_home)
    async with limited_server(harness, nobody_home / "tmp", "rlimit", env_extra, wrapper=wrapper) as server:
        assert os.stat(f"/proc/{server.launched.pid}").st_uid == NOBODY, "the server runs unprivileged"
        assert server.processes_via == "rlimit", server
        result = await run_script(server, FORK_BOMB)
        assert_breach(result, "processes", 64, "rlimit")
        await server.assert_nothing_left("the unprivileged fork bomb")


#: What check_runtime says when no user namespace can be made.
NO_USER_NAMESPACE_NOTE = (
    "processes are not bounded: this kernel refuses a user namespace of the run's own, in which alone"
    " RLIMIT_NPROC counts only the run's processes (Ubuntu's AppArmor restriction of unprivileged user"
    " namespaces, or user.max_user_namespaces at 0), and no writable cgroup has a pids controller"
)


async def test_a_refused_user_namespace_is_said_and_runs_go_on(harness, nobody_home):
    """Unprivileged, under rlimits, on a kernel that refuses user
    namespaces: the process limit is reported as not enforced, with why,
    rather than claimed, and scripts still run (without it)."""
    env_extra, wrapper = unprivileged(harness, nobody_home)
    refuse = [sys.executable, str(Path(__file__).with_name("no_user_namespaces.py"))]
    async with limited_server(harness, nobody_home / "tmp", "rlimit", env_extra, wrapper=refuse + wrapper) as server:
        assert os.stat(f"/proc/{server.launched.pid}").st_uid == NOBODY, "the server runs unprivileged"
        enforcement = find_enforcement(structured(await server.session.call_tool("check_runtime", {})))
        assert enforcement is not None
        assert enforcement["processes_via"] == "none", enforcement
        assert [note for note in enforcement["notes"] if note.startswith("processes")] == [NO_USER_NAMESPACE_NOTE]
        result = await run_script(server, knapsack_script())
        check_knapsack_answer(result)
        assert result["diagnostic"] is None, result["diagnostic"]
        await server.assert_nothing_left("a script without a user namespace")


# --------------------------------------------------------------------------
# The defaults: ordinary models and typical OR-Tools programs are unaffected
# --------------------------------------------------------------------------

#: A 3 x 3 job shop with interval variables; optimal makespan 11 (also
#: found by exhaustive search over start times).
JOB_SHOP = """
import json
from ortools.sat.python import cp_model

# (machine, duration) per task, in order, for 3 jobs on 3 machines.
JOBS = [
    [(0, 3), (1, 2), (2, 2)],
    [(0, 2), (2, 1), (1, 4)],
    [(1, 4), (2, 3), (0, 1)],
]
horizon = sum(d for job in JOBS for _, d in job)
model = cp_model.CpModel()
starts, ends, per_machine = {}, {}, {m: [] for m in range(3)}
for j, job in enumerate(JOBS):
    for t, (machine, duration) in enumerate(job):
        start = model.NewIntVar(0, horizon, f"s{j}_{t}")
        end = model.NewIntVar(0, horizon, f"e{j}_{t}")
        per_machine[machine].append(model.NewIntervalVar(start, duration, end, f"i{j}_{t}"))
        starts[j, t], ends[j, t] = start, end
for intervals in per_machine.values():
    model.AddNoOverlap(intervals)
for j, job in enumerate(JOBS):
    for t in range(len(job) - 1):
        model.Add(starts[j, t + 1] >= ends[j, t])
makespan = model.NewIntVar(0, horizon, "makespan")
model.AddMaxEquality(makespan, [ends[j, len(job) - 1] for j, job in enumerate(JOBS)])
model.Minimize(makespan)
solver = cp_model.CpSolver()
solver.parameters.max_time_in_seconds = 20
status = solver.Solve(model)
print(json.dumps({
    "status": "optimal" if status == cp_model.OPTIMAL else solver.StatusName(status).lower(),
    "objective": int(solver.ObjectiveValue()),
    "solution": {"starts": [[solver.Value(starts[j, t]) for t in range(len(job))] for j, job in enumerate(JOBS)]},
}))
"""
JOB_SHOP_MAKESPAN = 11

#: 4 nurses, 3 shifts, 3 days, 2-3 shifts each; maximise granted requests.
#: 12 requests, three contested slots (day 0 shift 2 by three nurses, day 1
#: shift 2 and day 2 shift 0 by two each): at most 12 - 2 - 1 - 1 = 8.
NURSES = """
import json
from ortools.sat.python import cp_model

NURSES, SHIFTS, DAYS = 4, 3, 3
# REQUESTS[n][d][s] = 1 when nurse n asked for shift s on day d.
REQUESTS = [
    [[0, 0, 1], [0, 0, 1], [1, 0, 0]],
    [[0, 0, 1], [1, 0, 0], [0, 0, 1]],
    [[0, 1, 0], [0, 0, 1], [0, 1, 0]],
    [[0, 0, 1], [0, 1, 0], [1, 0, 0]],
]
model = cp_model.CpModel()
work = {(n, d, s): model.NewBoolVar(f"w{n}_{d}_{s}") for n in range(NURSES) for d in range(DAYS) for s in range(SHIFTS)}
for d in range(DAYS):
    for s in range(SHIFTS):
        model.AddExactlyOne(work[n, d, s] for n in range(NURSES))
    for n in range(NURSES):
        model.AddAtMostOne(work[n, d, s] for s in range(SHIFTS))
low = SHIFTS * DAYS // NURSES
for n in range(NURSES):
    total = sum(work[n, d, s] for d in range(DAYS) for s in range(SHIFTS))
    model.Add(total >= low)
    model.Add(total <= low + 1)
model.Maximize(sum(REQUESTS[n][d][s] * work[n, d, s] for n, d, s in work))
solver = cp_model.CpSolver()
solver.parameters.max_time_in_seconds = 20
status = solver.Solve(model)
print(json.dumps({
    "status": "optimal" if status == cp_model.OPTIMAL else solver.StatusName(status).lower(),
    "objective": int(solver.ObjectiveValue()),
    "solution": {"rota": [[next(n for n in range(NURSES) if solver.Value(work[n, d, s])) for s in range(SHIFTS)] for d in range(DAYS)]},
}))
"""
NURSES_GRANTED = 8

#: 10 cities, rounded Euclidean distances, AddCircuit, 8 workers; the
#: optimal tour is 124 long (also found by enumerating every tour).
TSP = """
import json, math
from ortools.sat.python import cp_model

CITIES = [(0, 0), (12, 5), (3, 17), (25, 9), (8, 30), (19, 22), (30, 28), (5, 8), (27, 1), (15, 14)]
n = len(CITIES)
dist = [[round(math.dist(a, b)) for b in CITIES] for a in CITIES]
model = cp_model.CpModel()
arcs, edge = [], {}
for i in range(n):
    for j in range(n):
        if i != j:
            edge[i, j] = model.NewBoolVar(f"e{i}_{j}")
            arcs.append((i, j, edge[i, j]))
model.AddCircuit(arcs)
model.Minimize(sum(dist[i][j] * var for (i, j), var in edge.items()))
solver = cp_model.CpSolver()
solver.parameters.num_workers = 8
solver.parameters.max_time_in_seconds = 30
status = solver.Solve(model)
tour, city = [0], 0
while len(tour) < n:
    city = next(j for j in range(n) if j != city and solver.Value(edge[city, j]))
    tour.append(city)
print(json.dumps({
    "status": "optimal" if status == cp_model.OPTIMAL else solver.StatusName(status).lower(),
    "objective": int(solver.ObjectiveValue()),
    "solution": {"tour": tour},
}))
"""
TSP_LENGTH = 124
TSP_CITIES = [(0, 0), (12, 5), (3, 17), (25, 9), (8, 30), (19, 22), (30, 28), (5, 8), (27, 1), (15, 14)]


@pytest.fixture(scope="module", params=MODES)
async def defaults(request, harness, tmp_path_factory) -> AsyncIterator[Any]:
    """A server with the default limits (and the default warm pool)."""
    tmpdir = tmp_path_factory.mktemp(f"defaults-{request.param}-tmp")
    env, marker = cpsat_env(harness, SOLVERGATE_LIMITS=request.param, TMPDIR=str(tmpdir))
    async with harness.open("full", env=env, cwd=tmpdir) as launched:
        yield launched


def check_sample(result: dict[str, Any], objective: int) -> None:
    check_result_shape(result)
    assert result["status"] == "optimal", result
    assert result["objective"] == objective, result
    assert result["diagnostic"] is None, result["diagnostic"]
    assert result["return_code"] == 0, result


async def test_defaults_leave_a_job_shop_alone(defaults):
    with anyio.fail_after(60):
        result = await call_ok(defaults.session, "run_cpsat_python", {"source": JOB_SHOP, "script_timeout_ms": 30000})
    check_sample(result, JOB_SHOP_MAKESPAN)
    starts = result["solution"]["starts"]
    jobs = [[(0, 3), (1, 2), (2, 2)], [(0, 2), (2, 1), (1, 4)], [(1, 4), (2, 3), (0, 1)]]
    tasks = [(starts[j][t], starts[j][t] + d, m) for j, job in enumerate(jobs) for t, (m, d) in enumerate(job)]
    assert max(end for _, end, _ in tasks) == JOB_SHOP_MAKESPAN
    for j, job in enumerate(jobs):
        assert all(starts[j][t + 1] >= starts[j][t] + job[t][1] for t in range(2)), starts
    for a, b in itertools.combinations(tasks, 2):
        assert a[2] != b[2] or a[1] <= b[0] or b[1] <= a[0], f"overlap on machine {a[2]}: {starts}"


async def test_defaults_leave_a_nurse_rota_alone(defaults):
    with anyio.fail_after(60):
        result = await call_ok(defaults.session, "run_cpsat_python", {"source": NURSES, "script_timeout_ms": 30000})
    check_sample(result, NURSES_GRANTED)
    rota = result["solution"]["rota"]
    for day in rota:
        assert len(set(day)) == 3, f"a nurse works twice a day: {rota}"
    counts = [sum(day.count(n) for day in rota) for n in range(4)]
    assert all(2 <= c <= 3 for c in counts), counts


async def test_defaults_leave_a_tsp_on_eight_workers_alone(defaults):
    with anyio.fail_after(60):
        result = await call_ok(defaults.session, "run_cpsat_python", {"source": TSP, "script_timeout_ms": 30000})
    check_sample(result, TSP_LENGTH)
    tour = result["solution"]["tour"]
    assert sorted(tour) == list(range(10)), tour
    length = sum(round(math.dist(TSP_CITIES[a], TSP_CITIES[b])) for a, b in zip(tour, tour[1:] + tour[:1]))
    assert length == TSP_LENGTH, tour


async def test_defaults_leave_minizinc_alone(defaults):
    with anyio.fail_after(60):
        optimal = await call_ok(defaults.session, "solve_minizinc_model", {"model": OPT_MODEL, "timeout_ms": 20000})
        every = await call_ok(
            defaults.session, "solve_minizinc_model", {"model": SAT_MODEL, "all_solutions": True, "timeout_ms": 20000}
        )
    assert optimal["status"] == "optimal" and optimal["objective"] == OPT_OBJECTIVE, optimal
    assert optimal["diagnostic"] is None or optimal["diagnostic"]["category"] != "resource_limit", optimal
    assert sorted(s["x"] for s in every["solutions"]) == [1, 2, 3], every
