"""`solvergate.report` without `model=` (issue 28): the helper reads the
objective of the model the solver last solved, in cold runs (a fresh
interpreter) and warm ones (forked from a pre-warmed forker), through the
real client on real CP-SAT. Where it truly cannot tell, the objective is
`null` with a line on stderr and an `objective_unread` diagnostic — never a
silent `null`; a model without an objective is `null` with no warning.

Every script first prints its parent pid on stderr, so each test also shows
which runtime ran it: a cold run's parent is the server, a warm run's a
forker. Objectives of 0 are used where a non-zero one could be told from
CP-SAT's answer alone (without an objective it reads 0 and bound 0), so a
right answer there proves the helper knew the model.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import pytest

from cpsat_helpers import cpsat_server, warm_server_ready
from helpers import _stat, call_ok

pytestmark = [pytest.mark.anyio, pytest.mark.minizinc_independent]

PROLOGUE = "import os, sys\nprint('ppid', os.getppid(), file=sys.stderr, flush=True)\n"


@dataclass
class Runtime:
    name: str
    session: object
    forkers: set

    async def run(self, body: str, **arguments) -> dict:
        source = PROLOGUE + textwrap.dedent(body)
        result = await call_ok(self.session, "run_cpsat_python", {"source": source, **arguments})
        lines = result["stderr"].splitlines()
        assert lines and lines[0].startswith("ppid "), result
        ppid = int(lines[0].split()[1])
        if self.name == "warm":
            assert ppid in self.forkers, f"not a warm run: parent {ppid}, forkers {self.forkers}"
        else:
            parent = _stat(ppid)
            assert parent is not None and parent.comm == "solvergate", f"not a cold run: parent {parent}"
        result["warnings"] = lines[1:]
        return result


@pytest.fixture(scope="module", params=["cold", "warm"])
async def runtime(request, harness):
    if request.param == "cold":
        async with cpsat_server(harness, SOLVERGATE_CPSAT_WARM="0") as (launched, _marker):
            yield Runtime("cold", launched.session, set())
    else:
        async with warm_server_ready(harness) as (launched, _marker, forkers):
            yield Runtime("warm", launched.session, {p.pid for p in forkers})


def clean(result: dict) -> None:
    """A clean answer: no diagnostic, nothing on stderr but the pid line."""
    assert result["diagnostic"] is None, result
    assert result["warnings"] == [], result["stderr"]


def unread(result: dict) -> str:
    """The answer says its objective could not be read, on stderr and in
    its diagnostic, and how to fix it."""
    assert result["objective"] is None, result
    diagnostic = result["diagnostic"]
    assert diagnostic is not None and diagnostic["category"] == "objective_unread", result
    assert "model=" in diagnostic["message"], diagnostic
    reason = diagnostic["details"]["reason"]
    assert "model=" in reason, diagnostic
    assert result["warnings"] == [f"solvergate.report: {reason}"], result["stderr"]
    return reason


# A model whose optimum is 0 and bound 0: CP-SAT's answer reads as if there
# were no objective.
ZERO_OPTIMUM = """
from ortools.sat.python import cp_model

zero = cp_model.CpModel()
z = zero.NewIntVar(0, 4, "z")
zero.Add(z != 2)
zero.Minimize(z)
"""

# --- where the helper could be fooled --------------------------------------


async def test_an_objective_of_zero_is_reported_as_zero_not_null(runtime):
    result = await runtime.run(
        ZERO_OPTIMUM
        + """
import solvergate
solver = cp_model.CpSolver()
solvergate.report(solver, solver.solve(zero), {"z": z})
"""
    )
    assert result["status"] == "optimal" and result["solution"] == {"z": 0}, result
    assert result["objective"] == 0 and result["best_objective_bound"] == 0, result
    clean(result)


async def test_a_model_without_an_objective_is_null_with_no_warning(runtime):
    result = await runtime.run(
        """
        from ortools.sat.python import cp_model
        import solvergate

        model = cp_model.CpModel()
        x = model.NewIntVar(3, 7, "x")
        model.Add(x != 3)
        solver = cp_model.CpSolver()
        solvergate.report(solver, solver.Solve(model), {"x": x})
        """
    )
    assert result["status"] == "optimal" and result["objective"] is None, result
    assert "best_objective_bound" not in result["stdout"], result["stdout"]
    clean(result)


@pytest.mark.parametrize("order", ["objective_then_none", "none_then_zero_objective"])
async def test_one_solver_two_models_reports_the_last_one(runtime, order):
    first, second = ("big", "plain") if order == "objective_then_none" else ("plain", "zero")
    result = await runtime.run(
        ZERO_OPTIMUM
        + f"""
import solvergate

big = cp_model.CpModel()
b = big.NewIntVar(0, 9, "b")
big.Maximize(b)
plain = cp_model.CpModel()
p = plain.NewIntVar(1, 1, "p")

