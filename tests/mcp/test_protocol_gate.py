"""Lines rmcp alone would drop without a word get an answer, and the server
keeps serving: a line that is not JSON (-32700), a message over the 32 MiB
limit (-32600 with the request's id when it can be found, whichever SDK
order the id comes in), and `tools/call` with arguments that are not an
object (-32602). A message between rmcp's old 16 MiB cap and ours is served.
"""

from __future__ import annotations

import json
import queue
import time
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from helpers import RawServer, SAT_MODEL, structured

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


@pytest.fixture
def raw(harness):
    servers: list[RawServer] = []

    def launch() -> RawServer:
        stderr_path = harness.scratch("raw") / "stderr.txt"
        server = RawServer([harness.binary, "stdio", "--toolset", "core"], harness.server_env(), stderr_path)
        servers.append(server)
        server.initialize()
        return server

    yield launch
    for server in servers:
        server.stop()


def send_line(server: RawServer, line: bytes) -> None:
    assert server.proc.stdin is not None
    server.proc.stdin.write(line + b"\n")
    server.proc.stdin.flush()


def error_with_null_id(server: RawServer, timeout: float = 30.0) -> dict[str, Any]:
    """The next message that is an error answering no particular request."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            message = server._messages.get(timeout=0.5)
        except queue.Empty:
            continue
        if message.get("id") is None and "error" in message:
            return message
    raise TimeoutError("no id-less error arrived")


def still_serves(server: RawServer) -> None:
    reply = server.call_tool("solve_minizinc_model", {"model": SAT_MODEL})
    assert reply["result"]["structuredContent"]["status"] == "satisfied", reply


def test_a_line_that_is_not_json_gets_a_parse_error(raw):
    server = raw()
    send_line(server, b"this is not json {")
    reply = error_with_null_id(server)
    assert reply["jsonrpc"] == "2.0"
    assert reply["error"]["code"] == -32700
    assert "not JSON" in reply["error"]["message"]
    still_serves(server)
    assert all(json.loads(line) for line in server.lines), "stdout carried a line that is not JSON"


def oversized_call(request_id: int, order: str) -> bytes:
    data = "% " + "x" * (33 * MIB) + "\n"
    params = {"name": "solve_minizinc_model", "arguments": {"model": SAT_MODEL, "data": data}}
    if order == "python":
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    else:
        message = {"method": "tools/call", "params": params, "jsonrpc": "2.0", "id": request_id}
    return json.dumps(message).encode()


@pytest.mark.parametrize("order", ["python", "typescript"])
def test_an_oversized_message_is_answered_with_its_id(raw, order):
    server = raw()
    send_line(server, oversized_call(77, order))
    reply = server.response(77, timeout=60)
    assert reply["error"]["code"] == -32600
    assert "32 MiB" in reply["error"]["message"]
    assert "_files" in reply["error"]["message"]
    still_serves(server)


def test_tools_call_with_arguments_that_are_not_an_object(raw):
    server = raw()
    request_id = 901
    server.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "check_runtime", "arguments": "yes"}})
    reply = server.response(request_id)
    assert reply["error"]["code"] == -32602
    assert "must be a JSON object" in reply["error"]["message"]
    still_serves(server)


async def test_the_official_client_gets_an_error_not_a_hang(full):
    """33 MiB of inline data through the Python SDK: an error naming the
    limit comes back (before, the call waited forever)."""
    data = "% " + "x" * (33 * MIB) + "\n"
    with anyio.fail_after(120):
        with pytest.raises(MCPError) as raised:
            await full.session.call_tool("solve_minizinc_model", {"model": SAT_MODEL, "data": data})
    assert "32 MiB" in str(raised.value)
    with anyio.fail_after(30):
        result = structured(await full.session.call_tool("solve_minizinc_model", {"model": SAT_MODEL}))
    assert result["status"] == "satisfied"


async def test_a_20_mib_message_is_served(full):
    """Between rmcp's default 16 MiB cap and ours: answered, not dropped.
    (Short comment lines: MiniZinc takes minutes over one 20 MiB line.)"""
    data = ("% " + "x" * 78 + "\n") * (20 * MIB // 81)
    with anyio.fail_after(120):
        result = structured(await full.session.call_tool("solve_minizinc_model", {"model": SAT_MODEL, "data": data}))
    assert result["status"] == "satisfied"
