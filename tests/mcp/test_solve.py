"""solve_minizinc_model on clean models: statuses, solutions, controls."""

from __future__ import annotations

import pytest

from helpers import OPT_MODEL, OPT_OBJECTIVE, SAT_MODEL, UNSAT_MODEL, result_text, structured

pytestmark = pytest.mark.anyio

GECODE = "org.gecode.gecode"


async def solve(full, **arguments):
    arguments.setdefault("timeout_ms", 20000)
    return await full.session.call_tool("solve_minizinc_model", arguments)


@pytest.mark.parametrize("solver", [None, "gecode", GECODE], ids=["omitted", "short", "canonical"])
async def test_optimal_solve(full, solver):
    arguments = {"model": OPT_MODEL}
    if solver is not None:
        arguments["solver"] = solver
    result = await solve(full, **arguments)
    res = structured(result)
    assert res["status"] == "optimal"
    assert res["solver"] == GECODE
    assert res["objective"] == OPT_OBJECTIVE
    assert res["solution"] == {"x": 10, "y": 2}
    assert res["solutions"] and res["solutions"][-1] == res["solution"]
    assert res["statistics"], "statistics are empty"
    assert all(isinstance(v, str) for v in res["statistics"].values())
    assert res["diagnostic"] is None
    assert res["return_code"] == 0
    assert res["timed_out"] is False and res["truncated"] is False
    assert res["checker"] is None
    text = result_text(result)
    assert "optimal" in text and str(OPT_OBJECTIVE) in text
    # One line of the figures a person reads; the text does not tell the
    # client's model what to write, and every figure is in the structure.
    stats = res["statistics"]
    # The solver's count agrees with what the result keeps, or says why not.
    found, kept = int(stats["nSolutions"]), len(res["solutions"])
    count = (
        f"{found} solutions found by the solver, {kept} kept in `solutions` (the last is the one shown)"
        if found > kept
        else f"{found} solution(s)"
    )
    lines = [line for line in text.splitlines() if line.startswith("Statistics")]
    assert lines == [
        f"Statistics: solve time {stats['solveTime']} s, {count}, "
        f"{stats['nodes']} nodes ({len(stats)} figure(s) in the structured `statistics`)"
    ], text
    # The answer first: the values whole, before any raw output.
    assert text.index("Solution:\n  x = 10\n  y = 2\n") < text.index("Statistics"), text
    assert "When you answer" not in text and "do not omit" not in text


async def test_all_solutions_of_a_satisfaction_problem(full):
    res = structured(await solve(full, model=SAT_MODEL, all_solutions=True))
    assert res["status"] == "satisfied"
    assert sorted(s["x"] for s in res["solutions"]) == [1, 2, 3]
    assert res["solution"] == res["solutions"][-1]
    assert res["objective"] is None
    assert res["diagnostic"] is None
    assert res["stdout"].count("----------") == 3


async def test_all_solutions_of_an_optimisation_is_the_improving_sequence(full):
    res = structured(await solve(full, model=OPT_MODEL, all_solutions=True))
    assert res["status"] == "optimal"
    objectives = [2 * s["x"] + s["y"] for s in res["solutions"]]
    assert objectives == sorted(objectives) and objectives[-1] == OPT_OBJECTIVE
    assert res["objective"] == OPT_OBJECTIVE


async def test_unsatisfiable(full):
    res = structured(await solve(full, model=UNSAT_MODEL))
    assert res["status"] == "unsatisfiable"
    assert res["solution"] is None and res["solutions"] == []
    assert res["objective"] is None
    assert res["diagnostic"]["category"] == "infeasible"
    assert "UNSATISFIABLE" in res["stdout"]


async def test_num_solutions_caps_the_count_on_gecode(full):
    model = "var 1..9: x; var 1..9: y;\nsolve satisfy;\n"
    res = structured(await solve(full, model=model, num_solutions=2, solver=GECODE))
    assert res["status"] == "satisfied"
    assert len(res["solutions"]) == 2
    assert res["solutions"][0] != res["solutions"][1]


@pytest.mark.parametrize(
    "controls",
    [
        {"random_seed": 42},
        {"random_seed": -7},
        {"free_search": True},
        {"parallel": 2},
        {"free_search": True, "parallel": 1, "random_seed": 3},
    ],
    ids=["seed", "negative-seed", "free", "parallel", "combined"],
)
async def test_search_controls_are_accepted_on_gecode(full, controls):
    res = structured(await solve(full, model=OPT_MODEL, solver="gecode", **controls))
    assert res["status"] == "optimal", res["stderr"]
    assert res["objective"] == OPT_OBJECTIVE


async def test_model_without_output_item_prints_assignments(full):
    res = structured(await solve(full, model=OPT_MODEL))
    lines = res["stdout"].splitlines()
    assert "x = 10;" in lines and "y = 2;" in lines
    assert "----------" in lines and "==========" in lines
    # The objective is reported separately, not as a variable.
    assert "_objective" not in res["solution"]


async def test_model_with_output_item_keeps_its_text(full):
    model = OPT_MODEL + 'output ["best x=\\(x) y=\\(y)\\n"];\n'
    res = structured(await solve(full, model=model))
    assert "best x=10 y=2" in res["stdout"]
    assert res["solution"] == {"x": 10, "y": 2}


async def test_inline_data_is_used(full):
    model = "int: n;\nvar 1..n: x;\nsolve maximize x;\n"
    res = structured(await solve(full, model=model, data="n = 7;"))
    assert res["status"] == "optimal" and res["objective"] == 7


async def test_structured_values_keep_their_types(full):
    model = (
        "var bool: b; var set of 1..3: s; array[1..2] of var 1..2: a;\n"
        "constraint b; constraint card(s) = 2; constraint a[1] < a[2];\n"
        "solve satisfy;\n"
    )
    res = structured(await solve(full, model=model))
    solution = res["solution"]
    assert solution["b"] is True
    assert solution["a"] == [1, 2]
    assert "s" in solution
