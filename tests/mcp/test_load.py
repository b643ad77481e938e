"""Load against the caps, through one real client session: 100 synchronous
solves at once all answer correctly, and 500 job submits at once are
admitted exactly up to the caps (4 running + 16 queued by default) and
refused past them. Afterwards no process, scratch dir or file descriptor of
theirs is left. The figures (RSS, descriptors, timings) are measured by the
bench `cargo bench --bench load`, not here."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import anyio
import pytest

from helpers import HARD_MODEL, OPT_MODEL, describe, leftover_marked_async, structured

pytestmark = pytest.mark.anyio


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def scratch_entries(pid: int) -> list[Path]:
    roots = Path(tempfile.gettempdir()).glob(f"solvergate-run-{pid}-*")
    return [entry for root in roots for entry in root.iterdir() if entry.name != "owner"]


async def test_a_hundred_synchronous_solves_at_once(harness):
    env, marker = harness.tagged_env()
    async with harness.open("core", env=env) as launched:
        pid = launched.pid
        assert pid, "the server process was not found"
        fds_before = fd_count(pid)
        results: list[dict] = []

        async def one() -> None:
            results.append(structured(await launched.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL})))

        with anyio.fail_after(300):
            async with anyio.create_task_group() as group:
                for _ in range(100):
                    group.start_soon(one)
        assert len(results) == 100
        odd = [result for result in results if result["status"] != "optimal"]
        assert not odd, json.dumps(odd[:2], indent=1)
        assert len({str(result["objective"]) for result in results}) == 1
        left = await leftover_marked_async(marker, timeout=10.0)
        assert not left, describe(left)
        assert not scratch_entries(pid), scratch_entries(pid)
        assert fd_count(pid) <= fds_before + 2, (fds_before, fd_count(pid))


async def test_five_hundred_submits_at_once_are_admitted_exactly_to_the_caps(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        pid = launched.pid
        fds_before = fd_count(pid)
        admitted: list[str] = []
        refused: list[str] = []

        async def submit() -> None:
            result = await launched.session.call_tool(
                "submit_solve_job", {"model": HARD_MODEL, "timeout_ms": 60000}
            )
            if result.is_error:
                refused.append(result.content[0].text)
            else:
                admitted.append(structured(result)["job_id"])

        with anyio.fail_after(300):
            async with anyio.create_task_group() as group:
                for _ in range(500):
                    group.start_soon(submit)
        assert len(admitted) == 20, (len(admitted), refused[:1])
        assert len(refused) == 480
        assert all("Diagnostic: invalid_request" in text and "retry" in text for text in refused), refused[:1]
        listed = structured(await launched.session.call_tool("list_solve_jobs", {}))
        states = [job["state"] for job in listed["jobs"]]
        assert states.count("running") == 4 and states.count("queued") == 16, states

        with anyio.fail_after(120):
            for job_id in admitted:
                cancelled = structured(await launched.session.call_tool("cancel_solve_job", {"job_id": job_id}))
                assert cancelled["state"] == "cancelled", cancelled
        left = await leftover_marked_async(marker, timeout=10.0)
        assert not left, describe(left)
        assert not scratch_entries(pid), scratch_entries(pid)
        assert fd_count(pid) <= fds_before + 2, (fds_before, fd_count(pid))
