"""Bad input: each case its own test, each asserting the category and a
message that tells the caller what to fix.

Argument and environment problems are tool errors (`is_error`, text
`Diagnostic: <category> — <message>`); model problems are results with
`status: "error"` and a diagnostic.
"""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from helpers import (
    MISSING_DATA_MODEL,
    OPT_MODEL,
    SAT_MODEL,
    SYNTAX_ERROR_MODEL,
    TYPE_ERROR_MODEL,
    result_text,
    structured,
    tool_error,
)

pytestmark = pytest.mark.anyio

# (id, tool, arguments, category, fragments the message must contain)
ARGUMENT_ERRORS = [
    ("empty-model", "solve_minizinc_model", {"model": ""}, "invalid_request", ["model", "empty"]),
    ("blank-model", "solve_minizinc_model", {"model": "  \n\t"}, "invalid_request", ["model", "empty"]),
    ("empty-model-check", "check_minizinc_model", {"model": ""}, "invalid_request", ["model", "empty"]),
    ("empty-model-inspect", "inspect_minizinc_model", {"model": ""}, "invalid_request", ["model", "empty"]),
    ("timeout-zero", "solve_minizinc_model", {"model": SAT_MODEL, "timeout_ms": 0}, "invalid_request", ["timeout_ms", "0", "positive"]),
    ("timeout-negative", "solve_minizinc_model", {"model": SAT_MODEL, "timeout_ms": -5}, "invalid_request", ["timeout_ms", "-5"]),
    ("timeout-over-a-day", "solve_minizinc_model", {"model": SAT_MODEL, "timeout_ms": 10**12}, "invalid_request", ["timeout_ms", "at most"]),
    ("timeout-zero-check", "check_minizinc_model", {"model": SAT_MODEL, "timeout_ms": 0}, "invalid_request", ["timeout_ms"]),
    ("timeout-zero-files", "solve_minizinc_files", {"model_path": "/nonexistent/m.mzn", "timeout_ms": 0}, "invalid_request", ["timeout_ms"]),
    ("parallel-zero", "solve_minizinc_model", {"model": SAT_MODEL, "parallel": 0}, "invalid_request", ["parallel", "at least 1", "0"]),
    ("num-solutions-zero", "solve_minizinc_model", {"model": SAT_MODEL, "num_solutions": 0}, "invalid_request", ["num_solutions", "0"]),
    ("empty-checker", "solve_minizinc_model", {"model": SAT_MODEL, "checker": " "}, "invalid_request", ["checker", "empty"]),
    (
        "num-solutions-on-scip",
        "solve_minizinc_model",
        {"model": SAT_MODEL, "num_solutions": 2, "solver": "org.minizinc.mip.scip"},
        "unsupported_feature",
        ["org.minizinc.mip.scip", "num_solutions", "-n"],
    ),
    (
        "num-solutions-on-cplex",
        "solve_minizinc_model",
        {"model": SAT_MODEL, "num_solutions": 2, "solver": "org.minizinc.mip.cplex"},
        "unsupported_feature",
        ["org.minizinc.mip.cplex", "num_solutions", "-n"],
    ),
    (
        "all-solutions-on-scip",
        "solve_minizinc_model",
        {"model": SAT_MODEL, "all_solutions": True, "solver": "org.minizinc.mip.scip"},
        "unsupported_feature",
        ["org.minizinc.mip.scip", "all_solutions", "-a"],
    ),
    (
        "free-search-on-scip-files",
        "solve_minizinc_files",
        {"model_path": "/nonexistent/m.mzn", "free_search": True, "solver": "org.minizinc.mip.scip"},
        "unsupported_feature",
        ["org.minizinc.mip.scip", "free_search", "-f"],
    ),
    ("unknown-solver", "solve_minizinc_model", {"model": SAT_MODEL, "solver": "nosuch"}, "solver_unavailable", ["nosuch", "org.gecode.gecode"]),
    ("unknown-solver-check", "check_minizinc_model", {"model": SAT_MODEL, "solver": "nosuch"}, "solver_unavailable", ["nosuch"]),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "category", "fragments"),
    [case[1:] for case in ARGUMENT_ERRORS],
    ids=[case[0] for case in ARGUMENT_ERRORS],
)
async def test_argument_errors(full, tool, arguments, category, fragments):
    error = tool_error(await full.session.call_tool(tool, arguments))
    assert error.category == category, error.text
    for fragment in fragments:
        assert fragment in error.message, f"{fragment!r} missing from {error.message!r}"


async def test_unsupported_control_is_refused_before_running(full, harness):
    # SCIP cannot run on this machine; a refusal that fast and that specific
    # shows no process was started.
    result = await full.session.call_tool(
        "solve_minizinc_model",
        {"model": SAT_MODEL, "num_solutions": 3, "solver": "org.minizinc.mip.scip"},
    )
    error = tool_error(result)
    assert error.category == "unsupported_feature"
    assert "list_available_solvers" in error.message or "pick a solver" in error.message


