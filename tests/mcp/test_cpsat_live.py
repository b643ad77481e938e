"""A CP-SAT script's live figures (issue 27): the intermediate envelopes a
script prints as it goes (`solvergate.report_intermediate`, or the same JSON
by hand) feed the progress messages and a CP-SAT job's `live` field with
"n solution(s), best objective X, bound Y", cold and warm-forked alike, and
through a log too large for the output capture (the head and tail are kept,
the middle dropped). The answer is still the last envelope."""

from __future__ import annotations

import re

import anyio
import pytest

from cpsat_helpers import cpsat_server, warm_server_ready
from helpers import call_ok, structured, warm_forkers

pytestmark = [pytest.mark.anyio, pytest.mark.minizinc_independent]

#: Four improving envelopes a second apart, then the final one. Each
#: carries the script's parent, so a test can tell a warm run from a cold one.
IMPROVING = """
import json, os, time
for k in range(1, 5):
    print(json.dumps({"status": "feasible", "objective": 10 * k, "best_objective_bound": 100 - 10 * k,
                      "solution": {"k": k, "ppid": os.getppid()}}), flush=True)
    time.sleep(1.1)
print(json.dumps({"status": "optimal", "objective": 40, "best_objective_bound": 40,
                  "solution": {"k": 4, "ppid": os.getppid()}}), flush=True)
"""

LIVE = re.compile(r"(\d+) solution\(s\), best objective (-?\d+), bound (-?\d+)")


def figures(messages: list[str]) -> list[tuple[int, int, int]]:
    return [tuple(int(g) for g in match.groups()) for m in messages if (match := LIVE.search(m))]


async def run_with_progress(session, arguments) -> tuple[dict, list[str]]:
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    result = structured(await session.call_tool("run_cpsat_python", arguments, progress_callback=on_progress))
    return result, seen


def assert_rising(live: list[tuple[int, int, int]], seen: list[str]) -> None:
    assert len({objective for _, objective, _ in live}) >= 2, f"no improving figures before the end: {seen}"
    counts = [count for count, _, _ in live]
    objectives = [objective for _, objective, _ in live]
    bounds = [bound for _, _, bound in live]
    assert counts == sorted(counts) and objectives == sorted(objectives), live
    assert bounds == sorted(bounds, reverse=True), live
    # Each message's figures belong together: objective 10k with bound 100 - 10k.
    assert all(objective == 10 * count and bound == 100 - 10 * count for count, objective, bound in live), live


async def test_a_cold_scripts_envelopes_are_its_live_figures(harness):
    async with cpsat_server(harness, SOLVERGATE_CPSAT_WARM="0") as (launched, marker):
        result, seen = await run_with_progress(launched.session, {"source": IMPROVING, "script_timeout_ms": 20000})
        assert not warm_forkers(marker)
    assert result["status"] == "optimal" and result["objective"] == 40, result
    assert_rising(figures(seen), seen)


async def test_a_warm_scripts_envelopes_are_its_live_figures(harness):
    async with warm_server_ready(harness) as (launched, marker, forkers):
        result, seen = await run_with_progress(launched.session, {"source": IMPROVING, "script_timeout_ms": 20000})
    assert result["solution"]["ppid"] in {p.pid for p in forkers}, "the run was not warm"
    assert result["status"] == "optimal" and result["objective"] == 40, result
    assert_rising(figures(seen), seen)


#: Two megabytes of log between two envelopes: the capture keeps 768 KiB of
#: stdout's head and tail, so the second envelope comes after a dropped middle.
CHATTY = """
import json, sys, time
print(json.dumps({"status": "feasible", "objective": 3, "best_objective_bound": 9, "solution": {}}), flush=True)
time.sleep(1.2)
for i in range(40000):
    sys.stdout.write("#%06d search log line with some padding to make it long enough\\n" % i)
sys.stdout.flush()
print(json.dumps({"status": "feasible", "objective": 7, "best_objective_bound": 8, "solution": {}}), flush=True)
time.sleep(1.5)
print(json.dumps({"status": "optimal", "objective": 7, "best_objective_bound": 7, "solution": {}}), flush=True)
"""


async def test_live_figures_come_through_a_log_larger_than_the_capture(harness):
    async with cpsat_server(harness) as (launched, _):
        result, seen = await run_with_progress(launched.session, {"source": CHATTY, "script_timeout_ms": 20000})
    assert result["status"] == "optimal" and result["objective"] == 7, result
    assert result["truncated"] is True, "the log was meant to overflow the capture"
    live = figures(seen)
    assert (1, 3, 9) in live, seen
    assert (2, 7, 8) in live, f"the envelope after the dropped middle was not seen: {seen}"


#: A real solve whose solution callback reports each improvement through
#: the helper, slowly enough to be seen while it runs.
CALLBACK = """
import time
from ortools.sat.python import cp_model
import solvergate

model = cp_model.CpModel()
x = model.NewIntVar(0, 4, "x")
model.Maximize(x)

class Improving(cp_model.CpSolverSolutionCallback):
    def on_solution_callback(self):
        solvergate.report_intermediate(self, {"x": x}, objective=self.ObjectiveValue())
        time.sleep(0.8)

solver = cp_model.CpSolver()
solver.parameters.num_workers = 1
solver.parameters.search_branching = cp_model.FIXED_SEARCH
model.AddDecisionStrategy([x], cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
solver.parameters.cp_model_presolve = False
solver.parameters.linearization_level = 0
status = solver.Solve(model, Improving())
solvergate.report(solver, status, {"x": x}, model=model)
"""

NO_BOUND = re.compile(r"(\d+) solution\(s\), best objective (-?\d+)")


async def test_the_helpers_intermediate_reports_feed_the_figures(harness):
    async with cpsat_server(harness) as (launched, _):
        result, seen = await run_with_progress(launched.session, {"source": CALLBACK, "script_timeout_ms": 30000})
    assert result["status"] == "optimal" and result["objective"] == 4, result
    shown = [int(match.group(2)) for m in seen if (match := NO_BOUND.search(m))]
    assert shown and shown == sorted(shown), seen


async def test_a_cpsat_jobs_status_carries_the_live_figures(harness):
    live: list[tuple[int, int, int]] = []
    async with cpsat_server(harness) as (launched, _):
        session = launched.session
        job = await call_ok(session, "submit_cpsat_python_job", {"source": IMPROVING, "script_timeout_ms": 20000})
        with anyio.fail_after(40):
            while True:
                status = await call_ok(session, "get_cpsat_python_job", {"job_id": job["job_id"]})
                if status["state"] in ("succeeded", "failed", "timeout", "cancelled"):
                    break
                if status["state"] == "running" and status["live"] is not None:
                    now = status["live"]
                    live.append((now["solutions"], now["objective"], now["bound"]))
                await anyio.sleep(0.2)
    assert status["state"] == "succeeded" and status["live"] is None, status
    assert status["result"]["objective"] == 40
    assert len(set(live)) >= 2, f"the job's live figures did not change while it ran: {live}"
    assert_rising(live, [str(live)])
