"""`import solvergate`: the one-line envelope helper every script can use,
through the real client on real CP-SAT — the same answer as writing the
envelope by hand, status names mapped, variables and nested lists turned
into values, the objective read only for optimisation models, and
intermediate reports from a solution callback recovered on a timeout.
"""

from __future__ import annotations

import pytest

from cpsat_helpers import cpsat_server
from helpers import call_ok

pytestmark = [pytest.mark.anyio, pytest.mark.minizinc_independent]


@pytest.fixture(scope="module")
async def cpsat(harness):
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


KNAPSACK = """
from ortools.sat.python import cp_model
import solvergate

values, weights, capacity = [6, 7, 3, 9], [4, 5, 2, 6], 9
model = cp_model.CpModel()
take = [model.NewBoolVar(f"take{i}") for i in range(4)]
model.Add(sum(w * t for w, t in zip(weights, take)) <= capacity)
model.Maximize(sum(v * t for v, t in zip(values, take)))
solver = cp_model.CpSolver()
solver.parameters.num_workers = 8
solver.parameters.log_search_progress = True
status = solver.Solve(model)
solvergate.report(solver, status, {"take": take, "pairs": [[take[0], take[1]], {"last": take[3]}]}, model=model)
"""

SATISFACTION = """
from ortools.sat.python import cp_model
import solvergate

model = cp_model.CpModel()
x = model.NewIntVar(0, 5, "x")
y = model.NewIntVar(0, 5, "y")
model.Add(x + y == 7)
model.Add(x > y)
solver = cp_model.CpSolver()
status = solver.Solve(model)
solvergate.report(solver, status, {"x": x, "y": y}, model=model)
"""

INFEASIBLE = """
from ortools.sat.python import cp_model
import solvergate

model = cp_model.CpModel()
x = model.NewIntVar(0, 5, "x")
model.Add(x > 9)
solver = cp_model.CpSolver()
solvergate.report(solver, solver.Solve(model), {"x": x}, model=model)
"""

CALLBACK_THEN_HANG = """
import time
from ortools.sat.python import cp_model
import solvergate

model = cp_model.CpModel()
xs = [model.NewIntVar(0, 9, f"x{i}") for i in range(3)]
model.Maximize(sum(xs))

class Printer(cp_model.CpSolverSolutionCallback):
    def __init__(self):
        super().__init__()
    def on_solution_callback(self):
        solvergate.report_intermediate(self, {"xs": xs})

solver = cp_model.CpSolver()
solver.parameters.num_workers = 1
solver.Solve(model, Printer())
time.sleep(60)
"""


async def test_one_line_reports_an_optimisation(cpsat):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": KNAPSACK, "script_timeout_ms": 30000})
    assert result["status"] == "optimal", result
    # Items 0 and 1: weight 9, value 13, the unique optimum.
    assert result["objective"] == 13, result
    assert result["solution"]["take"] == [1, 1, 0, 0], result["solution"]
    pairs = result["solution"]["pairs"]
    assert pairs[0] == result["solution"]["take"][:2] and pairs[1] == {"last": result["solution"]["take"][3]}
    assert result["best_objective_bound"] == 13
    # The search log went to stdout before the envelope and did not matter.
    assert "#Done" in result["stdout"] or "CpSolverResponse" in result["stdout"], result["stdout"][-500:]


async def test_a_satisfaction_model_reports_no_objective(cpsat):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": SATISFACTION})
    assert result["status"] in ("optimal", "feasible"), result
    assert result["objective"] is None, result
    solution = result["solution"]
    assert set(solution) == {"x", "y"} and solution["x"] + solution["y"] == 7 and solution["x"] > solution["y"], result


async def test_infeasible_maps_to_the_envelope_word(cpsat):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": INFEASIBLE})
    assert result["status"] == "infeasible" and result["solution"] == {}, result


async def test_intermediate_reports_are_recovered_on_a_timeout(cpsat):
    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": CALLBACK_THEN_HANG, "script_timeout_ms": 4000})
    assert result["status"] == "timeout", result
    assert result["timed_out"] is True
    assert result["objective"] == 27 and result["solution"] == {"xs": [9, 9, 9]}, result


PRINTER = """
from ortools.sat.python import cp_model
import solvergate

# n-queens with a solution printer that prints every solution (about 5 MB).
n = 10
model = cp_model.CpModel()
queens = [model.NewIntVar(0, n - 1, f"q{i}") for i in range(n)]
model.AddAllDifferent(queens)
model.AddAllDifferent([queens[i] + i for i in range(n)])
model.AddAllDifferent([queens[i] - i for i in range(n)])

class Printer(cp_model.CpSolverSolutionCallback):
    def __init__(self):
        super().__init__()
        self.count = 0
    def on_solution_callback(self):
        self.count += 1
        board = ["".join("Q" if self.Value(q) == col else "." for col in range(n)) for q in queens]
        print(f"solution {self.count}:\\n" + "\\n".join(board) * 70)

solver = cp_model.CpSolver()
solver.parameters.enumerate_all_solutions = True
printer = Printer()
status = solver.Solve(model, printer)
solvergate.report(solver, status, {"solutions": printer.count}, model=model)
"""


async def test_a_5_mb_solution_printer_gives_the_same_answer_as_a_direct_run(cpsat, tmp_path):
    import json
    import subprocess
    import sys

    from cpsat_helpers import PYTHON

    # The direct run: the same script, the helper on its path by hand.
    helper_dir = tmp_path / "lib"
    helper_dir.mkdir()
    (helper_dir / "solvergate.py").write_text(
        (__import__("pathlib").Path(__file__).parents[2] / "src/cpsat/solvergate.py").read_text()
    )
    script = tmp_path / "printer.py"
    script.write_text(PRINTER)
    direct = subprocess.run(
        [PYTHON, str(script)], capture_output=True, text=True, env={"PYTHONPATH": str(helper_dir)}, timeout=120
    )
    assert direct.returncode == 0, direct.stderr[-2000:]
    assert len(direct.stdout) > 4_000_000, "the printer is not chatty: the test proves nothing"
    expected = json.loads(direct.stdout.strip().splitlines()[-1])

    result = await call_ok(cpsat.session, "run_cpsat_python", {"source": PRINTER, "script_timeout_ms": 120000})
    assert result["truncated"] is True
    assert result["status"] == expected["status"] == "optimal", result["diagnostic"]
    assert result["solution"] == expected["solution"] == {"solutions": 724}
    assert result["objective"] is None and expected["objective"] is None