# (id, model, data, category, fragments in diagnostic message or stderr)
MODEL_ERRORS = [
    ("syntax", SYNTAX_ERROR_MODEL, None, "syntax_or_compile_error", ["syntax error", "model.mzn:2"]),
    ("type", TYPE_ERROR_MODEL, None, "type_error", ["type", "model.mzn:2"]),
    ("missing-data", MISSING_DATA_MODEL, None, "missing_data", ["`n'", "model.mzn:1"]),
    ("missing-data-partial", "int: n; int: m;\nvar 1..n+m: x;\nsolve satisfy;\n", "n = 2;", "missing_data", ["`m'"]),
]


@pytest.mark.parametrize(
    ("model", "data", "category", "fragments"),
    [case[1:] for case in MODEL_ERRORS],
    ids=[case[0] for case in MODEL_ERRORS],
)
async def test_model_errors_are_results(full, model, data, category, fragments):
    arguments = {"model": model, "timeout_ms": 20000}
    if data is not None:
        arguments["data"] = data
    result = await full.session.call_tool("solve_minizinc_model", arguments)
    res = structured(result)  # a result, not an MCP error
    assert res["status"] == "error"
    assert res["diagnostic"]["category"] == category, res["diagnostic"]
    assert res["solution"] is None and res["solutions"] == []
    assert res["return_code"] not in (0, None)
    for fragment in fragments:
        assert fragment in res["diagnostic"]["message"], res["diagnostic"]
    assert "Error" in res["stderr"]
    assert f"Diagnostic: {category}" in result_text(result)


@pytest.mark.parametrize(
    ("model", "data", "category", "fragments"),
    [case[1:] for case in MODEL_ERRORS],
    ids=[case[0] for case in MODEL_ERRORS],
)
async def test_model_errors_in_check(full, model, data, category, fragments):
    arguments = {"model": model}
    if data is not None:
        arguments["data"] = data
    res = structured(await full.session.call_tool("check_minizinc_model", arguments))
    assert res["status"] == "error"
    assert res["diagnostic"]["category"] == category, res["diagnostic"]


# ---- path arguments ------------------------------------------------------


@pytest.fixture
def files(workdir):
    good = workdir / "good.mzn"
    good.write_text(OPT_MODEL)
    (workdir / "empty.mzn").write_text("  \n\n")
    (workdir / "latin1.mzn").write_bytes(b"% caf\xe9\n" + OPT_MODEL.encode())
    (workdir / "latin1.dzn").write_bytes(b"% caf\xe9\nn = 3;\n")
    (workdir / "data.txt").write_text("n = 3;\n")
    (workdir / "sub").mkdir()
    return workdir


# (id, tool, argument builder, fragments)
PATH_ERRORS = [
    ("missing-model", "solve_minizinc_files", lambda d: {"model_path": str(d / "nope.mzn")}, ["model_path", "nope.mzn", "does not exist"]),
    ("model-is-dir", "solve_minizinc_files", lambda d: {"model_path": str(d / "sub")}, ["model_path", "sub", "not a regular file"]),
    ("empty-model-file", "solve_minizinc_files", lambda d: {"model_path": str(d / "empty.mzn")}, ["model_path", "empty.mzn", "empty"]),
    ("latin1-model", "solve_minizinc_files", lambda d: {"model_path": str(d / "latin1.mzn")}, ["model_path", "latin1.mzn", "UTF-8"]),
    ("latin1-data", "solve_minizinc_files", lambda d: {"model_path": str(d / "good.mzn"), "data_path": str(d / "latin1.dzn")}, ["data_path", "latin1.dzn", "UTF-8"]),
    ("latin1-data-check", "check_minizinc_files", lambda d: {"model_path": str(d / "good.mzn"), "data_path": str(d / "latin1.dzn")}, ["data_path", "UTF-8"]),
    ("latin1-data-inspect", "inspect_minizinc_files", lambda d: {"model_path": str(d / "good.mzn"), "data_path": str(d / "latin1.dzn")}, ["data_path", "UTF-8"]),
    ("missing-data", "solve_minizinc_files", lambda d: {"model_path": str(d / "good.mzn"), "data_path": str(d / "nope.dzn")}, ["data_path", "nope.dzn", "does not exist"]),
    ("data-bad-extension", "solve_minizinc_files", lambda d: {"model_path": str(d / "good.mzn"), "data_path": str(d / "data.txt")}, ["data_path", ".dzn"]),
    ("missing-model-check", "check_minizinc_files", lambda d: {"model_path": str(d / "nope.mzn")}, ["model_path", "does not exist"]),
    ("model-is-dir-inspect", "inspect_minizinc_files", lambda d: {"model_path": str(d / "sub")}, ["model_path", "not a regular file"]),
    ("empty-model-path", "solve_minizinc_files", lambda d: {"model_path": ""}, ["model_path"]),
]


