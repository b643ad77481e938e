"""Remote clients stay inside their roots: `serve --http 0.0.0.0:0
--allow-remote --allow-root DIR` admits a path only beneath DIR, after
resolving symlinks, for every tool that takes one (found in the server's
own tools/list, so a new path argument is covered), and refuses it before
anything runs; without --allow-root no path is admitted at all."""

from __future__ import annotations

import subprocess

import pytest
from helpers import OPT_MODEL, OPT_OBJECTIVE, call_ok
from test_http import TOKEN, http_server, http_session

pytestmark = pytest.mark.anyio

#: The tools that take a path today; the schema walk must find each.
PATH_TOOLS = {
    "check_minizinc_files",
    "find_unsat_core_files",
    "inspect_minizinc_files",
    "load_tabular_data",
    "replay_artifact",
    "run_cpsat_python_experiment",
    "run_cpsat_python_file",
    "run_cpsat_python_file_checked",
    "save_load_plan",
    "save_verified_cpsat_python",
    "save_verified_minizinc_model",
    "solve_minizinc_files",
    "submit_cpsat_python_file_job",
    "write_tabular_result",
}


def names_a_path(key: str) -> bool:
    return key == "path" or key.endswith(("_path", "_dir", "_paths"))


def fill(schema: dict, value: str, defs: dict) -> object | None:
    """Arguments holding `value` at every path key of `schema` (None when
    it has none)."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[1]]
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        inner = fill(schema["items"], value, defs)
        return None if inner is None else [inner]
    properties = schema.get("properties") or {}
    filled = {}
    for key, sub in properties.items():
        if names_a_path(key) and sub.get("type") in ("string", None):
            filled[key] = value
        else:
            inner = fill(sub, value, defs)
            if inner is not None:
                filled[key] = inner
    return filled or None


@pytest.fixture
def places(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    for directory in (root, outside):
        directory.mkdir()
        (directory / "model.mzn").write_text(OPT_MODEL)
    (root / "escape.mzn").symlink_to(outside / "model.mzn")
    return root, outside


async def test_every_path_outside_the_roots_is_refused_before_anything_runs(harness, places):
    root, outside = places
    with http_server(
        harness, "--http", "0.0.0.0:0", "--allow-remote", "--allow-root", str(root), "--toolset", "full", token=TOKEN
    ) as server:
        assert f"paths: clients may name only paths beneath {root.resolve()}" in server.stderr_text()
        async with http_session(server.url, TOKEN) as session:
            tools = (await session.list_tools()).tools
            found = {}
            for tool in tools:
                arguments = fill(tool.input_schema, str(outside / "model.mzn"), tool.input_schema.get("$defs", {}))
                if arguments:
                    found[tool.name] = arguments
            assert set(found) >= PATH_TOOLS, sorted(PATH_TOOLS - set(found))
            for name, arguments in found.items():
                # A target that does not exist yet, outside: never made.
                for key in ("target_dir", "target_path"):
                    if key in arguments:
                        arguments[key] = str(outside / "made-by-the-server")
                result = await session.call_tool(name, arguments)
                text = result.content[0].text
                assert result.is_error, f"{name}: {text}"
                assert "outside the directories this server lets its clients name" in text, f"{name}: {text}"
                assert str(root.resolve()) in text, f"{name}: {text}"
            assert not (outside / "made-by-the-server").exists()

            # A symlink inside a root that points outside it.
            escaped = await session.call_tool("solve_minizinc_files", {"model_path": str(root / "escape.mzn")})
            assert escaped.is_error and "outside the directories" in escaped.content[0].text, escaped
            climbed = await session.call_tool(
                "solve_minizinc_files", {"model_path": str(root / "missing" / ".." / ".." / "outside" / "model.mzn")}
            )
            assert climbed.is_error and "outside the directories" in climbed.content[0].text, climbed

            # Inside the root: read, and written.
            solved = await call_ok(session, "solve_minizinc_files", {"model_path": str(root / "model.mzn")})
            assert solved["status"] == "optimal" and solved["objective"] == OPT_OBJECTIVE, solved
            saved = await call_ok(
                session,
                "save_verified_minizinc_model",
                {"model": OPT_MODEL, "solver": "gecode", "target_dir": str(root / "saved")},
            )
            assert saved["status"] == "saved", saved
            assert (root / "saved").is_dir()


async def test_a_remote_server_without_roots_admits_no_path(harness, places):
    root, _outside = places
    with http_server(harness, "--http", "0.0.0.0:0", "--allow-remote", "--toolset", "full", token=TOKEN) as server:
        assert "no directory (--allow-remote without --allow-root" in server.stderr_text()
        async with http_session(server.url, TOKEN) as session:
            refused = await session.call_tool("solve_minizinc_files", {"model_path": str(root / "model.mzn")})
            assert refused.is_error and "--allow-root DIR" in refused.content[0].text, refused
            # The inline tools still work.
            solved = await call_ok(session, "solve_minizinc_model", {"model": OPT_MODEL})
            assert solved["status"] == "optimal", solved


def test_a_root_that_is_not_a_directory_stops_start_up(harness, tmp_path):
    env, _ = harness.tagged_env(SOLVERGATE_HTTP_TOKEN=TOKEN)
    done = subprocess.run(
        [harness.binary, "serve", "--http", "0.0.0.0:0", "--allow-remote", "--allow-root", str(tmp_path / "nope")],
        env=env,
        capture_output=True,
        timeout=20,
    )
    assert done.returncode != 0 and done.stdout == b""
    assert b"--allow-root" in done.stderr and b"must be an existing directory" in done.stderr, done.stderr

