"""Background solve jobs through the real client: results equal to a
synchronous solve, the state contract, timeouts, argument errors before a
job exists, cancellation (running and queued) with a /proc check, bounded
admission, retention, start-up validation of the bounds, and shutdown with
jobs running.

Every server here gets its own process marker (`harness.tagged_env`), so a
scan sees exactly that server's minizinc / fzn-gecode processes.
"""

from __future__ import annotations

import signal
import subprocess
import time

import anyio
import anyio.to_thread
import pytest

from helpers import (
    HANG_AFTER_FIRST_MODEL,
    HARD_MODEL,
    NEVER_CHECKER,
    NEVER_MODEL,
    OPT_MODEL,
    OPT_OBJECTIVE,
    SAT_MODEL,
    SYNTAX_ERROR_MODEL,
    TEXT_CHECKER,
    UNSAT_MODEL,
    RawServer,
    call_error,
    call_ok,
    check_solve_job,
    describe,
    non_jsonrpc_lines,
    rfc3339,
    solve_job_ids,
    solver_procs,
    structured,
    wait_for_solver_procs,
    wait_job,
)

pytestmark = pytest.mark.anyio

#: A solve that runs until it is stopped (the server's wall clock would end
#: it after a minute).
#: all_solutions, so MiniZinc prints each improving solution as it comes
#: (without it, only the last one) and the running job has live figures.
LONG_JOB = {"model": HARD_MODEL, "timeout_ms": 60000, "all_solutions": True}

#: The fields of a SolveResult a background solve must reproduce.
SAME_FIELDS = ("status", "solution", "objective", "solutions", "solver")


async def wait_procs(marker: str, timeout: float = 15.0, comm: str | None = None) -> set:
    return await anyio.to_thread.run_sync(wait_for_solver_procs, marker, timeout, comm)


# ---- results ----------------------------------------------------------------

SAME_AS_SYNC = [
    ("optimal", {"model": OPT_MODEL}, "optimal"),
    ("all-solutions", {"model": SAT_MODEL, "all_solutions": True}, None),
    ("checker", {"model": OPT_MODEL, "checker": TEXT_CHECKER}, "optimal"),
    ("unsatisfiable", {"model": UNSAT_MODEL}, "unsatisfiable"),
    # A solver-level error is a succeeded job whose result says error.
    ("model-error", {"model": SYNTAX_ERROR_MODEL}, "error"),
]


@pytest.mark.parametrize(("arguments", "status"), [c[1:] for c in SAME_AS_SYNC], ids=[c[0] for c in SAME_AS_SYNC])
async def test_job_result_equals_the_synchronous_solve(harness, arguments, status):
    arguments = {**arguments, "solver": "gecode", "timeout_ms": 7000}
    env, _ = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        sync = await call_ok(session, "solve_minizinc_model", arguments)

        submitted = await call_ok(session, "submit_solve_job", arguments)
        check_solve_job(submitted)
        assert submitted["state"] in ("queued", "running"), submitted
        assert submitted["timeout_ms"] == 7000
        assert submitted["result"] is None

        job, seen = await wait_job(session, submitted["job_id"], timeout=30)
        assert job["job_id"] == submitted["job_id"]
        assert job["state"] == "succeeded", job
        assert job["timeout_ms"] == 7000, "timeout_ms is echoed in every state"
        assert set(seen) <= {"queued", "running", "succeeded"}, seen
        result = job["result"]
        assert result is not None
        for name in SAME_FIELDS:
            assert result[name] == sync[name], f"{name}: job {result[name]!r} vs sync {sync[name]!r}"
        if status is not None:
            assert result["status"] == status
        if "checker" in arguments:
            assert result["checker"]["status"] == sync["checker"]["status"]
            assert [c["violation"] for c in result["checker"]["checks"]] == [
                c["violation"] for c in sync["checker"]["checks"]
            ]
        if arguments["model"] == OPT_MODEL:
            assert result["objective"] == OPT_OBJECTIVE
        if "all_solutions" in arguments:
            assert sorted(s["x"] for s in result["solutions"]) == [1, 2, 3]
        # The job's diagnostic is the result's own.
        assert job["diagnostic"] == result["diagnostic"]

        # Timing: RFC 3339, ordered, elapsed_ms in line with them.
        submitted_at = rfc3339(job["submitted_at"])
        started_at = rfc3339(job["started_at"])
        finished_at = rfc3339(job["finished_at"])
        assert submitted_at <= started_at <= finished_at
        assert job["submitted_at"] == submitted["submitted_at"], "submitted_at changed"
        assert job["elapsed_ms"] >= result["elapsed_ms"] - 5, (job["elapsed_ms"], result["elapsed_ms"])

        # Reading again changes nothing; the job is listed.
        again = await call_ok(session, "get_solve_job", {"job_id": job["job_id"]})
        assert again == job
        assert job["job_id"] in await solve_job_ids(session)


