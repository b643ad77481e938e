"""MCP tasks (issue 27; the `io.modelcontextprotocol/tasks` extension of
protocol 2026-07-28), through the official Python client (tasks_client.py
adds the extension's wire types to it).

A client that declares the extension on a request to a long tool gets a
task at once; `tasks/get` shows it `working` with the call's live figures,
then `completed` with exactly what a plain call returns; `tasks/cancel`
leaves no process. A client that did not declare it on that request, and
every 2025-11-25 session (whatever it declared at `initialize`), gets a
plain result and no task method. Over HTTP a task outlives the request that
made it and is reached by its id alone; on disk it outlives its server.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import tasks_client as tc
from cpsat_helpers import PYTHON, check_knapsack_answer, knapsack_script
from helpers import (
    HARD_MODEL,
    OPT_MODEL,
    OPT_OBJECTIVE,
    SYNTAX_ERROR_MODEL,
    RawServer,
    all_procs,
    describe,
    environ_has,
    leftover_marked_async,
    marked_procs,
    solver_procs,
    wait_for_solver_procs,
)
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from test_http import http_server

pytestmark = pytest.mark.anyio

TASK_ID = re.compile(r"[0-9a-f]{32}")
#: RFC 3339 as the server writes it: UTC, milliseconds, `Z`.
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
LONG_SOLVE = {"model": HARD_MODEL, "timeout_ms": 60000}
DECLARED = {"extensions": {tc.EXTENSION: {}}}


@asynccontextmanager
async def stdio_server(harness: Any, declare: bool = True, **extra: str) -> AsyncIterator[tuple[Any, str, int]]:
    """A 2026-07-28 stdio server of its own (tagged); yields the client,
    the tag and the server's pid."""
    env, marker = harness.tagged_env(SOLVERGATE_CPSAT_PYTHON=PYTHON, **extra)
    params = StdioServerParameters(command=harness.binary, args=["stdio", "--toolset", "full"], env=env)
    with open(harness.scratch("tasks") / "stderr.txt", "w") as errlog:
        make = tc.client if declare else tc.plain_client
        async with make(stdio_client(params, errlog=errlog)) as client:
            # The SDK may return before the child has exec'd (seen under load): look until it shows.
            pid = 0
            with anyio.move_on_after(10):
                while not pid:
                    pid = next((p.pid for p in all_procs() if p.comm == "solvergate" and environ_has(p.pid, marker)), 0)
                    await anyio.sleep(0 if pid else 0.05)
            yield client, marker, pid


