"""Background CP-SAT jobs through the real client: a job's result equals
run_cpsat_python's, checked jobs (checker_path and inline checker, the
budget echoed, skipped without an incumbent), a timeout job with its
recovered incumbent, argument errors before any job exists, cancel killing
the script and its grandchild (and a checker mid-phase), admission bounds,
and start-up validation of the CP-SAT registry bounds.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from cpsat_helpers import (
    KNAPSACK,
    PYTHON,
    REAL_CHECKER,
    VACUOUS_CHECKER,
    check_cpsat_job,
    check_knapsack_answer,
    cmdline,
    cpsat_server,
    describe,
    knapsack_script,
    leftover_marked_async,
    runs_logged,
    wait_cpsat_job,
    wait_marked_async,
    write,
)
from helpers import call_error, call_ok, list_jobs

pytestmark = [pytest.mark.anyio, pytest.mark.minizinc_independent]

SAME_FIELDS = ("status", "solution", "objective", "best_objective_bound", "diagnostic", "return_code", "timed_out", "truncated")

#: Starts a grandchild, reports once, then hangs.
HANG_WITH_GRANDCHILD = (
    "import json, subprocess, time\n"
    "child = subprocess.Popen(['sleep', '300'])\n"
    "print(json.dumps({'status': 'feasible', 'objective': 1, 'solution': {'grandchild': child.pid}}))\n"
    "time.sleep(300)\n"
)

FIXED_ANSWER = """
import json
print(json.dumps({"status": "optimal", "objective": 13, "solution": {
    "chosen": [{"item": 1, "weight": 4, "value": 5}, {"item": 2, "weight": 5, "value": 8}],
    "total_weight": 9,
}}))
"""


@pytest.fixture(scope="module")
async def cpsat(harness):
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


async def job_ids(session) -> list[str]:
    return [job["job_id"] for job in await list_jobs(session, "list_cpsat_python_jobs", "cpsat_python")]


async def test_job_result_equals_the_synchronous_run(cpsat):
    source = knapsack_script()
    sync = await call_ok(cpsat.session, "run_cpsat_python", {"source": source, "script_timeout_ms": 20000})
    assert sync["status"] == "optimal", sync

    submitted = await call_ok(cpsat.session, "submit_cpsat_python_job", {"source": source, "script_timeout_ms": 20000})
    check_cpsat_job(submitted)
    assert submitted["state"] in ("queued", "running", "succeeded"), submitted
    assert submitted["script_timeout_ms"] == 20000
    assert submitted["checker_timeout_ms"] is None

    job, seen = await wait_cpsat_job(cpsat.session, submitted["job_id"])
    assert job["state"] == "succeeded", job
    assert set(seen) <= {"queued", "running", "succeeded"}, seen
    result = job["result"]
    for name in SAME_FIELDS:
        assert result[name] == sync[name], f"{name}: job {result[name]!r} vs sync {sync[name]!r}"
    check_knapsack_answer(result)
    assert job["checker"] is None and job["checker_skipped_reason"] is None
    assert job["started_at"] and job["finished_at"]
    again = await call_ok(cpsat.session, "get_cpsat_python_job", {"job_id": job["job_id"]})
    assert again == job, "reading a finished job changes nothing"
    assert job["job_id"] in await job_ids(cpsat.session)


async def test_checked_file_job_with_checker_path(cpsat, workdir):
    (workdir / "model").mkdir()
    (workdir / "checker").mkdir()
    script = write(workdir / "model" / "model.py", knapsack_script())
    checker = write(workdir / "checker" / "checker.py", REAL_CHECKER)
    submitted = await call_ok(
        cpsat.session,
        "submit_cpsat_python_file_job",
        {
            "script_path": str(script),
            "checker_path": str(checker),
            "problem": KNAPSACK,
            "script_timeout_ms": 20000,
            "checker_timeout_ms": 7000,
        },
    )
    assert submitted["checker_timeout_ms"] == 7000, submitted
    job, seen = await wait_cpsat_job(cpsat.session, submitted["job_id"])
    assert job["state"] == "succeeded", job
    assert job["checker_timeout_ms"] == 7000, "the checker budget is echoed"
    assert job["script_timeout_ms"] == 20000
    check_knapsack_answer(job["result"])
    report = job["checker"]
    assert report is not None and report["status"] == "accepted", report
    assert json.loads(report["details"]["problem_text"]) == KNAPSACK
    assert job["checker_skipped_reason"] is None
    assert job["result"]["diagnostic"] is None
    assert runs_logged(checker.parent) == 1, "the checker ran once, in its own directory"


async def test_checked_jobs_default_budget_inline_checker_and_skip(cpsat, workdir):
    # Inline checker, no checker_timeout_ms: the script's budget.
    submitted = await call_ok(
        cpsat.session,
        "submit_cpsat_python_job",
        {"source": FIXED_ANSWER, "checker": REAL_CHECKER, "problem": KNAPSACK, "script_timeout_ms": 9000},
    )
    assert submitted["checker_timeout_ms"] == 9000, submitted
    job, _ = await wait_cpsat_job(cpsat.session, submitted["job_id"])
    assert job["state"] == "succeeded", job
    assert job["checker"]["status"] == "accepted", job["checker"]
    assert job["checker_timeout_ms"] == 9000

    # A rejected answer: the job still succeeds, the verdict says rejected.
    wrong = FIXED_ANSWER.replace('"objective": 13', '"objective": 14')
    submitted = await call_ok(
        cpsat.session, "submit_cpsat_python_job", {"source": wrong, "checker": REAL_CHECKER, "problem": KNAPSACK}
    )
    job, _ = await wait_cpsat_job(cpsat.session, submitted["job_id"])
    assert job["state"] == "succeeded", job
    assert job["checker"]["status"] == "rejected", job["checker"]
    assert job["result"]["diagnostic"]["category"] == "checker_failed", job["result"]["diagnostic"]

    # No incumbent: the checker is skipped.
    infeasible = "print('{\"status\": \"infeasible\", \"objective\": null, \"solution\": {}}')\n"
    submitted = await call_ok(cpsat.session, "submit_cpsat_python_job", {"source": infeasible, "checker": VACUOUS_CHECKER})
    job, _ = await wait_cpsat_job(cpsat.session, submitted["job_id"])
    assert job["state"] == "succeeded", job
    assert job["checker"] is None and job["checker_skipped_reason"], job


async def test_timeout_job_carries_the_recovered_incumbent(cpsat):
    source = (
        "import json, time\n"
        "print(json.dumps({'status': 'feasible', 'objective': 4, 'solution': {'x': [1]}}))\n"
        "print(json.dumps({'status': 'feasible', 'objective': 6, 'solution': {'x': [1, 2]}}))\n"
        "time.sleep(120)\n"
    )
    submitted = await call_ok(cpsat.session, "submit_cpsat_python_job", {"source": source, "script_timeout_ms": 1500})
    job, _ = await wait_cpsat_job(cpsat.session, submitted["job_id"])
    assert job["state"] == "timeout", job
    result = job["result"]
    assert result["status"] == "timeout" and result["timed_out"] is True and result["return_code"] is None
    assert result["solution"] == {"x": [1, 2]} and result["objective"] == 6, result
    assert result["diagnostic"]["category"] == "timeout_with_incumbent"


async def test_bad_job_arguments_create_no_job(cpsat, workdir):
    script = write(workdir / "model.py", FIXED_ANSWER)
    checker = write(workdir / "checker.py", VACUOUS_CHECKER)
    before = await job_ids(cpsat.session)
    cases = [
        (
            "submit_cpsat_python_file_job",
            {"script_path": str(script), "checker": VACUOUS_CHECKER, "checker_path": str(checker)},
            "checker_path",
        ),
        ("submit_cpsat_python_file_job", {"script_path": str(script), "checker_timeout_ms": 1000}, "checker"),
        ("submit_cpsat_python_job", {"source": FIXED_ANSWER, "checker_timeout_ms": 1000}, "checker"),
        ("submit_cpsat_python_job", {"source": FIXED_ANSWER, "checker": "  "}, "checker"),
        ("submit_cpsat_python_job", {"source": FIXED_ANSWER, "script_timeout_ms": 0}, "script_timeout_ms"),
        ("submit_cpsat_python_job", {"source": FIXED_ANSWER, "checker": VACUOUS_CHECKER, "checker_timeout_ms": -1}, "checker_timeout_ms"),
        ("submit_cpsat_python_job", {"source": ""}, "source"),
        ("submit_cpsat_python_file_job", {"script_path": str(workdir / "missing.py")}, "does not exist"),
        ("submit_cpsat_python_file_job", {"script_path": str(script), "checker_path": str(workdir / "missing.py")}, "checker_path"),
        ("submit_cpsat_python_file_job", {"script_path": str(script), "args": ["a\0b"]}, "NUL"),
        ("get_cpsat_python_job", {"job_id": "no-such-job"}, "no-such-job"),
        ("cancel_cpsat_python_job", {"job_id": "no-such-job"}, "no-such-job"),
    ]
    for tool, arguments, needle in cases:
        error = await call_error(cpsat.session, tool, arguments)
        assert error.category == "invalid_request", (tool, arguments, error)
        assert needle in error.message, (tool, needle, error.message)
    assert await job_ids(cpsat.session) == before, "a refused submit created a job"
    # A MiniZinc job id is not a CP-SAT job id either.
    assert (await call_ok(cpsat.session, "list_solve_jobs", {}))["jobs"] == []


# ---- cancellation kills the whole tree ----------------------------------------------------


async def test_cancel_kills_the_script_and_its_grandchild(harness):
    async with cpsat_server(harness) as (launched, marker):
        session = launched.session
        submitted = await call_ok(session, "submit_cpsat_python_job", {"source": HANG_WITH_GRANDCHILD, "script_timeout_ms": 60000})
        during = await wait_marked_async(marker, lambda procs: any(p.comm == "sleep" for p in procs) and len(procs) >= 2)
        assert during, "script and grandchild never both ran: the scan would prove nothing"
        running = await call_ok(session, "get_cpsat_python_job", {"job_id": submitted["job_id"]})
        assert running["state"] == "running", running

        started = time.monotonic()
        cancelled = await call_ok(session, "cancel_cpsat_python_job", {"job_id": submitted["job_id"]})
        check_cpsat_job(cancelled)
        assert cancelled["state"] == "cancelled", cancelled
        assert cancelled["result"] is None
        assert time.monotonic() - started < 5
        left = await leftover_marked_async(marker)
        assert not left, f"left running after cancel: {describe(left)}"
        # Idempotent, and the job stays cancelled.
        again = await call_ok(session, "cancel_cpsat_python_job", {"job_id": submitted["job_id"]})
        assert again["state"] == "cancelled"
        final = await call_ok(session, "get_cpsat_python_job", {"job_id": submitted["job_id"]})
        assert final["state"] == "cancelled" and final["result"] is None


HANGING_CHECKER = """
import time
time.sleep(300)
"""


async def test_a_job_stays_running_through_its_checker_and_cancel_kills_it(harness, workdir):
    checker = write(workdir / "slow_checker.py", HANGING_CHECKER)
    script = write(workdir / "model.py", FIXED_ANSWER)
    async with cpsat_server(harness) as (launched, marker):
        session = launched.session
        submitted = await call_ok(
            session,
            "submit_cpsat_python_file_job",
            {"script_path": str(script), "checker_path": str(checker), "script_timeout_ms": 20000, "checker_timeout_ms": 60000},
        )

        def checker_running(procs) -> bool:
            return any(any("slow_checker.py" in part for part in cmdline(p.pid)) for p in procs)

        during = await wait_marked_async(marker, checker_running)
        assert during, "the checker never ran"
        job = await call_ok(session, "get_cpsat_python_job", {"job_id": submitted["job_id"]})
        assert job["state"] == "running", f"a job in its checker phase must be running: {job}"
        assert job["result"] is None

        cancelled = await call_ok(session, "cancel_cpsat_python_job", {"job_id": submitted["job_id"]})
        assert cancelled["state"] == "cancelled", cancelled
        assert cancelled["result"] is None, "cancelling in the checker phase discards the result"
        left = await leftover_marked_async(marker)
        assert not left, f"the checker was not killed: {describe(left)}"


async def test_cpsat_registry_bounds_are_enforced(harness):
    bounds = {"SOLVERGATE_CPSAT_MAX_RUNNING_JOBS": "1", "SOLVERGATE_CPSAT_MAX_QUEUED_JOBS": "0"}
    async with cpsat_server(harness, **bounds) as (launched, marker):
        session = launched.session
        first = await call_ok(session, "submit_cpsat_python_job", {"source": HANG_WITH_GRANDCHILD, "script_timeout_ms": 60000})
        assert first["state"] == "running", first
        error = await call_error(session, "submit_cpsat_python_job", {"source": FIXED_ANSWER})
        assert error.category == "invalid_request", error
        assert len(await job_ids(session)) == 1
        # The MiniZinc registry has its own bounds: not full.
        await call_ok(session, "list_solve_jobs", {})
        await call_ok(session, "cancel_cpsat_python_job", {"job_id": first["job_id"]})
        assert not await leftover_marked_async(marker)
        # A slot is free again.
        again = await call_ok(session, "submit_cpsat_python_job", {"source": FIXED_ANSWER})
        job, _ = await wait_cpsat_job(session, again["job_id"])
        assert job["state"] == "succeeded", job


async def test_a_script_error_is_a_succeeded_job(cpsat):
    crash = "raise RuntimeError('model bug')\n"
    submitted = await call_ok(cpsat.session, "submit_cpsat_python_job", {"source": crash})
    job, _ = await wait_cpsat_job(cpsat.session, submitted["job_id"])
    assert job["state"] == "succeeded", "the child ran and produced a result"
    assert job["result"]["status"] == "error", job["result"]
    assert job["result"]["return_code"] == 1
    assert job["diagnostic"]["category"] == "child_process_error", job["diagnostic"]


async def test_a_queued_job_runs_what_was_named_on_submit(harness, workdir):
    """Admission resolves and records the inputs: args given on submit are
    used when the job finally runs, and a checker file deleted meanwhile is
    an error verdict on a finished job, not a failed job."""
    (workdir / "data.json").write_text("{}")
    script = write(
        workdir / "model.py",
        "import json, sys\n"
        "print(json.dumps({'status': 'optimal', 'objective': 1, 'solution': {'argv': sys.argv[1:], 'items': [{'v': 1}]}}))\n",
    )
    checker = write(workdir / "checker.py", VACUOUS_CHECKER)
    bounds = {"SOLVERGATE_CPSAT_MAX_RUNNING_JOBS": "1", "SOLVERGATE_CPSAT_MAX_QUEUED_JOBS": "1"}
    async with cpsat_server(harness, **bounds) as (launched, marker):
        session = launched.session
        blocker = await call_ok(session, "submit_cpsat_python_job", {"source": HANG_WITH_GRANDCHILD, "script_timeout_ms": 60000})
        assert blocker["state"] == "running", blocker
        queued = await call_ok(
            session,
            "submit_cpsat_python_file_job",
            {"script_path": str(script), "args": ["data.json", "--x"], "checker_path": str(checker)},
        )
        check_cpsat_job(queued)
        assert queued["state"] == "queued", queued
        assert queued["started_at"] is None
        checker.unlink()
        await call_ok(session, "cancel_cpsat_python_job", {"job_id": blocker["job_id"]})
        job, seen = await wait_cpsat_job(session, queued["job_id"])
        assert job["state"] == "succeeded", job
        assert job["result"]["solution"]["argv"] == ["data.json", "--x"]
        assert job["checker"] is not None and job["checker"]["status"] == "error", job["checker"]
        assert not await leftover_marked_async(marker)


# ---- start-up validation -------------------------------------------------------------

BAD_BOUNDS = [
    ("SOLVERGATE_CPSAT_MAX_RUNNING_JOBS", "0"),
    ("SOLVERGATE_CPSAT_MAX_RUNNING_JOBS", "two"),
    ("SOLVERGATE_CPSAT_MAX_QUEUED_JOBS", "-1"),
    ("SOLVERGATE_CPSAT_MAX_RETAINED_TERMINAL", "0"),
]


@pytest.mark.parametrize(("variable", "value"), BAD_BOUNDS, ids=[f"{v}={x}" for v, x in BAD_BOUNDS])
def test_invalid_cpsat_bounds_stop_start_up_naming_the_variable(harness, tmp_path, variable, value):
    stderr_path = tmp_path / "stderr.txt"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            [harness.binary, "stdio", "--toolset", "full"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=harness.server_env(SOLVERGATE_CPSAT_PYTHON=PYTHON, **{variable: value}),
        )
        try:
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
    text = stderr_path.read_text(errors="replace")
    assert variable in text, f"stderr does not name {variable}: {text!r}"
    assert stdout == b"", f"stdout is not for messages: {stdout[:300]!r}"


def test_valid_cpsat_bounds_start(harness, tmp_path):
    """The same variables with valid values do not stop start-up (so the
    refusals above are about the values)."""
    proc = subprocess.Popen(
        [harness.binary, "stdio", "--toolset", "full"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=harness.server_env(
            SOLVERGATE_CPSAT_PYTHON=PYTHON,
            SOLVERGATE_CPSAT_MAX_RUNNING_JOBS="1",
            SOLVERGATE_CPSAT_MAX_QUEUED_JOBS="0",
            SOLVERGATE_CPSAT_MAX_RETAINED_TERMINAL="1",
        ),
    )
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()