async def test_self_stopped_solve_succeeds_and_a_wall_clock_kill_is_timeout(harness):
    """MiniZinc stopping itself at its --time-limit reports what it has: a
    `succeeded` job whose result is `satisfied` (timeout_with_incumbent).
    Only the server's hard wall clock (timeout_ms + grace) makes a result
    `timeout`, and only then is the job `timeout` — with its partial result,
    solutions included."""
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        self_stopped = await call_ok(session, "submit_solve_job", {"model": HARD_MODEL, "timeout_ms": 1000})
        with_solution = await call_ok(
            session,
            "submit_solve_job",
            {"model": HANG_AFTER_FIRST_MODEL, "all_solutions": True, "timeout_ms": 500},
        )
        without_solution = await call_ok(
            session, "submit_solve_job", {"model": NEVER_MODEL, "checker": NEVER_CHECKER, "timeout_ms": 500}
        )

        job, _ = await wait_job(session, self_stopped["job_id"], timeout=20)
        assert job["state"] == "succeeded", job
        assert job["result"]["status"] == "satisfied", job["result"]["status"]
        assert job["result"]["timed_out"] is False
        assert job["result"]["solution"], "the incumbent is returned"
        assert job["diagnostic"]["category"] == "timeout_with_incumbent", job["diagnostic"]
        assert job["timeout_ms"] == 1000

        job, _ = await wait_job(session, with_solution["job_id"], timeout=20)
        assert job["state"] == "timeout", job
        result = job["result"]
        assert result is not None, "a timeout job keeps its partial result"
        assert result["status"] == "timeout" and result["timed_out"] is True
        assert result["solution"] == {"x": 1}, result["solution"]
        assert result["solutions"] == [{"x": 1}]
        assert job["diagnostic"]["category"] == "timeout_with_incumbent", job["diagnostic"]
        assert job["timeout_ms"] == 500
        assert job["elapsed_ms"] >= 500

        job, _ = await wait_job(session, without_solution["job_id"], timeout=20)
        assert job["state"] == "timeout", job
        assert job["result"]["status"] == "timeout" and job["result"]["timed_out"] is True
        assert job["result"]["solutions"] == []
        assert job["diagnostic"]["category"] == "timeout_no_incumbent", job["diagnostic"]

        left = solver_procs(marker)
        assert not left, f"processes of finished jobs still alive: {describe(left)}"


# ---- argument errors ---------------------------------------------------------

ARGUMENT_ERRORS = [
    ("empty-model", {"model": ""}, "invalid_request", ["model", "empty"]),
    ("timeout-zero", {"model": SAT_MODEL, "timeout_ms": 0}, "invalid_request", ["timeout_ms"]),
    ("timeout-negative", {"model": SAT_MODEL, "timeout_ms": -1}, "invalid_request", ["timeout_ms"]),
    ("parallel-zero", {"model": SAT_MODEL, "parallel": 0}, "invalid_request", ["parallel"]),
    ("num-solutions-zero", {"model": SAT_MODEL, "num_solutions": 0}, "invalid_request", ["num_solutions"]),
    ("empty-checker", {"model": SAT_MODEL, "checker": " "}, "invalid_request", ["checker"]),
    ("unknown-argument", {"model": SAT_MODEL, "timeout": 5}, "invalid_request", ["timeout"]),
    ("unknown-solver", {"model": SAT_MODEL, "solver": "nosuch"}, "solver_unavailable", ["nosuch"]),
    (
        "num-solutions-without-n",
        {"model": SAT_MODEL, "num_solutions": 2, "solver": "org.minizinc.mip.scip"},
        "unsupported_feature",
        ["num_solutions", "-n"],
    ),
    (
        "random-seed-without-r",
        {"model": SAT_MODEL, "random_seed": 3, "solver": "org.minizinc.mip.scip"},
        "unsupported_feature",
        ["random_seed", "-r"],
    ),
]