async def plain_call(harness: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What `tool` answers a client that does not declare the extension
    (the SDK declares a client's extensions on every request, so this is
    another client, of another server)."""
    async with stdio_server(harness, declare=False) as (client, _, _):
        result = await client.call_tool(tool, arguments)
        assert result.structured_content is not None, result
        return result.structured_content


async def rpc_error(call: Any) -> MCPError:
    with pytest.raises(MCPError) as raised:
        await call
    return raised.value


def structured_of(task: tc.DetailedTask) -> dict[str, Any]:
    assert task.result is not None, task
    return task.result["structuredContent"]


def wire(task: Any) -> dict[str, Any]:
    return task.model_dump(mode="json", by_alias=True, exclude_none=False)


# ---- who gets a task -----------------------------------------------------------------------


async def test_a_request_that_does_not_declare_the_extension_gets_a_plain_result(harness):
    async with stdio_server(harness, declare=False) as (client, _, _):
        result = await client.call_tool("solve_minizinc_model", {"model": OPT_MODEL})
        assert result.structured_content["objective"] == OPT_OBJECTIVE, result
        for call in (tc.get(client, "0" * 32), tc.cancel(client, "0" * 32)):
            error = await rpc_error(call)
            assert error.error.code == -32021, error.error
            assert error.error.data == {"requiredCapabilities": DECLARED}, error.error


def test_a_2025_session_never_gets_a_task_whatever_it_declared(harness, tmp_path):
    """Declared at initialize and again in the request's _meta: under
    2025-11-25 neither counts (the extension is of 2026-07-28)."""
    env, _ = harness.tagged_env()
    server = RawServer([harness.binary, "stdio", "--toolset", "full"], env, tmp_path / "stderr.txt")
    try:
        init = server.call(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": DECLARED, "clientInfo": {"name": "t", "version": "0"}},
        )
        assert tc.EXTENSION in init["result"]["capabilities"]["extensions"], init
        server.notify("notifications/initialized")
        meta = {"io.modelcontextprotocol/clientCapabilities": DECLARED}
        reply = server.call("tools/call", {"name": "solve_minizinc_model", "arguments": {"model": OPT_MODEL}, "_meta": meta})
        assert "taskId" not in reply["result"], reply
        assert reply["result"]["structuredContent"]["objective"] == OPT_OBJECTIVE, reply
        refused = server.call("tasks/get", {"taskId": "0" * 32, "_meta": meta})
        assert refused["error"]["code"] == -32021, refused
    finally:
        server.stop()


# ---- a task's life -------------------------------------------------------------------------


async def test_a_solve_task_shows_live_figures_and_ends_with_the_plain_result(harness):
    async with stdio_server(harness) as (client, _, _):
        started = time.monotonic()
        created = await tc.create(client, "solve_minizinc_model", {"model": HARD_MODEL, "timeout_ms": 5000})
        assert time.monotonic() - started < 3, "the task was not answered at once"
        fields = wire(created)
        assert fields["resultType"] == "task" and fields["status"] == "working", fields
        assert TASK_ID.fullmatch(fields["taskId"]), fields
        assert TIMESTAMP.fullmatch(fields["createdAt"]) and TIMESTAMP.fullmatch(fields["lastUpdatedAt"]), fields
        assert fields["ttlMs"] is None and fields["pollIntervalMs"] == 1000, fields
        assert not {"result", "error", "task", "inputRequests"} & fields.keys(), fields

        end, seen = await tc.wait(client, created.task_id)
        assert end.status == "completed" and end.result_type == "complete", wire(end)
        working = [task.status_message or "" for task in seen if task.status == "working"]
        best = [int(m.group(1)) for text in working if (m := re.search(r"best objective (-?\d+)", text))]
        assert len(set(best)) >= 2 and best == sorted(best), f"no rising incumbent while working: {working}"
        result = structured_of(end)
        assert result["status"] == "satisfied" and result["objective"] >= max(best), result
        assert result["diagnostic"]["category"] == "timeout_with_incumbent", result["diagnostic"]
        assert end.result["isError"] is False and end.result["content"][0]["text"].startswith("Status: satisfied")

        # A deterministic solve, as a task and plainly: the same answer.
        created = await tc.create(client, "solve_minizinc_model", {"model": OPT_MODEL})
        end, _ = await tc.wait(client, created.task_id)
        plain = await plain_call(harness, "solve_minizinc_model", {"model": OPT_MODEL})
        for key in ("status", "objective", "solution", "solutions", "solver", "diagnostic"):
            assert structured_of(end)[key] == plain[key], key

        # The client's own wrapper follows the task to its result.
        followed = await client.call_tool("solve_minizinc_model", {"model": OPT_MODEL})
        assert followed.structured_content["objective"] == OPT_OBJECTIVE, followed


async def test_cancelling_a_task_stops_its_processes_at_once(harness):
    async with stdio_server(harness) as (client, marker, _):
        created = await tc.create(client, "solve_minizinc_model", LONG_SOLVE)
        assert wait_for_solver_procs(marker, timeout=20, comm="fzn-gecode"), "the task's solve never started"
        ack = await tc.cancel(client, created.task_id)
        assert wire(ack) == {"resultType": "complete", "_meta": None}, wire(ack)
        assert not solver_procs(marker), describe(solver_procs(marker))
        task = await tc.get(client, created.task_id)
        assert task.status == "cancelled" and task.result is None and task.error is None, wire(task)
        # Once more: an ended task stays as it ended.
        await tc.cancel(client, created.task_id)
        assert (await tc.get(client, created.task_id)).status == "cancelled"


async def test_tasks_are_bounded_like_jobs_and_a_queued_one_says_so(harness):
    """One runs, one waits (working, saying it is queued), a third is
    refused with the bound named, and cancelling the queued one leaves the
    running one alone."""
    bounds = {"SOLVERGATE_MAX_RUNNING_JOBS": "1", "SOLVERGATE_MAX_QUEUED_JOBS": "1"}
    async with stdio_server(harness, **bounds) as (client, marker, _):
        running = await tc.create(client, "solve_minizinc_model", LONG_SOLVE)
        queued = await tc.create(client, "solve_minizinc_model", {"model": OPT_MODEL})
        waiting = await tc.get(client, queued.task_id)
        assert waiting.status == "working" and waiting.status_message == "queued: waiting for a free slot", wire(waiting)
        refused = await client.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}, allow_claimed=True)
        assert not isinstance(refused, tc.CreateTaskResult), refused
        assert refused.is_error, refused
        assert re.fullmatch(
            r"Diagnostic: invalid_request — the task registry is full \(1 running of 1, 1 queued of 1\); 1 more cannot be admitted — retry when a job finishes, or raise the bounds",
            refused.content[0].text,
        ), refused.content[0].text
        await tc.cancel(client, queued.task_id)
        assert (await tc.get(client, queued.task_id)).status == "cancelled"
        assert (await tc.get(client, running.task_id)).status == "working"
        assert wait_for_solver_procs(marker, timeout=20, comm="fzn-gecode"), "the running task was harmed"
        await tc.cancel(client, running.task_id)
        assert not solver_procs(marker), describe(solver_procs(marker))


async def test_a_tool_error_is_a_completed_task_and_other_calls_stay_plain(harness):
    async with stdio_server(harness) as (client, _, _):
        # A model that does not compile is a result (status error)...
        created = await tc.create(client, "solve_minizinc_model", {"model": SYNTAX_ERROR_MODEL})
        end, _ = await tc.wait(client, created.task_id)
        assert end.status == "completed" and end.result["isError"] is False, wire(end)
        assert structured_of(end)["diagnostic"]["category"] == "syntax_or_compile_error", end.result
        # ...and a refused call an error result: both are completed tasks.
        created = await tc.create(client, "solve_minizinc_model", {"model": OPT_MODEL, "timeout_ms": "soon"})
        end, _ = await tc.wait(client, created.task_id)
        assert end.status == "completed" and end.result["isError"] is True, wire(end)
        assert end.result["content"][0]["text"].startswith("Diagnostic: invalid_request"), end.result

        # A tool that answers at once never makes a task.
        checked = await client.session.call_tool("check_minizinc_model", {"model": OPT_MODEL}, allow_claimed=True)
        assert not isinstance(checked, tc.CreateTaskResult), checked
        assert checked.structured_content["status"] == "ok", checked

        for call in (tc.get(client, "f" * 32), tc.cancel(client, "../../etc/passwd")):
            error = await rpc_error(call)
            assert error.error.code == -32602 and "no task with id" in error.error.message, error.error
        # The earlier revision's tasks/result is gone from this one.
        error = await rpc_error(tc.result_method(client, created.task_id))
        assert error.error.code == -32601, error.error


async def test_a_cpsat_script_runs_as_a_task(harness):
    async with stdio_server(harness) as (client, marker, _):
        arguments = {"source": knapsack_script()}
        created = await tc.create(client, "run_cpsat_python", arguments)
        end, _ = await tc.wait(client, created.task_id)
        assert end.status == "completed", wire(end)
        assert end.result and "structuredContent" in end.result, end.result
        check_knapsack_answer(structured_of(end))
        plain = await plain_call(harness, "run_cpsat_python", arguments)
        assert structured_of(end)["objective"] == plain["objective"]
        assert not await leftover_marked_async(marker, timeout=5) - warm(marker)


async def test_a_cpsat_tasks_status_shows_the_scripts_live_figures(harness):
    from test_cpsat_live import IMPROVING, LIVE

    async with stdio_server(harness) as (client, _, _):
        created = await tc.create(client, "run_cpsat_python", {"source": IMPROVING, "script_timeout_ms": 20000})
        end, seen = await tc.wait(client, created.task_id)
        assert end.status == "completed", wire(end)
        working = [task.status_message or "" for task in seen if task.status == "working"]
        live = [tuple(int(g) for g in m.groups()) for text in working if (m := LIVE.search(text))]
        assert len({objective for _, objective, _ in live}) >= 2, f"no rising figures while working: {working}"
        assert [objective for _, objective, _ in live] == sorted(objective for _, objective, _ in live), live
        assert structured_of(end)["objective"] == 40


def warm(marker: str) -> set[Any]:
    from helpers import warm_forkers

    return warm_forkers(marker)


# ---- over HTTP -----------------------------------------------------------------------------


async def test_over_http_a_task_outlives_its_request_and_is_reached_by_id_alone(harness):
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full") as server:
        async with tc.client(server.url) as client:
            done = await tc.create(client, "solve_minizinc_model", {"model": OPT_MODEL})
            long = await tc.create(client, "solve_minizinc_model", LONG_SOLVE)
        assert wait_for_solver_procs(server.marker, timeout=20, comm="fzn-gecode"), "the task never ran"
        # Another client, another connection: the id is all it takes.
        async with tc.client(server.url) as other:
            end, _ = await tc.wait(other, done.task_id)
            assert end.status == "completed" and structured_of(end)["objective"] == OPT_OBJECTIVE, wire(end)
            running = await tc.get(other, long.task_id)
            assert running.status == "working", wire(running)
            await tc.cancel(other, long.task_id)
            assert (await tc.get(other, long.task_id)).status == "cancelled"
        assert not solver_procs(server.marker), describe(solver_procs(server.marker))


# ---- after the server ----------------------------------------------------------------------


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
async def test_tasks_outlive_their_server(harness, tmp_path, how):
    data = tmp_path / "data"
    data.mkdir()
    async with stdio_server(harness, XDG_DATA_HOME=str(data)) as (client, marker, pid):
        assert pid > 0
        finished = await tc.create(client, "solve_minizinc_model", {"model": OPT_MODEL})
        first, _ = await tc.wait(client, finished.task_id)
        running = await tc.create(client, "solve_minizinc_model", LONG_SOLVE)
        assert wait_for_solver_procs(marker, timeout=20, comm="fzn-gecode"), "the task never ran"
        before = json.dumps(wire(await tc.get(client, finished.task_id)), sort_keys=True)
        try:
            os.kill(pid, how)
            with anyio.fail_after(15):
                while Path(f"/proc/{pid}").exists() and _state(pid) != "Z":
                    await anyio.sleep(0.05)
        finally:
            pass
    with anyio.fail_after(15):
        while marked_procs(marker):
            await anyio.sleep(0.1)
    async with stdio_server(harness, XDG_DATA_HOME=str(data)) as (client, _, _):
        again = json.dumps(wire(await tc.get(client, finished.task_id)), sort_keys=True)
        assert again == before, (again, before)
        assert first.status == "completed"
        interrupted = await tc.get(client, running.task_id)
        assert interrupted.status == "failed", wire(interrupted)
        assert interrupted.error["code"] == -32603, interrupted.error
        assert re.fullmatch(
            rf"the server that ran this task \(pid {pid}\) stopped before the task finished; its processes stopped with it\. Call the tool again",
            interrupted.status_message or "",
        ), interrupted.status_message
        assert interrupted.error["message"] == interrupted.status_message
        # Read again: the same.
        assert wire(await tc.get(client, running.task_id)) == wire(interrupted)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


# ---- huge input ----------------------------------------------------------------------------


async def test_a_flood_of_task_creates_is_bounded_and_leaves_the_server_whole(harness):
    """Two hundred creates at once, at the default bounds (4 running, 16
    queued): every answer is a task or the registry-full error result,
    every task that was admitted ends with the model's optimum, and the
    server still answers once the flood is over, with no process left."""
    answers: list[Any] = []
    async with stdio_server(harness) as (client, marker, _):

        async def one() -> None:
            call = client.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}, allow_claimed=True)
            answers.append(await call)

        async with anyio.create_task_group() as flood:
            for _ in range(200):
                flood.start_soon(one)
        created = [a for a in answers if isinstance(a, tc.CreateTaskResult)]
        refused = [a for a in answers if not isinstance(a, tc.CreateTaskResult)]
        # At least the bounds were admitted (more when a task ended during the flood).
        assert len(answers) == 200 and len(created) >= 20 and refused, (len(created), len(refused))
        for answer in refused:
            assert answer.is_error, answer
            assert re.fullmatch(
                r"Diagnostic: invalid_request — the task registry is full \(\d+ running of 4, \d+ queued of 16\); "
                r"1 more cannot be admitted — retry when a job finishes, or raise the bounds",
                answer.content[0].text,
            ), answer.content[0].text
        assert len({c.task_id for c in created}) == len(created)
        for task in created:
            end, _ = await tc.wait(client, task.task_id, timeout=120)
            assert end.status == "completed", wire(end)
            assert structured_of(end)["objective"] == OPT_OBJECTIVE, end.result
        checked = await client.session.call_tool("check_minizinc_model", {"model": OPT_MODEL}, allow_claimed=True)
        assert checked.structured_content["status"] == "ok", checked
        assert not await leftover_marked_async(marker, timeout=10)


async def test_a_result_of_megabytes_reads_through_tasks_get_as_a_plain_call_returns_it(harness):
    """A script that prints 8 MB before it solves: the task's result is the
    plain call's, capped the same way, and reading it does not hurt the
    server."""
    noise = "import sys\nfor i in range(80_000):\n    print(f'{i:08d} ' + 'x' * 91)\nsys.stdout.flush()\n"
    arguments = {"source": noise + knapsack_script()}
    async with stdio_server(harness) as (client, marker, _):
        created = await tc.create(client, "run_cpsat_python", arguments)
        end, _ = await tc.wait(client, created.task_id, timeout=120)
        assert end.status == "completed", wire(end)
        result = structured_of(end)
        check_knapsack_answer(result)
        again = await tc.get(client, created.task_id)
        assert wire(again) == wire(end)
        assert not await leftover_marked_async(marker, timeout=5) - warm(marker)
    plain = await plain_call(harness, "run_cpsat_python", arguments)
    # The capture keeps a head and a tail of the 8 MB (about 768 KiB today),
    # and each answer, the task's as the plain call's, is bounded to 128 KiB
    # by the same cut: the same head and tail around a line naming where the
    # whole of it is kept (each answer is kept under an id of its own).
    cut = re.compile(r"\n\[… (\d+) bytes left out here: the whole text is in solvergate://results/run_cpsat_python-[0-9a-f]{32}\]\n")
    assert cut.search(result["stdout"]) and cut.search(plain["stdout"]), (result["stdout"][:200], plain["stdout"][:200])
    assert cut.split(result["stdout"]) == cut.split(plain["stdout"])
    links = [block for block in end.result["content"] if block["type"] == "resource_link"]
    assert [link["uri"] in result["stdout"] for link in links] == [True], end.result["content"]
    size = len(json.dumps(end.result))
    assert size <= 128 * 1024, size
