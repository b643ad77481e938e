"""check_runtime and list_available_solvers, with and without a runtime."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from helpers import OPT_MODEL, result_text, structured, tool_error

pytestmark = pytest.mark.anyio


async def test_check_runtime_reports_the_adopted_runtime(full, harness):
    result = await full.session.call_tool("check_runtime", {})
    status = structured(result)
    assert status["installed"] is True
    assert os.path.realpath(status["runtime_dir"]) == os.path.realpath(harness.runtime_dir)
    assert status["minizinc_binary"] and status["minizinc_binary"].endswith("bin/minizinc")
    first_line = subprocess.run(
        [os.path.join(harness.runtime_dir, "bin", "minizinc"), "--version"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.splitlines()[0].strip()
    assert status["minizinc_version"] == first_line
    assert re.search(r"\d+\.\d+\.\d+", status["minizinc_version"])
    assert status["source"] == "config", "adopted with configure-runtime, so install.json chose it"
    text = result_text(result)
    assert "installed" in text and status["runtime_dir"] in text


@pytest.fixture
async def no_runtime(harness):
    empty = harness.scratch("empty-runtime")
    env = harness.server_env(SOLVERGATE_RUNTIME_DIR=str(empty))
    async with harness.open("full", env=env) as launched:
        yield launched, empty


async def test_missing_runtime_is_reported_not_installed(no_runtime):
    launched, empty = no_runtime
    status = structured(await launched.session.call_tool("check_runtime", {}))
    assert status["installed"] is False
    assert status["runtime_dir"] == str(empty)
    assert status["minizinc_binary"] is None
    assert status["source"] == "env"
    # The banner says so too, with the install hint.
    stderr = launched.stderr_text()
    assert "not installed" in stderr and "install-runtime" in stderr, stderr


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("solve_minizinc_model", {"model": OPT_MODEL}),
        ("check_minizinc_model", {"model": OPT_MODEL}),
        ("inspect_minizinc_model", {"model": OPT_MODEL}),
        ("list_available_solvers", {}),
    ],
)
async def test_missing_runtime_refuses_with_runtime_missing(no_runtime, tool, arguments):
    launched, empty = no_runtime
    error = tool_error(await launched.session.call_tool(tool, arguments))
    assert error.category == "runtime_missing", error.text
    assert "install-runtime" in error.message, error.text
    assert str(empty) in error.message, error.text


def runtime_solvers(runtime_dir: str) -> list[dict]:
    out = subprocess.run(
        [os.path.join(runtime_dir, "bin", "minizinc"), "--solvers-json"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    return json.loads(out)


async def test_list_available_solvers_matches_the_runtime(full, harness):
    result = await full.session.call_tool("list_available_solvers", {})
    listed = structured(result)
    expected = runtime_solvers(harness.runtime_dir)
    assert [s["id"] for s in listed["solvers"]] == [s["id"] for s in expected]
    by_id = {s["id"]: s for s in listed["solvers"]}
    flag_of = {
        "supports_all_solutions": "-a",
        "supports_free_search": "-f",
        "supports_parallel": "-p",
        "supports_random_seed": "-r",
        "supports_num_solutions": "-n",
    }
    for entry in expected:
        caps = by_id[entry["id"]]["capabilities"]
        declared = entry.get("stdFlags", [])
        for key, flag in flag_of.items():
            assert caps[key] is (flag in declared), f"{entry['id']} {key} vs stdFlags {declared}"
        assert sorted(caps["std_flags"]) == sorted(declared)
        assert by_id[entry["id"]]["version"] == entry.get("version", by_id[entry["id"]]["version"])
    assert listed["capability_note"]


async def test_gecode_capabilities_and_default_solver(full):
    listed = structured(await full.session.call_tool("list_available_solvers", {}))
    ids = [s["id"] for s in listed["solvers"]]
    assert "org.gecode.gecode" in ids
    assert not any("cp-sat" in s["tags"] or "cpsat" in s["id"] for s in listed["solvers"])
    gecode = next(s for s in listed["solvers"] if s["id"] == "org.gecode.gecode")
    caps = gecode["capabilities"]
    for key in (
        "supports_all_solutions",
        "supports_free_search",
        "supports_parallel",
        "supports_random_seed",
        "supports_num_solutions",
    ):
        assert caps[key] is True, key
    assert "cp" in gecode["tags"]
    assert listed["default_solver"] == "org.gecode.gecode"


async def test_solver_list_text_is_a_table_of_every_solver(full):
    result = await full.session.call_tool("list_available_solvers", {})
    listed = structured(result)
    text = result_text(result)
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows[0].replace(" ", "") == "|id|name|version|runshere|optionsittakes|"
    body = rows[2:]
    assert len(body) == len(listed["solvers"])
    for solver in listed["solvers"]:
        assert any(f"| {solver['id']} |" in row for row in body), solver["id"]
    assert "org.gecode.gecode" in text.split("\n\n", 1)[1], "the default solver is named after the table"
