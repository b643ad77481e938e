"""Secrets stay secret (sandbox on): a CP-SAT script, a CP-SAT checker and
a MiniZinc include each try to read a secret planted in the server's
$HOME, a file only its owner may read outside it, the server's
/proc/<pid>/environ (and every other process's), and the server's
variables (its HTTP token, an API key). Every attempt fails with the
program's own error, and no secret appears anywhere in a result, text part
or structured; a script still reads a data file beside itself.

The CP-SAT parts are marked minizinc_independent (the first runtime runs
them); the include runs on both runtimes."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from cpsat_helpers import cpsat_env
from helpers import structured
from test_sandbox import landlock_abi

pytestmark = pytest.mark.anyio

READS = """
import glob, json, os, sys
targets = json.load(open(TARGETS))
tried = {}
for name, path in targets.items():
    try:
        with open(path) as handle:
            tried[name] = "read: " + handle.read()
    except OSError as error:
        tried[name] = error.errno
# Every process's environment this run can see.
seen = []
for environ in glob.glob("/proc/[0-9]*/environ"):
    try:
        with open(environ, "rb") as handle:
            seen.append(handle.read().decode(errors="replace"))
    except OSError:
        pass
tried["environs"] = seen
tried["env"] = dict(os.environ)
"""

SCRIPT = READS + """
print(json.dumps({"status": "feasible", "objective": None, "solution": tried}))
"""

#: A checker that puts all it read in its errors.
CHECKER = READS + """
print(json.dumps({"status": "rejected", "errors": [json.dumps(tried)]}))
"""


@pytest.fixture
def secrets(harness, tmp_path) -> dict:
    """Plants the secrets; returns them and where they are."""
    if landlock_abi() < 1:
        pytest.skip("Landlock is not enforced on this kernel")
    values = {name: f"sg-{name}-{uuid.uuid4().hex}" for name in ("home", "owner_only", "token", "api_key")}
    home = Path(harness.env["HOME"])
    (home / ".ssh").mkdir(exist_ok=True)
    home_secret = home / ".ssh" / "id_secret"
    home_secret.write_text(values["home"] + "\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    owner_only = outside / "owner-only.txt"
    owner_only.write_text(values["owner_only"] + "\n")
    owner_only.chmod(0o600)
    yield {"values": values, "home": home_secret, "owner_only": owner_only}
    home_secret.unlink()


def server_env(harness, secrets) -> dict:
    env, _marker = cpsat_env(
        harness,
        SOLVERGATE_HTTP_TOKEN=secrets["values"]["token"],
        OPENAI_API_KEY=secrets["values"]["api_key"],
    )
    return env


def assert_no_secret(secrets, result) -> None:
    """No secret anywhere in the result: text parts and structured content."""
    whole = json.dumps(result.model_dump(mode="json"))
    for name, value in secrets["values"].items():
        assert value not in whole, f"the {name} secret leaked: {whole[:2000]}"


def targets_file(directory: Path, secrets, server_pid: int) -> Path:
    targets = directory / "targets.json"
    targets.write_text(
        json.dumps(
            {
                "home": str(secrets["home"]),
                "owner_only": str(secrets["owner_only"]),
                "server_environ": f"/proc/{server_pid}/environ",
            }
        )
    )
    return targets


def with_targets(code: str, targets: Path) -> str:
    return f"TARGETS = {str(targets)!r}\n" + code


@pytest.mark.minizinc_independent
async def test_a_script_and_a_checker_read_no_secret(harness, secrets, workdir):
    async with harness.open("full", env=server_env(harness, secrets)) as launched:
        assert launched.pid, "the server process was not found"
        targets = targets_file(workdir, secrets, launched.pid)
        # Cold, then warm-forked: both are confined the same way.
        for _ in range(3):
            result = await launched.session.call_tool("run_cpsat_python", {"source": with_targets(SCRIPT, targets)})
            assert_no_secret(secrets, result)
            tried = structured(result)["solution"]
            assert {name: tried[name] for name in ("home", "owner_only", "server_environ")} == {
                "home": 13,
                "owner_only": 13,
                "server_environ": 13,
            }, tried
            assert set(tried["env"]) >= {"PATH", "HOME", "TMPDIR"}, tried["env"]
            assert "SOLVERGATE_HTTP_TOKEN" not in tried["env"] and "OPENAI_API_KEY" not in tried["env"]
            # Its own environment is the only one it sees.
            assert len(tried["environs"]) <= 1, tried["environs"]

        # A checker (run beside its file, as the checked file tool runs it)
        # that puts all it read in its errors.
        (workdir / "script.py").write_text(with_targets(SCRIPT, targets))
        (workdir / "checker.py").write_text(with_targets(CHECKER, targets))
        checked = await launched.session.call_tool(
            "run_cpsat_python_file_checked",
            {"script_path": str(workdir / "script.py"), "checker_path": str(workdir / "checker.py")},
        )
        assert_no_secret(secrets, checked)
        verdict = structured(checked)["checker"]
        assert verdict["status"] == "rejected", verdict
        read = json.loads(verdict["errors"][0])
        assert [read[name] for name in ("home", "owner_only", "server_environ")] == [13, 13, 13], read


@pytest.mark.minizinc_independent
async def test_a_file_script_reads_the_data_beside_it(harness, secrets, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "data.json").write_text(json.dumps({"capacity": 7}))
    (project / "plan.py").write_text(
        "import json\n"
        "data = json.load(open('data.json'))\n"
        "print(json.dumps({'status': 'feasible', 'objective': None, 'solution': data}))\n"
    )
    async with harness.open("full", env=server_env(harness, secrets)) as launched:
        result = structured(
            await launched.session.call_tool("run_cpsat_python_file", {"script_path": str(project / "plan.py")})
        )
    assert result["status"] == "feasible", result
    assert result["solution"] == {"capacity": 7}
    assert result["sandbox"]["reads"] == "enforced"


async def test_a_minizinc_include_reads_no_secret(harness, secrets, tmp_path):
    # The included files hold MiniZinc that would name the secret in an
    # error ("undefined identifier"), which is how it would leak.
    for path in (secrets["home"], secrets["owner_only"]):
        name = "home" if path == secrets["home"] else "owner_only"
        path.write_text(f"int: x = {secrets['values'][name].replace('-', '_')};\n")
    async with harness.open("full", env=server_env(harness, secrets)) as launched:
        for included in (secrets["home"], secrets["owner_only"], f"/proc/{launched.pid}/environ"):
            result = await launched.session.call_tool(
                "solve_minizinc_model", {"model": f'include "{included}";\nvar 1..3: y;\nsolve satisfy;\n'}
            )
            content = structured(result)
            assert content["status"] == "error", content
            assert "Cannot open file" in json.dumps(content), content
            # The diagnostic says how to let a run read more.
            assert "--allow-read DIR" in content["diagnostic"]["message"], content["diagnostic"]
            whole = json.dumps(result.model_dump(mode="json"))
            for value in secrets["values"].values():
                assert value.replace("-", "_") not in whole and value not in whole, whole[:2000]
        # A model beside its include still reads it.
        project = tmp_path / "model"
        project.mkdir()
        (project / "part.mzn").write_text("int: n = 3;\n")
        (project / "main.mzn").write_text('include "part.mzn";\nvar 1..n: y;\nsolve maximize y;\n')
        solved = structured(
            await launched.session.call_tool("solve_minizinc_files", {"model_path": str(project / "main.mzn")})
        )
        assert solved["status"] == "optimal" and solved["objective"] == 3, solved


@pytest.mark.parametrize("how", ["setting", "flag"])
async def test_the_operator_widens_the_boundary(harness, secrets, tmp_path, how):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "limits.mzn").write_text("int: k = 5;\n")
    model = f'include "{shared / "limits.mzn"}";\nvar 1..9: y;\nconstraint y <= k;\nsolve maximize y;\n'
    env, _marker = cpsat_env(harness, **({"SOLVERGATE_READ_ROOTS": str(shared)} if how == "setting" else {}))
    wrapper = None
    if how == "flag":
        # `--allow-read DIR` goes before the subcommand, as a global flag.
        script = tmp_path / "with-flag.sh"
        script.write_text(f'#!/bin/sh\nbin="$1"; shift\nexec "$bin" --allow-read {shared} "$@"\n')
        script.chmod(0o755)
        wrapper = [str(script)]
    async with harness.open("full", env=env, wrapper=wrapper) as launched:
        status = structured(await launched.session.call_tool("check_runtime", {}))
        assert status["read_roots"] == [str(shared)], status
        solved = structured(await launched.session.call_tool("solve_minizinc_model", {"model": model}))
        assert solved["status"] == "optimal" and solved["objective"] == 5, solved
        # The home stays closed.
        refused = structured(
            await launched.session.call_tool("solve_minizinc_model", {"model": f'include "{secrets["home"]}";\nsolve satisfy;\n'})
        )
        assert refused["status"] == "error", refused


@pytest.mark.parametrize("configured", ["user_config", "solver_path"])
async def test_a_solver_configured_outside_the_runtime_still_runs(harness, tmp_path, configured):
    """A solver a user configured in ~/.minizinc/solvers or on
    MZN_SOLVER_PATH, living outside the runtime's tree, is read and run:
    its executable's dir, its mznlib and its .msc dir are granted once the
    catalog lists them."""
    runtime = Path(harness.runtime_dir)
    gecode = runtime / "bin" / "fzn-gecode"
    library = runtime / "share" / "minizinc" / "gecode"
    if (runtime / "solvergate-read-roots").exists() or not gecode.is_file() or not library.is_dir():
        pytest.skip("needs a plain runtime with Gecode's binary and library beneath it (a wrapper runtime sees its own tree)")
    if landlock_abi() < 1:
        pytest.skip("Landlock is not enforced on this kernel")
    opt = tmp_path / "opt"
    (opt / "bin").mkdir(parents=True)
    shutil.copy2(gecode, opt / "bin" / "fzn-mine")
    shutil.copytree(library, opt / "share" / "mine")
    msc = {
        "id": "org.example.mine",
        "name": "Mine",
        "version": "1.0",
        "executable": str(opt / "bin" / "fzn-mine"),
        "mznlib": str(opt / "share" / "mine"),
        "tags": ["cp", "int"],
        "stdFlags": ["-a", "-n", "-s", "-t"],
        "supportsFzn": True,
    }
    env, _marker = cpsat_env(harness)
    if configured == "user_config":
        home = tmp_path / "home"
        solvers = home / ".minizinc" / "solvers"
        env["HOME"] = str(home)
    else:
        solvers = tmp_path / "solver-path"
        env["MZN_SOLVER_PATH"] = str(solvers)
    solvers.mkdir(parents=True)
    (solvers / "mine.msc").write_text(json.dumps(msc))
    async with harness.open("full", env=env) as launched:
        solved = structured(
            await launched.session.call_tool(
                "solve_minizinc_model",
                {"model": "var 1..9: y;\nconstraint y * y <= 50;\nsolve maximize y;\n", "solver": "org.example.mine"},
            )
        )
    assert (solved["status"], solved["objective"], solved["solver"]) == ("optimal", 7, "org.example.mine"), solved
    assert solved["sandbox"]["reads"] == "enforced", solved["sandbox"]
