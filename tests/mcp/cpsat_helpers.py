"""Shared pieces of the CP-SAT Python tests: scripts, checkers, servers
whose CP-SAT interpreter is this test run's own Python (which has ortools,
see tests/requirements.txt), and /proc scans for the script processes.

Every server started here gets its own process marker (`harness.tagged_env`),
which the server's children and grandchildren inherit, so a scan sees exactly
that server's processes and nothing a developer runs next to the suite.
"""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from helpers import (
    Proc,
    call_ok,
    describe,
    leftover_marked,
    leftover_marked_async,
    marked_procs,
    wait_marked,
    wait_marked_async,
    warm_forkers,
)

#: The interpreter the server under test runs scripts and checkers with.
PYTHON = sys.executable

#: The CP-SAT job states, and the terminal ones.
CPSAT_JOB_STATES = frozenset({"queued", "running", "succeeded", "failed", "timeout", "cancelled"})
CPSAT_TERMINAL = frozenset({"succeeded", "failed", "timeout", "cancelled"})

#: Every key of a CpsatPythonResult.
RESULT_KEYS = {
    "status",
    "solution",
    "objective",
    "best_objective_bound",
    "stdout",
    "stderr",
    "return_code",
    "timed_out",
    "truncated",
    "duration_ms",
    "diagnostic",
}

MUTATION_NAMES = ["objective_perturbed", "element_dropped", "element_duplicated", "numeric_field_perturbed"]

ONE_MIB = 1024 * 1024


def cpsat_env(harness: Any, **extra: str) -> tuple[dict[str, str], str]:
    """A tagged server environment whose CP-SAT interpreter is this Python."""
    return harness.tagged_env(SOLVERGATE_CPSAT_PYTHON=PYTHON, **extra)


@asynccontextmanager
async def cpsat_server(harness: Any, toolset: str = "full", **extra: str) -> AsyncIterator[tuple[Any, str]]:
    """A fresh server (its own marker) with the CP-SAT interpreter set.
    Yields the launched server and its marker."""
    env, marker = cpsat_env(harness, **extra)
    async with harness.open(toolset, env=env) as launched:
        yield launched, marker


PPID_SCRIPT = "import json, os\nprint(json.dumps({'status': 'feasible', 'objective': 0, 'solution': {'ppid': os.getppid()}}))\n"


@asynccontextmanager
async def warm_server_ready(harness, **extra):
    """A server whose pool has started (by a first, cold run), is full, and
    has served a run: the forkers are ready."""
    async with cpsat_server(harness, **extra) as (launched, marker):
        with anyio.move_on_after(60):
            while True:
                run = await call_ok(launched.session, "run_cpsat_python", {"source": PPID_SCRIPT})
                forkers = warm_forkers(marker)
                if len(forkers) == 2 and run["solution"]["ppid"] in {p.pid for p in forkers}:
                    break
                await anyio.sleep(0.2)
        forkers = warm_forkers(marker)
        assert len(forkers) == 2, f"the pool never filled: {describe(forkers)}"
        assert run["solution"]["ppid"] in {p.pid for p in forkers}, "no run was ever warm"
        yield launched, marker, forkers


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode())


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


# --------------------------------------------------------------------------
# The knapsack instance and its scripts
# --------------------------------------------------------------------------

#: Unique optimum: items 1 and 2, value 13, weight 9.
KNAPSACK = {
    "capacity": 9,
    "items": [
        {"weight": 3, "value": 4},
        {"weight": 4, "value": 5},
        {"weight": 5, "value": 8},
        {"weight": 2, "value": 3},
    ],
}
KNAPSACK_OPTIMUM = 13
KNAPSACK_CHOSEN = [1, 2]


