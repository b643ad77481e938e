"""The per-call `limits` argument: it lowers the server's resource limits for
what one call runs — a script, a solve, a compile check, a job in its own
task, a race's attempts — and can never raise them; a zero or an unknown
field is refused before anything runs. And check_runtime, with the start-up
banner, says how each limit is enforced on this host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from cpsat_helpers import cpsat_env, cpsat_server, runs_logged, wait_cpsat_job, write
from helpers import call_error, call_ok, wait_job

pytestmark = pytest.mark.anyio

#: Allocates (and so touches) 1 GiB, then would report an answer.
HOG = """\
data = b"x" * (1024 ** 3)
print('{"status": "feasible", "objective": null, "solution": {"n": %d}}' % len(data))
"""

#: Appends a line to ./runs.log (the script runs in its own directory),
#: then answers: a run leaves a trace.
LOGGER = """\
with open("runs.log", "a") as log:
    log.write("ran\\n")
print('{"status": "feasible", "objective": null, "solution": {}}')
"""

#: Several GiB to flatten: a 2500 x 2500 table of variables.
BIG_TABLE = (
    "int: n = 2500;\n"
    "array[1..n,1..n] of var 0..10: x;\n"
    "constraint forall(i in 1..n)(sum(j in 1..n)(x[i,j]) <= 7);\n"
    "solve satisfy;\n"
)

#: The server's own memory limit in most tests here: well above every cap
#: a call asks for, well below what the hogs would take.
SERVER_MEMORY_MB = "2048"

MECHANISMS = {"cgroup_v2", "cgroup_v1", "rlimit", "none"}


def memory_breach(result: dict[str, Any], value: int) -> None:
    """`result` ended on its memory limit, `value` MiB."""
    assert result["status"] == "error", result
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "resource_limit", diagnostic
    details = diagnostic["details"]
    assert details["limit"] == "memory", details
    assert details["value"] == value, details
    assert details["unit"] == "MiB", details
    assert details["mechanism"] in MECHANISMS - {"none"}, details


async def server_memory(session: Any) -> int:
    limits = (await call_ok(session, "check_runtime", {}))["limits"]
    return limits["memory_mb"]


@pytest.mark.parametrize("mode", ["auto", "rlimit"])
async def test_a_call_lowers_the_memory_limit_of_its_script(harness, mode):
    async with cpsat_server(harness, SOLVERGATE_MEMORY_LIMIT_MB=SERVER_MEMORY_MB, SOLVERGATE_LIMITS=mode) as (server, _):
        assert await server_memory(server.session) == 2048
        with anyio.fail_after(90):
            result = await call_ok(
                server.session,
                "run_cpsat_python",
                {"source": HOG, "script_timeout_ms": 60000, "limits": {"memory_mb": 256}},
            )
        memory_breach(result, 256)
        assert result["solution"] is None, result


async def test_a_call_cannot_raise_the_servers_limit(harness):
    async with cpsat_server(harness, SOLVERGATE_MEMORY_LIMIT_MB="300") as (server, _):
        with anyio.fail_after(90):
            result = await call_ok(
                server.session,
                "run_cpsat_python",
                {"source": HOG, "script_timeout_ms": 60000, "limits": {"memory_mb": 100000}},
            )
        memory_breach(result, 300)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"processes": 0}, "limits.processes must be at least 1"),
        ({"memory_mb": 0, "scratch_mb": 10}, "limits.memory_mb must be at least 1"),
        (
            {"bogus": 1},
            "invalid arguments: limits.bogus: unknown field `bogus`, expected one of `memory_mb`, `processes`, `file_size_mb`, `scratch_mb`",
        ),
        ({"memory_mb": -5}, "invalid arguments: limits.memory_mb: invalid value: integer `-5`, expected u64"),
        ({"memory_mb": "256"}, 'invalid arguments: limits.memory_mb: invalid type: string "256", expected u64'),
        # serde alone would read an array as the fields in order.
        ([256], 'invalid arguments: limits must be an object such as {"memory_mb": 512}, got an array'),
    ],
)
async def test_a_bad_limit_is_refused_before_anything_runs(harness, workdir: Path, limits, message):
    script = write(workdir / "logger.py", LOGGER)
    async with cpsat_server(harness) as (server, _):
        refused = await call_error(
            server.session, "run_cpsat_python_file", {"script_path": str(script), "limits": limits}
        )
        assert (refused.category, refused.message) == ("invalid_request", message)
        refused = await call_error(
            server.session, "submit_cpsat_python_file_job", {"script_path": str(script), "limits": limits}
        )
        assert (refused.category, refused.message) == ("invalid_request", message)
        jobs = await call_ok(server.session, "list_cpsat_python_jobs", {})
        assert jobs["jobs"] == [], jobs
        assert runs_logged(workdir) == 0, "a refused call ran its script"
        # The same script with a valid cap runs, and leaves its trace.
        ran = await call_ok(
            server.session, "run_cpsat_python_file", {"script_path": str(script), "limits": {"processes": 64}}
        )
        assert ran["status"] == "feasible", ran
        assert runs_logged(workdir) == 1


async def test_a_jobs_task_keeps_the_caps_of_its_submit(harness):
    async with cpsat_server(harness, SOLVERGATE_MEMORY_LIMIT_MB=SERVER_MEMORY_MB) as (server, _):
        job = await call_ok(
            server.session,
            "submit_cpsat_python_job",
            {"source": HOG, "script_timeout_ms": 60000, "limits": {"memory_mb": 256}},
        )
        done, _ = await wait_cpsat_job(server.session, job["job_id"], timeout=90)
        assert done["state"] == "succeeded", done
        memory_breach(done["result"], 256)


@pytest.mark.parametrize("tool", ["solve_minizinc_model", "check_minizinc_model"])
async def test_a_call_lowers_the_memory_limit_of_minizinc(harness, tool):
    env = harness.server_env(SOLVERGATE_MEMORY_LIMIT_MB=SERVER_MEMORY_MB)
    async with harness.open("full", env=env) as server:
        with anyio.fail_after(120):
            result = await call_ok(
                server.session,
                tool,
                {"model": BIG_TABLE, "solver": "gecode", "timeout_ms": 90000, "limits": {"memory_mb": 300}},
            )
        memory_breach(result, 300)


async def test_a_races_attempts_keep_the_caps_of_its_submit(harness):
    env = harness.server_env(SOLVERGATE_MEMORY_LIMIT_MB=SERVER_MEMORY_MB)
    async with harness.open("full", env=env) as server:
        race = await call_ok(
            server.session,
            "submit_portfolio_job",
            {
                "models": [BIG_TABLE],
                "solvers": ["gecode"],
                "per_attempt_timeout_ms": 90000,
                "limits": {"memory_mb": 300},
            },
        )
        done, _ = await wait_job(server.session, race["job_id"], tool="get_portfolio_job", timeout=120)
        assert done["state"] in ("succeeded", "failed"), done
        (attempt_id,) = done["attempt_job_ids"]
        attempt, _ = await wait_job(server.session, attempt_id, timeout=30)
        assert attempt["state"] == "succeeded", attempt
        memory_breach(attempt["result"], 300)


@pytest.mark.skipif(
    os.environ.get("SOLVERGATE_TEST_SLURM") != "1",
    reason="SOLVERGATE_TEST_SLURM is not 1: no Slurm cluster answered (see tests/mcp/test_slurm.py)",
)
async def test_a_slurm_jobs_caps_reach_the_node(harness, workdir: Path):
    # The node's worker reads its own limits from the environment sbatch
    # passes on (2048 MiB here); the task file lowers them by the call's.
    env, _ = cpsat_env(
        harness,
        SOLVERGATE_MEMORY_LIMIT_MB=SERVER_MEMORY_MB,
        SOLVERGATE_JOB_BACKEND="slurm",
        SOLVERGATE_SLURM_PARTITION=os.environ.get("SOLVERGATE_TEST_SLURM_PARTITION", "solvergate"),
        SOLVERGATE_SLURM_WORKDIR=str(workdir),
        SOLVERGATE_CPSAT_WARM="0",
    )
    async with harness.open("full", env=env) as server:
        job = await call_ok(
            server.session,
            "submit_cpsat_python_job",
            {"source": HOG, "script_timeout_ms": 60000, "limits": {"memory_mb": 256}},
        )
        done, _ = await wait_cpsat_job(server.session, job["job_id"], timeout=120)
        assert done["state"] == "succeeded", done
        assert done["slurm"] is not None, done
        memory_breach(done["result"], 256)


async def test_check_runtime_and_the_banner_say_how_limits_are_enforced(harness):
    env = harness.server_env(
        SOLVERGATE_MEMORY_LIMIT_MB="3000",
        SOLVERGATE_MAX_PROCESSES="128",
        SOLVERGATE_FILE_SIZE_LIMIT_MB="512",
        SOLVERGATE_SCRATCH_LIMIT_MB="1024",
    )
    async with harness.open("full", env=env) as server:
        limits = (await call_ok(server.session, "check_runtime", {}))["limits"]
        banner = server.stderr_text().splitlines()
    assert (limits["memory_mb"], limits["processes"]) == (3000, 128), limits
    assert (limits["file_size_mb"], limits["scratch_mb"]) == (512, 1024), limits
    assert limits["memory_via"] in MECHANISMS - {"none"}, limits
    assert limits["processes_via"] in MECHANISMS, limits
    # A limit bounded per process or not at all is explained.
    notes = limits.get("notes", [])
    assert (limits["memory_via"] == "rlimit") == any("RLIMIT_DATA" in note for note in notes), limits
    assert (limits["processes_via"] == "none") == any("not bounded" in note for note in notes), limits
    summary = (
        f"limits: memory 3000 MiB ({limits['memory_via']}), processes 128 ({limits['processes_via']}), "
        "files 512 MiB (rlimit), scratch 1024 MiB (watchdog)"
    )
    at = banner.index(summary)
    assert banner[at + 1 : at + 1 + len(notes)] == [f"  note: {note}" for note in notes], banner


async def test_rlimits_only_are_reported_as_such(harness):
    env = harness.server_env(SOLVERGATE_LIMITS="rlimit")
    async with harness.open("full", env=env) as server:
        limits = (await call_ok(server.session, "check_runtime", {}))["limits"]
    assert limits["memory_via"] == "rlimit", limits
    assert limits["processes_via"] in ("rlimit", "none"), limits
    assert any("RLIMIT_DATA" in note for note in limits["notes"]), limits
