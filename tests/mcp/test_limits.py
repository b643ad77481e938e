"""The output cap and the hard wall-clock kill: both stop the whole
process tree, and the result says what happened."""

from __future__ import annotations

import time

import anyio
import pytest

from helpers import (
    HARD_MODEL,
    NEVER_CHECKER,
    NEVER_MODEL,
    PRINTER_MODEL,
    describe,
    leftover_solver_procs,
    solver_procs,
    structured,
)

pytestmark = pytest.mark.anyio

ONE_MIB = 1024 * 1024


async def test_three_megabyte_printer_is_cut_at_the_cap(full, harness):
    before = solver_procs(harness.marker)
    with anyio.fail_after(60):
        result = await full.session.call_tool(
            "solve_minizinc_model",
            {"model": PRINTER_MODEL, "all_solutions": True, "timeout_ms": 30000},
        )
    res = structured(result)
    assert res["truncated"] is True
    assert res["return_code"] is None, "the server killed the process: no exit code of its own"
    assert res["timed_out"] is False
    assert res["status"] == "satisfied"
    assert res["diagnostic"]["category"] == "output_truncated"
    assert "num_solutions" in res["diagnostic"]["message"], "the message says how to page"
    # Solutions parsed before the cut are kept, each a complete record.
    solutions = res["solutions"]
    assert 100 < len(solutions) < 1_000_000
    assert all(len(s["x"]) == 6 for s in solutions)
    assert res["solution"] == solutions[-1]
    assert len({tuple(s["x"]) for s in solutions}) == len(solutions), "duplicate solutions"
    assert len(res["stdout"]) + len(res["stderr"]) < 4 * ONE_MIB
    left = leftover_solver_procs(before, harness.marker, timeout=5)
    assert not left, f"left running after the cap: {describe(left)}"


async def test_never_finishing_model_is_killed_at_the_wall_clock(full, harness):
    before = solver_procs(harness.marker)
    started = time.monotonic()
    with anyio.fail_after(30):
        result = await full.session.call_tool(
            "solve_minizinc_model",
            {"model": NEVER_MODEL, "checker": NEVER_CHECKER, "timeout_ms": 1000},
        )
    wall = time.monotonic() - started
    res = structured(result)
    assert res["status"] == "timeout"
    assert res["timed_out"] is True
    assert res["return_code"] is None
    assert 1000 <= res["elapsed_ms"] < 15000, res["elapsed_ms"]
    assert wall < 15, wall
    assert res["diagnostic"]["category"] in ("timeout_no_incumbent", "timeout_with_incumbent")
    assert res["diagnostic"]["details"]["timed_out"] is True
    assert res["checker"]["status"] == "timeout"
    left = leftover_solver_procs(before, harness.marker, timeout=5)
    assert not left, f"left running after the timeout: {describe(left)}"


async def test_compile_check_has_the_same_hard_cap(full, harness):
    # A model whose flattening evaluates the 2e9-term sum: the check is killed.
    model = "int: s = sum(i in 1..2000000000)(i mod 3);\nvar 0..s: x;\nsolve satisfy;\n"
    before = solver_procs(harness.marker)
    with anyio.fail_after(30):
        result = await full.session.call_tool("check_minizinc_model", {"model": model, "timeout_ms": 1000})
    res = structured(result)
    assert res["status"] == "timeout"
    assert res["diagnostic"]["category"] == "timeout_no_incumbent"
    assert res["elapsed_ms"] < 15000
    left = leftover_solver_procs(before, harness.marker, timeout=5)
    assert not left, f"left running after the check timeout: {describe(left)}"


async def test_optimisation_stopped_by_its_time_limit_keeps_the_incumbent(full):
    with anyio.fail_after(30):
        result = await full.session.call_tool("solve_minizinc_model", {"model": HARD_MODEL, "timeout_ms": 1500})
    res = structured(result)
    # MiniZinc stopped itself at --time-limit: our wall clock did not fire.
    assert res["timed_out"] is False
    assert res["return_code"] == 0
    assert res["status"] == "satisfied"
    assert res["solutions"] and res["objective"] is not None
    assert res["diagnostic"]["category"] == "timeout_with_incumbent"
    assert 1500 <= res["elapsed_ms"] < 10000