def knapsack_script(problem: dict[str, Any] | None = None, objective_offset: int = 0, extra_cap: int | None = None) -> str:
    """A complete CP-SAT script solving the knapsack `problem` (embedded).

    `objective_offset` makes it misreport its objective (a plausible wrong
    answer); `extra_cap` adds a capacity constraint (a worse variant)."""
    problem = problem if problem is not None else KNAPSACK
    extra = f"model.add(weight <= {extra_cap})" if extra_cap is not None else ""
    return textwrap.dedent(
        f"""
        import json
        from ortools.sat.python import cp_model

        PROBLEM = json.loads({json.dumps(json.dumps(problem))})


        def main():
            items = PROBLEM["items"]
            model = cp_model.CpModel()
            take = [model.new_bool_var(f"take{{i}}") for i in range(len(items))]
            weight = sum(t * item["weight"] for t, item in zip(take, items))
            model.add(weight <= PROBLEM["capacity"])
            {extra}
            model.maximize(sum(t * item["value"] for t, item in zip(take, items)))
            solver = cp_model.CpSolver()
            solver.parameters.num_workers = 1
            status = solver.solve(model)
            if status == cp_model.INFEASIBLE:
                print(json.dumps({{"status": "infeasible", "objective": None, "solution": {{}}}}))
                return
            chosen = [
                {{"item": i, "weight": item["weight"], "value": item["value"]}}
                for i, item in enumerate(items)
                if solver.value(take[i])
            ]
            print(json.dumps({{
                "status": "optimal" if status == cp_model.OPTIMAL else "feasible",
                "objective": int(solver.objective_value) + {objective_offset},
                "solution": {{"chosen": chosen, "total_weight": sum(c["weight"] for c in chosen)}},
                "best_objective_bound": solver.best_objective_bound,
            }}))


        main()
        """
    ).lstrip()


#: A model with no solution: x in 0..3 and x > 5.
INFEASIBLE_SCRIPT = textwrap.dedent(
    """
    import json
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x = model.new_int_var(0, 3, "x")
    model.add(x > 5)
    solver = cp_model.CpSolver()
    status = solver.solve(model)
    assert status == cp_model.INFEASIBLE, solver.status_name(status)
    print(json.dumps({"status": "infeasible", "objective": None, "solution": {}}))
    """
).lstrip()


def printer(envelope_text: str, before: str = "") -> str:
    """A script that prints `before` lines and then `envelope_text` verbatim."""
    lines = [f"print({line!r})" for line in before.splitlines() if line]
    lines.append(f"print({envelope_text!r})")
    return "\n".join(lines) + "\n"


def check_result_shape(result: dict[str, Any]) -> None:
    """The CpsatPythonResult keys and their types."""
    assert RESULT_KEYS <= set(result), f"missing keys {RESULT_KEYS - set(result)}: {result}"
    assert isinstance(result["stdout"], str) and isinstance(result["stderr"], str)
    assert isinstance(result["timed_out"], bool) and isinstance(result["truncated"], bool)
    assert isinstance(result["duration_ms"], int) and result["duration_ms"] >= 0
    assert result["return_code"] is None or isinstance(result["return_code"], int)
    assert result["solution"] is None or isinstance(result["solution"], dict)


def check_knapsack_answer(result: dict[str, Any], problem: dict[str, Any] | None = None) -> None:
    """The reported answer is the instance's optimum, and self-consistent."""
    problem = problem if problem is not None else KNAPSACK
    solution = result["solution"]
    assert solution is not None, result
    chosen = solution["chosen"]
    assert [c["item"] for c in chosen] == KNAPSACK_CHOSEN, solution
    assert sum(c["value"] for c in chosen) == result["objective"] == KNAPSACK_OPTIMUM, result
    assert solution["total_weight"] == sum(c["weight"] for c in chosen) <= problem["capacity"]


# --------------------------------------------------------------------------
# Checkers (run from their own directory; each run appends to runs.log there)
# --------------------------------------------------------------------------

#: Validates a knapsack answer against `payload["problem"]` (JSON text):
#: items exist and match, no repeats, capacity respected, total_weight and
#: objective consistent. Each run appends one line to ./runs.log.
REAL_CHECKER = """
import json
import sys

with open("runs.log", "a") as log:
    log.write("run\\n")
payload = json.load(open(sys.argv[1]))
problem_text = payload["problem"]
if not isinstance(problem_text, str):
    print(json.dumps({"status": "error", "errors": ["problem is not text: %r" % (problem_text,)]}))
    sys.exit(0)
problem = json.loads(problem_text)
items = problem["items"]
solution = payload["solution"]
errors = []
seen = set()
weight = value = 0
for entry in solution.get("chosen", []):
    index = entry.get("item")
    if index in seen:
        errors.append("item %r chosen twice" % (index,))
    seen.add(index)
    if not isinstance(index, int) or not 0 <= index < len(items):
        errors.append("no item %r" % (index,))
        continue
    item = items[index]
    if entry.get("weight") != item["weight"] or entry.get("value") != item["value"]:
        errors.append("item %d does not match the instance" % index)
    weight += item["weight"]
    value += item["value"]
if weight > problem["capacity"]:
    errors.append("weight %d over capacity %d" % (weight, problem["capacity"]))
if solution.get("total_weight") != weight:
    errors.append("total_weight %r is not %d" % (solution.get("total_weight"), weight))
if payload["objective"] != value:
    errors.append("objective %r is not the chosen value %d" % (payload["objective"], value))
print("checked %d entries" % len(solution.get("chosen", [])))
print(json.dumps({
    "status": "rejected" if errors else "accepted",
    "errors": errors,
    "details": {"problem_text": problem_text, "solver_status": payload["solver_status"],
                "objective": payload["objective"]},
}))
"""

