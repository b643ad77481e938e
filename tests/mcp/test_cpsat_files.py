"""run_cpsat_python_file and run_cpsat_python_file_checked through the real
client: the script runs from its own directory with its args, the replay
protocol (SOLVERGATE_CPSAT_SEED / SOLVERGATE_CPSAT_CONFIG set, or cleared
even when the server inherited them), bad inputs refused before anything
runs, the checker protocol (accept, reject a plausible wrong answer,
garbage, non-zero exit, skipped without an incumbent, `problem` as text or
JSON) and the mutation probe with its budget.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cpsat_helpers import (
    CRASHING_CHECKER,
    GARBAGE_CHECKER,
    INFEASIBLE_SCRIPT,
    KNAPSACK,
    KNAPSACK_OPTIMUM,
    MUTATION_NAMES,
    REAL_CHECKER,
    VACUOUS_CHECKER,
    check_knapsack_answer,
    check_result_shape,
    cpsat_server,
    knapsack_script,
    runs_logged,
    write,
)
from helpers import call_error, call_ok

pytestmark = [pytest.mark.anyio, pytest.mark.minizinc_independent]

SEED_VAR = "SOLVERGATE_CPSAT_SEED"
CONFIG_VAR = "SOLVERGATE_CPSAT_CONFIG"


@pytest.fixture(scope="module")
async def cpsat(harness):
    """One full-toolset server for these tests."""
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


#: Reports where it ran and what it was given. Reading ./data.json and
#: importing ./helper.py only work from its own directory.
INTROSPECT = """
import json
import os
import sys

import helper

with open("data.json") as handle:
    data = json.load(handle)
config_path = os.environ.get("SOLVERGATE_CPSAT_CONFIG")
config = None
if config_path is not None:
    with open(config_path) as handle:
        config = json.load(handle)
