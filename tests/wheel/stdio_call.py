"""An MCP client for scripts/wheel-check: launches an installed solvergate
over stdio with the official Python SDK, initializes, and (unless
--initialize-only) calls run_cpsat_python with a tiny CP-SAT script.

    python stdio_call.py [--initialize-only] -- COMMAND [ARG...]

The server gets this process's environment as it is: the caller decides what
is (not) configured. Exits non-zero, saying what was wrong, on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# x + y = 12 over 1..10, maximise x * y: optimal at x = y = 6, objective 36.
SCRIPT = """
import json
from ortools.sat.python import cp_model

model = cp_model.CpModel()
x = model.new_int_var(1, 10, "x")
y = model.new_int_var(1, 10, "y")
xy = model.new_int_var(1, 100, "xy")
model.add(x + y == 12)
model.add_multiplication_equality(xy, [x, y])
model.maximize(xy)
solver = cp_model.CpSolver()
solver.parameters.num_workers = 1
status = solver.solve(model)
print(json.dumps({
    "status": "optimal" if status == cp_model.OPTIMAL else "feasible",
    "objective": int(solver.objective_value),
    "solution": {"x": solver.value(x), "y": solver.value(y)},
}))
"""


class Failed(Exception):
    """What was wrong, in words."""


def fail(message: str) -> None:
    raise Failed(message)


def failures(error: BaseException) -> list[str]:
    """The Failed messages inside `error` (task groups wrap them)."""
    if isinstance(error, Failed):
        return [str(error)]
    return [message for inner in getattr(error, "exceptions", ()) for message in failures(inner)]


async def main(command: list[str], initialize_only: bool) -> None:
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            if init.server_info.name != "solvergate":
                fail(f"the server calls itself {init.server_info.name!r}")
            print(f"stdio_call: initialized {init.server_info.name} {init.server_info.version}", file=sys.stderr)
            if initialize_only:
                return
            result = await session.call_tool("run_cpsat_python", {"source": SCRIPT, "script_timeout_ms": 60000})
            answer = result.structured_content
            if result.is_error or not isinstance(answer, dict):
                fail(f"run_cpsat_python failed: {result.content}")
            if answer.get("status") not in ("optimal", "feasible") or answer.get("objective") != 36:
                fail(f"run_cpsat_python answered {json.dumps(answer)[:2000]}")
            if answer.get("solution") != {"x": 6, "y": 6}:
                fail(f"run_cpsat_python's solution is {answer.get('solution')!r}, expected x = y = 6")
            print(f"stdio_call: run_cpsat_python: {answer['status']}, objective {answer['objective']}", file=sys.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initialize-only", action="store_true")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    # uvx may download the wheel's dependencies before it answers: minutes, not hours.
    try:
        asyncio.run(asyncio.wait_for(main(args.command, args.initialize_only), timeout=600))
    except BaseException as error:  # noqa: BLE001 - every way out says what went wrong
        messages = failures(error)
        if not messages:
            raise
        sys.exit("\n".join(f"stdio_call: FAILED: {message}" for message in messages))
