"""check_minizinc_model and inspect_minizinc_model."""

from __future__ import annotations

import pytest

from helpers import OPT_MODEL, SYNTAX_ERROR_MODEL, UNSAT_MODEL, result_text, structured

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("model", [OPT_MODEL, UNSAT_MODEL], ids=["optimisation", "unsatisfiable"])
async def test_check_ok(full, model):
    result = await full.session.call_tool("check_minizinc_model", {"model": model})
    res = structured(result)
    assert res["status"] == "ok"  # compiles; says nothing about satisfiability
    assert res["diagnostic"] is None
    assert res["solver"] == "org.gecode.gecode"
    assert res["truncated"] is False
    assert isinstance(res["elapsed_ms"], int)
    assert "does not mean it is satisfiable" in result_text(result)


async def test_a_clean_compile_has_no_stdout_and_each_warning_once(full):
    # `include "alldifferent.mzn"` makes Debian 12's Gecode library warn
    # (its packaging overrides global constraint files); 2.9.2 may not.
    model = 'include "alldifferent.mzn";\narray[1..3] of var 1..3: x;\nconstraint alldifferent(x);\nsolve satisfy;\n'
    res = structured(await full.session.call_tool("check_minizinc_model", {"model": model}))
    assert res["status"] == "ok", res
    assert res["stdout"] == ""
    warnings = [line for line in res["stderr"].splitlines() if "Warning:" in line]
    assert len(warnings) == len(set(warnings)), res["stderr"]
    assert '"type"' not in res["stderr"], res["stderr"]


async def test_a_failed_compile_reports_its_error_in_stderr_once(full):
    res = structured(await full.session.call_tool("check_minizinc_model", {"model": SYNTAX_ERROR_MODEL}))
    assert res["status"] == "error"
    assert res["stdout"] == ""
    assert res["stderr"].count("syntax error") == 1, res["stderr"]


async def test_check_with_data_and_short_solver_name(full):
    model = "int: n;\narray[1..n] of int: w;\nvar 1..n: x;\nsolve maximize w[x];\n"
    res = structured(
        await full.session.call_tool("check_minizinc_model", {"model": model, "data": "n = 3; w = [4, 5, 6];", "solver": "gecode"})
    )
    assert res["status"] == "ok", res["stderr"]
    assert res["solver"] == "org.gecode.gecode"


async def test_check_error(full):
    result = await full.session.call_tool("check_minizinc_model", {"model": SYNTAX_ERROR_MODEL})
    res = structured(result)
    assert res["status"] == "error"
    assert res["diagnostic"]["category"] == "syntax_or_compile_error"
    assert "syntax error" in res["stderr"]
    assert "Diagnostic: syntax_or_compile_error" in result_text(result)


INTERFACE_CASES = [
    ("sat", "var 1..3: x;\nsolve satisfy;\n", False),
    ("min", "var 1..3: x;\nsolve minimize x;\n", False),
    ("max", 'var 1..3: x;\nsolve maximize x;\noutput ["\\(x)"];\n', True),
]


@pytest.mark.parametrize(("method", "model", "has_output"), INTERFACE_CASES, ids=[c[0] for c in INTERFACE_CASES])
async def test_inspect_method_and_output_item(full, method, model, has_output):
    res = structured(await full.session.call_tool("inspect_minizinc_model", {"model": model}))
    assert res["status"] == "ok"
    assert res["diagnostic"] is None
    interface = res["interface"]
    assert interface["method"] == method
    assert interface["has_output_item"] is has_output
    assert interface["required_parameters"] == {}
    assert "x" in interface["output_variables"]


PARAMETRIC = (
    "int: n;\n"
    "array[1..n] of int: w;\n"
    "set of int: S;\n"
    "opt int: o;\n"
    "bool: flag;\n"
    "float: f;\n"
    "array[1..n] of var 1..n: x;\n"
    "solve minimize sum(i in 1..n)(w[i] * x[i]);\n"
)


async def test_inspect_required_parameters(full):
    result = await full.session.call_tool("inspect_minizinc_model", {"model": PARAMETRIC})
    res = structured(result)
    required = res["interface"]["required_parameters"]
    assert set(required) == {"n", "w", "S", "o", "flag", "f"}
    assert required["n"] == {"base_type": "int", "dim": 0, "is_set": False, "is_optional": False}
    assert required["w"]["dim"] == 1 and required["w"]["base_type"] == "int"
    assert required["S"]["is_set"] is True
    assert required["o"]["is_optional"] is True
    assert required["flag"]["base_type"] == "bool"
    assert required["f"]["base_type"] == "float"
    assert res["interface"]["output_variables"]["x"]["dim"] == 1
    assert res["interface"]["method"] == "min"
    text = result_text(result)
    assert "Required parameters:" in text and "flag" in text


async def test_inspect_with_partial_and_complete_data(full):
    partial = structured(
        await full.session.call_tool("inspect_minizinc_model", {"model": PARAMETRIC, "data": "n = 2; w = [1, 2];"})
    )
    assert set(partial["interface"]["required_parameters"]) == {"S", "o", "flag", "f"}
    complete = structured(
        await full.session.call_tool(
            "inspect_minizinc_model",
            {"model": PARAMETRIC, "data": "n = 2; w = [1, 2]; S = {1}; o = <>; flag = true; f = 1.5;"},
        )
    )
    assert complete["status"] == "ok"
    assert complete["interface"]["required_parameters"] == {}


async def test_inspect_error_has_no_interface(full):
    res = structured(await full.session.call_tool("inspect_minizinc_model", {"model": SYNTAX_ERROR_MODEL}))
    assert res["status"] == "error"
    assert res["interface"] is None
    assert res["diagnostic"]["category"] == "syntax_or_compile_error"
