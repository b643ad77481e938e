"""Initialize, the advertised tools per toolset, and their schemas."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from helpers import SAT_MODEL, result_text

pytestmark = pytest.mark.anyio

#: The reference server's core profile (openconstraint-mcp `--toolset core`).
CORE_TOOLS = {
    "check_runtime",
    "list_available_solvers",
    "check_minizinc_model",
    "solve_minizinc_model",
    "check_minizinc_files",
    "solve_minizinc_files",
    "run_cpsat_python",
    "run_cpsat_python_file",
}
#: What the reference's full profile adds: a client written for it finds
#: every one of these names here.
REFERENCE_FULL_ONLY = {
    "inspect_minizinc_model",
    "inspect_minizinc_files",
    "find_unsat_core",
    "find_unsat_core_files",
    "submit_solve_job",
    "get_solve_job",
    "cancel_solve_job",
    "list_solve_jobs",
    "submit_portfolio_job",
    "get_portfolio_job",
    "cancel_portfolio_job",
    "list_portfolio_jobs",
    "run_cpsat_python_file_checked",
    "run_cpsat_python_experiment",
    "submit_cpsat_python_job",
    "submit_cpsat_python_file_job",
    "get_cpsat_python_job",
    "cancel_cpsat_python_job",
    "list_cpsat_python_jobs",
    "save_verified_minizinc_model",
    "save_verified_cpsat_python",
    "load_tabular_data",
    "write_tabular_result",
}
#: Ours, full toolset only.
OUR_FULL_ONLY = {
    "replay_artifact",
    "plan_load",
    "explain_load_plan",
    "verify_narration",
    "save_load_plan",
    "correct_values",
    "validate_equations",
    "evaluate_equations",
    "optimize_expression",
}
FULL_ONLY = REFERENCE_FULL_ONLY | OUR_FULL_ONLY


def test_the_reference_lists_are_whole():
    """31 tools in the reference: 8 core, 23 more in full."""
    assert len(CORE_TOOLS) == 8 and len(REFERENCE_FULL_ONLY) == 23
    assert not (CORE_TOOLS & FULL_ONLY) and not (REFERENCE_FULL_ONLY & OUR_FULL_ONLY)


async def test_initialize_names_the_server_and_gives_instructions(full):
    info = full.init.server_info
    assert info.name == "solvergate"
    assert info.version, "server version missing"
    instructions = full.init.instructions or ""
    assert "solve_minizinc_model" in instructions and "check_minizinc_model" in instructions
    assert full.init.capabilities.tools is not None


@pytest.mark.parametrize(
    ("toolset", "expected"),
    [("core", CORE_TOOLS), ("full", CORE_TOOLS | FULL_ONLY)],
)
async def test_tools_list_per_toolset(harness, toolset, expected):
    async with harness.open(toolset) as launched:
        tools = (await launched.session.list_tools()).tools
        names = [tool.name for tool in tools]
        assert sorted(names) == sorted(expected)
        assert len(names) == len(set(names)), "a tool is listed twice"
        for tool in tools:
            assert tool.description, f"{tool.name} has no description"
            assert tool.input_schema.get("type") == "object", f"{tool.name} input schema"
            assert tool.output_schema and tool.output_schema.get("type") == "object", (
                f"{tool.name} has no object output schema"
            )


async def test_default_toolset_is_core(harness, tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=harness.binary, args=["stdio"], env=harness.server_env())
    with open(tmp_path / "stderr.txt", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = {tool.name for tool in (await session.list_tools()).tools}
    assert names == CORE_TOOLS


@pytest.mark.parametrize(
    ("tool", "required"),
    [
        ("check_minizinc_model", {"model"}),
        ("solve_minizinc_model", {"model"}),
        ("inspect_minizinc_model", {"model"}),
        ("check_minizinc_files", {"model_path"}),
        ("solve_minizinc_files", {"model_path"}),
        ("inspect_minizinc_files", {"model_path"}),
    ],
)
async def test_input_schemas_name_the_arguments(full, tool, required):
    tools = {t.name: t for t in (await full.session.list_tools()).tools}
    schema = tools[tool].input_schema
    assert set(schema.get("required", [])) == required
    props = set(schema["properties"])
    assert required <= props
    assert {"solver", "timeout_ms"} <= props
    if tool.startswith("solve_"):
        assert {"free_search", "parallel", "random_seed", "all_solutions", "num_solutions"} <= props
        assert ("checker" if tool == "solve_minizinc_model" else "checker_path") in props


@pytest.mark.parametrize(
    ("tool", "fields"),
    [
        ("check_runtime", {"installed", "runtime_dir", "minizinc_binary"}),
        ("list_available_solvers", {"solvers", "default_solver", "capability_note"}),
        ("check_minizinc_model", {"status", "solver", "truncated", "stdout", "stderr", "elapsed_ms", "diagnostic"}),
        ("inspect_minizinc_model", {"status", "solver", "interface", "diagnostic"}),
        (
            "solve_minizinc_model",
            {
                "status", "solver", "return_code", "timed_out", "truncated", "stdout", "stderr",
                "elapsed_ms", "solution", "solutions", "objective", "statistics", "checker", "diagnostic",
            },
        ),
    ],
)
async def test_output_schemas_have_the_result_fields(full, tool, fields):
    tools = {t.name: t for t in (await full.session.list_tools()).tools}
    assert fields <= set(tools[tool].output_schema.get("properties", {}))


@pytest.mark.parametrize("tool", sorted(FULL_ONLY))
async def test_full_only_tool_is_refused_on_core(harness, tool):
    async with harness.open("core") as launched:
        try:
            arguments = {"model": SAT_MODEL} if tool.endswith("_model") else {"model_path": "/nonexistent.mzn"}
            result = await launched.session.call_tool(tool, arguments)
        except MCPError as error:
            assert tool in str(error) or "not found" in str(error).lower() or "unknown" in str(error).lower()
        else:
            assert result.is_error, f"{tool} answered on the core toolset: {result_text(result)!r}"
        # The session is still usable afterwards.
        assert (await launched.session.call_tool("check_runtime", {})).structured_content["installed"] is True
