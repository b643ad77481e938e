"""Verified saves and replay through the real client on the real runtimes.

- MiniZinc (model + data + checker) and CP-SAT (seed, config, checker,
  problem, expectation) save, then replay with `reproduced: true`;
- provenance from a portfolio winner and an experiment winner is saved as
  experiment-log.json, and a mismatched one is refused before anything runs;
- every refusal (foreign file, missing overwrite, unrecognised manifest,
  relative path, missing parent, failing gate) writes nothing;
- a changed, missing or extra file makes replay refuse, naming it, and so does
  an edited manifest (seed, budget, a file hash, the seal itself, no seal);
- an unproven answer is never saved, however the run stopped;
- local includes are copied, hashed and replayed from the copy (stdlib ones
  are not), and an include that cannot be copied faithfully is refused;
- SIGKILL at random moments during 20 saves over an existing artifact leaves
  a wholly old or wholly new directory, and the next start removes what the
  killed saves staged.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from cpsat_helpers import KNAPSACK, KNAPSACK_OPTIMUM, REAL_CHECKER, cpsat_env, cpsat_server, knapsack_script
from helpers import (
    EASY_N_MODEL,
    HANG_AFTER_FIRST_MODEL,
    HARD_MODEL,
    N_DATA,
    OPT_MODEL,
    SAT_MODEL,
    SYNTAX_ERROR_MODEL,
    UNSAT_MODEL,
    X_CHECKER,
    RawServer,
    call_error,
    call_ok,
    wait_job,
)

pytestmark = pytest.mark.anyio

GECODE = "org.gecode.gecode"
MANIFEST = ".solvergate-artifact.json"
#: A checker that rejects every solution of EASY_N_MODEL (x is at most n).
REJECTING_CHECKER = "int: n;\nint: x;\nconstraint x < 0;\n"


@pytest.fixture(scope="module")
async def server(harness):
    async with cpsat_server(harness) as (launched, _marker):
        yield launched


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root`, relative name to bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def check_manifest(target: Path, roles: dict[str, str]) -> dict:
    manifest = json.loads((target / MANIFEST).read_text())
    assert manifest["format"] == "solvergate-artifact" and manifest["format_version"] == 2, manifest
    assert len(manifest["manifest_sha256"]) == 64, manifest
    listed = {f["name"]: f for f in manifest["files"]}
    assert {name: f["role"] for name, f in listed.items()} == roles, manifest["files"]
    on_disk = {p.name for p in target.iterdir()} - {MANIFEST}
    assert on_disk == set(roles), f"files on disk {on_disk} vs manifest {set(roles)}"
    for name, entry in listed.items():
        assert entry["sha256"] == sha256_file(target / name), name
        assert entry["bytes"] == (target / name).stat().st_size, name
    return manifest


# ---- MiniZinc --------------------------------------------------------------------------


async def test_minizinc_save_and_replay_round_trip(server, tmp_path):
    target = tmp_path / "n-model"
    arguments = {
        "model": EASY_N_MODEL,
        "data": N_DATA,
        "checker": X_CHECKER,
        "problem": "Pick the largest x up to n.",
        "solver": "gecode",
        "target_dir": str(target),
        "timeout_ms": 20000,
    }
    saved = await call_ok(server.session, "save_verified_minizinc_model", arguments)
    assert saved["status"] == "saved", saved
    assert saved["diagnostic"] is None
    assert saved["target_dir"] == str(target)
    assert saved["check"]["status"] == "ok"
    assert saved["solve"]["status"] == "optimal" and saved["solve"]["objective"] == 60
    assert saved["solve"]["checker"]["status"] == "completed"
    roles = {
        "model.mzn": "model",
        "data.dzn": "data",
        "checker.mzc.mzn": "checker",
        "problem.md": "problem",
        "solve-result.json": "solve_result",
    }
    assert {f["name"]: f["role"] for f in saved["files"]} == roles
    manifest = check_manifest(target, roles)
    assert manifest["backend"] == "minizinc"
    assert manifest["minizinc"]["solver"] == GECODE and manifest["minizinc"]["solver_version"]
    assert manifest["minizinc"]["timeout_ms"] == 20000
    assert manifest["minizinc"]["solve_controls"]["random_seed"] is None
    assert manifest["runtime_version"], manifest
    assert manifest["verification"] == {
        "status": "optimal",
        "objective": 60,
        "checker_status": "completed",
        "level": "checked",
    }
    assert (target / "model.mzn").read_text() == EASY_N_MODEL
    assert (target / "problem.md").read_text() == arguments["problem"]
    assert json.loads((target / "solve-result.json").read_text())["objective"] == 60
    assert [p.name for p in tmp_path.iterdir()] == ["n-model"], "a staging sibling was left behind"

    replay = await call_ok(server.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True, replay
    assert replay["reason"] is None and replay["diagnostic"] is None
    assert replay["recorded"] == replay["replayed"] == manifest["verification"]
    assert replay["solve"]["objective"] == 60
    assert replay["recorded_runtime_version"] == replay["runtime_version"]


async def test_a_failing_gate_writes_nothing(server, tmp_path):
    cases = [
        ("syntax-error", {"model": SYNTAX_ERROR_MODEL}, "error", None),
        ("unsatisfiable", {"model": UNSAT_MODEL}, "ok", "unsatisfiable"),
        ("checker-violation", {"model": EASY_N_MODEL, "data": N_DATA, "checker": REJECTING_CHECKER}, "ok", "optimal"),
    ]
    for case, change, check_status, solve_status in cases:
        target = tmp_path / case
        result = await call_ok(
            server.session,
            "save_verified_minizinc_model",
            {"solver": "gecode", "target_dir": str(target), **change},
        )
        assert result["status"] == "not_verified", f"{case}: {result}"
        assert result["diagnostic"]["category"] == "not_verified", case
        assert result["files"] == [], case
        assert result["check"]["status"] == check_status, case
        assert (result["solve"] or {}).get("status") == solve_status, f"{case}: {result['solve']}"
        assert not target.exists(), f"{case}: the target was written"
    assert list(tmp_path.iterdir()) == [], "something was written beside the targets"


#: Unproven answers, however the run stopped: (case, arguments, solve status,
#: timed_out, words the reason must hold).
UNPROVEN_CASES = [
    # MiniZinc's own --time-limit stops the solve cleanly with an incumbent.
    ("minizinc-time-limit", {"model": HARD_MODEL, "timeout_ms": 1000}, "satisfied", False, "timeout_with_incumbent"),
    # The same stop with all_solutions has no timeout diagnostic: a satisfied optimisation.
    (
        "satisfied-optimisation",
        {"model": HARD_MODEL, "timeout_ms": 1000, "all_solutions": True},
        "satisfied",
        False,
        "satisfied on an optimisation model",
    ),
    # Our own wall clock kills it.
    (
        "our-timeout",
        {"model": HANG_AFTER_FIRST_MODEL, "timeout_ms": 500, "all_solutions": True},
        "timeout",
        True,
        "time limit",
    ),
]


@pytest.mark.parametrize("case,change,status,timed_out,words", UNPROVEN_CASES, ids=[c[0] for c in UNPROVEN_CASES])
async def test_an_unproven_answer_is_never_saved(server, tmp_path, case, change, status, timed_out, words):
    target = tmp_path / case
    result = await call_ok(
        server.session,
        "save_verified_minizinc_model",
        {"solver": "gecode", "target_dir": str(target), **change},
    )
    assert result["status"] == "not_verified", f"{case}: {result['message']}"
    assert result["solve"]["status"] == status, result["solve"]["status"]
    assert result["solve"]["timed_out"] is timed_out, result["solve"]
    assert words in result["diagnostic"]["message"], result["diagnostic"]
    assert result["message"].endswith("nothing was written"), result["message"]
    assert result["files"] == []
    assert list(tmp_path.iterdir()) == [], "a save wrote something (a target or a staging sibling)"


async def test_refused_targets_are_left_untouched(server, tmp_path):
    base = {"model": OPT_MODEL, "solver": "gecode"}
    # A previous save to overwrite.
    saved = tmp_path / "saved"
    first = await call_ok(server.session, "save_verified_minizinc_model", {**base, "target_dir": str(saved)})
    assert first["status"] == "saved", first
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    bad_manifest = tmp_path / "bad-manifest"
    bad_manifest.mkdir()
    (bad_manifest / MANIFEST).write_text('{"format": "something-else"}')
    mixed = tmp_path / "mixed"
    await call_ok(server.session, "save_verified_minizinc_model", {**base, "target_dir": str(mixed)})
    (mixed / "extra.txt").write_text("added later")
    before = snapshot(tmp_path)
    cases = [
        ("foreign-files", str(foreign), True, ["not a solvergate artifact"]),
        ("missing-overwrite", str(saved), False, ["overwrite: true"]),
        ("unrecognised-manifest", str(bad_manifest), True, ["cannot be used"]),
        ("files-the-save-did-not-write", str(mixed), True, ["extra.txt"]),
        ("relative-path", "relative/target", True, ["absolute"]),
        ("missing-parent", str(tmp_path / "no" / "such" / "dir"), True, ["does not exist"]),
        ("a-file", str(foreign / "notes.txt"), True, ["not a directory"]),
    ]
    for case, target, overwrite, fragments in cases:
        error = await call_error(
            server.session,
            "save_verified_minizinc_model",
            {**base, "target_dir": target, "overwrite": overwrite},
        )
        assert error.category == "invalid_save_target", f"{case}: {error.text}"
        for fragment in fragments:
            assert fragment in error.message, f"{case}: {fragment!r} not in {error.message!r}"
        assert snapshot(tmp_path) == before, f"{case}: something changed on disk"
    # With overwrite the previous save is replaced wholesale.
    replaced = await call_ok(
        server.session,
        "save_verified_minizinc_model",
        {"model": SAT_MODEL, "solver": "gecode", "target_dir": str(saved), "overwrite": True},
    )
    assert replaced["status"] == "saved", replaced
    assert (saved / "model.mzn").read_text() == SAT_MODEL


async def test_a_changed_missing_or_extra_file_makes_replay_refuse(server, tmp_path):
    target = tmp_path / "tampered"
    saved = await call_ok(
        server.session,
        "save_verified_minizinc_model",
        {"model": EASY_N_MODEL, "data": N_DATA, "solver": "gecode", "target_dir": str(target)},
    )
    assert saved["status"] == "saved", saved
    model = target / "model.mzn"
    original = model.read_text()

    model.write_text(original.replace("maximize", "minimize"))
    error = await call_error(server.session, "replay_artifact", {"target_dir": str(target)})
    assert error.category == "not_verified" and "model.mzn" in error.message, error.text
    model.write_text(original)

    (target / "data.dzn").unlink()
    error = await call_error(server.session, "replay_artifact", {"target_dir": str(target)})
    assert error.category == "not_verified" and "data.dzn" in error.message, error.text
    (target / "data.dzn").write_text(N_DATA)

    (target / "later.mzn").write_text("% added\n")
    error = await call_error(server.session, "replay_artifact", {"target_dir": str(target)})
    assert error.category == "not_verified" and "later.mzn" in error.message, error.text
    (target / "later.mzn").unlink()

    replay = await call_ok(server.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True, replay
    error = await call_error(server.session, "replay_artifact", {"target_dir": str(tmp_path)})
    assert error.category == "invalid_request" and "not a solvergate artifact" in error.message, error.text


def edit_seed(m):
    m["minizinc"]["solve_controls"]["random_seed"] = 2


def edit_budget(m):
    m["minizinc"]["timeout_ms"] = 1000


def edit_file_hash(m):
    m["files"][0]["sha256"] = "0" * 64


def edit_seal(m):
    m["manifest_sha256"] = "0" * 64


def drop_seal(m):
    del m["manifest_sha256"]


def as_legacy(m):
    del m["manifest_sha256"]
    m["format_version"] = 1


#: (case, edit of the manifest's JSON, words the refusal must hold)
MANIFEST_EDITS = [
    ("seed", edit_seed, "changed since it was saved"),
    ("budget", edit_budget, "changed since it was saved"),
    ("file-hash", edit_file_hash, "changed since it was saved"),
    ("seal", edit_seal, "changed since it was saved"),
    ("no-seal", drop_seal, "changed since it was saved"),
    ("legacy-unsealed", as_legacy, "save the artifact again"),
]


async def test_an_edited_manifest_makes_replay_refuse(server, tmp_path):
    target = tmp_path / "sealed"
    saved = await call_ok(
        server.session,
        "save_verified_minizinc_model",
        {"model": EASY_N_MODEL, "data": N_DATA, "solver": "gecode", "random_seed": 1, "target_dir": str(target)},
    )
    assert saved["status"] == "saved", saved
    path = target / MANIFEST
    original = path.read_text()
    for case, edit, words in MANIFEST_EDITS:
        manifest = json.loads(original)
        edit(manifest)
        path.write_text(json.dumps(manifest, indent=2))
        error = await call_error(server.session, "replay_artifact", {"target_dir": str(target)})
        assert error.category == "not_verified", f"{case}: {error.text}"
        assert MANIFEST in error.message and words in error.message, f"{case}: {error.text}"
    # Key order and whitespace are not content.
    path.write_text(json.dumps(json.loads(original), sort_keys=True))
    replay = await call_ok(server.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True, replay


# ---- includes: an artifact is closed ---------------------------------------------------

BASE_ROLES = {"model.mzn": "model", "solve-result.json": "solve_result"}


def bounded_model(include: str) -> str:
    return f'include "{include}";\nvar 1..10: x;\nconstraint x <= k;\nsolve maximize x;\n'


async def test_an_included_file_is_copied_hashed_and_replayed_from_the_copy(server, tmp_path, workdir):
    # An inline model reads only what the sandbox lets it: the include lives
    # in the suite's work dir, which its runs may read and write.
    lib = workdir / "lib"
    lib.mkdir()
    helper = lib / "helper.mzn"
    helper.write_text("int: k = 7;\n")
    target = tmp_path / "closed"
    saved = await call_ok(
        server.session,
        "save_verified_minizinc_model",
        {"model": bounded_model(str(helper)), "solver": "gecode", "target_dir": str(target)},
    )
    assert saved["status"] == "saved", saved["message"]
    assert saved["solve"]["objective"] == 7
    manifest = check_manifest(target, {**BASE_ROLES, "helper.mzn": "include"})
    [entry] = [f for f in manifest["files"] if f["role"] == "include"]
    assert entry["source"] == str(helper), entry
    # The absolute include had to be rewritten to the copy; nothing else changed.
    assert (target / "model.mzn").read_text() == bounded_model("helper.mzn")
    assert (target / "helper.mzn").read_text() == "int: k = 7;\n"

    # The original changes: replay runs the artifact's copy, never the original.
    helper.write_text("int: k = 3;\n")
    replay = await call_ok(server.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True and replay["solve"]["objective"] == 7, replay["reason"]

    # The copy next to the model changes, or goes: replay refuses, naming it.
    copy = target / "helper.mzn"
    copy.write_text("int: k = 3;\n")
    error = await call_error(server.session, "replay_artifact", {"target_dir": str(target)})
    assert error.category == "not_verified" and "helper.mzn" in error.message, error.text
    copy.unlink()
    error = await call_error(server.session, "replay_artifact", {"target_dir": str(target)})
    assert error.category == "not_verified" and "helper.mzn is missing" in error.message, error.text


async def test_nested_includes_of_the_model_and_the_checker_are_copied(server, tmp_path, workdir):
    # Inline text includes only what its runs may read: the suite's work dir.
    lib = workdir / "lib"
    (lib / "deep").mkdir(parents=True)
    (lib / "helper.mzn").write_text('include "nested.mzn";\ninclude "deep/bound.mzn";\n')
    (lib / "nested.mzn").write_text("int: j = 2;\n")
    (lib / "deep" / "bound.mzn").write_text('include "alldifferent.mzn";\nint: k = j + 5;\n')
    (lib / "limit.mzn").write_text("int: limit = 7;\n")
    checker = f'include "{lib / "limit.mzn"}";\nint: x;\noutput [if x <= limit then "CORRECT\\n" else "INCORRECT\\n" endif];\n'
    target = tmp_path / "nested"
    saved = await call_ok(
        server.session,
        "save_verified_minizinc_model",
        {
            "model": bounded_model(str(lib / "helper.mzn")),
            "checker": checker,
            "solver": "gecode",
            "target_dir": str(target),
        },
    )
    assert saved["status"] == "saved", saved["message"]
    assert saved["solve"]["objective"] == 7
    roles = {
        **BASE_ROLES,
        "checker.mzc.mzn": "checker",
        "helper.mzn": "include",
        "nested.mzn": "include",
        "bound.mzn": "include",
        "limit.mzn": "include",
    }
    check_manifest(target, roles)
    # A bare name already names the copy beside it; a subdirectory had to go.
    assert (target / "helper.mzn").read_text() == 'include "nested.mzn";\ninclude "bound.mzn";\n'
    assert (target / "bound.mzn").read_text() == (lib / "deep" / "bound.mzn").read_text()
    assert 'include "limit.mzn";' in (target / "checker.mzc.mzn").read_text()
    replay = await call_ok(server.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True, replay["reason"]


def stdlib_cases() -> list[str]:
    cases = ["alldifferent.mzn"]
    # Debian's 2.6.4 with its Gecode cannot compile globals.mzn at all (a type error in
    # std/inverse_fn.mzn), so that include is tried on the newer runtime only.
    if "/usr" != os.environ.get("SOLVERGATE_TEST_RUNTIME", "/usr").rstrip("/"):
        cases.append("globals.mzn")
    return cases


@pytest.mark.parametrize("library", stdlib_cases())
async def test_a_standard_library_include_is_not_copied(server, tmp_path, library):
    model = f'include "{library}";\narray[1..3] of var 1..3: q;\nconstraint alldifferent(q);\nsolve satisfy;\n'
    target = tmp_path / "stdlib"
    saved = await call_ok(
        server.session, "save_verified_minizinc_model", {"model": model, "solver": "gecode", "target_dir": str(target)}
    )
    assert saved["status"] == "saved", saved["message"]
    check_manifest(target, BASE_ROLES)
    assert (target / "model.mzn").read_text() == model, "a model without local includes is saved verbatim"


def include_refusals(root: Path) -> list[tuple[str, str, str]]:
    """(case, model, words of the reason) for includes a save cannot copy faithfully."""
    for name, text in (("a", "int: k = 4;\n"), ("b", "int: other = 1;\n")):
        (root / name).mkdir()
        (root / name / "h.mzn").write_text(text)
    (root / "a" / "model.mzn").write_text("int: k = 4;\n")
    (root / "a" / "link.mzn").symlink_to(root / "a" / "h.mzn")
    climb = "../" * 40 + str(root / "a" / "h.mzn").lstrip("/")
    return [
        ("relative-to-inline-model", bounded_model(climb), "relative to itself"),
        ("through-a-symlink", bounded_model(str(root / "a" / "link.mzn")), "symbolic link"),
        (
            "same-name-twice",
            f'include "{root / "a" / "h.mzn"}";\n' + bounded_model(str(root / "b" / "h.mzn")),
            "both named h.mzn",
        ),
        ("reserved-name", bounded_model(str(root / "a" / "model.mzn")), "a name the artifact gives its own files"),
    ]


async def test_an_include_that_cannot_be_copied_faithfully_is_refused(server, tmp_path, workdir):
    sources = workdir / "sources"
    sources.mkdir()
    saves = tmp_path / "saves"
    saves.mkdir()
    for case, model, words in include_refusals(sources):
        target = saves / case
        result = await call_ok(
            server.session,
            "save_verified_minizinc_model",
            {"model": model, "solver": "gecode", "target_dir": str(target)},
        )
        assert result["status"] == "not_verified", f"{case}: {result['message']}"
        assert result["check"]["status"] == "ok", case
        assert words in result["diagnostic"]["message"], f"{case}: {result['diagnostic']}"
        assert result["files"] == [], case
    assert list(saves.iterdir()) == [], "a refused save wrote something"


# ---- provenance -----------------------------------------------------------------------------


async def test_a_portfolio_winner_saves_with_its_race(server, tmp_path):
    race = await call_ok(
        server.session,
        "submit_portfolio_job",
        {"models": [OPT_MODEL, SAT_MODEL], "solvers": ["gecode"], "seeds": [3], "per_attempt_timeout_ms": 10000},
    )
    status, _ = await wait_job(server.session, race["job_id"], tool="get_portfolio_job", timeout=30)
    result = status["result"]
    assert result["status"] == "winner", result
    winner = result["attempts"][result["winner_index"]]
    model = [OPT_MODEL, SAT_MODEL][winner["model_index"]]
    base = {"model": model, "solver": "gecode", "random_seed": 3, "portfolio_result": result}

    mismatches = [
        ("other-model", {"model": OPT_MODEL + "% changed\n"}, "model"),
        ("other-seed", {"random_seed": 4}, "seed"),
        ("unseeded", {"random_seed": None}, "seed"),
        ("other-controls", {"free_search": True}, "free_search"),
        ("data-added", {"data": "% none\n"}, "data"),
        ("no-winner", {"portfolio_result": {**result, "status": "no_winner"}}, "no_winner"),
    ]
    for case, change, fragment in mismatches:
        target = tmp_path / case
        error = await call_error(server.session, "save_verified_minizinc_model", {**base, **change, "target_dir": str(target)})
        assert error.category == "invalid_request", f"{case}: {error.text}"
        assert "portfolio_result" in error.message and fragment in error.message, f"{case}: {error.message}"
        assert not target.exists(), case

    target = tmp_path / "winner"
    saved = await call_ok(server.session, "save_verified_minizinc_model", {**base, "target_dir": str(target)})
    assert saved["status"] == "saved", saved
    manifest = check_manifest(
        target,
        {
            "model.mzn": "model",
            "solve-result.json": "solve_result",
            "experiment-log.json": "experiment_log",
        },
    )
    log = json.loads((target / "experiment-log.json").read_text())
    assert log["source"] == "portfolio" and log["winner_index"] == result["winner_index"]
    assert log["winner"] == {"model_index": winner["model_index"], "solver": GECODE, "seed": 3}
    assert len(log["attempts"]) == 2 and log["models_sha256"] == result["models_sha256"]
    assert manifest["experiment"]["source"] == "portfolio" and manifest["experiment"]["attempts"] == 2
    assert manifest["minizinc"]["solve_controls"]["random_seed"] == 3


# ---- CP-SAT --------------------------------------------------------------------------------


async def test_cpsat_save_and_replay_round_trip(server, tmp_path):
    target = tmp_path / "knapsack"
    source = knapsack_script()
    arguments = {
        "source": source,
        "target_dir": str(target),
        "script_timeout_ms": 20000,
        "problem": KNAPSACK,
        "checker": REAL_CHECKER,
        "expectation": {"objective_sense": "maximize", "objective_threshold": KNAPSACK_OPTIMUM},
        "seed": 7,
        "config": {"workers": 1},
    }
    saved = await call_ok(server.session, "save_verified_cpsat_python", arguments)
    assert saved["reason"] is None and saved["saved"] is True, saved
    assert saved["verification_level"] == "checked"
    assert saved["reported_passed"] is True and saved["expectation_passed"] is True
    assert saved["checker"]["status"] == "accepted"
    assert saved["objective"] == KNAPSACK_OPTIMUM
    roles = {
        "model.py": "model",
        "problem.txt": "problem",
        "checker.py": "checker",
        "solution.json": "solution",
        "replay-config.json": "replay_config",
    }
    manifest = check_manifest(target, roles)
    assert manifest["backend"] == "cpsat_python"
    assert manifest["cpsat"]["replay_seed"] == 7
    assert manifest["cpsat"]["replay_config_sha256"] == sha256_file(target / "replay-config.json")
    assert manifest["cpsat"]["expectation"] == {"objective_sense": "maximize", "objective_threshold": KNAPSACK_OPTIMUM}
    assert manifest["cpsat"]["script_timeout_ms"] == 20000
    assert manifest["verification"]["level"] == "checked"
    assert manifest["runtime_version"].startswith("ortools "), manifest
    assert (target / "model.py").read_text() == source
    assert json.loads((target / "problem.txt").read_text()) == KNAPSACK
    assert json.loads((target / "replay-config.json").read_text()) == {"workers": 1}

    replay = await call_ok(server.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True, replay
    assert replay["run"]["objective"] == KNAPSACK_OPTIMUM
    assert replay["checker"]["status"] == "accepted"
    assert replay["recorded"] == replay["replayed"]


SEED_ECHO = (
    "import json, os\n"
    "seed = int(os.environ.get('SOLVERGATE_CPSAT_SEED', '0'))\n"
    "print(json.dumps({'status': 'feasible', 'objective': seed, 'solution': {'seed': seed}}))\n"
)


async def test_replay_honours_the_recorded_seed(server, tmp_path):
    target = tmp_path / "seeded"
    saved = await call_ok(
        server.session,
        "save_verified_cpsat_python",
        {"source": SEED_ECHO, "target_dir": str(target), "seed": 41},
    )
    assert saved["saved"] is True and saved["objective"] == 41, saved
    replay = await call_ok(server.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True and replay["run"]["objective"] == 41, replay


async def test_verify_only_and_failing_gates_write_nothing(server, tmp_path):
    source = knapsack_script()
    target = tmp_path / "never"
    passed = await call_ok(
        server.session,
        "save_verified_cpsat_python",
        {"source": source, "checker": REAL_CHECKER, "problem": KNAPSACK, "verify_only": True, "target_dir": str(target)},
    )
    assert passed["reason"] is None and passed["saved"] is False, passed
    assert passed["target_dir"] is None and passed["files"] == []
    assert passed["verification_level"] == "checked"
    for case, change, level, fragment in [
        ("expectation", {"expectation": {"objective_sense": "maximize", "objective_threshold": 99}}, "reported", "expectation gate"),
        ("checker", {"checker": REAL_CHECKER, "problem": {**KNAPSACK, "capacity": 1}}, "reported", "checker gate"),
        ("reported", {"source": "print('{\"status\": \"infeasible\", \"objective\": null, \"solution\": {}}')\n"}, "none", "reported gate"),
    ]:
        failed = await call_ok(server.session, "save_verified_cpsat_python", {"source": source, "target_dir": str(target), **change})
        assert failed["saved"] is False and fragment in failed["reason"], f"{case}: {failed}"
        assert failed["verification_level"] == level, f"{case}: {failed}"
        assert failed["diagnostic"]["category"] == "not_verified", case
        assert not target.exists(), case
    error = await call_error(server.session, "save_verified_cpsat_python", {"source": source})
    assert error.category == "invalid_save_target" and "verify_only" in error.message, error.text
    assert list(tmp_path.iterdir()) == []


async def test_an_experiment_winner_saves_with_its_log(server, tmp_path):
    capped = knapsack_script(extra_cap=5)
    full = knapsack_script()
    experiment = await call_ok(
        server.session,
        "run_cpsat_python_experiment",
        {
            "attempts": [
                {"name": "capped", "source": capped},
                {"name": "full", "source": full, "seed": 5},
            ],
            "objective_sense": "maximize",
            "checker": REAL_CHECKER,
            "problem": KNAPSACK,
            "default_script_timeout_ms": 20000,
        },
    )
    assert experiment["winner_name"] == "full", experiment["attempts"]
    assert [row["seed"] for row in experiment["attempts"]] == [None, 5]
    base = {"source": full, "seed": 5, "checker": REAL_CHECKER, "problem": KNAPSACK, "experiment_result": experiment}
    for case, change, fragment in [
        ("other-source", {"source": full + "# changed\n"}, "no accepted attempt"),
        ("other-seed", {"seed": 6}, "no accepted attempt"),
        ("with-config", {"config": {"a": 1}}, "no accepted attempt"),
        ("no-winner", {"experiment_result": {**experiment, "status": "no_winner"}}, "no_winner"),
    ]:
        target = tmp_path / case
        error = await call_error(server.session, "save_verified_cpsat_python", {**base, **change, "target_dir": str(target)})
        assert error.category == "invalid_request" and fragment in error.message, f"{case}: {error.text}"
        assert not target.exists(), case

    target = tmp_path / "winner"
    saved = await call_ok(server.session, "save_verified_cpsat_python", {**base, "target_dir": str(target)})
    assert saved["saved"] is True, saved
    manifest = check_manifest(
        target,
        {
            "model.py": "model",
            "problem.txt": "problem",
            "checker.py": "checker",
            "solution.json": "solution",
            "experiment-log.json": "experiment_log",
        },
    )
    log = json.loads((target / "experiment-log.json").read_text())
    assert log["source"] == "experiment" and log["winner_name"] == "full"
    assert [row["name"] for row in log["attempts"]] == ["capped", "full"]
    assert all("stdout" not in row and "solution" not in row for row in log["attempts"]), log["attempts"][0]
    assert manifest["experiment"] == {"source": "experiment", "attempts": 2, "accepted": 2, "winner_index": 1}


# ---- crash safety --------------------------------------------------------------------------


def artifact_state(target: Path, variants: list[str]) -> int:
    """Which variant the directory wholly holds; fails on a mix."""
    manifest = json.loads((target / MANIFEST).read_text())
    names = {f["name"] for f in manifest["files"]}
    assert {p.name for p in target.iterdir()} == names | {MANIFEST}, list(target.iterdir())
    for entry in manifest["files"]:
        assert entry["sha256"] == sha256_file(target / entry["name"]), f"{entry['name']} does not match its manifest"
    model = (target / "model.mzn").read_text()
    assert model in variants, "the model is neither the old nor a new one"
    return variants.index(model)


def staging_dirs(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(".artifact.solvergate-staging-"))


def test_sigkill_during_saves_leaves_the_old_or_the_new_directory(harness, tmp_path):
    """20 saves over one artifact, each server SIGKILLed at a random moment
    (test hooks make every save pause 400 ms between staging and swap, so
    many kills land in that window); the last kill lands there for sure."""
    env, _ = cpsat_env(harness, SOLVERGATE_TEST_HOOKS="1")
    parent = tmp_path / "saves"
    parent.mkdir()
    target = parent / "artifact"
    variants = [f"% variant {i}\n" + OPT_MODEL for i in range(21)]
    rng = random.Random(20261130)
    held = 0
    outcomes = []
    for round_ in range(21):
        server = RawServer([harness.binary, "stdio", "--toolset", "full"], env, tmp_path / f"stderr-{round_}.txt")
        try:
            server.initialize()
            arguments = {"model": variants[round_], "solver": "gecode", "target_dir": str(target), "overwrite": True}
            if round_ == 0:
                reply = server.call_tool("save_verified_minizinc_model", arguments)
                assert reply["result"]["structuredContent"]["status"] == "saved", reply
                continue
            server.request("tools/call", {"name": "save_verified_minizinc_model", "arguments": arguments})
            if round_ == 20:
                deadline = time.monotonic() + 20
                while not staging_dirs(parent):
                    assert time.monotonic() < deadline, "the last save never staged"
                    time.sleep(0.005)
            else:
                time.sleep(rng.uniform(0.0, 1.2))
            os.kill(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
        finally:
            server.stop()
        before = held
        held = artifact_state(target, variants)
        # Wholly the previous content or wholly this round's, never older.
        assert before <= held <= round_, (before, held, round_)
        outcomes.append("new" if held == round_ else "old")
    assert outcomes[-1] == "old", "the last kill was meant to land before the swap"
    assert staging_dirs(parent), "the killed save left no staging dir: recovery would prove nothing"
    # The next start removes every staging dir the killed saves left.
    server = RawServer([harness.binary, "stdio", "--toolset", "full"], env, tmp_path / "stderr-last.txt")
    try:
        server.initialize()
        server.close_stdin()
        server.wait(timeout=10)
    finally:
        server.stop()
    assert staging_dirs(parent) == []
    assert [p.name for p in parent.iterdir()] == ["artifact"]
    artifact_state(target, variants)


async def test_a_script_cannot_import_a_sibling_module_at_the_save(server, tmp_path):
    """A CP-SAT save re-runs the inline source alone in a fresh directory, so a
    `helper.py` beside the script the client had is not there: the reported gate
    fails and nothing is written (a saved script is closed by construction)."""
    (tmp_path / "helper.py").write_text("VALUE = 3\n")
    source = "import json\nimport helper\nprint(json.dumps({'status': 'feasible', 'objective': helper.VALUE, 'solution': {'v': 1}}))\n"
    target = tmp_path / "script"
    result = await call_ok(
        server.session, "save_verified_cpsat_python", {"source": source, "target_dir": str(target)}
    )
    assert result["saved"] is False and result["reason"] is not None, result
    assert "helper" in result["stderr"], result["stderr"]
    assert not target.exists()


async def test_a_save_needs_a_clean_exit(server, tmp_path):
    source = SEED_ECHO + "raise SystemExit(3)\n"
    result = await call_ok(server.session, "save_verified_cpsat_python", {"source": source, "verify_only": True})
    assert result["reason"] is not None and "clean exit" in result["reason"], result
    assert result["verification_level"] == "none" and result["objective"] == 0, result
