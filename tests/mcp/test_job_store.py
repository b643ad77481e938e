"""Jobs outlive the server that ran them (issue 27, "results that outlive
the server"), shown through the official client.

MCP clients restart their stdio servers all the time. A server is started,
given jobs, and stopped by SIGTERM or SIGKILL; a new server on the same data
dir then answers for every id:
- a finished solve job, portfolio race and CP-SAT job with exactly the
  status the first server gave (structured content and text alike);
- a job that was running when its server stopped as `failed`, with a
  `job_failed` diagnostic saying its server stopped, and no process of it
  left;
- an id that was never a job, or a path in disguise, as unknown, as
  before; and ids of another scope (a sessionless HTTP server's) not at all.
Finished jobs past the retention bound are removed from disk, oldest first.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from cpsat_helpers import check_knapsack_answer, cpsat_env, knapsack_script, wait_cpsat_job
from helpers import (
    HARD_MODEL,
    OPT_MODEL,
    OPT_OBJECTIVE,
    call_error,
    call_ok,
    describe,
    leftover_marked_async,
    structured,
    wait_job,
)

pytestmark = pytest.mark.anyio

SIGNALS = [signal.SIGTERM, signal.SIGKILL]


@asynccontextmanager
async def server_on(harness: Any, data: Path, **extra: str) -> AsyncIterator[Any]:
    """A full-toolset server whose data dir is `data`."""
    env, marker = cpsat_env(harness, XDG_DATA_HOME=str(data), **extra)
    async with harness.open("full", env=env) as launched:
        launched.marker = marker
        yield launched


async def stop(launched: Any, how: signal.Signals) -> None:
    """Sends `how` to the server and waits until it is gone."""
    assert launched.pid > 0, "the server's pid was not found"
    os.kill(launched.pid, how)
    with anyio.fail_after(15):
        while Path(f"/proc/{launched.pid}").exists() and "Z" not in stat_state(launched.pid):
            await anyio.sleep(0.05)


def stat_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


@asynccontextmanager
async def stopped_by(harness: Any, data: Path, how: signal.Signals) -> AsyncIterator[Any]:
    """A server on `data` that is stopped by `how` when the block ends (the
    client's own teardown after the server is gone may raise: ignored)."""
    context = server_on(harness, data)
    launched = await context.__aenter__()
    try:
        yield launched
    finally:
        await stop(launched, how)
        try:
            await context.__aexit__(None, None, None)
        except BaseException:  # noqa: BLE001 - the transport of a dead server
            pass


async def tool_reply(session: Any, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A call's structured content and its parts: a text as it is, a link
    to the kept result by its URI."""
    result = await session.call_tool(tool, arguments)
    return structured(result), [part.text if part.type == "text" else str(part.uri) for part in result.content]


def without_kept(reply: tuple[dict[str, Any], list[str]]) -> tuple[dict[str, Any], list[str]]:
    """A reply less what names its kept result (a get keeps one, a cancel
    does not)."""
    content, parts = reply
    texts = ["\n".join(line for line in part.splitlines() if not line.startswith("Whole result: ")) for part in parts]
    return content, [text for text in texts if not text.startswith("solvergate://results/")]


@pytest.mark.parametrize("how", SIGNALS, ids=["sigterm", "sigkill"])
async def test_finished_jobs_read_the_same_from_a_new_server(harness, tmp_path, how):
    data = tmp_path / "data"
    finished: dict[str, tuple[str, tuple[dict[str, Any], list[str]]]] = {}
    async with stopped_by(harness, data, how) as first:
        solve = await call_ok(first.session, "submit_solve_job", {"model": OPT_MODEL})
        race = await call_ok(
            first.session,
            "submit_portfolio_job",
            {"models": [OPT_MODEL], "solvers": ["gecode"], "seeds": [1, 2]},
        )
        await wait_job(first.session, solve["job_id"])
        await wait_job(first.session, race["job_id"], tool="get_portfolio_job")
        script = await call_ok(first.session, "submit_cpsat_python_job", {"source": knapsack_script()})
        await wait_cpsat_job(first.session, script["job_id"], timeout=60)
        jobs = [
            ("get_solve_job", solve["job_id"]),
            ("get_portfolio_job", race["job_id"]),
            ("get_cpsat_python_job", script["job_id"]),
        ]
        for tool, job_id in jobs:
            finished[job_id] = (tool, await tool_reply(first.session, tool, {"job_id": job_id}))
    solved = finished[solve["job_id"]][1][0]
    assert solved["state"] == "succeeded" and solved["result"]["objective"] == OPT_OBJECTIVE, solved
    check_knapsack_answer(finished[script["job_id"]][1][0]["result"])

    async with server_on(harness, data) as second:
        assert second.pid != first.pid
        for job_id, (tool, before) in finished.items():
            after = await tool_reply(second.session, tool, {"job_id": job_id})
            assert json.dumps(after[0], sort_keys=True) == json.dumps(before[0], sort_keys=True), tool
            # The same result keeps the same id, from a new server too.
            assert after[1] == before[1], tool
            assert after[1][-1].startswith("solvergate://results/"), after[1]
            # Cancelling a finished job is idempotent here too.
            cancelled = await tool_reply(second.session, tool.replace("get_", "cancel_"), {"job_id": job_id})
            assert without_kept(cancelled) == without_kept(after), tool


@pytest.mark.parametrize("how", SIGNALS, ids=["sigterm", "sigkill"])
async def test_a_job_running_when_its_server_stopped_reads_as_failed(harness, tmp_path, how):
    data = tmp_path / "data"
    async with stopped_by(harness, data, how) as first:
        job = await call_ok(first.session, "submit_solve_job", {"model": HARD_MODEL, "timeout_ms": 120000})
        queued = await call_ok(
            first.session,
            "submit_portfolio_job",
            {"models": [HARD_MODEL], "solvers": ["gecode"], "seeds": [1], "per_attempt_timeout_ms": 120000},
        )
        with anyio.fail_after(15):
            while (await call_ok(first.session, "get_solve_job", {"job_id": job["job_id"]}))["state"] != "running":
                await anyio.sleep(0.05)
        marker = first.marker
    left = await leftover_marked_async(marker, timeout=10)
    assert not left, f"the stopped server's jobs left processes: {describe(left)}"

    async with server_on(harness, data) as second:
        for tool, job_id in (("get_solve_job", job["job_id"]), ("get_portfolio_job", queued["job_id"])):
            status = await call_ok(second.session, tool, {"job_id": job_id})
            message = (
                f"the server that ran this job (pid {first.pid}) stopped before the job finished;"
                " its processes stopped with it. Submit it again"
            )
            assert status["state"] == "failed", status
            assert status["message"] == message, status
            assert status["diagnostic"] == {"category": "job_failed", "message": message}, status
            assert status["job_id"] == job_id
            # The same answer again: it is stored as ended now.
            assert await call_ok(second.session, tool, {"job_id": job_id}) == status
        stored = data / "solvergate" / "jobs" / "solve"
        assert not (stored / "running" / f"{job['job_id']}.json").exists()
        assert (stored / "done" / f"{job['job_id']}.json").exists()


async def test_ids_that_were_never_jobs_are_unknown(harness, tmp_path):
    data = tmp_path / "data"
    (data / "solvergate" / "jobs" / "solve" / "done").mkdir(parents=True)
    # A file that looks like a stored job but sits outside the store.
    (tmp_path / "outside.json").write_text("{}")
    async with server_on(harness, data) as server:
        for job_id in ("0" * 32, "../../../outside", "../../../../outside", "0123456789ABCDEF0123456789ABCDEF"):
            error = await call_error(server.session, "get_solve_job", {"job_id": job_id})
            assert (error.category, error.message) == (
                "invalid_request",
                f"no solve job with id {json.dumps(job_id)}; ids come from submit,"
                " and only the last 64 finished jobs are kept",
            ), error


async def test_a_sessionless_http_servers_jobs_are_not_read_over_stdio(harness, tmp_path):
    """The store keeps scopes apart: a job kept by one scope is not found
    from another, even with its id and the same data dir."""
    data = tmp_path / "data"
    async with server_on(harness, data) as first:
        job = await call_ok(first.session, "submit_solve_job", {"model": OPT_MODEL})
        await wait_job(first.session, job["job_id"])
    record = data / "solvergate" / "jobs" / "solve" / "done" / f"{job['job_id']}.json"
    kept = json.loads(record.read_text())
    assert kept["scope"] == "stdio"
    kept["scope"] = "sessionless"
    record.write_text(json.dumps(kept))
    async with server_on(harness, data) as second:
        error = await call_error(second.session, "get_solve_job", {"job_id": job["job_id"]})
        assert error.category == "invalid_request", error
        assert error.message.startswith("no solve job with id"), error


async def test_finished_jobs_past_the_bound_are_removed_oldest_first(harness, tmp_path):
    data = tmp_path / "data"
    async with server_on(harness, data, SOLVERGATE_MAX_RETAINED_TERMINAL="2") as server:
        ids = []
        for _ in range(4):
            job = await call_ok(server.session, "submit_solve_job", {"model": OPT_MODEL})
            await wait_job(server.session, job["job_id"])
            ids.append(job["job_id"])
            time.sleep(0.02)
        done = data / "solvergate" / "jobs" / "solve" / "done"
        with anyio.fail_after(5):
            while sorted(p.stem for p in done.glob("*.json")) != sorted(ids[2:]):
                await anyio.sleep(0.05)
        assert not list((data / "solvergate" / "jobs" / "solve" / "running").glob("*.json"))


async def test_a_job_running_in_another_live_server_is_not_called_failed(harness, tmp_path):
    """Two stdio servers on one data dir: the second, asked for a job the
    first is still running, answers with the first's record and says where
    the job runs, never `failed` (its writer is alive)."""
    data = tmp_path / "data"
    async with server_on(harness, data) as first, server_on(harness, data) as second:
        job = await call_ok(first.session, "submit_solve_job", {"model": HARD_MODEL, "timeout_ms": 60000})
        seen = await call_ok(second.session, "get_solve_job", {"job_id": job["job_id"]})
        assert seen["state"] in ("queued", "running"), seen
        assert seen["message"] == (
            f"this job runs in another solvergate server on this machine (pid {first.pid});"
            " its state here is as that server last wrote it"
        ), seen
        assert seen["diagnostic"] is None, seen
        await call_ok(first.session, "cancel_solve_job", {"job_id": job["job_id"]})


async def test_a_damaged_record_is_unknown_not_a_crash(harness, tmp_path):
    data = tmp_path / "data"
    async with server_on(harness, data) as server:
        job = await call_ok(server.session, "submit_solve_job", {"model": OPT_MODEL})
        await wait_job(server.session, job["job_id"])
    record = data / "solvergate" / "jobs" / "solve" / "done" / f"{job['job_id']}.json"
    for damage in (record.read_bytes()[:100], b"\x00\xff" * 1000, b"[]", b""):
        record.write_bytes(damage)
        async with server_on(harness, data) as again:
            error = await call_error(again.session, "get_solve_job", {"job_id": job["job_id"]})
            assert error.category == "invalid_request", error
            assert error.message.startswith(f'no solve job with id "{job["job_id"]}"'), error
            # The server goes on serving.
            assert (await call_ok(again.session, "solve_minizinc_model", {"model": OPT_MODEL}))["objective"] == OPT_OBJECTIVE
