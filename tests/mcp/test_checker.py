"""Solution checkers, inline and from a file."""

from __future__ import annotations

import pytest

from helpers import (
    BROKEN_CHECKER,
    OPT_MODEL,
    REJECT_X10_CHECKER,
    TEXT_CHECKER,
    result_text,
    structured,
    tool_error,
)

pytestmark = pytest.mark.anyio


def assert_rejects_x10(res):
    checker = res["checker"]
    assert checker is not None
    solutions, checks = res["solutions"], checker["checks"]
    assert len(solutions) > 1, "all_solutions gives the improving sequence"
    assert len(checks) == len(solutions), "one verdict per solution"
    for solution, check in zip(solutions, checks):
        assert check["violation"] is (solution["x"] == 10), (solution, check)
    assert any(c["violation"] for c in checks) and not all(c["violation"] for c in checks)
    assert checker["status"] == "violation"
    assert checker["transcript"].strip(), "the raw transcript is kept"
    assert res["diagnostic"]["category"] == "checker_failed"
    assert res["diagnostic"]["details"]["checker_status"] == "violation"
    # Rejected solutions still appear, and status stays the solver's.
    assert res["status"] == "optimal"
    assert res["solution"] == {"x": 10, "y": 2}


async def test_inline_checker_flags_the_rejected_solutions(full):
    result = await full.session.call_tool(
        "solve_minizinc_model",
        {"model": OPT_MODEL, "checker": REJECT_X10_CHECKER, "all_solutions": True, "timeout_ms": 20000},
    )
    res = structured(result)
    assert_rejects_x10(res)
    text = result_text(result)
    assert "Checker: rejected (violation;" in text and "Diagnostic: checker_failed" in text


async def test_a_text_verdict_is_kept_verbatim_and_incorrect_counts_as_a_violation(full):
    """A checker fails a solution either way: its constraints fail, or it
    prints a line starting INCORRECT. (The reference leaves the text
    uninterpreted; a checker saying INCORRECT while the result says
    "completed" misleads, so both count here, as in the CLI.)"""
    res = structured(
        await full.session.call_tool(
            "solve_minizinc_model",
            {"model": OPT_MODEL, "checker": TEXT_CHECKER, "all_solutions": True, "timeout_ms": 20000},
        )
    )
    checker = res["checker"]
    assert len(checker["checks"]) == len(res["solutions"])
    for solution, check in zip(res["solutions"], checker["checks"]):
        expected = "CORRECT" if solution["x"] < 10 else "INCORRECT"
        assert check["output"].strip() == expected, (solution, check)
        assert check["violation"] is (expected == "INCORRECT"), (solution, check)
    assert any(c["output"].strip() == "INCORRECT" for c in checker["checks"])
    assert checker["status"] == "violation"
    assert res["diagnostic"]["category"] == "checker_failed"
    assert res["status"] == "optimal"
    # stdout stays the solution text; the checker's words live in checks.
    assert "CORRECT" not in res["stdout"]
    assert "CORRECT" in checker["transcript"]


async def test_checker_on_a_single_solution(full):
    res = structured(
        await full.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL, "checker": REJECT_X10_CHECKER})
    )
    assert [c["violation"] for c in res["checker"]["checks"]] == [True]
    assert res["checker"]["status"] == "violation"


async def test_checker_with_a_syntax_error(full):
    res = structured(
        await full.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL, "checker": BROKEN_CHECKER})
    )
    assert res["checker"]["status"] == "error"
    assert res["status"] == "error"
    assert res["diagnostic"] is not None
    assert "checker" in res["diagnostic"]["message"] or "checker" in res["stderr"], "the error points at the checker"


@pytest.fixture
def checked_project(workdir):
    (workdir / "model.mzn").write_text(OPT_MODEL)
    (workdir / "reject.mzc.mzn").write_text(REJECT_X10_CHECKER)
    (workdir / "verdict.mzc.mzn").write_text(TEXT_CHECKER)
    (workdir / "reject.mzn").write_text(REJECT_X10_CHECKER)
    return workdir


async def test_checker_path_on_solve_files(full, checked_project):
    res = structured(
        await full.session.call_tool(
            "solve_minizinc_files",
            {
                "model_path": str(checked_project / "model.mzn"),
                "checker_path": str(checked_project / "reject.mzc.mzn"),
                "all_solutions": True,
                "timeout_ms": 20000,
            },
        )
    )
    assert_rejects_x10(res)


async def test_text_checker_path_on_solve_files(full, checked_project):
    res = structured(
        await full.session.call_tool(
            "solve_minizinc_files",
            {
                "model_path": str(checked_project / "model.mzn"),
                "checker_path": str(checked_project / "verdict.mzc.mzn"),
            },
        )
    )
    assert res["checker"]["status"] == "violation"
    assert [c["output"].strip() for c in res["checker"]["checks"]] == ["INCORRECT"]
    assert res["checker"]["checks"][0]["violation"] is True


@pytest.mark.parametrize("name", ["reject.mzn", "reject.txt", "reject.mzc.txt"])
async def test_checker_path_with_a_bad_extension(full, checked_project, name):
    (checked_project / name).write_text(REJECT_X10_CHECKER)
    error = tool_error(
        await full.session.call_tool(
            "solve_minizinc_files",
            {"model_path": str(checked_project / "model.mzn"), "checker_path": str(checked_project / name)},
        )
    )
    assert error.category == "invalid_request"
    assert "checker_path" in error.message and ".mzc" in error.message


async def test_missing_checker_path(full, checked_project):
    error = tool_error(
        await full.session.call_tool(
            "solve_minizinc_files",
            {"model_path": str(checked_project / "model.mzn"), "checker_path": str(checked_project / "nope.mzc.mzn")},
        )
    )
    assert error.category == "invalid_request"
    assert "nope.mzc.mzn" in error.message and "does not exist" in error.message