solver = cp_model.CpSolver()
solver.solve({first})
status = solver.solve({second})
solvergate.report(solver, status, {{"z": z, "p": p}} if {second} is zero else {{"p": p}})
"""
    )
    assert result["status"] == "optimal", result
    if order == "objective_then_none":
        # The maximised model solved first (objective 9) is not the answer's.
        assert result["objective"] is None and result["solution"] == {"p": 1}, result
    else:
        assert result["objective"] == 0, result
    clean(result)


async def test_a_solver_that_never_solved_is_an_error_said_out_loud(runtime):
    result = await runtime.run(
        """
        from ortools.sat.python import cp_model
        import solvergate

        model = cp_model.CpModel()
        x = model.NewIntVar(0, 5, "x")
        model.Maximize(x)
        used, unused = cp_model.CpSolver(), cp_model.CpSolver()
        status = used.solve(model)
        solvergate.report(unused, status, {"x": x})
        """
    )
    assert result["status"] == "error" and result["objective"] is None, result
    assert result["solution"] == {}, result
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "child_process_error", result
    assert "has not solved a model" in diagnostic["message"], diagnostic
    assert len(result["warnings"]) == 1 and "has not solved a model" in result["warnings"][0], result["stderr"]


BYPASS = """
from ortools.sat.python import cp_model, cp_model_helper

class Bypass(cp_model.CpSolver):
    # Calls CP-SAT's own wrapper instead of CpSolver.solve: no solve
    # solvergate can see.
    def solve(self, model, callback=None):
        wrapper = cp_model_helper.SolveWrapper()
        wrapper.set_parameters(self.parameters)
        self._CpSolver__response = wrapper.solve(model.proto)
        return self._CpSolver__response.status
"""


async def test_a_solve_the_helper_could_not_see_is_never_a_silent_null(runtime):
    result = await runtime.run(
        BYPASS
        + ZERO_OPTIMUM
        + """
import solvergate
solver = Bypass()
solvergate.report(solver, solver.solve(zero), {"z": z})
"""
    )
    assert result["status"] == "optimal" and result["solution"] == {"z": 0}, result
    reason = unread(result)
    assert "CpSolver" in reason, reason


async def test_a_hidden_solve_with_a_non_zero_answer_still_reads_it(runtime):
    result = await runtime.run(
        BYPASS
        + """
import solvergate
model = cp_model.CpModel()
x = model.NewIntVar(0, 6, "x")
model.Maximize(x)
solver = Bypass()
solvergate.report(solver, solver.solve(model), {"x": x})
"""
    )
    assert result["objective"] == 6 and result["best_objective_bound"] == 6, result
    clean(result)


async def test_model_keyword_still_wins(runtime):
    result = await runtime.run(
        BYPASS
        + ZERO_OPTIMUM
        + """
import solvergate
solver = Bypass()
solvergate.report(solver, solver.solve(zero), {"z": z}, model=zero)
"""
    )
    assert result["objective"] == 0, result
    clean(result)


async def test_intermediate_reports_know_their_model_without_model_keyword(runtime):
    # The last stdout line is the callback's last intermediate envelope.
    result = await runtime.run(
        ZERO_OPTIMUM
        + """
import solvergate

plain = cp_model.CpModel()
p = plain.NewIntVar(1, 1, "p")

class Printer(cp_model.CpSolverSolutionCallback):
    def __init__(self, variables):
        super().__init__()
        self.variables = variables
    def on_solution_callback(self):
        solvergate.report_intermediate(self, self.variables)

solver = cp_model.CpSolver()
solver.parameters.num_workers = 1
solver.Solve(plain, Printer({"p": p}))
print(sys.argv[0], flush=True)  # not JSON: skipped by the reader
solver.solve(zero, solution_callback=Printer({"z": z}))
"""
    )
    assert result["status"] == "feasible" and result["solution"] == {"z": 0}, result
    assert result["objective"] == 0, result
    plain_line = [line for line in result["stdout"].splitlines() if '"p"' in line]
    assert plain_line and all('"objective": null' in line for line in plain_line), result["stdout"]
    clean(result)


async def test_intermediate_reports_from_a_hidden_solve_say_so(runtime):
    result = await runtime.run(
        ZERO_OPTIMUM
        + BYPASS.replace("wrapper.set_parameters", "wrapper.add_solution_callback(callback)\n        wrapper.set_parameters")
        + """
import solvergate

class Printer(cp_model.CpSolverSolutionCallback):
    def on_solution_callback(self):
        solvergate.report_intermediate(self, {"z": z})

Bypass().solve(zero, Printer())
"""
    )
    assert result["status"] == "feasible" and result["objective"] is None, result
    diagnostic = result["diagnostic"]
    assert diagnostic["category"] == "objective_unread", result
    assert "solution callback" in diagnostic["details"]["reason"], diagnostic
    assert all(line.startswith("solvergate.report_intermediate: ") for line in result["warnings"]), result
    assert len(result["warnings"]) == 1, "said once, however many solutions"


async def test_own_subclasses_and_old_names_are_followed(runtime):
    result = await runtime.run(
        ZERO_OPTIMUM
        + """
