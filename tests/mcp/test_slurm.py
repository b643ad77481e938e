"""Background jobs on a real Slurm cluster (SOLVERGATE_JOB_BACKEND=slurm)
through the real client: a solve job's result equals the local synchronous
solve's; a hard model times out with its incumbent; cancel ends the Slurm
job (squeue and sacct say CANCELLED) with no solver process left; a
portfolio's losers are scancel'ed when the winner's result appears; a
CP-SAT job with a checker succeeds; closing the server cancels its Slurm
jobs; a Slurm job whose server was SIGKILLed is taken over by the next server
on the same data dir and ends as it would have (solve, CP-SAT, a race's
attempts; cancel; a Slurm-side end while no server watched; never by two
servers; a session's never: the next server cancels a dead session's Slurm
jobs instead, never a live server's); an unusable Slurm is refused before any job is admitted, naming the
command that failed and its stderr.

Needs the single-node cluster of scripts/slurm-cluster. scripts/test sets
SOLVERGATE_TEST_SLURM=1 when `scripts/slurm-cluster --check` passes (CI
starts the cluster first and sets it itself, so these never skip there);
without it every test here is skipped with that reason.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from test_http import http_server, http_session, sessionless_client
from cpsat_helpers import KNAPSACK, PYTHON, REAL_CHECKER, check_knapsack_answer, knapsack_script
from helpers import (
    HANG_AFTER_FIRST_MODEL,
    HARD_MODEL,
    OPT_MODEL,
    all_procs,
    OPT_OBJECTIVE,
    call_error,
    call_ok,
    describe,
    solve_job_ids,
    solver_procs,
    wait_for_solver_procs,
    wait_job,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        os.environ.get("SOLVERGATE_TEST_SLURM") != "1",
        reason="SOLVERGATE_TEST_SLURM is not 1: no Slurm cluster answered (run scripts/slurm-cluster as root; scripts/test sets it when `scripts/slurm-cluster --check` passes), or this is scripts/test's second-runtime pass (these run on the first runtime only)",
    ),
]

PARTITION = os.environ.get("SOLVERGATE_TEST_SLURM_PARTITION", "solvergate")
NODE = socket.gethostname().split(".")[0]
LONG_JOB = {"model": HARD_MODEL, "solver": "gecode", "timeout_ms": 60000}
SAME_FIELDS = ("status", "solution", "objective", "solutions", "solver", "checker", "diagnostic")
SLURM_ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}


def slurm_env(harness, workdir: Path, **extra: str) -> tuple[dict[str, str], str]:
    env, marker = harness.tagged_env(
        SOLVERGATE_JOB_BACKEND="slurm",
        SOLVERGATE_SLURM_PARTITION=PARTITION,
        SOLVERGATE_SLURM_WORKDIR=str(workdir),
        SOLVERGATE_CPSAT_PYTHON=PYTHON,
        SOLVERGATE_CPSAT_WARM="0",
    )
    env.update(extra)
    return env, marker


def slurm_state(job_id: str) -> str:
    """Slurm's own word on a job (squeue keeps ended jobs for MinJobAge)."""
    out = subprocess.run(
        ["squeue", "--noheader", f"--jobs={job_id}", "--states=all", "--format=%T"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return out.stdout.strip()


def sacct_state(job_id: str) -> str:
    """What Slurm's job completion log says (`sacct -c`: the test cluster
    keeps no accounting database)."""
    out = subprocess.run(
        ["sacct", "-c", "--noheader", "--parsable2", f"--jobs={job_id}", "--format=JobID,State"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    states = [line.split("|")[1] for line in out.stdout.splitlines() if line.split("|")[0] == job_id]
    return states[-1] if states else ""


async def wait_slurm_state(session, job_id: str, states: set[str], tool: str = "get_solve_job", timeout: float = 30) -> dict:
    """Polls a job until its reported Slurm state is one of `states`."""
    with anyio.fail_after(timeout):
        while True:
            job = await call_ok(session, tool, {"job_id": job_id})
            if job["slurm"] is not None and job["slurm"]["state"] in states:
                return job
            await anyio.sleep(0.1)


async def no_job_dirs_left(workdir: Path, timeout: float = 30) -> list[str]:
    with anyio.move_on_after(timeout):
        while any(workdir.iterdir()):
            await anyio.sleep(0.1)
    return sorted(path.name for path in workdir.iterdir())


async def test_a_solve_job_equals_the_local_solve_and_reports_its_slurm_job(harness, workdir):
    env, marker = slurm_env(harness, workdir)
    async with harness.open("full", env=env) as launched:
        session = launched.session
        assert "jobs: slurm (partition solvergate" in launched.stderr_text()
        arguments = {"model": OPT_MODEL, "solver": "gecode", "timeout_ms": 7000}
        local = await call_ok(session, "solve_minizinc_model", arguments)
        assert local["status"] == "optimal" and local["objective"] == OPT_OBJECTIVE, local

        submitted = await call_ok(session, "submit_solve_job", arguments)
        assert submitted["state"] in ("queued", "running"), submitted
        job, seen = await wait_job(session, submitted["job_id"], timeout=60)
        assert job["state"] == "succeeded", job
        assert set(seen) <= {"queued", "running", "succeeded"}, seen
        for name in SAME_FIELDS:
            assert job["result"][name] == local[name], f"{name}: slurm {job['result'][name]!r} vs local {local[name]!r}"

        slurm = job["slurm"]
        assert slurm["job_id"].isdigit(), slurm
        assert slurm["node"] == NODE, slurm
        job = await wait_slurm_state(session, submitted["job_id"], {"COMPLETED"})
        assert slurm_state(slurm["job_id"]) == "COMPLETED"
        assert job["result"] is not None and job["state"] == "succeeded"
        assert await no_job_dirs_left(workdir) == [], "a finished job's directory is removed"
        assert not solver_procs(marker)


async def test_a_hard_model_times_out_with_its_incumbent(harness, workdir):
    env, _ = slurm_env(harness, workdir)
    async with harness.open("full", env=env) as launched:
        session = launched.session
        submitted = await call_ok(
            session,
            "submit_solve_job",
            {"model": HANG_AFTER_FIRST_MODEL, "all_solutions": True, "timeout_ms": 500},
        )
        job, _ = await wait_job(session, submitted["job_id"], timeout=60)
        assert job["state"] == "timeout", job
        result = job["result"]
        assert result["status"] == "timeout" and result["timed_out"] is True, result
        assert result["solution"] == {"x": 1} and result["solutions"] == [{"x": 1}], result
        assert job["diagnostic"]["category"] == "timeout_with_incumbent", job["diagnostic"]
        assert job["slurm"]["job_id"].isdigit()


async def test_cancel_ends_the_slurm_job_and_every_solver_process(harness, workdir):
    env, marker = slurm_env(harness, workdir)
    async with harness.open("full", env=env) as launched:
        session = launched.session
        submitted = await call_ok(session, "submit_solve_job", LONG_JOB)
        running = await wait_slurm_state(session, submitted["job_id"], {"RUNNING"})
        assert running["state"] == "running", running
        assert running["slurm"]["node"] == NODE
        seen = await anyio.to_thread.run_sync(wait_for_solver_procs, marker, 30.0, "fzn-gecode")
        assert seen, "the solver never started on the node: the scan below would prove nothing"

        cancelled = await call_ok(session, "cancel_solve_job", {"job_id": submitted["job_id"]})
        assert cancelled["state"] == "cancelled", cancelled
        assert cancelled["diagnostic"]["category"] == "cancelled"
        slurm_id = cancelled["slurm"]["job_id"]
        assert cancelled["slurm"]["state"] == "CANCELLED", cancelled["slurm"]
        assert slurm_state(slurm_id) == "CANCELLED"
        assert sacct_state(slurm_id) == "CANCELLED"
        left = solver_procs(marker)
        assert not left, f"solver processes alive after cancel returned: {describe(left)}"
        assert await no_job_dirs_left(workdir) == []


async def test_a_portfolio_winner_scancels_the_losers(harness, workdir):
    env, marker = slurm_env(harness, workdir)
    async with harness.open("full", env=env) as launched:
        session = launched.session
        race = {
            "models": [OPT_MODEL, HARD_MODEL],
            "solvers": ["gecode"],
            "per_attempt_timeout_ms": 60000,
        }
        submitted = await call_ok(session, "submit_portfolio_job", race)
        status, _ = await wait_job(session, submitted["job_id"], tool="get_portfolio_job", timeout=60)
        assert status["state"] == "succeeded", status
        result = status["result"]
        assert result["winner_index"] == 0, result["attempts"]
        assert result["winner"]["status"] == "optimal" and result["winner"]["objective"] == OPT_OBJECTIVE
        winner, loser = result["attempts"]
        assert winner["slurm"]["job_id"].isdigit() and loser["slurm"]["job_id"].isdigit()
        assert winner["slurm"]["job_id"] != loser["slurm"]["job_id"]
        assert loser["state"] == "cancelled", loser
        # The race ends only once the loser's Slurm job has ended.
        assert loser["slurm"]["state"] == "CANCELLED", loser["slurm"]
        assert slurm_state(loser["slurm"]["job_id"]) == "CANCELLED"
        assert slurm_state(winner["slurm"]["job_id"]) in SLURM_ENDED | {"RUNNING", "COMPLETING"}
        left = solver_procs(marker)
        assert not left, f"a loser's solver outlived the race: {describe(left)}"


async def test_a_cpsat_job_with_a_checker_succeeds(harness, workdir):
    env, _ = slurm_env(harness, workdir)
    async with harness.open("full", env=env) as launched:
        session = launched.session
        arguments = {
            "source": knapsack_script(),
            "checker": REAL_CHECKER,
            "problem": KNAPSACK,
            "script_timeout_ms": 30000,
        }
        submitted = await call_ok(session, "submit_cpsat_python_job", arguments)
        with anyio.fail_after(90):
            while True:
                job = await call_ok(session, "get_cpsat_python_job", {"job_id": submitted["job_id"]})
                if job["state"] not in ("queued", "running"):
                    break
                await anyio.sleep(0.1)
        assert job["state"] == "succeeded", job
        assert job["result"]["status"] == "optimal", job["result"]
        check_knapsack_answer(job["result"])
        assert job["checker"]["status"] == "accepted", job["checker"]
        assert job["slurm"]["job_id"].isdigit() and job["slurm"]["node"] == NODE, job["slurm"]


async def test_closing_the_server_cancels_its_slurm_jobs(harness, workdir):
    env, marker = slurm_env(harness, workdir)
    async with harness.open("full", env=env) as launched:
        session = launched.session
        submitted = await call_ok(session, "submit_solve_job", LONG_JOB)
        running = await wait_slurm_state(session, submitted["job_id"], {"RUNNING"})
        slurm_id = running["slurm"]["job_id"]
    # The client closed stdin; the server cancelled its jobs before exiting.
    assert slurm_state(slurm_id) == "CANCELLED"
    left = await anyio.to_thread.run_sync(lambda: solver_procs(marker))
    assert not left, f"solver processes alive after the server exited: {describe(left)}"


# ---- re-attach: a Slurm job outlives its SIGKILLed server (issue 27) ------------------------

#: Prints x = 1 at once, then hangs in the output of x = 2 until its budget:
#: `timeout` with that one solution, whichever server follows it.
SLOW_SOLVE = {"model": HANG_AFTER_FIRST_MODEL, "solver": "gecode", "all_solutions": True, "timeout_ms": 6000}


def slow_script() -> str:
    """The knapsack script, after a few seconds' sleep: still running when
    its server is killed and the next one starts."""
    return "import time\ntime.sleep(6)\n" + knapsack_script()


def data_env(harness, workdir: Path, data: Path) -> tuple[dict[str, str], str]:
    return slurm_env(harness, workdir, XDG_DATA_HOME=str(data))


def running_record(data: Path, kind: str, job_id: str) -> dict:
    return json.loads((data / "solvergate" / "jobs" / kind / "running" / f"{job_id}.json").read_text())


async def wait_gone(pid: int) -> None:
    with anyio.fail_after(15):
        while Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            await anyio.sleep(0.05)


async def submitted_then_killed(harness, workdir: Path, data: Path, submits: list[tuple[str, dict]]) -> tuple[list[dict], int]:
    """A stdio server on `data` takes `submits`, each waited for until Slurm
    runs it; then the server is SIGKILLed. Returns each submit's running
    status and the dead server's pid."""
    env, _ = data_env(harness, workdir, data)
    statuses: list[dict] = []
    pid = 0
    try:
        async with harness.open("full", env=env) as launched:
            pid = launched.pid
            for tool, arguments in submits:
                submitted = await call_ok(launched.session, tool, arguments)
                get_tool = tool.replace("submit_", "get_")
                statuses.append(await wait_slurm_state(launched.session, submitted["job_id"], {"RUNNING"}, tool=get_tool, timeout=60))
            # The record names the Slurm job before anything else happens.
            for (tool, _), status in zip(submits, statuses):
                kind = "solve" if tool == "submit_solve_job" else "cpsat_python"
                with anyio.fail_after(10):
                    while "slurm" not in running_record(data, kind, status["job_id"]):
                        await anyio.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
            await wait_gone(pid)
    except BaseException:  # noqa: BLE001 - the client's teardown of a killed server
        if not pid or len(statuses) != len(submits):
            raise
    return statuses, pid


async def wait_terminal(session, job_id: str, tool: str, timeout: float = 90) -> tuple[dict, list[str]]:
    seen: list[str] = []
    with anyio.fail_after(timeout):
        while True:
            job = await call_ok(session, tool, {"job_id": job_id})
            seen.append(job["state"])
            if job["state"] not in ("queued", "running"):
                return job, seen
            await anyio.sleep(0.1)


def workers_of(workdir: Path) -> list[int]:
    """The pids of `solvergate worker` processes of jobs in `workdir` (the
    node is this machine)."""
    found = []
    for proc in all_procs():
        if proc.comm != "solvergate":
            continue
        try:
            argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"worker" in argv and any(arg.startswith(str(workdir).encode()) for arg in argv):
            found.append(proc.pid)
    return found


def scancel_all(statuses: list[dict]) -> None:
    ids = [status["slurm"]["job_id"] for status in statuses if status.get("slurm")]
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=30)


async def test_a_killed_servers_solve_job_is_reattached_and_finishes_as_it_would_have(harness, workdir, tmp_path):
    data = tmp_path / "data"
    (before,), dead = await submitted_then_killed(harness, workdir, data, [("submit_solve_job", SLOW_SOLVE)])
    try:
        env, marker = data_env(harness, workdir, data)
        async with harness.open("full", env=env) as second:
            assert "following 1 Slurm job(s) an earlier server left running" in second.stderr_text()
            # Right after the restart: running, where it ran, under its old id.
            now = await call_ok(second.session, "get_solve_job", {"job_id": before["job_id"]})
            assert now["state"] == "running" and now["message"] is None, now
            assert now["slurm"]["job_id"] == before["slurm"]["job_id"] and now["slurm"]["node"] == NODE, now
            assert now["submitted_at"] == before["submitted_at"] and now["started_at"] == before["started_at"], now
            listed = await call_ok(second.session, "list_solve_jobs", {})
            assert [job["job_id"] for job in listed["jobs"]] == [before["job_id"]], listed
            record = running_record(data, "solve", before["job_id"])
            assert record["writer"]["pid"] == second.pid != dead, record["writer"]
            # What a server that lived gives for the same solve.
            local = await call_ok(second.session, "solve_minizinc_model", SLOW_SOLVE)
            job, seen = await wait_terminal(second.session, before["job_id"], "get_solve_job")
            assert job["state"] == "timeout", job
            assert set(seen) <= {"running", "timeout"}, seen
            for name in SAME_FIELDS:
                assert job["result"][name] == local[name], f"{name}: re-attached {job['result'][name]!r} vs local {local[name]!r}"
            assert job["result"]["solutions"] == [{"x": 1}], job["result"]
            assert job["timeout_ms"] == SLOW_SOLVE["timeout_ms"] and job["slurm"]["job_id"] == before["slurm"]["job_id"]
            assert await no_job_dirs_left(workdir) == [], "the re-attached job's directory is removed"
        # Kept as done: a third server reads what the second gave.
        done = json.loads((data / "solvergate" / "jobs" / "solve" / "done" / f"{before['job_id']}.json").read_text())
        assert done["status"]["result"] == job["result"] and done["status"]["state"] == "timeout"
        assert not (data / "solvergate" / "jobs" / "solve" / "running" / f"{before['job_id']}.json").exists()
        assert not solver_procs(marker)
    finally:
        scancel_all([before])


async def test_a_killed_servers_cpsat_job_is_reattached_and_finishes_as_it_would_have(harness, workdir, tmp_path):
    data = tmp_path / "data"
    arguments = {"source": slow_script(), "checker": REAL_CHECKER, "problem": KNAPSACK, "script_timeout_ms": 60000}
    (before,), _ = await submitted_then_killed(harness, workdir, data, [("submit_cpsat_python_job", arguments)])
    try:
        env, _ = data_env(harness, workdir, data)
        async with harness.open("full", env=env) as second:
            now = await call_ok(second.session, "get_cpsat_python_job", {"job_id": before["job_id"]})
            assert now["state"] == "running" and now["slurm"]["job_id"] == before["slurm"]["job_id"], now
            assert (now["script_timeout_ms"], now["checker_timeout_ms"]) == (60000, 60000), now
            job, _ = await wait_terminal(second.session, before["job_id"], "get_cpsat_python_job")
            assert job["state"] == "succeeded", job
            assert job["result"]["status"] == "optimal", job["result"]
            check_knapsack_answer(job["result"])
            assert job["checker"]["status"] == "accepted", job["checker"]
            # What a server that lived gives for the same script.
            local = await call_ok(second.session, "run_cpsat_python", {"source": slow_script(), "script_timeout_ms": 60000})
            for name in ("status", "objective", "solution", "best_objective_bound"):
                assert job["result"][name] == local[name], f"{name}: re-attached {job['result'][name]!r} vs local {local[name]!r}"
            assert await no_job_dirs_left(workdir) == []
    finally:
        scancel_all([before])


async def test_a_killed_servers_race_reads_failed_and_its_attempts_finish_as_solve_jobs(harness, workdir, tmp_path):
    """A race's coordinator ran in its server: the race reads `failed`.
    Its attempts are solve jobs on Slurm: each is re-attached and ends on
    its own (no winner cancels the others any more)."""
    data = tmp_path / "data"
    env, _ = data_env(harness, workdir, data)
    race = {
        "models": [HANG_AFTER_FIRST_MODEL, HANG_AFTER_FIRST_MODEL + "% the same\n"],
        "solvers": ["gecode"],
        "all_solutions": True,
        "per_attempt_timeout_ms": 6000,
    }
    pid = 0
    attempts: list[dict] = []
    try:
        async with harness.open("full", env=env) as launched:
            pid = launched.pid
            submitted = await call_ok(launched.session, "submit_portfolio_job", race)
            for attempt in submitted["attempt_job_ids"]:
                attempts.append(await wait_slurm_state(launched.session, attempt, {"RUNNING"}, timeout=60))
            os.kill(pid, signal.SIGKILL)
            await wait_gone(pid)
    except BaseException:  # noqa: BLE001 - the client's teardown of a killed server
        if not pid or len(attempts) != 2:
            raise
    try:
        async with harness.open("full", env=env) as second:
            status = await call_ok(second.session, "get_portfolio_job", {"job_id": submitted["job_id"]})
            assert status["state"] == "failed", status
            assert status["message"] == (
                f"the server that ran this race (pid {pid}) stopped before the race finished. Its attempts were"
                " handed to Slurm as solve jobs: each runs on to its own end, followed by a server on this data dir"
                " (get_solve_job), but none is chosen the winner. Submit it again"
            ), status
            for attempt in attempts:
                job, _ = await wait_terminal(second.session, attempt["job_id"], "get_solve_job")
                assert job["state"] == "timeout" and job["result"]["solutions"] == [{"x": 1}], job
                assert job["slurm"]["job_id"] == attempt["slurm"]["job_id"], job
            assert await no_job_dirs_left(workdir) == []
    finally:
        scancel_all(attempts)


async def test_cancelling_a_reattached_job_ends_its_slurm_job(harness, workdir, tmp_path):
    data = tmp_path / "data"
    (before,), _ = await submitted_then_killed(harness, workdir, data, [("submit_solve_job", LONG_JOB)])
    try:
        env, marker = data_env(harness, workdir, data)
        async with harness.open("full", env=env) as second:
            now = await call_ok(second.session, "get_solve_job", {"job_id": before["job_id"]})
            assert now["state"] == "running" and now["slurm"]["state"] == "RUNNING", now
            cancelled = await call_ok(second.session, "cancel_solve_job", {"job_id": before["job_id"]})
            assert cancelled["state"] == "cancelled", cancelled
            assert cancelled["slurm"]["state"] == "CANCELLED", cancelled["slurm"]
            assert slurm_state(before["slurm"]["job_id"]) == "CANCELLED"
            left = solver_procs(marker)
            assert not left, f"solver processes alive after cancel returned: {describe(left)}"
            assert await no_job_dirs_left(workdir) == []
    finally:
        scancel_all([before])


async def test_a_slurm_job_cancelled_while_no_server_watched_reads_as_cancelled(harness, workdir, tmp_path):
    data = tmp_path / "data"
    (before,), _ = await submitted_then_killed(harness, workdir, data, [("submit_solve_job", LONG_JOB)])
    try:
        slurm_id = before["slurm"]["job_id"]
        subprocess.run(["scancel", slurm_id], capture_output=True, timeout=30, check=True)
        with anyio.fail_after(60):
            while slurm_state(slurm_id) != "CANCELLED":
                await anyio.sleep(0.1)
        env, _ = data_env(harness, workdir, data)
        async with harness.open("full", env=env) as second:
            job, _ = await wait_terminal(second.session, before["job_id"], "get_solve_job", timeout=30)
            assert job["state"] == "cancelled" and job["result"] is None, job
            assert job["slurm"]["state"] == "CANCELLED" and job["slurm"]["job_id"] == slurm_id, job
            assert await no_job_dirs_left(workdir) == []
    finally:
        scancel_all([before])


async def test_a_slurm_job_that_failed_while_no_server_watched_reads_as_failed_with_slurms_state(harness, workdir, tmp_path):
    data = tmp_path / "data"
    (before,), _ = await submitted_then_killed(harness, workdir, data, [("submit_solve_job", LONG_JOB)])
    try:
        slurm_id = before["slurm"]["job_id"]
        # The node's worker dies without a result: Slurm says FAILED.
        with anyio.fail_after(30):
            while not (workers := workers_of(workdir)):
                await anyio.sleep(0.05)
        for worker in workers:
            os.kill(worker, signal.SIGKILL)
        with anyio.fail_after(60):
            while slurm_state(slurm_id) not in SLURM_ENDED:
                await anyio.sleep(0.1)
        state = slurm_state(slurm_id)
        env, _ = data_env(harness, workdir, data)
        async with harness.open("full", env=env) as second:
            job, _ = await wait_terminal(second.session, before["job_id"], "get_solve_job", timeout=30)
            assert job["state"] == "failed" and job["slurm"]["state"] == state, (state, job)
            # Slurm's state, its reason when it gives one, and the job's output.
            pattern = rf"Slurm job {slurm_id} ended {state}(, reason \w+)? without a result; (the job printed nothing|the job's last output:\n.*)"
            assert re.fullmatch(pattern, job["message"], re.DOTALL), job["message"]
            assert job["diagnostic"]["category"] == "job_failed", job
    finally:
        scancel_all([before])


async def test_two_new_servers_do_not_both_follow_a_job(harness, workdir, tmp_path):
    """Started at once on the same data dir, exactly one server takes the
    job over; the other answers with its record and says which server
    runs it, as for any job of another live server."""
    data = tmp_path / "data"
    (before,), _ = await submitted_then_killed(harness, workdir, data, [("submit_solve_job", LONG_JOB)])
    try:
        env, _ = data_env(harness, workdir, data)
        async with harness.open("full", env=env) as one, harness.open("full", env=env) as two:
            seen = {}
            for server in (one, two):
                seen[server.pid] = await call_ok(server.session, "get_solve_job", {"job_id": before["job_id"]})
            owners = [pid for pid, status in seen.items() if status["message"] is None]
            assert len(owners) == 1, seen
            owner = owners[0]
            other = next(pid for pid in seen if pid != owner)
            assert seen[other]["message"] == (
                f"this job runs in another solvergate server on this machine (pid {owner});"
                " its state here is as that server last wrote it"
            ), seen[other]
            # As last written: at the handoff, when Slurm still held it pending.
            assert seen[other]["state"] in ("queued", "running") and seen[other]["slurm"]["job_id"] == before["slurm"]["job_id"]
            assert running_record(data, "solve", before["job_id"])["writer"]["pid"] == owner
            by_pid = {one.pid: one, two.pid: two}
            # Only the owner can stop it; the other still reads it after.
            cancelled = await call_ok(by_pid[owner].session, "cancel_solve_job", {"job_id": before["job_id"]})
            assert cancelled["state"] == "cancelled", cancelled
            assert slurm_state(before["slurm"]["job_id"]) == "CANCELLED"
            with anyio.fail_after(10):
                while (await call_ok(by_pid[other].session, "get_solve_job", {"job_id": before["job_id"]}))["state"] != "cancelled":
                    await anyio.sleep(0.1)
    finally:
        scancel_all([before])


async def test_over_http_a_sessionless_job_is_taken_over_and_a_sessions_is_not(harness, workdir, tmp_path):
    """A sessionless job is read by its id alone, from a later server too:
    it is taken over. A session's job belongs to a session that ended with
    its server: no later session (nor a sessionless request) reads it, and
    no server takes it over."""
    data = tmp_path / "data"
    variables = http_variables(workdir, data)
    started: list[dict] = []
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full", **variables) as server:
        try:
            async with sessionless_client(server.url) as client, http_session(server.url, close=False) as session:
                loose = await call_ok(client, "submit_solve_job", SLOW_SOLVE)
                owned = await call_ok(session, "submit_solve_job", LONG_JOB)
                started.append(await wait_slurm_state(client, loose["job_id"], {"RUNNING"}, timeout=60))
                started.append(await wait_slurm_state(session, owned["job_id"], {"RUNNING"}, timeout=60))
                with anyio.fail_after(10):
                    while not all("slurm" in running_record(data, "solve", job["job_id"]) for job in started):
                        await anyio.sleep(0.05)
                dead = server.proc.pid
                os.kill(dead, signal.SIGKILL)
                server.proc.wait(timeout=15)
        except BaseException:  # noqa: BLE001 - the clients' teardown of a killed server
            if len(started) != 2 or server.proc.poll() is None:
                raise
    loose, owned = started
    try:
        with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full", **variables) as server:
            async with sessionless_client(server.url) as client, http_session(server.url) as session:
                now = await call_ok(client, "get_solve_job", {"job_id": loose["job_id"]})
                assert now["state"] == "running" and now["slurm"]["job_id"] == loose["slurm"]["job_id"], now
                for caller in (session, client):
                    error = await call_error(caller, "get_solve_job", {"job_id": owned["job_id"]})
                    assert error.category == "invalid_request" and owned["job_id"] in error.message, error
                    error = await call_error(caller, "cancel_solve_job", {"job_id": owned["job_id"]})
                    assert error.category == "invalid_request", error
                job, _ = await wait_terminal(client, loose["job_id"], "get_solve_job")
                assert job["state"] == "timeout" and job["result"]["solutions"] == [{"x": 1}], job
            assert "following 1 Slurm job(s) an earlier server left running" in server.stderr_text()
        # Nobody took the session's job over: nobody can read it, so the
        # new server cancelled its Slurm job instead of letting it run to
        # its time limit.
        assert not (data / "solvergate" / "jobs" / "solve" / "running" / f"{owned['job_id']}.json").exists()
        assert slurm_state(owned["slurm"]["job_id"]) == "CANCELLED"
    finally:
        scancel_all(started)


def http_variables(workdir: Path, data: Path) -> dict[str, str]:
    """An HTTP server's environment: the test cluster, `data` as its data dir."""
    return {
        "SOLVERGATE_JOB_BACKEND": "slurm",
        "SOLVERGATE_SLURM_PARTITION": PARTITION,
        "SOLVERGATE_SLURM_WORKDIR": str(workdir),
        "SOLVERGATE_CPSAT_PYTHON": PYTHON,
        "SOLVERGATE_CPSAT_WARM": "0",
        "XDG_DATA_HOME": str(data),
    }


def done_record(data: Path, kind: str, job_id: str) -> dict:
    return json.loads((data / "solvergate" / "jobs" / kind / "done" / f"{job_id}.json").read_text())


async def session_job_then_killed(harness, variables: dict[str, str], data: Path, tool: str, arguments: dict) -> tuple[dict, int]:
    """An HTTP server on `data` takes `arguments` from a session, waited for
    until Slurm runs every Slurm job of it (a race: each attempt's); then the
    server is SIGKILLed. Returns the job's status (a race's: with
    `attempts`, its attempts' statuses) and the dead server's pid."""
    status: dict = {}
    dead = 0
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full", **variables) as server:
        try:
            async with http_session(server.url, close=False) as session:
                submitted = await call_ok(session, tool, arguments)
                get_tool = tool.replace("submit_", "get_")
                solve_ids = submitted.get("attempt_job_ids") or [submitted["job_id"]]
                running = [await wait_slurm_state(session, job_id, {"RUNNING"}, timeout=60) for job_id in solve_ids]
                with anyio.fail_after(10):
                    while not all("slurm" in running_record(data, "solve", job["job_id"]) for job in running):
                        await anyio.sleep(0.05)
                for job in running:
                    job["dir"] = running_record(data, "solve", job["job_id"])["slurm"]["dir"]
                status = await call_ok(session, get_tool, {"job_id": submitted["job_id"]})
                status["attempts"] = running
                dead = server.proc.pid
                os.kill(dead, signal.SIGKILL)
                server.proc.wait(timeout=15)
        except BaseException:  # noqa: BLE001 - the client's teardown of a killed server
            if not status or server.proc.poll() is None:
                raise
    return status, dead


async def test_a_dead_servers_session_job_is_cancelled_by_the_next_server_and_a_live_servers_is_not(harness, workdir, tmp_path):
    """A session's job ends with its server, on Slurm too: nobody can read
    it any more, so the next server on the data dir cancels its Slurm job,
    removes its directory and keeps its record as failed. Never a live
    server's: another HTTP server on the same data dir keeps running its
    session's job, which that session still reads."""
    data = tmp_path / "data"
    variables = http_variables(workdir, data)
    jobs: list[dict] = []
    try:
        with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full", **variables) as live:
            async with http_session(live.url) as kept:
                submitted = await call_ok(kept, "submit_solve_job", LONG_JOB)
                alive = await wait_slurm_state(kept, submitted["job_id"], {"RUNNING"}, timeout=60)
                jobs.append(alive)
                with anyio.fail_after(10):
                    while "slurm" not in running_record(data, "solve", alive["job_id"]):
                        await anyio.sleep(0.05)
                alive_dir = Path(running_record(data, "solve", alive["job_id"])["slurm"]["dir"])
                orphan, dead = await session_job_then_killed(harness, variables, data, "submit_solve_job", LONG_JOB)
                jobs.append(orphan)
                slurm_id = orphan["slurm"]["job_id"]
                assert slurm_state(slurm_id) == "RUNNING", "the dead server's job runs on, for now"
                with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full", **variables) as third:
                    # Within a few seconds, with nobody asking.
                    with anyio.fail_after(15):
                        while slurm_state(slurm_id) != "CANCELLED":
                            await anyio.sleep(0.1)
                    with anyio.fail_after(15):
                        while Path(orphan["attempts"][0]["dir"]).exists():
                            await anyio.sleep(0.1)
                    with anyio.fail_after(15):
                        while not (data / "solvergate" / "jobs" / "solve" / "done" / f"{orphan['job_id']}.json").exists():
                            await anyio.sleep(0.1)
                    assert not (data / "solvergate" / "jobs" / "solve" / "running" / f"{orphan['job_id']}.json").exists()
                    record = done_record(data, "solve", orphan["job_id"])
                    assert record["scope"].startswith("session:") and record["writer"]["pid"] == third.proc.pid, record
                    assert record["status"]["state"] == "failed", record
                    assert record["status"]["diagnostic"]["category"] == "job_failed", record
                    assert record["status"]["message"] == (
                        f"the server that ran this job (pid {dead}) stopped before the job finished, and the HTTP"
                        " session the job belonged to ended with it: no one can read the job any more, so the next"
                        f" server on this data dir (pid {third.proc.pid}) cancelled its Slurm job (job {slurm_id})"
                        " and removed its directory"
                    ), record["status"]["message"]
                    assert "cancelling 1 Slurm job(s) of HTTP sessions whose server stopped" in third.stderr_text()
                    # Still nobody's: neither a new session nor a sessionless request reads it.
                    async with sessionless_client(third.url) as client, http_session(third.url) as session:
                        for caller in (session, client):
                            error = await call_error(caller, "get_solve_job", {"job_id": orphan["job_id"]})
                            assert error.category == "invalid_request" and orphan["job_id"] in error.message, error
                    # The live server's session job: untouched, still read by its session.
                    assert slurm_state(alive["slurm"]["job_id"]) == "RUNNING"
                    assert alive_dir.is_dir()
                    now = await call_ok(kept, "get_solve_job", {"job_id": alive["job_id"]})
                    assert now["state"] == "running" and now["message"] is None, now
                    assert running_record(data, "solve", alive["job_id"])["writer"]["pid"] == live.proc.pid
    finally:
        scancel_all(jobs)


async def test_a_dead_servers_session_race_is_kept_failed_and_its_attempts_slurm_jobs_are_cancelled(harness, workdir, tmp_path):
    """A session's race ends with its server too: its attempts are that
    session's solve jobs on Slurm, each cancelled by the next server; the
    race is kept as failed, saying so."""
    data = tmp_path / "data"
    variables = http_variables(workdir, data)
    race = {"models": [HARD_MODEL, HARD_MODEL + "% the same\n"], "solvers": ["gecode"], "per_attempt_timeout_ms": 60000}
    status: dict = {"attempts": []}
    try:
        status, dead = await session_job_then_killed(harness, variables, data, "submit_portfolio_job", race)
        assert len(status["attempts"]) == 2, status
        with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full", **variables) as third:
            with anyio.fail_after(15):
                while any(slurm_state(attempt["slurm"]["job_id"]) != "CANCELLED" for attempt in status["attempts"]):
                    await anyio.sleep(0.1)
            assert await no_job_dirs_left(workdir, timeout=15) == []
            with anyio.fail_after(15):
                while not all((data / "solvergate" / "jobs" / "solve" / "done" / f"{a['job_id']}.json").exists() for a in status["attempts"]):
                    await anyio.sleep(0.1)
            for attempt in status["attempts"]:
                assert done_record(data, "solve", attempt["job_id"])["status"]["state"] == "failed"
            record = done_record(data, "portfolio", status["job_id"])
            assert record["status"]["state"] == "failed", record
            assert record["status"]["message"] == (
                f"the server that ran this race (pid {dead}) stopped before the race finished, and the HTTP session"
                " the race belonged to ended with it: no one can read the race any more, so the next server on this"
                f" data dir (pid {third.proc.pid}) kept it as failed and cancels the Slurm jobs of its attempts"
            ), record["status"]["message"]
            assert not list((data / "solvergate" / "jobs" / "portfolio" / "running").glob("*.json"))
            assert "cancelling 2 Slurm job(s) of HTTP sessions whose server stopped" in third.stderr_text()
    finally:
        scancel_all(status["attempts"])


@pytest.mark.parametrize(
    ("change", "command", "stderr"),
    [
        ({"SOLVERGATE_SLURM_PARTITION": "no-such-partition"}, "scontrol show partition no-such-partition", "Partition no-such-partition not found"),
        ({"SLURM_CONF": "DEAD"}, "scontrol show partition solvergate", "Unable to contact slurm controller"),
        ({"PATH": "EMPTY"}, "", "`scontrol`, and it is not on the server's PATH"),
    ],
    ids=["missing-partition", "unreachable-controller", "no-slurm-commands"],
)
async def test_an_unusable_slurm_is_refused_before_any_job_is_admitted(harness, workdir, tmp_path, change, command, stderr):
    change = dict(change)
    if change.get("SLURM_CONF") == "DEAD":
        # The cluster's configuration, with a controller port nothing listens on.
        conf = Path("/etc/slurm/slurm.conf").read_text()
        dead = tmp_path / "slurm.conf"
        dead.write_text(conf.replace("ClusterName=solvergate", "ClusterName=solvergate\nSlurmctldPort=1", 1))
        change["SLURM_CONF"] = str(dead)
    if change.get("PATH") == "EMPTY":
        empty = tmp_path / "bin"
        empty.mkdir()
        change["PATH"] = str(empty)
    env, marker = slurm_env(harness, workdir, **change)
    async with harness.open("full", env=env) as launched:
        session = launched.session
        tools = [
            ("submit_solve_job", {"model": OPT_MODEL, "solver": "gecode"}),
            ("submit_portfolio_job", {"models": [OPT_MODEL], "solvers": ["gecode"]}),
            ("submit_cpsat_python_job", {"source": knapsack_script()}),
        ]
        if "SLURM_CONF" in change:
            # Slurm's client retries an unreachable controller for about 9 s:
            # one tool is proof enough.
            tools = tools[:1]
        for tool, arguments in tools:
            error = await call_error(session, tool, arguments)
            assert error.category == "runtime_missing", (tool, error)
            if command:
                assert f"`{command}` failed" in error.message, (tool, error.message)
            assert stderr in error.message, (tool, error.message)
        assert await solve_job_ids(session) == []
        assert (await call_ok(session, "list_cpsat_python_jobs", {}))["jobs"] == []
        assert (await call_ok(session, "list_portfolio_jobs", {}))["jobs"] == []
        # Synchronous tools still run here.
        local = await call_ok(session, "solve_minizinc_model", {"model": OPT_MODEL, "solver": "gecode"})
        assert local["status"] == "optimal"
    assert list(workdir.iterdir()) == []
    left = solver_procs(marker)
    assert not left, f"{describe(left)}; parents: {[Path(f'/proc/{p.ppid}/cmdline').read_bytes()[:200] for p in left if Path(f'/proc/{p.ppid}').exists()]}"


def test_the_slurm_backend_without_a_work_directory_does_not_start(harness, workdir):
    env, _ = slurm_env(harness, workdir)
    del env["SOLVERGATE_SLURM_WORKDIR"]
    done = subprocess.run(
        [harness.binary, "stdio"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert "the Slurm job backend needs SOLVERGATE_SLURM_WORKDIR" in done.stderr, done.stderr