async def test_argument_errors_come_before_a_job_exists(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        # One real job first, so "unchanged" compares against a non-empty list.
        done, _ = await wait_job(session, (await call_ok(session, "submit_solve_job", {"model": SAT_MODEL}))["job_id"])
        assert done["state"] == "succeeded"
        before = await solve_job_ids(session)
        assert before == [done["job_id"]]
        for case, arguments, category, fragments in ARGUMENT_ERRORS:
            error = await call_error(session, "submit_solve_job", arguments)
            assert error.category == category, f"{case}: {error.text}"
            for fragment in fragments:
                assert fragment in error.message, f"{case}: {fragment!r} not in {error.message!r}"
            assert await solve_job_ids(session) == before, f"{case}: a job was created"
        assert not solver_procs(marker), "a refused submit started a process"


# ---- cancellation --------------------------------------------------------------


async def test_cancel_a_running_job_kills_its_processes(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        progress: list[float] = []

        async def on_progress(value, total, message):
            progress.append(value)

        asked = time.monotonic()
        submitted = structured(
            await session.call_tool("submit_solve_job", LONG_JOB, progress_callback=on_progress)
        )
        assert time.monotonic() - asked < 2, "submit_solve_job waited for the solve"
        assert submitted["state"] == "running", submitted
        assert await wait_procs(marker, comm="fzn-gecode"), "the solver never started: the scan would prove nothing"
        assert progress == [], "a job tool sent progress notifications"
        running = await call_ok(session, "get_solve_job", {"job_id": submitted["job_id"]})
        check_solve_job(running)
        assert running["state"] == "running" and running["result"] is None
        # The running job shows what the solver has found so far.
        with anyio.fail_after(20):
            while (running["live"] or {}).get("solutions", 0) < 2:
                await anyio.sleep(0.2)
                running = await call_ok(session, "get_solve_job", {"job_id": submitted["job_id"]})
        check_solve_job(running)
        assert running["live"]["objective"] is not None, running

        with anyio.fail_after(10):
            cancelled = await call_ok(session, "cancel_solve_job", {"job_id": submitted["job_id"]})
        # Right after cancel returns: nothing of that job is left.
        left = solver_procs(marker)
        assert not left, f"still alive right after cancel_solve_job returned: {describe(left)}"
        check_solve_job(cancelled)
        assert cancelled["state"] == "cancelled", cancelled
        assert cancelled["result"] is None
        assert cancelled["diagnostic"]["category"] == "cancelled"
        assert cancelled["started_at"] is not None
        assert cancelled["timeout_ms"] == 60000
        assert cancelled["elapsed_ms"] < 60000

        # Idempotent, and polls agree.
        again = await call_ok(session, "cancel_solve_job", {"job_id": submitted["job_id"]})
        assert again == cancelled
        polled = await call_ok(session, "get_solve_job", {"job_id": submitted["job_id"]})
        assert polled == cancelled

        # Cancelling a finished job changes nothing.
        quick, _ = await wait_job(session, (await call_ok(session, "submit_solve_job", {"model": OPT_MODEL}))["job_id"])
        assert quick["state"] == "succeeded"
        unchanged = await call_ok(session, "cancel_solve_job", {"job_id": quick["job_id"]})
        assert unchanged == quick, "cancel of a terminal job is a no-op"

        # Unknown ids.
        for tool in ("get_solve_job", "cancel_solve_job"):
            error = await call_error(session, tool, {"job_id": "0123456789abcdef0123456789abcdef"})
            assert error.category == "invalid_request", error.text
            assert "0123456789abcdef0123456789abcdef" in error.message
        assert not solver_procs(marker)


async def test_cancel_a_queued_job_drops_it_and_the_queue_runs_in_order(harness):
    env, marker = harness.tagged_env(SOLVERGATE_MAX_RUNNING_JOBS="1")
    async with harness.open("full", env=env) as launched:
        session = launched.session
        blocker = await call_ok(session, "submit_solve_job", LONG_JOB)
        assert blocker["state"] == "running"
        queued = await call_ok(session, "submit_solve_job", {"model": OPT_MODEL})
        second = await call_ok(session, "submit_solve_job", {"model": SAT_MODEL})
        third = await call_ok(session, "submit_solve_job", {"model": UNSAT_MODEL})
        for job in (queued, second, third):
            check_solve_job(job)
            assert job["state"] == "queued", job
            assert job["started_at"] is None

        dropped = await call_ok(session, "cancel_solve_job", {"job_id": queued["job_id"]})
        check_solve_job(dropped)
        assert dropped["state"] == "cancelled", dropped
        assert dropped["started_at"] is None, "a dropped queued job never starts"
        assert dropped["result"] is None
        assert dropped["diagnostic"]["category"] == "cancelled"
        assert await call_ok(session, "cancel_solve_job", {"job_id": queued["job_id"]}) == dropped

        # The blocker still runs; the others still wait.
        states = {
            job_id: (await call_ok(session, "get_solve_job", {"job_id": job_id}))["state"]
            for job_id in (blocker["job_id"], second["job_id"], third["job_id"])
        }
        assert states == {blocker["job_id"]: "running", second["job_id"]: "queued", third["job_id"]: "queued"}

        stopped = await call_ok(session, "cancel_solve_job", {"job_id": blocker["job_id"]})
        assert stopped["state"] == "cancelled"
        # The freed slot goes to the queue, in submission order.
        done_second, _ = await wait_job(session, second["job_id"])
        done_third, _ = await wait_job(session, third["job_id"])
        assert done_second["state"] == "succeeded" and done_third["state"] == "succeeded"
        assert rfc3339(done_second["finished_at"]) <= rfc3339(done_third["started_at"]), (
            "with one running slot, the third job started before the second finished"
        )
        assert rfc3339(stopped["finished_at"]) <= rfc3339(done_second["started_at"])

        # The dropped job stayed dropped.
        final = await call_ok(session, "get_solve_job", {"job_id": queued["job_id"]})
        assert final["state"] == "cancelled" and final["started_at"] is None
        assert await solve_job_ids(session) == [blocker["job_id"], queued["job_id"], second["job_id"], third["job_id"]]
        assert not solver_procs(marker)


# ---- admission -------------------------------------------------------------------


async def test_admission_at_4_running_and_16_queued_refuses_the_21st(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        admitted = []
        for _ in range(20):
            job = await call_ok(session, "submit_solve_job", LONG_JOB)
            check_solve_job(job)
            admitted.append(job)
        assert [job["state"] for job in admitted] == ["running"] * 4 + ["queued"] * 16
        assert len({job["job_id"] for job in admitted}) == 20, "job ids repeat"
        for job in admitted:
            assert len(job["job_id"]) >= 16, f"job id {job['job_id']!r} is guessable"

        refused = await call_error(session, "submit_solve_job", LONG_JOB)
        assert "retry" in refused.message.lower(), refused.text
        listed = (await call_ok(session, "list_solve_jobs", {}))["jobs"]
        assert [job["job_id"] for job in listed] == [job["job_id"] for job in admitted], "the refused job was kept"
        assert sorted(job["state"] for job in listed) == ["queued"] * 16 + ["running"] * 4

        # Newest first, so no queued job takes a slot a cancel frees.
        for job in reversed(admitted):
            with anyio.fail_after(10):
                cancelled = await call_ok(session, "cancel_solve_job", {"job_id": job["job_id"]})
            assert cancelled["state"] == "cancelled", cancelled
        for job in admitted[4:]:
            final = await call_ok(session, "get_solve_job", {"job_id": job["job_id"]})
            assert final["started_at"] is None, f"queued job {job['job_id']} started"
        left = solver_procs(marker)
        assert not left, f"left running after every job was cancelled: {describe(left)}"

        # Capacity is back.
        again = await call_ok(session, "submit_solve_job", {"model": OPT_MODEL})
        assert again["state"] == "running"
        done, _ = await wait_job(session, again["job_id"])
        assert done["state"] == "succeeded"


async def test_zero_queue_refuses_past_the_running_slots(harness):
    env, marker = harness.tagged_env(SOLVERGATE_MAX_RUNNING_JOBS="1", SOLVERGATE_MAX_QUEUED_JOBS="0")
    async with harness.open("full", env=env) as launched:
        session = launched.session
        first = await call_ok(session, "submit_solve_job", LONG_JOB)
        assert first["state"] == "running"
        refused = await call_error(session, "submit_solve_job", {"model": OPT_MODEL})
        assert "retry" in refused.message.lower(), refused.text
        assert await solve_job_ids(session) == [first["job_id"]]
        await call_ok(session, "cancel_solve_job", {"job_id": first["job_id"]})
        assert not solver_procs(marker)
        later = await call_ok(session, "submit_solve_job", {"model": OPT_MODEL})
        assert later["state"] == "running", "a freed slot admits again"


# ---- retention ---------------------------------------------------------------------


async def test_only_the_newest_finished_jobs_are_retained(harness):
    env, marker = harness.tagged_env(SOLVERGATE_MAX_RETAINED_TERMINAL="2")
    async with harness.open("full", env=env) as launched:
        session = launched.session
        long_job = await call_ok(session, "submit_solve_job", LONG_JOB)
        ids = []
        for _ in range(4):
            job, _ = await wait_job(session, (await call_ok(session, "submit_solve_job", {"model": OPT_MODEL}))["job_id"])
            assert job["state"] == "succeeded"
            ids.append(job["job_id"])
        # A running job is never evicted; of the finished, the newest 2 stay.
        assert await solve_job_ids(session) == [long_job["job_id"], ids[2], ids[3]]
        for evicted in ids[:2]:
            error = await call_error(session, "get_solve_job", {"job_id": evicted})
            assert error.category == "invalid_request", error.text
            assert evicted in error.message
            error = await call_error(session, "cancel_solve_job", {"job_id": evicted})
            assert error.category == "invalid_request", error.text
        kept = await call_ok(session, "get_solve_job", {"job_id": ids[2]})
        assert kept["state"] == "succeeded" and kept["result"]["status"] == "optimal"

        # Once the long job finishes it is the newest finished: ids[2] goes.
        cancelled = await call_ok(session, "cancel_solve_job", {"job_id": long_job["job_id"]})
        assert cancelled["state"] == "cancelled"
        assert await solve_job_ids(session) == [long_job["job_id"], ids[3]]
        error = await call_error(session, "get_solve_job", {"job_id": ids[2]})
        assert error.category == "invalid_request"
        assert not solver_procs(marker)


# ---- start-up validation -------------------------------------------------------------

BAD_BOUNDS = [
    ("SOLVERGATE_MAX_RUNNING_JOBS", "0"),
    ("SOLVERGATE_MAX_RUNNING_JOBS", "two"),
    ("SOLVERGATE_MAX_QUEUED_JOBS", "-1"),
    ("SOLVERGATE_MAX_RETAINED_TERMINAL", "abc"),
    ("SOLVERGATE_MAX_RETAINED_TERMINAL", "0"),
]


@pytest.mark.parametrize(("variable", "value"), BAD_BOUNDS, ids=[f"{v}={x}" for v, x in BAD_BOUNDS])
def test_invalid_bounds_stop_start_up_naming_the_variable(harness, tmp_path, variable, value):
    stderr_path = tmp_path / "stderr.txt"
    with open(stderr_path, "wb") as stderr:
        # stdin stays open: a server that started would wait on it.
        proc = subprocess.Popen(
            [harness.binary, "stdio", "--toolset", "full"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=harness.server_env(**{variable: value}),
        )
        try:
            started = time.monotonic()
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"the server started with {variable}={value!r}")
        finally:
            assert proc.stdin is not None and proc.stdout is not None
            stdout = proc.stdout.read()
            proc.stdin.close()
            proc.stdout.close()
    assert code != 0, f"exit code 0 with {variable}={value!r}"
    assert time.monotonic() - started < 5
    text = stderr_path.read_text(errors="replace")
    assert variable in text, f"stderr does not name {variable}: {text!r}"
    assert value in text, f"stderr does not show the bad value {value!r}: {text!r}"
    assert stdout == b"", f"stdout is not for messages: {stdout[:300]!r}"


# ---- shutdown with jobs running ----------------------------------------------------------


@pytest.mark.parametrize("how", ["close-stdin", "sigterm", "sigint"])
def test_shutdown_with_jobs_running_leaves_nothing(harness, tmp_path, how):
    env, marker = harness.tagged_env()
    server = RawServer([harness.binary, "stdio", "--toolset", "full"], env, tmp_path / "stderr.txt")
    try:
        server.initialize()
        for _ in range(2):
            reply = server.call_tool("submit_solve_job", LONG_JOB)
            assert not reply["result"].get("isError"), reply
            job = reply["result"]["structuredContent"]
            assert job["state"] == "running", job
        # A race with two attempts as well: 4 solves in all.
        race = {"models": [HARD_MODEL], "solvers": ["gecode"], "seeds": [1, 2], "per_attempt_timeout_ms": 60000}
        reply = server.call_tool("submit_portfolio_job", race)
        assert not reply["result"].get("isError"), reply
        assert reply["result"]["structuredContent"]["state"] == "running"
        deadline = time.monotonic() + 15
        while len({p for p in solver_procs(marker) if p.comm == "fzn-gecode"}) < 4:
            assert time.monotonic() < deadline, "the four solvers never all ran: the scan would prove nothing"
            time.sleep(0.05)

        stopped = time.monotonic()
        if how == "close-stdin":
            server.close_stdin()
        else:
            server.proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
        code = server.wait(timeout=10)
        assert code is not None, f"server still running 10 s after {how}"
        assert time.monotonic() - stopped < 5, f"exit took {time.monotonic() - stopped:.1f} s"
        left = solver_procs(marker)
        assert not left, f"left running after the server exited ({how}): {describe(left)}"
        # Nothing shows up late either (a process that escaped its tree).
        time.sleep(0.5)
        late = solver_procs(marker)
        assert not late, f"appeared after exit: {describe(late)}"
        assert non_jsonrpc_lines(server.lines) == []
    finally:
        server.stop()