print(json.dumps({"status": "feasible", "objective": None, "solution": {
    "cwd": os.getcwd(),
    "argv": sys.argv[1:],
    "data": data,
    "helper": helper.VALUE,
    "seed": os.environ.get("SOLVERGATE_CPSAT_SEED"),
    "config_path": config_path,
    "config": config,
}}))
"""

#: Leaves ./ran.txt behind when it runs at all.
SENTINEL = """
import json
open("ran.txt", "w").write("ran")
print(json.dumps({"status": "optimal", "objective": 1, "solution": {"x": [{"v": 1}]}}))
"""


def introspect_dir(root: Path) -> Path:
    directory = root / "project"
    directory.mkdir()
    write(directory / "model.py", INTROSPECT)
    write(directory / "helper.py", "VALUE = 'from the helper module'\n")
    (directory / "data.json").write_text(json.dumps({"n": 3, "weights": [1, 2, 3]}))
    return directory


# ---- run_cpsat_python_file --------------------------------------------------------------


async def test_file_script_runs_in_its_own_directory_with_args_and_replay(cpsat, workdir):
    directory = introspect_dir(workdir)
    args = ["data.json", "--fast", "two words", "ünïcödé", ""]
    config = {"num_workers": 2, "nested": {"a": [1, 2.5, "x"]}, "flag": True}
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file",
        {"script_path": str(directory / "model.py"), "args": args, "seed": -7, "config": config},
    )
    check_result_shape(result)
    assert result["status"] == "feasible", result
    solution = result["solution"]
    assert os.path.realpath(solution["cwd"]) == os.path.realpath(directory)
    assert solution["data"] == {"n": 3, "weights": [1, 2, 3]}
    assert solution["helper"] == "from the helper module"
    assert solution["argv"] == args
    assert solution["seed"] == "-7"
    assert solution["config"] == config
    assert os.path.isabs(solution["config_path"]), solution["config_path"]
    assert not (directory / "__pycache__").exists(), "bytecode was written next to the script"


async def test_omitted_seed_and_config_are_cleared_even_when_the_server_has_them(harness, workdir):
    directory = introspect_dir(workdir)
    stale = workdir / "stale-config.json"
    stale.write_text(json.dumps({"stale": True}))
    async with cpsat_server(harness, **{SEED_VAR: "999", CONFIG_VAR: str(stale)}) as (launched, _):
        session = launched.session
        script = str(directory / "model.py")
        for arguments in [{}, {"config": {}}, {"args": []}]:
            result = await call_ok(session, "run_cpsat_python_file", {"script_path": script, **arguments})
            assert result["status"] == "feasible", result
            assert result["solution"]["seed"] is None, (arguments, result["solution"])
            assert result["solution"]["config_path"] is None, (arguments, result["solution"])
            assert result["solution"]["argv"] == []

        # Given values replace the inherited ones.
        result = await call_ok(
            session, "run_cpsat_python_file", {"script_path": script, "seed": 2147483647, "config": {"k": 1}}
        )
        assert result["solution"]["seed"] == "2147483647"
        assert result["solution"]["config"] == {"k": 1}
        assert result["solution"]["config_path"] != str(stale)

        # The inline tool clears them unconditionally.
        source = (
            "import json, os\n"
            "print(json.dumps({'status': 'feasible', 'objective': None, 'solution': {"
            f"'seed': os.environ.get({SEED_VAR!r}), 'config': os.environ.get({CONFIG_VAR!r})}}}}))\n"
        )
        result = await call_ok(session, "run_cpsat_python", {"source": source})
        assert result["status"] == "feasible", result
        assert result["solution"] == {"seed": None, "config": None}, result["solution"]


def bad_file_inputs(root: Path) -> list[tuple[str, dict, str]]:
    """(id, arguments, text the message must contain)."""
    (root / "empty.py").write_text("  \n\t\n")
    (root / "latin1.py").write_bytes(b"# caf\xe9\nprint('x')\n")
    (root / "a-directory.py").mkdir()
    sentinel = str(write(root / "sentinel.py", SENTINEL))
    return [
        ("missing", {"script_path": str(root / "nope.py")}, "does not exist"),
        ("directory", {"script_path": str(root / "a-directory.py")}, "not a regular file"),
        ("empty", {"script_path": str(root / "empty.py")}, "empty"),
        ("not-utf8", {"script_path": str(root / "latin1.py")}, "UTF-8"),
        ("blank-path", {"script_path": "  "}, "script_path"),
        ("nul-in-args", {"script_path": sentinel, "args": ["ok", "a\0b"]}, "args[1]"),
        ("args-over-32k", {"script_path": sentinel, "args": ["y" * 1024] * 33}, "32768"),
        ("seed-over-i32", {"script_path": sentinel, "seed": 2**31}, "seed"),
        ("seed-under-i32", {"script_path": sentinel, "seed": -(2**31) - 1}, "seed"),
        ("timeout-zero", {"script_path": sentinel, "script_timeout_ms": 0}, "script_timeout_ms"),
        ("unknown-argument", {"script_path": sentinel, "timeout_ms": 5}, "timeout_ms"),
    ]


async def test_bad_file_inputs_are_refused_before_running(cpsat, workdir):
    for case, arguments, needle in bad_file_inputs(workdir):
        error = await call_error(cpsat.session, "run_cpsat_python_file", arguments)
        assert error.category == "invalid_request", (case, error)
        assert needle in error.message, (case, error.message)
        assert not (workdir / "ran.txt").exists(), f"{case}: the script ran"
    # The arguments that fit run: the limits are not off by one.
    fits = ["z" * 1000] * 32
    result = await call_ok(
        cpsat.session, "run_cpsat_python_file", {"script_path": str(workdir / "sentinel.py"), "args": fits, "seed": -(2**31)}
    )
    assert result["status"] == "optimal", result
    assert (workdir / "ran.txt").exists()


# ---- run_cpsat_python_file_checked ----------------------------------------------------------

#: The knapsack optimum, printed without solving (a fast stand-in).
FIXED_ANSWER = """
import json
print(json.dumps({"status": "optimal", "objective": 13, "solution": {
    "chosen": [{"item": 1, "weight": 4, "value": 5}, {"item": 2, "weight": 5, "value": 8}],
    "total_weight": 9,
}}))
"""


def canonical(value) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def layout(root: Path, script: str, checker: str) -> tuple[Path, Path]:
    """model/model.py and checker/checker.py in separate directories."""
    (root / "model").mkdir()
    (root / "checker").mkdir()
    return write(root / "model" / "model.py", script), write(root / "checker" / "checker.py", checker)


PROBLEMS = [
    ("json-object", KNAPSACK, canonical(KNAPSACK)),
    ("text", json.dumps(KNAPSACK, indent=1), json.dumps(KNAPSACK, indent=1)),
]


@pytest.mark.parametrize(("problem", "seen"), [p[1:] for p in PROBLEMS], ids=[p[0] for p in PROBLEMS])
async def test_a_checker_that_accepts(cpsat, workdir, problem, seen):
    script, checker = layout(workdir, knapsack_script(), REAL_CHECKER)
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "problem": problem, "script_timeout_ms": 20000},
    )
    check_result_shape(result)
    assert result["status"] == "optimal", result
    check_knapsack_answer(result)
    report = result["checker"]
    assert report is not None, result
    assert report["status"] == "accepted", report
    assert report["errors"] == [] and report["return_code"] == 0 and report["timed_out"] is False
    assert report["details"]["solver_status"] == "optimal"
    assert report["details"]["objective"] == KNAPSACK_OPTIMUM
    # A JSON value arrives as canonical text; a string untouched.
    assert report["details"]["problem_text"] == seen, report["details"]
    assert json.loads(report["details"]["problem_text"]) == KNAPSACK
    assert "checked 2 entries" in report["stdout"]
    assert result["diagnostic"] is None, result["diagnostic"]
    assert result["checker_skipped_reason"] is None
    assert result["checker_test"] is None, "no probe without test_checker"
    assert result["checker_timeout_ms"] == 20000, "checker_timeout_ms defaults to script_timeout_ms"
    # The checker ran once, in its own directory.
    assert runs_logged(checker.parent) == 1
    assert not (script.parent / "runs.log").exists()


async def test_a_checker_rejects_a_plausible_wrong_answer(cpsat, workdir):
    # The script solves the model but reports an objective one too high.
    script, checker = layout(workdir, knapsack_script(objective_offset=1), REAL_CHECKER)
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "problem": KNAPSACK, "script_timeout_ms": 20000},
    )
    assert result["status"] == "optimal", "the run's own status is what the script said"
    assert result["objective"] == KNAPSACK_OPTIMUM + 1
    report = result["checker"]
    assert report["status"] == "rejected", report
    assert any("objective" in str(error) for error in report["errors"]), report["errors"]
    assert result["diagnostic"]["category"] == "checker_failed", result["diagnostic"]


ACCEPTED_WITH_ERRORS = """
with open("runs.log", "a") as log:
    log.write("run\\n")
