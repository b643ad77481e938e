"""What depends on which solvers the runtime has: the default solver, and —
on a runtime that ships them (MiniZinc 2.9 from Debian 13, see
scripts/runtime-debian13) — Chuffed, COIN-BC and HiGHS solves, float/MIP
models, per-solver control gating, and a portfolio across three solvers.

Tests that need a solver skip, naming it, on a runtime without it (Debian
12's MiniZinc 2.6.4 has Gecode only).
"""

from __future__ import annotations

import pytest

from helpers import OPT_MODEL, OPT_OBJECTIVE, SAT_MODEL, call_error, call_ok, wait_job

pytestmark = pytest.mark.anyio

GECODE = "org.gecode.gecode"
CHUFFED = "org.chuffed.chuffed"
COIN_BC = "org.minizinc.mip.coin-bc"
HIGHS = "org.minizinc.mip.highs"

FLOAT_MODEL = (
    "var 0.0..10.0: x; var 0.0..10.0: y;\n"
    "constraint x + 2.0*y <= 14.0;\n"
    "constraint 3.0*x - y >= 0.0;\n"
    "constraint x - y <= 2.0;\n"
    "solve maximize 3.0*x + 4.0*y;\n"
)
#: A knapsack-like maximisation: easy for a MIP solver, slow to prove for CP.
HARD_MAX = """int: n = 50;
array[1..n] of int: w = [ (i * 37) mod 23 + 5 | i in 1..n ];
array[1..n] of int: v = [ (i * 53) mod 31 + 3 | i in 1..n ];
array[1..n] of var 0..3: x;
constraint sum(i in 1..n)(w[i] * x[i]) <= 800;
solve maximize sum(i in 1..n)(v[i] * x[i]);
"""


@pytest.fixture(scope="module")
async def server(harness):
    async with harness.open("full") as launched:
        yield launched


@pytest.fixture(scope="module")
async def catalog(server):
    return await call_ok(server.session, "list_available_solvers", {})


def require(catalog: dict, *ids: str) -> None:
    present = {solver["id"] for solver in catalog["solvers"]}
    missing = [solver for solver in ids if solver not in present]
    if missing:
        pytest.skip(f"the runtime has no {', '.join(missing)} (a MiniZinc 2.9 runtime such as scripts/runtime-debian13 has)")


async def test_omitting_the_solver_uses_the_runtimes_default_and_says_so(server, catalog):
    default = catalog["default_solver"]
    has_cp_sat = any("cp-sat" in solver["tags"] for solver in catalog["solvers"])
    if not has_cp_sat:
        # The reference prefers cp-sat; neither test runtime has it, so the
        # runtime's own default (Gecode on both) is used and named.
        marked = [solver["id"] for solver in catalog["solvers"] if solver["is_default"]]
        assert marked == [default] == [GECODE], catalog
    result = await call_ok(server.session, "solve_minizinc_model", {"model": OPT_MODEL})
    assert result["solver"] == default, (result["solver"], default)
    assert result["status"] == "optimal" and result["objective"] == OPT_OBJECTIVE


async def test_chuffed_solves_and_gates_its_controls(server, catalog):
    require(catalog, CHUFFED)
    result = await call_ok(server.session, "solve_minizinc_model", {"model": OPT_MODEL, "solver": CHUFFED, "random_seed": 3, "free_search": True})
    assert result["solver"] == CHUFFED
    assert result["status"] == "optimal" and result["objective"] == OPT_OBJECTIVE, result
    # Chuffed declares no -p.
    error = await call_error(server.session, "solve_minizinc_model", {"model": OPT_MODEL, "solver": CHUFFED, "parallel": 2})
    assert error.category == "unsupported_feature" and "-p" in error.message, error.text
    counted = await call_ok(server.session, "solve_minizinc_model", {"model": SAT_MODEL, "solver": CHUFFED, "num_solutions": 2})
    assert len(counted["solutions"]) == 2, counted


