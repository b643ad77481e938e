"""server.json, the MCP Registry's entry for solvergate, against the registry's
published schema (vendored in tests/wheel/server.schema.json, see
tests/wheel/README.md) and against the binary it describes: its version is
Cargo.toml's, its package arguments are ones `solvergate stdio` accepts, and
every environment variable it names is one the binary reads."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

pytestmark = pytest.mark.minizinc_independent

REPO = Path(__file__).resolve().parent.parent.parent
SCHEMA = REPO / "tests" / "wheel" / "server.schema.json"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def server() -> dict[str, Any]:
    return load(REPO / "server.json")


def package() -> dict[str, Any]:
    packages = server()["packages"]
    assert len(packages) == 1, packages
    return packages[0]


def run(binary: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, *args], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL
    )


@pytest.fixture
def binary() -> str:
    path = os.environ.get("SOLVERGATE_BIN", str(REPO / "target" / "debug" / "solvergate"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"solvergate binary not found at {path}: run `cargo build` or set SOLVERGATE_BIN")
    return path


@pytest.fixture
def clean_env(tmp_path: Path) -> dict[str, str]:
    """A home of its own and no SOLVERGATE_* variables."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "LANG": "C.UTF-8",
    }


def test_server_json_is_valid_against_the_registry_schema() -> None:
    schema = load(SCHEMA)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    errors = [f"{'/'.join(map(str, error.path))}: {error.message}" for error in validator.iter_errors(server())]
    assert not errors, errors
    assert server()["$schema"] == schema["$id"], "server.json names the schema it is checked against"
    # The validator does reject: a range for a version, which the registry refuses.
    broken = dict(server(), packages=[dict(package(), version="latest")])
    assert list(validator.iter_errors(broken))


def test_versions_are_cargo_toml_s() -> None:
    # [package]'s version: the first `version = ` line of Cargo.toml (tomllib is 3.11+).
    cargo = re.search(r'^version = "([^"]+)"$', (REPO / "Cargo.toml").read_text(), re.M)
    assert cargo, "no version in Cargo.toml"
    assert server()["version"] == cargo[1]
    assert package()["version"] == cargo[1]
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^name = "solvergate"$', pyproject, re.M) and package()["identifier"] == "solvergate"
    assert re.search(r'^dynamic = \["version"\]$', pyproject, re.M), "the wheel takes its version from Cargo.toml"
    assert package()["registryType"] == "pypi" and package()["transport"] == {"type": "stdio"}


def test_the_cpsat_extra_pins_the_or_tools_the_installer_pins() -> None:
    """`solvergate[cpsat]` puts the OR-Tools beside the binary that
    `install-runtime` would install and the tests run."""
    manifest = re.search(r'^ortools = "([^"]+)"$', (REPO / "runtime-manifest.toml").read_text(), re.M)
    assert manifest, "no ortools pin in runtime-manifest.toml"
    extra = re.search(r"^cpsat = \[\"ortools==([^\"]+)\"\]$", (REPO / "pyproject.toml").read_text(), re.M)
    assert extra, "no cpsat extra pinning ortools in pyproject.toml"
    tests = re.search(r"^ortools==(\S+)$", (REPO / "tests" / "requirements.txt").read_text(), re.M)
    assert tests, "no ortools pin in tests/requirements.txt"
    assert extra[1] == manifest[1] == tests[1], (extra[1], manifest[1], tests[1])


def test_the_pypi_readme_names_the_server_for_the_registry() -> None:
    # The registry checks PyPI ownership by this line in the package's description (README.md).
    assert f"mcp-name: {server()['name']}" in (REPO / "README.md").read_text()


def test_package_arguments_are_what_stdio_accepts(binary: str, clean_env: dict[str, str]) -> None:
    arguments = package()["packageArguments"]
    positional = [argument["value"] for argument in arguments if argument["type"] == "positional"]
    assert positional == ["stdio"], "the one positional argument is the subcommand"
    named = [argument for argument in arguments if argument["type"] == "named"]
    help_text = run(binary, "stdio", "--help", env=clean_env)
    assert help_text.returncode == 0, help_text.stderr
    for argument in named:
        assert re.search(rf"^\s+{re.escape(argument['name'])}\b", help_text.stdout, re.M), (
            f"`solvergate stdio --help` has no {argument['name']}:\n{help_text.stdout}"
        )
        values = argument.get("choices") or [argument["default"]]
        for value in values:
            accepted = run(binary, "stdio", argument["name"], value, "--help", env=clean_env)
            assert accepted.returncode == 0, f"stdio {argument['name']} {value}: {accepted.stderr}"
        refused = run(binary, "stdio", argument["name"], "no-such-value", "--help", env=clean_env)
        assert refused.returncode != 0, f"stdio {argument['name']} takes anything: the choices say nothing"
        if "default" in argument:
            assert argument["default"] in values


def test_every_environment_variable_is_read_by_the_binary(binary: str, clean_env: dict[str, str]) -> None:
    """A variable the binary checks is shown to be read by a value it refuses
    (the start-up error names it); the free-text ones, which it cannot refuse,
    must appear in src/settings.rs, the one module that reads the environment."""
    settings = (REPO / "src" / "settings.rs").read_text()
    variables = package()["environmentVariables"]
    names = [variable["name"] for variable in variables]
    assert len(names) == len(set(names)), names
    free_text = {"SOLVERGATE_SLURM_PARTITION", "SOLVERGATE_SLURM_ACCOUNT", "SOLVERGATE_SLURM_MEMORY"}
    for variable in variables:
        name = variable["name"]
        assert name.startswith("SOLVERGATE_") and variable.get("description"), variable
        if name in free_text:
            assert f'"{name}"' in settings, f"{name} is not read in src/settings.rs"
            continue
        bad = "relative/path" if variable.get("format") == "filepath" else "not-a-valid-value"
        refused = run(binary, "check-runtime", "--only", "cpsat", env={**clean_env, name: bad})
        assert refused.returncode != 0 and f"{name}:" in refused.stderr, (
            f"{name}={bad} was not refused, so the binary may not read it: {refused.stderr}"
        )
        for value in [*variable.get("choices", []), *([variable["default"]] if "default" in variable else [])]:
            taken = run(binary, "check-runtime", "--only", "cpsat", env={**clean_env, name: value})
            assert f"{name}:" not in taken.stderr, f"{name}={value} (a choice or the default) is refused: {taken.stderr}"