#: Accepts anything.
VACUOUS_CHECKER = """
with open("runs.log", "a") as log:
    log.write("run\\n")
print('{"status": "accepted", "errors": []}')
"""

#: Prints no verdict at all.
GARBAGE_CHECKER = """
with open("runs.log", "a") as log:
    log.write("run\\n")
print("looks fine to me")
"""

#: A well-formed accepted verdict, then a non-zero exit.
CRASHING_CHECKER = """
import sys
with open("runs.log", "a") as log:
    log.write("run\\n")
print('{"status": "accepted", "errors": []}')
sys.exit(3)
"""

#: Rejects everything.
REJECT_ALL_CHECKER = """
print('{"status": "rejected", "errors": ["no"]}')
"""


def runs_logged(directory: Path) -> int:
    log = directory / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


# --------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------


def cmdline(pid: int) -> list[str]:
    try:
        return [part.decode(errors="replace") for part in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if part]
    except OSError:
        return []


def has_script_and_sleep(procs: set[Proc]) -> bool:
    """A python script process and a `sleep` grandchild are both running."""
    return any(p.comm == "sleep" for p in procs) and any(p.comm.startswith("python") for p in procs)


def has_python(procs: set[Proc]) -> bool:
    return any(p.comm.startswith("python") for p in procs)


# --------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------


def check_cpsat_job(job: dict[str, Any]) -> None:
    """The CpsatPythonJobStatus contract, for any state."""
    state = job["state"]
    assert state in CPSAT_JOB_STATES, job
    assert isinstance(job["job_id"], str) and job["job_id"], job
    assert isinstance(job["script_timeout_ms"], int), job
    assert (job["result"] is not None) == (state in ("succeeded", "timeout")), f"result vs state {state}: {job}"
    assert (job["finished_at"] is not None) == (state in CPSAT_TERMINAL), job
    if job["result"] is not None:
        check_result_shape(job["result"])
        assert (state == "timeout") == (job["result"]["status"] == "timeout"), job
    # At most one of checker / checker_skipped_reason.
    assert job["checker"] is None or job["checker_skipped_reason"] is None, job
    if state == "cancelled":
        assert job["diagnostic"] and job["diagnostic"]["category"] == "cancelled", job


async def wait_cpsat_job(session: Any, job_id: str, timeout: float = 30.0) -> tuple[dict[str, Any], list[str]]:
    """Polls get_cpsat_python_job until terminal; returns the status and
    every state seen."""
    seen: list[str] = []
    with anyio.fail_after(timeout):
        while True:
            job = await call_ok(session, "get_cpsat_python_job", {"job_id": job_id})
            check_cpsat_job(job)
            seen.append(job["state"])
            if job["state"] in CPSAT_TERMINAL:
                return job, seen
            await anyio.sleep(0.05)


__all__ = [
    "CPSAT_TERMINAL",
    "CRASHING_CHECKER",
    "GARBAGE_CHECKER",
    "INFEASIBLE_SCRIPT",
    "KNAPSACK",
    "KNAPSACK_CHOSEN",
    "KNAPSACK_OPTIMUM",
    "MUTATION_NAMES",
    "ONE_MIB",
    "PYTHON",
    "REAL_CHECKER",
    "REJECT_ALL_CHECKER",
    "VACUOUS_CHECKER",
    "check_cpsat_job",
    "check_knapsack_answer",
    "check_result_shape",
    "cmdline",
    "cpsat_env",
    "cpsat_server",
    "describe",
    "has_python",
    "has_script_and_sleep",
    "knapsack_script",
    "leftover_marked",
    "leftover_marked_async",
    "marked_procs",
    "printer",
    "runs_logged",
    "sha256_bytes",
    "sha256_text",
    "wait_cpsat_job",
    "wait_marked",
    "wait_marked_async",
    "write",
]