@pytest.mark.parametrize("solver", [COIN_BC, HIGHS])
async def test_mip_solvers_solve_float_models_and_refuse_what_they_do_not_declare(server, catalog, solver):
    require(catalog, solver)
    result = await call_ok(server.session, "solve_minizinc_model", {"model": FLOAT_MODEL, "solver": solver})
    assert result["status"] == "optimal", result
    assert result["solution"]["x"] == pytest.approx(6.0) and result["solution"]["y"] == pytest.approx(4.0)
    assert result["objective"] == pytest.approx(34.0)
    # Neither declares -f or -a.
    for control, flag in [("free_search", "-f"), ("all_solutions", "-a")]:
        error = await call_error(server.session, "solve_minizinc_model", {"model": FLOAT_MODEL, "solver": solver, control: True})
        assert error.category == "unsupported_feature" and flag in error.message, error.text


async def test_coin_bc_refuses_a_seed(server, catalog):
    require(catalog, COIN_BC)
    error = await call_error(server.session, "solve_minizinc_model", {"model": FLOAT_MODEL, "solver": COIN_BC, "random_seed": 1})
    assert error.category == "unsupported_feature" and "-r" in error.message, error.text
    # -p is declared: refused nowhere before the run.
    result = await call_ok(server.session, "solve_minizinc_model", {"model": FLOAT_MODEL, "solver": COIN_BC, "parallel": 1})
    assert result["status"] == "optimal", result


async def test_a_portfolio_across_three_solvers_returns_the_best_objective(server, catalog):
    require(catalog, GECODE, CHUFFED, COIN_BC)
    submitted = await call_ok(
        server.session,
        "submit_portfolio_job",
        {"models": [HARD_MAX], "solvers": [GECODE, CHUFFED, COIN_BC], "per_attempt_timeout_ms": 3000},
    )
    status, _ = await wait_job(server.session, submitted["job_id"], tool="get_portfolio_job", timeout=30)
    result = status["result"]
    assert [row["solver"] for row in result["attempts"]] == [GECODE, CHUFFED, COIN_BC]
    assert result["status"] == "winner", result
    winner = result["winner"]
    objectives = [row["objective"] for row in result["attempts"] if row["objective"] is not None]
    assert winner["objective"] == max(objectives), result["attempts"]
    if winner["status"] != "optimal":
        # Nothing was proven: every attempt ran to its budget and was compared.
        assert all(row["state"] in ("succeeded", "timeout") for row in result["attempts"]), result["attempts"]


async def test_listed_solvers_that_cannot_run_are_marked(server, catalog):
    by_id = {solver["id"]: solver for solver in catalog["solvers"]}
    assert by_id[GECODE]["available"] is True and by_id[GECODE]["unavailable_reason"] is None
    # Both test runtimes list CPLEX without its library.
    cplex = by_id.get("org.minizinc.mip.cplex")
    if cplex is None:
        pytest.skip("the runtime does not list CPLEX")
    assert cplex["available"] is False, cplex
    assert "cplex" in cplex["unavailable_reason"].lower(), cplex
    tools = await server.session.call_tool("list_available_solvers", {})
    text = tools.content[0].text
    row = next(line for line in text.splitlines() if line.startswith("| org.minizinc.mip.cplex |"))
    assert "| no: " in row, row


async def test_chuffeds_time_out_warning_is_explained_where_it_appears(server, catalog):
    require(catalog, CHUFFED)
    result = await server.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL, "solver": CHUFFED})
    lines = result.content[0].text.splitlines()
    warned = [i for i, line in enumerate(lines) if "--time-out flag has recently been changed" in line]
    assert warned, lines
    note = "Note: Chuffed prints its --time-out warning on every run; solvergate already passes it the time limit in milliseconds, as the warning asks."
    assert note in lines and lines.index(note) > warned[0], lines
