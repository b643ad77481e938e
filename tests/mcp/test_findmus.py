"""find_unsat_core through a real findMUS, when the runtime has one.

Neither CI runtime ships findMUS (Debian packages none; the pinned bundle
that does cannot be downloaded there), so these tests skip there, saying
why. Point SOLVERGATE_TEST_RUNTIME at a runtime whose solver list has
`org.minizinc.findmus` to run them.
"""

from __future__ import annotations

import pytest

from helpers import SAT_MODEL, result_text, structured
from test_unsat_core import CONFLICT, TIMETABLE, span_of

pytestmark = pytest.mark.anyio

FINDMUS = "org.minizinc.findmus"


@pytest.fixture
async def findmus(full):
    listed = structured(await full.session.call_tool("list_available_solvers", {}))
    if FINDMUS not in {solver["id"] for solver in listed["solvers"]}:
        pytest.skip("this runtime has no findMUS (org.minizinc.findmus)")
    return full


async def test_timetable_core_comes_from_findmus(findmus):
    result = await findmus.session.call_tool("find_unsat_core", {"model": TIMETABLE, "timeout_ms": 60000})
    res = structured(result)
    assert res["status"] == "mus_found", res
    assert res["method"] == "findmus"
    assert res["solver"] == FINDMUS
    assert res["minimal"] is True, res
    assert res["core"] == [span_of(TIMETABLE, text) for text in CONFLICT]
    assert res["solver_calls"] == 1
    # The raw output stays authoritative and is returned as findMUS printed it.
    assert "MUS:" in res["stdout"] and "Traces:" in res["stdout"], res["stdout"]
    assert result_text(result).startswith("Unsat core: mus_found (method findmus")


async def test_a_constraint_compiled_into_a_domain_is_still_a_member(findmus):
    # `x < 5` becomes x's domain while compiling. Without findMUS's -g it
    # would drop out of the MUS, and `x + y > 15` alone (satisfiable) would
    # be called a minimal core.
    model = (
        "var 1..10: x; var 1..10: y;\n"
        "constraint x + y > 15;\n"
        "constraint x < 5;\n"
        "constraint y < 5;\n"
        "solve satisfy;\n"
    )
    res = structured(await findmus.session.call_tool("find_unsat_core", {"model": model, "timeout_ms": 60000}))
    assert res["method"] == "findmus"
    assert res["status"] == "mus_found", res
    assert res["minimal"] is True, res
    sources = [entry["source"] for entry in res["core"]]
    assert len(sources) == 2 and sources[0] == "constraint x + y > 15;", sources
    assert sources[1] in {"constraint x < 5;", "constraint y < 5;"}, sources


async def test_data_file_goes_to_findmus(findmus, workdir):
    # The driver refuses `--data` for findMUS; the data file must still count.
    model = workdir / "fm_data.mzn"
    model.write_text("int: cap;\nvar 1..10: x;\nconstraint x > cap;\nconstraint x < 3;\nsolve satisfy;\n")
    data = workdir / "fm_data.dzn"
    data.write_text("cap = 5;\n")
    res = structured(
        await findmus.session.call_tool(
            "find_unsat_core_files", {"model_path": str(model), "data_path": str(data), "timeout_ms": 60000}
        )
    )
    assert res["method"] == "findmus", res
    assert res["status"] == "mus_found", res
    assert [entry["source"] for entry in res["core"]] == ["constraint x > cap;", "constraint x < 3;"]


async def test_satisfiable_model_is_no_core_with_findmus(findmus):
    res = structured(await findmus.session.call_tool("find_unsat_core", {"model": SAT_MODEL, "timeout_ms": 60000}))
    assert res["status"] == "no_core", res
    assert res["core"] == []
