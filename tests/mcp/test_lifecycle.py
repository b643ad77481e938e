"""Concurrency, cancellation, shutdown, the stdio channel and the banner."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from cpsat_helpers import cpsat_env
from helpers import (
    HARD_MODEL,
    NEVER_CHECKER,
    NEVER_MODEL,
    OPT_MODEL,
    PRINTER_MODEL,
    SAT_MODEL,
    SYNTAX_ERROR_MODEL,
    UNSAT_MODEL,
    RawServer,
    all_procs,
    describe,
    leftover_marked,
    leftover_solver_procs,
    marked_procs,
    non_jsonrpc_lines,
    solver_procs,
    structured,
    wait_for_solver_procs,
    zombie_children,
)

pytestmark = pytest.mark.anyio

# (id, arguments of a long solve, the process that shows it is running)
LONG_SOLVES = [
    ("hard", {"model": HARD_MODEL, "timeout_ms": 60000}, "fzn-gecode"),
    ("never", {"model": NEVER_MODEL, "checker": NEVER_CHECKER, "timeout_ms": 60000}, "minizinc"),
]


async def test_other_requests_answer_while_a_solve_runs(full):
    running = anyio.Event()
    finished: dict[str, float] = {}
    outcome: dict[str, dict] = {}

    async def on_progress(progress, total, message):
        if progress == 2:
            running.set()

    async def long_solve():
        result = await full.session.call_tool(
            "solve_minizinc_model", {"model": HARD_MODEL, "timeout_ms": 3000}, progress_callback=on_progress
        )
        finished["at"] = time.monotonic()
        outcome["result"] = structured(result)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(long_solve)
            await running.wait()
            await anyio.sleep(0.3)
            status = structured(await full.session.call_tool("check_runtime", {}))
            answered = time.monotonic()
            assert status["installed"] is True
            assert "at" not in finished, "check_runtime waited for the solve"
            listed = structured(await full.session.call_tool("list_available_solvers", {}))
            assert listed["solvers"]
            assert "at" not in finished
    res = outcome["result"]
    assert res["elapsed_ms"] >= 2500, "the solve really ran until its limit"
    assert res["solutions"], "the hard model finds incumbents"
    assert finished["at"] > answered


@pytest.mark.parametrize(("arguments", "comm"), [c[1:] for c in LONG_SOLVES], ids=[c[0] for c in LONG_SOLVES])
async def test_cancelled_solve_stops_its_processes(harness, arguments, comm):
    before = await anyio.to_thread.run_sync(solver_procs, harness.marker)
    async with harness.open("core") as launched:
        session = launched.session
        running = anyio.Event()
        holder: dict[str, object] = {}

        async def on_progress(progress, total, message):
            if progress == 2:
                running.set()

        async def long_solve():
            with anyio.CancelScope() as scope:
                holder["scope"] = scope
                holder["result"] = await session.call_tool("solve_minizinc_model", arguments, progress_callback=on_progress)

        with anyio.fail_after(40):
            async with anyio.create_task_group() as tg:
                tg.start_soon(long_solve)
                await running.wait()
                started = await anyio.to_thread.run_sync(wait_for_solver_procs, harness.marker, 10.0, comm)
                assert started, f"no {comm} process appeared: the scan would prove nothing"
                holder["scope"].cancel()
        assert "result" not in holder, "the call finished instead of being cancelled"

        left = await anyio.to_thread.run_sync(leftover_solver_procs, before, harness.marker, 5.0)
        assert not left, f"still running after the cancel: {describe(left)}"

        # The session still answers.
        with anyio.fail_after(20):
            status = structured(await session.call_tool("check_runtime", {}))
            assert status["installed"] is True
            res = structured(await session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}))
            assert res["status"] == "optimal"


# ---- raw stdio ------------------------------------------------------------


@pytest.fixture
def raw(harness):
    servers: list[RawServer] = []

    def launch(toolset: str = "core") -> RawServer:
        stderr_path = harness.scratch("raw") / "stderr.txt"
        server = RawServer([harness.binary, "stdio", "--toolset", toolset], harness.server_env(), stderr_path)
        servers.append(server)
        return server

    yield launch
    for server in servers:
        server.stop()


def stop_by(server: RawServer, how: str) -> None:
    if how == "close-stdin":
        server.close_stdin()
    else:
        server.proc.send_signal(signal.SIGTERM)


@pytest.mark.parametrize("how", ["close-stdin", "sigterm"])
@pytest.mark.parametrize(("arguments", "comm"), [c[1:] for c in LONG_SOLVES], ids=[c[0] for c in LONG_SOLVES])
def test_shutdown_during_a_solve_leaves_nothing_running(harness, raw, how, arguments, comm):
    before = solver_procs(harness.marker)
    server = raw()
    init = server.initialize()
    assert init["result"]["serverInfo"]["name"] == "solvergate"
    server.request("tools/call", {"name": "solve_minizinc_model", "arguments": arguments})
    assert wait_for_solver_procs(harness.marker, 10.0, comm), f"no {comm} process appeared"

    stopped = time.monotonic()
    stop_by(server, how)
    code = server.wait(timeout=8)
    assert code is not None, f"server still running 8 s after {how}"
    assert time.monotonic() - stopped < 7, "server took too long to exit"
    left = leftover_solver_procs(before, harness.marker, 3.0)
    assert not left, f"left running after {how}: {describe(left)}"
    assert non_jsonrpc_lines(server.lines) == []


#: A CP-SAT job that starts a child of its own and then waits.
SLEEPING_SCRIPT = (
    "import subprocess, time\n"
    "child = subprocess.Popen(['sleep', '300'])\n"
    "time.sleep(300)\n"
)


def test_sigkill_of_the_server_leaves_no_child_and_no_scratch_dir(harness):
    """SIGKILL gives the server no chance to clean up: its watchdog stops a
    running solve (minizinc and its solver), a CP-SAT script and the script's
    own child, and removes the server's scratch root."""
    env, marker = cpsat_env(harness)
    server = RawServer([harness.binary, "stdio", "--toolset", "full"], env, harness.scratch("sigkill") / "stderr.txt")
    try:
        sigkill_during_work(server, marker)
    finally:
        server.stop()


