"""The path-based tools: relative includes, data files, cwd resolution."""

from __future__ import annotations

import os

import pytest

from helpers import structured, tool_error

pytestmark = pytest.mark.anyio

HELPERS = "int: lo = 2;\n"
MODEL = 'include "helpers.mzn";\nint: n;\nvar lo..n: x;\nsolve maximize x;\noutput ["x=\\(x)\\n"];\n'


@pytest.fixture
def project(workdir):
    """model.mzn includes helpers.mzn from its own directory; data beside."""
    root = workdir / "proj"
    root.mkdir()
    (root / "helpers.mzn").write_text(HELPERS)
    (root / "model.mzn").write_text(MODEL)
    (root / "data.dzn").write_text("n = 5;\n")
    (root / "data.json").write_text('{"n": 6}\n')
    (root / "empty.dzn").write_text("")
    (root / "fixed.mzn").write_text('include "helpers.mzn";\nvar lo..4: x;\nsolve maximize x;\n')
    return root


async def test_server_cwd_is_not_the_project(full, project):
    # Guards the include tests below: the include can only resolve through
    # the model's own directory, not by accident through the server's cwd.
    assert os.path.realpath(os.getcwd()) != os.path.realpath(project)
    assert not os.path.exists("helpers.mzn")


async def test_check_files_resolves_a_relative_include(full, project):
    res = structured(
        await full.session.call_tool(
            "check_minizinc_files",
            {"model_path": str(project / "model.mzn"), "data_path": str(project / "data.dzn")},
        )
    )
    assert res["status"] == "ok", res["stderr"]
    assert res["diagnostic"] is None
    assert res["solver"] == "org.gecode.gecode"


async def test_check_files_without_data_is_missing_data(full, project):
    res = structured(await full.session.call_tool("check_minizinc_files", {"model_path": str(project / "model.mzn")}))
    assert res["status"] == "error"
    assert res["diagnostic"]["category"] == "missing_data"


@pytest.mark.parametrize(("data", "objective"), [("data.dzn", 5), ("data.json", 6)])
async def test_solve_files_with_include_and_data(full, project, data, objective):
    res = structured(
        await full.session.call_tool(
            "solve_minizinc_files",
            {"model_path": str(project / "model.mzn"), "data_path": str(project / data), "timeout_ms": 20000},
        )
    )
    assert res["status"] == "optimal", res["stderr"]
    assert res["objective"] == objective
    assert res["solution"] == {"x": objective}
    assert f"x={objective}" in res["stdout"]
    assert res["diagnostic"] is None


async def test_solve_files_accepts_an_empty_data_file(full, project):
    res = structured(
        await full.session.call_tool(
            "solve_minizinc_files",
            {"model_path": str(project / "fixed.mzn"), "data_path": str(project / "empty.dzn")},
        )
    )
    assert res["status"] == "optimal" and res["objective"] == 4


async def test_solve_files_controls(full, project):
    res = structured(
        await full.session.call_tool(
            "solve_minizinc_files",
            {"model_path": str(project / "fixed.mzn"), "all_solutions": True, "random_seed": 1, "solver": "gecode"},
        )
    )
    assert res["status"] == "optimal"
    assert res["solutions"][-1] == {"x": 4}


async def test_inspect_files_reports_required_parameters(full, project):
    res = structured(await full.session.call_tool("inspect_minizinc_files", {"model_path": str(project / "model.mzn")}))
    assert res["status"] == "ok", res["stderr"]
    interface = res["interface"]
    assert set(interface["required_parameters"]) == {"n"}
    assert interface["required_parameters"]["n"] == {
        "base_type": "int",
        "dim": 0,
        "is_set": False,
        "is_optional": False,
    }
    assert interface["method"] == "max"
    assert interface["has_output_item"] is True
    assert any(path.endswith("helpers.mzn") for path in interface["included_files"])


async def test_inspect_files_with_data_requires_nothing(full, project):
    res = structured(
        await full.session.call_tool(
            "inspect_minizinc_files",
            {"model_path": str(project / "model.mzn"), "data_path": str(project / "data.dzn")},
        )
    )
    assert res["status"] == "ok"
    assert res["interface"]["required_parameters"] == {}


async def test_inline_model_cannot_use_a_project_include(full, project):
    # The inline tools run in a private temp dir: the same include fails there.
    res = structured(
        await full.session.call_tool("check_minizinc_model", {"model": MODEL, "data": "n = 5;"})
    )
    assert res["status"] == "error"
    assert "helpers.mzn" in res["stderr"] or "helpers.mzn" in res["diagnostic"]["message"]


async def test_relative_model_path_resolves_against_the_server_cwd(harness, project):
    parent = project.parent
    async with harness.open("full", cwd=parent) as launched:
        relative = {"model_path": "proj/model.mzn", "data_path": "proj/data.dzn"}
        res = structured(await launched.session.call_tool("solve_minizinc_files", relative))
        assert res["status"] == "optimal" and res["objective"] == 5
        checked = structured(await launched.session.call_tool("check_minizinc_files", relative))
        assert checked["status"] == "ok"
        inspected = structured(await launched.session.call_tool("inspect_minizinc_files", relative))
        assert inspected["interface"]["required_parameters"] == {}
        # A missing relative path is named absolutely, against that cwd.
        error = tool_error(
            await launched.session.call_tool("solve_minizinc_files", {"model_path": "proj/nope.mzn"})
        )
        assert error.category == "invalid_request"
        assert str(parent / "proj" / "nope.mzn") in error.message or os.path.realpath(parent / "proj") in error.message


async def test_symlinked_model_runs_from_its_real_directory(full, project, workdir):
    link_dir = workdir / "elsewhere"
    link_dir.mkdir()
    (link_dir / "model.mzn").symlink_to(project / "model.mzn")
    res = structured(
        await full.session.call_tool(
            "solve_minizinc_files",
            {"model_path": str(link_dir / "model.mzn"), "data_path": str(project / "data.dzn")},
        )
    )
    assert res["status"] == "optimal" and res["objective"] == 5


async def test_a_file_over_16_mib_is_refused_by_name(full, project):
    huge = project / "huge.dzn"
    with open(huge, "wb") as handle:
        handle.truncate(17 * 1024 * 1024)  # sparse: refused from its size, never read
    error = tool_error(
        await full.session.call_tool(
            "solve_minizinc_files", {"model_path": str(project / "model.mzn"), "data_path": str(huge)}
        )
    )
    assert error.category == "invalid_request"
    assert error.message.startswith(f"data_path {os.path.realpath(huge)} is 17825792 bytes"), error.message
    assert "16 MiB" in error.message


async def test_a_symlinked_checker_still_checks(full, project, workdir):
    # MiniZinc knows a checker by its .mzc.mzn name only: the link's name must
    # reach it, not the target's, or the checker becomes a second model.
    (project / "real_checker.mzn").write_text('int: x;\nconstraint x == 1;\noutput ["CORRECT\\n"];\n')
    link = workdir / "check.mzc.mzn"
    link.symlink_to(project / "real_checker.mzn")
    res = structured(
        await full.session.call_tool(
            "solve_minizinc_files",
            {"model_path": str(project / "fixed.mzn"), "checker_path": str(link), "solver": "gecode"},
        )
    )
    assert res["status"] == "optimal", res["stderr"]
    assert res["checker"]["status"] == "violation", res["checker"]
    assert res["diagnostic"]["category"] == "checker_failed"
