"""`solvergate serve --http`: the official SDK's Streamable HTTP client
against the built binary — the same tools as stdio and a real solve; the
bind, token and Origin rules; jobs private to their session; jobs of
clients without a session (MCP 2026-07-28: a fresh server per request)
that outlive their requests and are reached by id alone; and shutdown that
leaves no solver running."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from helpers import (
    HARD_MODEL,
    OPT_MODEL,
    OPT_OBJECTIVE,
    call_error,
    call_ok,
    describe,
    solver_procs,
    wait_for_solver_procs,
    wait_job,
)
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token-for-tests"
LONG_JOB = {"model": HARD_MODEL, "timeout_ms": 60000, "all_solutions": True}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class HttpServer:
    proc: subprocess.Popen[bytes]
    url: str
    marker: str
    stderr_path: Path

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@contextmanager
def http_server(harness, *args: str, token: str | None = None, **variables: str) -> Iterator[HttpServer]:
    """Starts `serve --http ...` (args first), waits for the URL in its
    banner and always reaps it. The URL is on 127.0.0.1 even for a
    wildcard bind."""
    extra = {"SOLVERGATE_HTTP_TOKEN": token} if token else {}
    env, marker = harness.tagged_env(**extra, **variables)
    stderr_path = harness.scratch("http") / "stderr.txt"
    with open(stderr_path, "wb") as errlog:
        proc = subprocess.Popen(
            [harness.binary, "serve", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=env,
        )
    try:
        deadline = time.monotonic() + 20
        match = None
        while match is None:
            match = re.search(r"http://[^\s/]+:(\d+)/mcp", stderr_path.read_text(errors="replace"))
            if match is None:
                assert proc.poll() is None, f"server exited: {stderr_path.read_text(errors='replace')}"
                assert time.monotonic() < deadline, "no URL in the banner"
                time.sleep(0.05)
        yield HttpServer(proc, f"http://127.0.0.1:{match[1]}/mcp", marker, stderr_path)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        assert proc.stdout is not None
        stdout = proc.stdout.read()
        proc.stdout.close()
        assert stdout == b"", f"stdout is not a channel over HTTP: {stdout[:300]!r}"


@asynccontextmanager
async def http_session(url: str, token: str | None = None, close: bool = True) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(url, http_client=client, terminate_on_close=close) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def refused_start(harness, *args: str, token: str | None = None) -> tuple[int, str]:
    extra = {"SOLVERGATE_HTTP_TOKEN": token} if token else {}
    env, _ = harness.tagged_env(**extra)
    done = subprocess.run([harness.binary, "serve", *args], env=env, capture_output=True, timeout=20)
    assert done.stdout == b""
    return done.returncode, done.stderr.decode(errors="replace")


# ---- the same server over HTTP ---------------------------------------------------------


async def test_tools_and_a_solve_over_http(harness):
    async with harness.open("full") as stdio:
        stdio_tools = {tool.name for tool in (await stdio.session.list_tools()).tools}
        stdio_prompts = {prompt.name for prompt in (await stdio.session.list_prompts()).prompts}
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full") as server:
        assert "MCP server on http://127.0.0.1:" in server.stderr_text()
        async with http_session(server.url) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert tools == stdio_tools
            prompts = {prompt.name for prompt in (await session.list_prompts()).prompts}
            assert prompts == stdio_prompts
            result = await call_ok(session, "solve_minizinc_model", {"model": OPT_MODEL})
            assert result["status"] == "optimal", result
            assert result["objective"] == OPT_OBJECTIVE


async def test_core_toolset_over_http(harness):
    async with harness.open("core") as stdio:
        core = {tool.name for tool in (await stdio.session.list_tools()).tools}
    with http_server(harness, "--http", "127.0.0.1:0") as server:
        async with http_session(server.url) as session:
            assert {tool.name for tool in (await session.list_tools()).tools} == core
            assert "submit_solve_job" not in core


# ---- bind, token and Origin rules -------------------------------------------------------


def test_a_non_loopback_bind_needs_allow_remote(harness):
    code, stderr = refused_start(harness, "--http", "0.0.0.0:0", token=TOKEN)
    assert code == 1, stderr
    assert "not a loopback address" in stderr and "--allow-remote" in stderr, stderr


def test_allow_remote_needs_a_token(harness):
    code, stderr = refused_start(harness, "--http", "0.0.0.0:0", "--allow-remote")
    assert code == 1, stderr
    assert "SOLVERGATE_HTTP_TOKEN" in stderr, stderr


def test_a_bad_extra_origin_is_refused_at_start(harness):
    code, stderr = refused_start(harness, "--http", "127.0.0.1:0", "--allow-origin", "app.example.com")
    assert code == 1, stderr
    assert "app.example.com" in stderr and "scheme://host" in stderr, stderr


async def test_the_bearer_token_is_required(harness):
    with http_server(harness, "--http", "0.0.0.0:0", "--allow-remote", token=TOKEN) as server:
        assert "bearer token required" in server.stderr_text()
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            reply = httpx2.post(server.url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10)
            assert reply.status_code == 401, (headers, reply.status_code, reply.text)
            assert reply.headers.get("www-authenticate") == "Bearer"
        # A remote bind does not check Host: clients use names we cannot know.
        reply = httpx2.post(
            server.url,
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}", "Host": "solver.example.org"},
            timeout=10,
        )
        assert reply.status_code == 200, reply.text
        async with http_session(server.url, token=TOKEN) as session:
            assert any(tool.name == "solve_minizinc_model" for tool in (await session.list_tools()).tools)


def test_foreign_origins_and_hosts_are_forbidden(harness):
    with http_server(harness, "--http", "127.0.0.1:0", "--allow-origin", "https://app.example.com") as server:

        def post(**headers: str) -> int:
            return httpx2.post(server.url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10).status_code

        assert post(Origin="http://evil.example") == 403
        assert post(Origin="https://app.example.com.evil.example") == 403
        assert post(Host="evil.example") == 403  # DNS rebinding: a foreign name for 127.0.0.1
        assert post() == 200
        assert post(Origin="http://localhost:5173") == 200
        assert post(Origin="https://app.example.com") == 200
        other = httpx2.get(server.url.replace("/mcp", "/"), timeout=10)
        assert other.status_code == 404 and "/mcp" in other.text


# ---- sessions ----------------------------------------------------------------------------


async def test_a_job_is_visible_only_to_its_session(harness):
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full") as server:
        async with http_session(server.url) as alice, http_session(server.url) as bob:
            job = await call_ok(alice, "submit_solve_job", LONG_JOB)
            job_id = job["job_id"]
            assert job["state"] in ("queued", "running"), job
            for tool in ("get_solve_job", "cancel_solve_job"):
                error = await call_error(bob, tool, {"job_id": job_id})
                assert error.category == "invalid_request", error
                assert job_id in error.message
            listed = await call_ok(bob, "list_solve_jobs", {})
            assert listed["jobs"] == [], listed
            mine = await call_ok(alice, "get_solve_job", {"job_id": job_id})
            assert mine["state"] == "running", mine
            cancelled = await call_ok(alice, "cancel_solve_job", {"job_id": job_id})
            assert cancelled["state"] == "cancelled", cancelled


async def test_a_closed_session_takes_its_jobs_with_it(harness):
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full") as server:
        async with http_session(server.url) as session:
            await call_ok(session, "submit_solve_job", LONG_JOB)
            assert wait_for_solver_procs(server.marker, timeout=15, comm="fzn-gecode"), "the job never ran"
        # The client closed the session (DELETE): its job is stopped.
        deadline = time.monotonic() + 20
        while solver_procs(server.marker):
            assert time.monotonic() < deadline, f"still running: {describe(solver_procs(server.marker))}"
            time.sleep(0.1)
        assert server.proc.poll() is None, "the server itself must keep running"


async def test_sessions_are_capped_and_a_closed_one_frees_its_place(harness):
    with http_server(harness, "--http", "127.0.0.1:0", SOLVERGATE_HTTP_MAX_SESSIONS="1") as server:

        def initialize() -> httpx2.Response:
            return httpx2.post(server.url, json=INITIALIZE, headers=MCP_HEADERS, timeout=10)

        async with http_session(server.url) as session:
            refused = initialize()
            assert refused.status_code == 503, refused.text
            assert "SOLVERGATE_HTTP_MAX_SESSIONS" in refused.text
            # The open session is not affected.
            assert (await session.list_tools()).tools
        deadline = time.monotonic() + 20
        while (reply := initialize()).status_code == 503:
            assert time.monotonic() < deadline, "the closed session never freed its place"
            time.sleep(0.2)
        assert reply.status_code == 200, reply.text


@asynccontextmanager
async def sessionless_client(url: str) -> AsyncIterator[Client]:
    """The SDK's high-level client as it connects by default: it discovers
    the server's newest revision (2026-07-28), which has no session, so
    every call is a request of its own served by a fresh server."""
    async with Client(url) as client:
        assert client.protocol_version == "2026-07-28", client.protocol_version
        yield client


# ---- clients without a session -----------------------------------------------------------


async def test_sessionless_jobs_outlive_their_requests(harness):
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full") as server:
        async with sessionless_client(server.url) as client:
            quick = await call_ok(client, "submit_solve_job", {"model": OPT_MODEL})
            done, _ = await wait_job(client, quick["job_id"])
            assert done["state"] == "succeeded" and done["result"]["objective"] == OPT_OBJECTIVE, done
            long = await call_ok(client, "submit_solve_job", LONG_JOB)
            # The id is the capability: a random (version 4) UUID, 122 bits nobody else was given.
            assert re.fullmatch(r"[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}", long["job_id"]), long
            assert wait_for_solver_procs(server.marker, timeout=15, comm="fzn-gecode"), "the job never ran"
        # Another client, another connection: the id is all it takes.
        async with sessionless_client(server.url) as other:
            running = await call_ok(other, "get_solve_job", {"job_id": long["job_id"]})
            assert running["state"] == "running", running
            cancelled = await call_ok(other, "cancel_solve_job", {"job_id": long["job_id"]})
            assert cancelled["state"] == "cancelled", cancelled
        assert not solver_procs(server.marker), describe(solver_procs(server.marker))


async def test_sessionless_and_session_jobs_do_not_mix(harness):
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full") as server:
        async with sessionless_client(server.url) as client, http_session(server.url) as session:
            loose = await call_ok(client, "submit_solve_job", LONG_JOB)
            owned = await call_ok(session, "submit_solve_job", LONG_JOB)
            for caller, foreign in ((session, loose), (client, owned)):
                error = await call_error(caller, "get_solve_job", {"job_id": foreign["job_id"]})
                assert error.category == "invalid_request" and foreign["job_id"] in error.message, error
            listed = await call_ok(session, "list_solve_jobs", {})
            assert [job["job_id"] for job in listed["jobs"]] == [owned["job_id"]], listed
            for tool, get_tool in (
                ("list_solve_jobs", "get_solve_job"),
                ("list_portfolio_jobs", "get_portfolio_job"),
                ("list_cpsat_python_jobs", "get_cpsat_python_job"),
            ):
                error = await call_error(client, tool, {})
                assert error.category == "invalid_request", error
                assert "need a session" in error.message and get_tool in error.message, error
            for caller, job in ((client, loose), (session, owned)):
                cancelled = await call_ok(caller, "cancel_solve_job", {"job_id": job["job_id"]})
                assert cancelled["state"] == "cancelled", cancelled


async def test_sessionless_jobs_outlive_the_server_and_session_jobs_do_not(harness, tmp_path):
    """Stopped and started again on the same data dir, the server answers a
    sessionless job's id with the status it gave before; a session's job
    is readable from no one once its session is gone (issue 27)."""
    data = tmp_path / "data"
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full", XDG_DATA_HOME=str(data)) as server:
        async with sessionless_client(server.url) as client, http_session(server.url) as session:
            loose = await call_ok(client, "submit_solve_job", {"model": OPT_MODEL})
            before, _ = await wait_job(client, loose["job_id"])
            owned = await call_ok(session, "submit_solve_job", {"model": OPT_MODEL})
            await wait_job(session, owned["job_id"])
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full", XDG_DATA_HOME=str(data)) as server:
        async with sessionless_client(server.url) as client, http_session(server.url) as session:
            after = await call_ok(client, "get_solve_job", {"job_id": loose["job_id"]})
            assert after == before
            for caller in (client, session):
                error = await call_error(caller, "get_solve_job", {"job_id": owned["job_id"]})
                assert error.category == "invalid_request" and owned["job_id"] in error.message, error
            error = await call_error(session, "get_solve_job", {"job_id": loose["job_id"]})
            assert error.category == "invalid_request", error


def call_in_background(url: str, name: str, arguments: dict) -> threading.Thread:
    """A raw session whose tools/call is left waiting in a thread (the
    server's exit ends it)."""
    reply = httpx2.post(url, json=INITIALIZE, headers=MCP_HEADERS, timeout=10)
    assert reply.status_code == 200, reply.text
    headers = {**MCP_HEADERS, "Mcp-Session-Id": reply.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
    initialized = httpx2.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers, timeout=10)
    assert initialized.status_code == 202, initialized.text
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}

    def run() -> None:
        try:
            httpx2.post(url, json=call, headers=headers, timeout=60)
        except httpx2.HTTPError:
            pass  # the server went away mid-call, as it should

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
async def test_shutdown_kills_every_sessions_jobs_and_calls(harness, how):
    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full") as server:
        # Two sessions left open (no DELETE), one running job each ...
        for _ in range(2):
            async with http_session(server.url, close=False) as session:
                job = await call_ok(session, "submit_solve_job", LONG_JOB)
                assert job["state"] == "running", job
        # ... a job of a client without a session ...
        async with sessionless_client(server.url) as client:
            job = await call_ok(client, "submit_solve_job", LONG_JOB)
            assert job["state"] == "running", job
        # ... and a third session in the middle of a synchronous solve.
        call = call_in_background(server.url, "solve_minizinc_model", LONG_JOB)
        deadline = time.monotonic() + 15
        while len({p for p in solver_procs(server.marker) if p.comm == "fzn-gecode"}) < 4:
            assert time.monotonic() < deadline, "the four solvers never all ran: the scan would prove nothing"
            time.sleep(0.05)
        server.proc.send_signal(how)
        code = server.proc.wait(timeout=15)
        assert code == 0, server.stderr_text()
        call.join(timeout=15)
        assert not call.is_alive(), "the call's connection outlived the server"
        left = solver_procs(server.marker)
        assert not left, f"left running after shutdown: {describe(left)}"
        time.sleep(0.5)
        late = solver_procs(server.marker)
        assert not late, f"appeared after exit: {describe(late)}"


