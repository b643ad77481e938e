"""The MCP prompts: `solve_constraint_problem` in every toolset, three
detailed workflows and the load planner's in the full one. Each is listed with its `problem`
argument, and each rendered workflow carries the user's problem and names
only tools the toolset has."""

from __future__ import annotations

import re

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio

PROBLEM = "Assign 5 nurses to 3 shifts so that every shift has 2 nurses and nobody works twice."


FULL_PROMPTS = {
    "solve_constraint_problem",
    "minizinc_solution_workflow",
    "cpsat_python_solution_workflow",
    "auto_tune_constraint_problem",
    # The load planner's; test_planner.py plans the input it offers.
    "plan_shipping_loads",
}

#: Tools each detailed workflow must lead to.
NAMED_TOOLS = {
    "minizinc_solution_workflow": (
        "check_minizinc_model",
        "solve_minizinc_model",
        "find_unsat_core",
        "save_verified_minizinc_model",
        "load_tabular_data",
    ),
    "cpsat_python_solution_workflow": (
        "run_cpsat_python",
        "run_cpsat_python_file_checked",
        "run_cpsat_python_experiment",
        "save_verified_cpsat_python",
    ),
    "auto_tune_constraint_problem": (
        "check_minizinc_model",
        "submit_portfolio_job",
        "run_cpsat_python_experiment",
        "submit_cpsat_python_job",
    ),
}


#: First words of tool names, to spot a tool a workflow names.
TOOL_VERBS = {
    "check", "solve", "inspect", "find", "submit", "get", "cancel", "list", "run", "save",
    "load", "write", "replay", "plan", "explain", "verify", "correct", "validate",
    "evaluate", "optimize",
}  # fmt: skip


async def test_full_lists_every_prompt_with_its_problem_argument(full):
    prompts = (await full.session.list_prompts()).prompts
    assert {prompt.name for prompt in prompts} == FULL_PROMPTS
    for prompt in prompts:
        assert prompt.description, f"{prompt.name} has no description"
        arguments = {argument.name: argument for argument in prompt.arguments or []}
        assert set(arguments) == {"problem"}, prompt.name
        assert arguments["problem"].required, prompt.name


@pytest.mark.parametrize("name", sorted(NAMED_TOOLS))
async def test_each_detailed_workflow_renders_with_the_problem(full, name):
    tools = {tool.name for tool in (await full.session.list_tools()).tools}
    rendered = await full.session.get_prompt(name, {"problem": PROBLEM})
    assert len(rendered.messages) == 1
    text = rendered.messages[0].content.text
    assert text.rstrip().endswith(PROBLEM)
    for tool in NAMED_TOOLS[name]:
        assert tool in text, f"{name} does not name {tool}"
    # Every snake_case name a workflow mentions that starts like one of our
    # tools is a tool the full toolset really has.
    mentioned = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", text))
    tool_like = {word for word in mentioned if word.split("_")[0] in TOOL_VERBS}
    assert tool_like <= tools, f"{name} names tools that do not exist: {sorted(tool_like - tools)}"
    assert "no network access" in text


async def test_full_renders_the_short_workflow(full):
    rendered = await full.session.get_prompt("solve_constraint_problem", {"problem": PROBLEM})
    assert len(rendered.messages) == 1
    text = rendered.messages[0].content.text
    assert PROBLEM in text
    for tool in ("check_minizinc_model", "solve_minizinc_model", "run_cpsat_python", "run_cpsat_python_file"):
        assert tool in text, f"the workflow does not name {tool}"
    assert "no network access" in text


async def test_the_core_toolset_offers_the_prompt_too(harness, tmp_path):
    params = StdioServerParameters(command=harness.binary, args=["stdio", "--toolset", "core"], env=harness.server_env())
    with open(tmp_path / "stderr.txt", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.capabilities.prompts is not None
                names = [prompt.name for prompt in (await session.list_prompts()).prompts]
    assert names == ["solve_constraint_problem"]