#: How many times the soak kills a server (the note records a 100-trial run).
SIGKILL_TRIALS = int(os.environ.get("SOLVERGATE_SIGKILL_TRIALS", "10"))


def test_repeated_sigkills_leave_no_survivor_and_no_scratch_root(harness):
    """SIGKILL, again and again, with minizinc, fzn-gecode and python (and
    the script's own child) running: no process survives any trial, and no
    scratch root is left once a next server has started."""
    env, marker = cpsat_env(harness)
    temp = Path(tempfile.gettempdir())
    pids = []
    for trial in range(SIGKILL_TRIALS):
        server = RawServer(
            [harness.binary, "stdio", "--toolset", "full"], env, harness.scratch(f"soak{trial}") / "stderr.txt"
        )
        try:
            pids.append(server.pid)
            sigkill_during_work(server, marker)
        finally:
            server.stop()
    # A next start sweeps whatever a dead server's watchdog could not.
    last = RawServer([harness.binary, "stdio", "--toolset", "core"], env, harness.scratch("soak-last") / "stderr.txt")
    try:
        last.initialize()
        left = [root for pid in pids for root in temp.glob(f"solvergate-run-{pid}-*")]
        assert not left, left
    finally:
        last.stop()


def sigkill_during_work(server: RawServer, marker: str) -> None:
    server.initialize()
    solve = server.call("tools/call", {"name": "submit_solve_job", "arguments": {"model": HARD_MODEL, "timeout_ms": 60000}})
    assert "result" in solve, solve
    script = server.call(
        "tools/call",
        {"name": "submit_cpsat_python_job", "arguments": {"source": SLEEPING_SCRIPT, "script_timeout_ms": 60000}},
    )
    assert "result" in script, script
    assert wait_for_solver_procs(marker, 10.0, "fzn-gecode"), "the solve did not start"
    deadline = time.monotonic() + 15
    while not any(p.comm == "sleep" for p in marked_procs(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    running = marked_procs(marker)
    assert {"minizinc", "fzn-gecode", "sleep"} <= {p.comm for p in running}, describe(running)
    roots = list(Path(tempfile.gettempdir()).glob(f"solvergate-run-{server.pid}-*"))
    assert len(roots) == 1, roots
    assert any(roots[0].iterdir()), "the runs' scratch dirs live under the root"

    server.proc.kill()
    assert server.wait(timeout=5) is not None
    left = leftover_marked(marker, timeout=15.0)
    assert not left, f"alive after the server was killed: {describe(left)}"
    deadline = time.monotonic() + 10
    while roots[0].exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not roots[0].exists(), "the scratch root outlived the server"


def test_stdout_is_only_jsonrpc_and_no_zombies_remain(harness, raw):
    server = raw("full")
    server.initialize()
    calls = [
        ("solve_minizinc_model", {"model": OPT_MODEL}),
        ("solve_minizinc_model", {"model": SAT_MODEL, "all_solutions": True}),
        ("solve_minizinc_model", {"model": UNSAT_MODEL}),
        ("solve_minizinc_model", {"model": SYNTAX_ERROR_MODEL}),
        ("solve_minizinc_model", {"model": ""}),
        ("check_minizinc_model", {"model": OPT_MODEL}),
        ("inspect_minizinc_model", {"model": OPT_MODEL}),
        ("list_available_solvers", {}),
        ("solve_minizinc_model", {"model": PRINTER_MODEL, "all_solutions": True}),  # cap kill
    ]
    for index, (name, arguments) in enumerate(calls):
        params = {"name": name, "arguments": arguments, "_meta": {"progressToken": f"p{index}"}}
        reply = server.call("tools/call", params, timeout=60)
        assert "result" in reply, reply
    # A cancelled solve, by raw notifications/cancelled: another kill path.
    request_id = server.request(
        "tools/call", {"name": "solve_minizinc_model", "arguments": {"model": HARD_MODEL, "timeout_ms": 60000}}
    )
    assert wait_for_solver_procs(harness.marker, 10.0, "fzn-gecode"), "the long solve did not start"
    server.notify("notifications/cancelled", {"requestId": request_id, "reason": "test"})
    left = leftover_solver_procs(set(), harness.marker, 5.0)
    assert not left, f"still running after notifications/cancelled: {describe(left)}"
    time.sleep(0.3)
    answered = [line for line in server.lines if json.loads(line).get("id") == request_id]
    assert not answered, f"a cancelled request got a response: {answered[0][:300]}"
    reply = server.call("tools/list")
    tools = reply["result"]["tools"]
    assert len(tools) == 40, "8 core + 2 inspect + 8 MiniZinc job tools + 7 CP-SAT tools + 3 artifact + 4 planner + 2 unsat + 2 tabular + 4 equation tools"
    reply = server.call("no/such/method")
    assert reply["error"]["code"] == -32601

    time.sleep(0.5)
    assert server.proc.poll() is None, "the server is still serving"
    zombies = zombie_children(server.pid)
    assert not zombies, f"unreaped children: {describe(zombies)}"
    # The watchdog (see test_sigkill_...) is the one child that stays.
    children = [p for p in all_procs() if p.ppid == server.pid and p.comm != "solvergate"]
    assert not children, f"children left after every call finished: {describe(children)}"

    bad = non_jsonrpc_lines(server.lines)
    assert bad == [], f"non-JSON-RPC output on stdout: {bad[:3]!r}"
    kinds = [json.loads(line).get("method") for line in server.lines]
    assert "notifications/progress" in kinds, "progress went out on the protocol channel"
    server.close_stdin()
    assert server.wait(timeout=8) is not None


def test_stderr_banner(harness, raw):
    server = raw("core")
    init = server.initialize()
    version = init["result"]["serverInfo"]["version"]
    lines = server.stderr_text().splitlines()
    assert len(lines) >= 3, lines
    banner = lines[:3]
    assert banner[0].startswith(f"solvergate {version}"), banner
    assert "core" in banner[0]
    assert banner[1].startswith("runtime dir: ") and harness.runtime_dir in banner[1], banner
    assert banner[2].startswith("minizinc: installed"), banner
    assert f"{harness.runtime_dir.rstrip('/')}/bin/minizinc" in banner[2]
    server.close_stdin()
    assert server.wait(timeout=8) is not None


def test_stderr_banner_without_runtime(harness, raw, tmp_path):
    stderr_path = tmp_path / "stderr.txt"
    empty = tmp_path / "empty"
    empty.mkdir()
    server = RawServer(
        [harness.binary, "stdio"], harness.server_env(SOLVERGATE_RUNTIME_DIR=str(empty)), stderr_path
    )
    try:
        server.initialize()
        lines = server.stderr_text().splitlines()
        assert lines[1].startswith("runtime dir: ") and str(empty) in lines[1], lines
        assert "SOLVERGATE_RUNTIME_DIR" in lines[1]
        assert lines[2].startswith("minizinc: not installed") and "install-runtime" in lines[2], lines
        server.close_stdin()
        assert server.wait(timeout=8) is not None
    finally:
        server.stop()
