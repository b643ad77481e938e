"""The MCP tasks extension (`io.modelcontextprotocol/tasks`, protocol
2026-07-28) on the client side, for the tests.

The official Python SDK (mcp 2.3.0) ships no types for this revision of
tasks, but it has the hooks a client needs: a `ClientExtension` declares the
extension in every request's `_meta` (the SDK writes the client's
capabilities there on a 2026-07-28 connection) and claims the `task` result
type of `tools/call`, and `session.send_request` sends `tasks/get` and
`tasks/cancel` with the task id mirrored into the `Mcp-Name` header over
HTTP. The wire types below follow the extension's schema.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.client import ClaimContext, ClientExtension, ResultClaim

EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")


class CreateTaskResult(types.Result):
    """What `tools/call` answers with when it made a task."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """What `tasks/get` answers: the task and, once ended, its result or error."""

    result_type: str
    task_id: str
    status: Literal["working", "input_required", "completed", "failed", "cancelled"]
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Ack(types.Result):
    result_type: str


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTaskRequest(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class CancelTaskRequest(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class ResultRequest(types.Request[TaskIdParams, Literal["tasks/result"]]):
    """A method of the extension's earlier revision, gone from this one."""

    method: Literal["tasks/result"] = "tasks/result"
    params: TaskIdParams
    name_param = "taskId"


async def get(client: Client, task_id: str) -> DetailedTask:
    return await client.session.send_request(GetTaskRequest(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def cancel(client: Client, task_id: str) -> Ack:
    return await client.session.send_request(CancelTaskRequest(params=TaskIdParams(task_id=task_id)), Ack)


async def result_method(client: Client, task_id: str) -> Ack:
    return await client.session.send_request(ResultRequest(params=TaskIdParams(task_id=task_id)), Ack)


async def create(client: Client, tool: str, arguments: dict[str, Any]) -> CreateTaskResult:
    """Calls `tool`; the answer must be a task."""
    created = await client.session.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(created, CreateTaskResult), created
    return created


async def wait(client: Client, task_id: str, timeout: float = 60.0) -> tuple[DetailedTask, list[DetailedTask]]:
    """Polls until the task has ended; returns its end and every poll."""
    seen: list[DetailedTask] = []
    with anyio.fail_after(timeout):
        while True:
            task = await get(client, task_id)
            seen.append(task)
            if task.status in TERMINAL:
                return task, seen
            await anyio.sleep(0.2)


async def _resolve(created: CreateTaskResult, context: ClaimContext) -> types.CallToolResult:
    """What `Client.call_tool` returns for a task: its result, once done."""
    while True:
        task = await context.session.send_request(
            GetTaskRequest(params=TaskIdParams(task_id=created.task_id)), DetailedTask
        )
        if task.status == "completed":
            return types.CallToolResult.model_validate(task.result)
        if task.status in TERMINAL:
            text = f"task {task.status}: {task.status_message}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        await anyio.sleep((task.poll_interval_ms or 500) / 1000)


class Tasks(ClientExtension):
    """Declares the extension on every request and follows tasks to their end."""

    identifier = EXTENSION

    def claims(self) -> list[ResultClaim]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=_resolve)]


def client(target: Any, **kwargs: Any) -> Client:
    """A 2026-07-28 client of `target` (a URL or stdio parameters) that
    declares the tasks extension."""
    return Client(target, mode="2026-07-28", extensions=[Tasks()], **kwargs)


def plain_client(target: Any, **kwargs: Any) -> Client:
    """A 2026-07-28 client of `target` that does not declare it."""
    return Client(target, mode="2026-07-28", **kwargs)