@pytest.mark.parametrize(
    ("tool", "build", "fragments"),
    [case[1:] for case in PATH_ERRORS],
    ids=[case[0] for case in PATH_ERRORS],
)
async def test_path_errors(full, files, tool, build, fragments):
    error = tool_error(await full.session.call_tool(tool, build(files)))
    assert error.category == "invalid_request", error.text
    for fragment in fragments:
        assert fragment in error.message, f"{fragment!r} missing from {error.message!r}"


# ---- argument names -----------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("solve_minizinc_model", {"model": SAT_MODEL, "timeout": 1000}),
        ("check_minizinc_model", {"model": SAT_MODEL, "solvr": "gecode"}),
        ("solve_minizinc_files", {"model_path": "/x.mzn", "checker": "int: x;"}),
    ],
    ids=["timeout", "solvr", "checker-on-files"],
)
async def test_unknown_argument_is_rejected(full, tool, arguments):
    bad = next(name for name in arguments if name not in ("model", "model_path"))
    try:
        result = await full.session.call_tool(tool, arguments)
    except MCPError as error:
        assert bad in str(error), str(error)
        return
    assert result.is_error, f"{tool} accepted unknown argument {bad!r}: {result_text(result)[:500]!r}"
    assert bad in result_text(result)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "invalid arguments: missing field `model`"),
        ({"model": 42}, "invalid arguments: model: invalid type: integer `42`, expected a string"),
        (
            {"model": SAT_MODEL, "timeout_ms": "soon"},
            'invalid arguments: timeout_ms: invalid type: string "soon", expected i64',
        ),
        (
            {"model": SAT_MODEL, "all_solutions": "yes"},
            'invalid arguments: all_solutions: invalid type: string "yes", expected a boolean',
        ),
    ],
    ids=["no-model", "model-not-string", "timeout-not-int", "flag-not-bool"],
)
async def test_ill_typed_arguments_are_refused_naming_the_argument(full, arguments, message):
    """A wrong type names the argument it is in, not only the value and the
    type serde expected."""
    error = tool_error(await full.session.call_tool("solve_minizinc_model", arguments))
    assert (error.category, error.message) == ("invalid_request", message), error.text


async def test_an_ill_typed_item_of_a_list_is_named_by_its_index(full):
    error = tool_error(await full.session.call_tool("run_cpsat_python", {"script": "print(1)", "args": ["--a", 3]}))
    message = "invalid arguments: args[1]: invalid type: integer `3`, expected a string"
    assert (error.category, error.message) == ("invalid_request", message), error.text


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"model": SAT_MODEL, "timeout": 1000}, "timeout"),
        ({"model": 42}, "model"),
        ({"model": SAT_MODEL, "all_solutions": "yes"}, "all_solutions"),
    ],
    ids=["unknown-name", "model-not-string", "flag-not-bool"],
)
async def test_malformed_arguments_follow_the_diagnostic_contract(full, arguments, name):
    """Issue 2: argument problems are MCP errors whose text starts
    `Diagnostic: <category> — <message>`, so a client can branch on the
    category of a misspelt or ill-typed argument too."""
    result = await full.session.call_tool("solve_minizinc_model", arguments)
    error = tool_error(result)
    assert error.category == "invalid_request", error.text
    assert name in error.message, error.text


@pytest.mark.parametrize(
    "solver",
    ["org.minizinc.mip.scip", "org.minizinc.mip.cplex", "org.minizinc.mip.gurobi", "org.minizinc.mip.xpress"],
)
async def test_listed_solver_that_cannot_run_is_solver_unavailable(full, solver):
    """These MIP solvers are listed but their libraries are absent here: the
    model is fine, the solver is unusable — `solver_unavailable` (pick an
    available solver), not a compile error the client would try to repair."""
    listed = structured(await full.session.call_tool("list_available_solvers", {}))
    if solver not in {s["id"] for s in listed["solvers"]}:
        pytest.skip(f"{solver} is not listed by this runtime")
    res = structured(await full.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL, "solver": solver}))
    assert res["status"] == "error"
    assert res["solver"] == solver
    assert res["diagnostic"]["category"] == "solver_unavailable", res["diagnostic"]


@pytest.mark.parametrize("tool", ["check_runtime", "list_available_solvers"])
async def test_tools_without_arguments_refuse_unknown_ones_too(full, tool):
    result = await full.session.call_tool(tool, {"verbose": True})
    assert result.is_error
    text = result_text(result)
    assert text.startswith("Diagnostic: invalid_request"), text
    assert "verbose" in text, text
    tools = {t.name: t for t in (await full.session.list_tools()).tools}
    assert tools[tool].input_schema.get("additionalProperties") is False