import solvergate

class Mine(cp_model.CpSolver):
    def solve(self, model, callback=None):
        self.parameters.num_workers = 1
        return super().solve(model, callback)

plain = cp_model.CpModel()
p = plain.NewIntVar(1, 2, "p")
counter = Mine()
class Count(cp_model.CpSolverSolutionCallback):
    def on_solution_callback(self):
        pass
counter.SearchForAllSolutions(plain, Count())
assert solvergate.report(counter, cp_model.OPTIMAL, {"p": p})["objective"] is None

solver = Mine()
solvergate.report(solver, solver.Solve(zero), {"z": z})
"""
    )
    assert result["objective"] == 0 and result["solution"] == {"z": 0}, result
    clean(result)


async def test_a_late_import_of_the_helper_still_knows_the_model(runtime):
    # The script never names solvergate before it has solved.
    result = await runtime.run(
        ZERO_OPTIMUM
        + """
solver = cp_model.CpSolver()
status = solver.solve(zero)

def finish():
    import solvergate
    solvergate.report(solver, status, {"z": z})

finish()
"""
    )
    assert result["objective"] == 0, result
    clean(result)


async def test_a_script_that_monkeypatches_cp_model_does_not_break_the_helper(runtime):
    result = await runtime.run(
        ZERO_OPTIMUM
        + """
import solvergate

traced = []
plain_solve = cp_model.CpSolver.solve
def tracing_solve(self, model, callback=None):
    traced.append(model)
    return plain_solve(self, model, callback)
cp_model.CpSolver.solve = tracing_solve

def broken(self):
    raise RuntimeError("has_objective broken by the script")
cp_model.CpModel.has_objective = broken
cp_model.CpModel.HasObjective = broken

big = cp_model.CpModel()
b = big.NewIntVar(0, 9, "b")
big.Maximize(b)
solver = cp_model.CpSolver()
status = solver.solve(big)
assert len(traced) == 1
# The model cannot say: a non-zero answer still proves the objective.
solvergate.report(solver, status, {"b": b})
"""
    )
    assert result["status"] == "optimal" and result["objective"] == 9, result
    clean(result)


async def test_a_script_that_never_imports_the_helper_is_untouched(runtime):
    result = await runtime.run(
        """
        import json
        print(json.dumps({"status": "feasible", "objective": 4, "solution": {
            "helper_loaded_as_solvergate": "solvergate" in sys.modules,
        }}))
        """
    )
    assert result["status"] == "feasible" and result["objective"] == 4, result
    assert result["solution"] == {"helper_loaded_as_solvergate": False}, result
    clean(result)


# --- the plain cases ---------------------------------------------------------


@pytest.mark.parametrize("sense, expected", [("Maximize", 13), ("Minimize", 0)])
async def test_report_without_model_reads_the_objective(runtime, sense, expected):
    result = await runtime.run(
        f"""
from ortools.sat.python import cp_model
import solvergate

values, weights = [6, 7, 3, 9], [4, 5, 2, 6]
model = cp_model.CpModel()
take = [model.NewBoolVar(f"take{{i}}") for i in range(4)]
model.Add(sum(w * t for w, t in zip(weights, take)) <= 9)
model.{sense}(sum(v * t for v, t in zip(values, take)))
solver = cp_model.CpSolver()
solvergate.report(solver, solver.Solve(model), {{"take": take}})
"""
    )
    assert result["status"] == "optimal", result
    assert result["objective"] == expected and result["best_objective_bound"] == expected, result
    clean(result)


@pytest.mark.parametrize("kind", ["cold", "warm"])
async def test_a_sitecustomize_on_the_servers_path_still_runs(harness, tmp_path, kind):
    # solvergate's start-up hook shadows it; it must run it as Python would.
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.SITE_CHAINED = 'yes'\n")
    script = """
import builtins, json, os
from ortools.sat.python import cp_model
import solvergate
model = cp_model.CpModel()
x = model.NewIntVar(0, 0, "x")
model.Minimize(x)
solver = cp_model.CpSolver()
solvergate.report(solver, solver.solve(model), {"chained": getattr(builtins, "SITE_CHAINED", None), "ppid": os.getppid()})
"""
    if kind == "cold":
        async with cpsat_server(harness, SOLVERGATE_CPSAT_WARM="0", PYTHONPATH=str(tmp_path)) as (launched, _):
            result = await call_ok(launched.session, "run_cpsat_python", {"source": script})
            assert _stat(result["solution"]["ppid"]).comm == "solvergate", result
    else:
        async with warm_server_ready(harness, PYTHONPATH=str(tmp_path)) as (launched, _, forkers):
            result = await call_ok(launched.session, "run_cpsat_python", {"source": script})
            assert result["solution"]["ppid"] in {p.pid for p in forkers}, result
    assert result["solution"]["chained"] == "yes", result
    # And the objective of 0 is still known.
    assert result["objective"] == 0 and result["diagnostic"] is None, result