print('{"status": "accepted", "errors": ["but something is off"]}')
"""

BROKEN_CHECKERS = [
    ("garbage", GARBAGE_CHECKER, 0),
    ("non-zero-exit", CRASHING_CHECKER, 3),
    ("accepted-with-errors", ACCEPTED_WITH_ERRORS, 0),
]


@pytest.mark.parametrize(("checker_source", "code"), [b[1:] for b in BROKEN_CHECKERS], ids=[b[0] for b in BROKEN_CHECKERS])
async def test_a_broken_checker_is_an_error_verdict(cpsat, workdir, checker_source, code):
    script, checker = layout(workdir, FIXED_ANSWER, checker_source)
    result = await call_ok(
        cpsat.session, "run_cpsat_python_file_checked", {"script_path": str(script), "checker_path": str(checker)}
    )
    assert result["status"] == "optimal", "a checker never fails the run"
    assert result["solution"] is not None and result["objective"] == 13
    report = result["checker"]
    assert report["status"] == "error", report
    assert report["return_code"] == code, report
    assert report["message"], "an error verdict says why"
    assert result["diagnostic"]["category"] == "checker_failed", result["diagnostic"]
    assert runs_logged(checker.parent) == 1


async def test_no_incumbent_skips_the_checker(cpsat, workdir):
    script, checker = layout(workdir, INFEASIBLE_SCRIPT, REAL_CHECKER)
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "problem": KNAPSACK, "script_timeout_ms": 20000},
    )
    assert result["status"] == "infeasible", result
    assert result["checker"] is None, result["checker"]
    assert isinstance(result["checker_skipped_reason"], str) and result["checker_skipped_reason"], result
    assert result["diagnostic"]["category"] == "infeasible", result["diagnostic"]
    assert runs_logged(checker.parent) == 0, "the checker ran"


async def test_probe_against_a_real_checker_counts_rejections(cpsat, workdir):
    script, checker = layout(workdir, knapsack_script(), REAL_CHECKER)
    # script_timeout_ms left at its 30 s default: the derived checker budget.
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "problem": KNAPSACK, "test_checker": True},
    )
    assert result["checker_timeout_ms"] == 8100, result["checker_timeout_ms"]
    assert result["checker"]["status"] == "accepted", result["checker"]
    probe = result["checker_test"]
    assert probe is not None, result
    rows = probe["mutations"]
    assert [row["name"] for row in rows] == MUTATION_NAMES
    for row in rows:
        assert ("status" in row and row["status"] is not None) != ("skipped_reason" in row and row["skipped_reason"] is not None), row
        assert "stdout" not in row and "stderr" not in row, "rows are compact"
        if row.get("status") is not None:
            assert isinstance(row["errors"], list) and isinstance(row["duration_ms"], int), row
    assert probe["rejected_count"] >= 1, probe
    # Every corruption of this solution is invalid, and this checker sees it.
    assert probe["rejected_count"] == 4 and probe["accepted_count"] == 0, probe
    assert all(row["errors"] for row in rows), "a rejection lists its errors"
    assert result["diagnostic"] is None
    assert runs_logged(checker.parent) == 5, "baseline + four mutants"


async def test_probe_against_a_vacuous_checker_counts_acceptances(cpsat, workdir):
    script, checker = layout(workdir, FIXED_ANSWER, VACUOUS_CHECKER)
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {
            "script_path": str(script),
            "checker_path": str(checker),
            "test_checker": True,
            "script_timeout_ms": 20000,
            "checker_timeout_ms": 4000,
        },
    )
    assert result["checker_timeout_ms"] == 4000, "an explicit checker budget that fits is honoured"
    probe = result["checker_test"]
    rows = probe["mutations"]
    assert [row["name"] for row in rows] == MUTATION_NAMES
    applied = [row for row in rows if row.get("status") is not None]
    assert len(applied) == 4, rows
    assert all(row.get("skipped_reason") is None for row in rows), rows
    assert probe["accepted_count"] == len(applied) == 4, probe
    assert probe["rejected_count"] == 0, probe
    assert runs_logged(checker.parent) == 5


async def test_probe_skips_what_the_solution_cannot_give(cpsat, workdir):
    # No list, no integer, no boolean: only the objective can be corrupted.
    answer = "import json\nprint(json.dumps({'status': 'optimal', 'objective': 3, 'solution': {'name': 'abc'}}))\n"
    script, checker = layout(workdir, answer, VACUOUS_CHECKER)
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "test_checker": True, "script_timeout_ms": 5000},
    )
    rows = {row["name"]: row for row in result["checker_test"]["mutations"]}
    assert list(rows) == MUTATION_NAMES
    assert rows["objective_perturbed"].get("status") == "accepted", rows
    for name in MUTATION_NAMES[1:]:
        assert rows[name].get("skipped_reason") and rows[name].get("status") is None, rows[name]
    assert result["checker_test"]["accepted_count"] == 1
    assert runs_logged(checker.parent) == 2


BUDGET_ERRORS = [
    ("explicit-30s-checker", {"checker_timeout_ms": 30000}, ["120000", "checker_timeout_ms"]),
    ("70s-script", {"script_timeout_ms": 70000}, ["120000", "script_timeout_ms"]),
]


@pytest.mark.parametrize(("extra", "needles"), [b[1:] for b in BUDGET_ERRORS], ids=[b[0] for b in BUDGET_ERRORS])
async def test_probe_budget_is_gated_before_running(cpsat, workdir, extra, needles):
    script, checker = layout(workdir, SENTINEL, VACUOUS_CHECKER)
    error = await call_error(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "test_checker": True, **extra},
    )
    assert error.category == "invalid_request", error
    for needle in needles:
        assert needle in error.message, (needle, error.message)
    assert not (script.parent / "ran.txt").exists(), "the script ran"
    assert runs_logged(checker.parent) == 0
    # Without test_checker the same budgets are fine.
    result = await call_ok(
        cpsat.session, "run_cpsat_python_file_checked", {"script_path": str(script), "checker_path": str(checker), **extra}
    )
    assert result["checker"]["status"] == "accepted"
    assert result["checker_test"] is None


async def test_checked_bad_paths_are_refused_before_running(cpsat, workdir):
    script, checker = layout(workdir, SENTINEL, VACUOUS_CHECKER)
    (workdir / "empty.py").write_text("\n")
    for arguments, needle in [
        ({"script_path": str(script), "checker_path": str(workdir / "missing.py")}, "checker_path"),
        ({"script_path": str(script), "checker_path": str(workdir / "empty.py")}, "checker_path"),
        ({"script_path": str(script), "checker_path": str(workdir)}, "checker_path"),
        ({"script_path": str(workdir / "missing.py"), "checker_path": str(checker)}, "script_path"),
        ({"script_path": str(script)}, "checker_path"),
        ({"script_path": str(script), "checker_path": str(checker), "checker_timeout_ms": 0}, "checker_timeout_ms"),
    ]:
        error = await call_error(cpsat.session, "run_cpsat_python_file_checked", arguments)
        assert error.category == "invalid_request", (arguments, error)
        assert needle in error.message, (needle, error.message)
    assert not (script.parent / "ran.txt").exists(), "the script ran"
    assert runs_logged(checker.parent) == 0


async def test_a_checker_that_hangs_times_out(cpsat, workdir):
    hanging = 'with open("runs.log", "a") as log:\n    log.write("run\\n")\nimport time\ntime.sleep(120)\n'
    script, checker = layout(workdir, FIXED_ANSWER, hanging)
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "checker_timeout_ms": 1000},
    )
    assert result["status"] == "optimal", result
    assert result["checker_timeout_ms"] == 1000
    report = result["checker"]
    assert report["status"] == "timeout", report
    assert report["timed_out"] is True and report["return_code"] is None, report
    assert result["diagnostic"]["category"] == "checker_failed", result["diagnostic"]
    assert runs_logged(checker.parent) == 1


TIMED_OUT_WITH_INCUMBENT = """
import json, time
print(json.dumps({"status": "feasible", "objective": 13, "solution": {
    "chosen": [{"item": 1, "weight": 4, "value": 5}, {"item": 2, "weight": 5, "value": 8}],
    "total_weight": 9,
}}))
time.sleep(120)
"""


@pytest.mark.parametrize(("checker_source", "verdict"), [(VACUOUS_CHECKER, "accepted"), (GARBAGE_CHECKER, "error")], ids=["accepting", "garbage"])
async def test_a_timed_out_incumbent_is_still_checked_and_the_timeout_wins(cpsat, workdir, checker_source, verdict):
    script, checker = layout(workdir, TIMED_OUT_WITH_INCUMBENT, checker_source)
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "script_timeout_ms": 1200},
    )
    assert result["status"] == "timeout" and result["timed_out"] is True, result
    assert result["objective"] == 13 and result["solution"]["total_weight"] == 9
    assert result["checker"] is not None and result["checker"]["status"] == verdict, result["checker"]
    assert result["checker_skipped_reason"] is None
    assert result["diagnostic"]["category"] == "timeout_with_incumbent", result["diagnostic"]
    assert runs_logged(checker.parent) == 1


async def test_a_timed_out_run_without_incumbent_skips_the_checker(cpsat, workdir):
    script, checker = layout(workdir, "import time\ntime.sleep(120)\n", VACUOUS_CHECKER)
    result = await call_ok(
        cpsat.session,
        "run_cpsat_python_file_checked",
        {"script_path": str(script), "checker_path": str(checker), "script_timeout_ms": 1000},
    )
    assert result["status"] == "timeout" and result["solution"] is None, result
    assert result["checker"] is None and result["checker_skipped_reason"], result
    assert runs_logged(checker.parent) == 0
