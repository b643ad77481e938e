"""The MCP prompt every toolset offers: listed, argument declared, and the
rendered workflow carries the user's problem and names the real tools."""

from __future__ import annotations

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio

PROBLEM = "Assign 5 nurses to 3 shifts so that every shift has 2 nurses and nobody works twice."


async def test_full_lists_and_renders_the_workflow(full):
    prompts = (await full.session.list_prompts()).prompts
    names = [prompt.name for prompt in prompts]
    assert names == ["solve_constraint_problem"]
    arguments = {argument.name: argument for argument in prompts[0].arguments or []}
    assert set(arguments) == {"problem"}
    assert arguments["problem"].required

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