# ---- kept results -------------------------------------------------------------------


async def test_kept_results_are_read_in_their_session_and_sessionless_by_id(harness):
    import json

    from mcp.shared.exceptions import MCPError

    with http_server(harness, "--http", "127.0.0.1:0", "--toolset", "full") as server:
        # 2025-11-25, with sessions: a session reads its own results only.
        async with http_session(server.url) as alice, http_session(server.url) as bob:
            reply = await alice.call_tool("solve_minizinc_model", {"model": OPT_MODEL})
            link = reply.content[-1]
            assert link.type == "resource_link", reply.content
            whole = await alice.read_resource(str(link.uri))
            assert json.loads(whole.contents[0].text) == reply.structured_content
            assert [str(r.uri) for r in (await alice.list_resources()).resources][0] == str(link.uri)
            with pytest.raises(MCPError) as refused:
                await bob.read_resource(str(link.uri))
            assert "no kept result" in refused.value.error.message
            assert str(link.uri) not in [str(r.uri) for r in (await bob.list_resources()).resources]
        # 2026-07-28, without a session: every request is a fresh server, so
        # the id is what reads a result, from any later request.
        async with sessionless_client(server.url) as client:
            reply = await client.call_tool("solve_minizinc_model", {"model": OPT_MODEL})
            uri = str(reply.content[-1].uri)
        async with sessionless_client(server.url) as other:
            whole = await other.read_resource(uri)
            assert json.loads(whole.contents[0].text) == reply.structured_content
            value = await other.read_resource(f"{uri}/solution/x")
            assert json.loads(value.contents[0].text) == reply.structured_content["solution"]["x"]
