"""Portfolio races through the real client: the plan layout, a decisive
winner whose losers the server kills without being polled, the ranking
when nothing is decisive, validation before anything runs, cancellation,
and provenance hashes.

Every server here gets its own process marker (`harness.tagged_env`), so a
scan sees exactly that server's minizinc / fzn-gecode processes.
"""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest

from helpers import (
    EASY_N_MODEL,
    ERROR_AFTER_FIRST_MODEL,
    HANG_AFTER_FIRST_MODEL,
    HANG_AT_FIRST_MODEL,
    HARD_MODEL,
    HARD_N_MODEL,
    N_DATA,
    OPT_MODEL,
    PIGEONHOLE_MODEL,
    SAT_MODEL,
    SYNTAX_ERROR_MODEL,
    TYPE_ERROR_MODEL,
    X_CHECKER,
    call_error,
    call_ok,
    check_portfolio_job,
    check_solve_job,
    describe,
    leftover_solver_procs,
    portfolio_job_ids,
    rfc3339,
    sha256_hex,
    solve_job_ids,
    solver_procs,
    wait_for_solver_procs,
    wait_job,
)

pytestmark = pytest.mark.anyio

GECODE = "org.gecode.gecode"
DECISIVE = {"optimal", "satisfied", "unsatisfiable", "unbounded", "unsat_or_unbounded"}
DEFAULT_CONTROLS = {"free_search": False, "parallel": None, "all_solutions": False, "num_solutions": None}


async def attempt_jobs(session, portfolio: dict) -> list[dict]:
    jobs = []
    for job_id in portfolio["attempt_job_ids"]:
        job = await call_ok(session, "get_solve_job", {"job_id": job_id})
        check_solve_job(job)
        jobs.append(job)
    return jobs


def check_table(result: dict, portfolio: dict, layout: list[tuple[int, str, int | None]]) -> None:
    """The attempts table: one row per planned (model_index, solver, seed),
    in plan order, each pointing at its solve job."""
    attempts = result["attempts"]
    assert [(a["model_index"], a["solver"], a["seed"]) for a in attempts] == layout
    assert [a["index"] for a in attempts] == list(range(len(layout)))
    assert [a["job_id"] for a in attempts] == portfolio["attempt_job_ids"]


# ---- a decisive winner ------------------------------------------------------------


async def test_decisive_winner_and_losers_killed_without_polling(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        arguments = {
            "models": [EASY_N_MODEL, HARD_N_MODEL],
            "solvers": ["gecode"],
            "seeds": [1, 2],
            "data": N_DATA,
            "checker": X_CHECKER,
            "per_attempt_timeout_ms": 20000,
        }
        submitted = await call_ok(session, "submit_portfolio_job", arguments)
        check_portfolio_job(submitted)
        assert submitted["state"] == "running", submitted
        assert submitted["result"] is None
        assert submitted["per_attempt_timeout_ms"] == 20000
        assert len(submitted["attempt_job_ids"]) == 4

        # No MCP call now: the server alone must end the race. The hard
        # attempts would run for 20 s if nobody killed them.
        await anyio.sleep(1.0)
        left = await anyio.to_thread.run_sync(leftover_solver_procs, set(), marker, 8.0)
        assert not left, f"losers still running with nobody polling: {describe(left)}"

        status, _ = await wait_job(session, submitted["job_id"], tool="get_portfolio_job", timeout=5)
        left = solver_procs(marker)
        assert not left, f"alive right after the portfolio was succeeded: {describe(left)}"
        assert status["state"] == "succeeded", status
        assert status["job_id"] == submitted["job_id"]
        assert status["attempt_job_ids"] == submitted["attempt_job_ids"]
        result = status["result"]

        # Plan: model index fastest, then solvers, seeds outermost.
        check_table(result, status, [(0, GECODE, 1), (1, GECODE, 1), (0, GECODE, 2), (1, GECODE, 2)])
        assert result["status"] == "winner"
        index = result["winner_index"]
        assert index in (0, 2), f"the hard formulation won: {result['attempts']}"
        winner_row = result["attempts"][index]
        assert winner_row["state"] == "succeeded" and winner_row["status"] == "optimal", winner_row
        assert winner_row["objective"] == 60
        assert winner_row["checker_status"] == "completed"
        winner = result["winner"]
        assert winner["status"] == "optimal" and winner["solution"] == {"x": 60} and winner["objective"] == 60
        assert winner["solver"] == GECODE
        for row in result["attempts"]:
            if row["model_index"] == 1:
                assert row["state"] == "cancelled", f"hard attempt not cancelled: {row}"
                assert row["status"] is None and row["objective"] is None, row
                assert row["elapsed_ms"] < 20000
            elif row["index"] != index:
                # The other easy seed either lost the race or finished too.
                assert row["state"] in ("cancelled", "succeeded"), row

        # Provenance.
        assert result["models_sha256"] == [sha256_hex(EASY_N_MODEL), sha256_hex(HARD_N_MODEL)]
        assert result["data_sha256"] == sha256_hex(N_DATA)
        assert result["checker_sha256"] == sha256_hex(X_CHECKER)
        assert result["solve_controls"] == DEFAULT_CONTROLS
        assert isinstance(result["selection_policy"], str) and "decisive" in result["selection_policy"]
        assert isinstance(result["elapsed_ms"], int) and result["elapsed_ms"] < 20000
        assert status["diagnostic"] == winner["diagnostic"]

        # The attempts are ordinary solve jobs, listed and matching the table.
        listed = await solve_job_ids(session)
        assert set(status["attempt_job_ids"]) <= set(listed), "attempt jobs missing from list_solve_jobs"
        jobs = await attempt_jobs(session, status)
        assert [job["state"] for job in jobs] == [row["state"] for row in result["attempts"]]
        assert jobs[index]["result"] == winner
        assert all(job["timeout_ms"] == 20000 for job in jobs)
        # Losers were stopped the moment the winner finished.
        won_at = rfc3339(jobs[index]["finished_at"])
        for row, job in zip(result["attempts"], jobs):
            if row["state"] == "cancelled":
                lag = (rfc3339(job["finished_at"]) - won_at).total_seconds()
                assert lag < 1.0, f"loser {row['index']} stopped {lag:.3f} s after the winner"

        # Reading never changes the race.
        assert await call_ok(session, "get_portfolio_job", {"job_id": status["job_id"]}) == status
        assert await portfolio_job_ids(session) == [status["job_id"]]


async def test_a_decisive_winner_drops_the_queued_attempts(harness):
    env, marker = harness.tagged_env(SOLVERGATE_MAX_RUNNING_JOBS="1")
    async with harness.open("full", env=env) as launched:
        session = launched.session
        submitted = await call_ok(
            session,
            "submit_portfolio_job",
            {
                "models": [EASY_N_MODEL, HARD_N_MODEL],
                "solvers": ["gecode"],
                "seed_count": 2,
                "data": N_DATA,
                "per_attempt_timeout_ms": 20000,
            },
        )
        status, _ = await wait_job(session, submitted["job_id"], tool="get_portfolio_job", timeout=15)
        assert not solver_procs(marker)
        assert status["state"] == "succeeded", status
        result = status["result"]
        check_table(result, status, [(0, GECODE, 1), (1, GECODE, 1), (0, GECODE, 2), (1, GECODE, 2)])
        assert result["winner_index"] == 0, result["attempts"]
        assert result["winner"]["status"] == "optimal"
        assert [row["state"] for row in result["attempts"]] == ["succeeded", "cancelled", "cancelled", "cancelled"]
        assert result["checker_sha256"] is None
        jobs = await attempt_jobs(session, status)
        for job in jobs[1:]:
            assert job["state"] == "cancelled" and job["started_at"] is None, f"a queued attempt started: {job}"


async def test_a_plan_that_fills_capacity_exactly_is_admitted(harness):
    """20 attempts = 4 running + 16 queued: admitted; the first decisive
    verdict drops every attempt still queued."""
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        submitted = await call_ok(
            session,
            "submit_portfolio_job",
            {"models": [OPT_MODEL], "solvers": ["gecode"], "seed_count": 20, "per_attempt_timeout_ms": 10000},
        )
        assert len(submitted["attempt_job_ids"]) == 20
        status, _ = await wait_job(session, submitted["job_id"], tool="get_portfolio_job", timeout=20)
        assert not solver_procs(marker)
        result = status["result"]
        check_table(result, status, [(0, GECODE, seed) for seed in range(1, 21)])
        assert result["status"] == "winner" and result["winner"]["status"] == "optimal"
        jobs = await attempt_jobs(session, status)
        never_started = [job for job in jobs if job["started_at"] is None]
        assert never_started, "no queued attempt was dropped"
        assert all(job["state"] == "cancelled" for job in never_started)
        # Capacity is free again.
        assert (await call_ok(session, "submit_solve_job", {"model": SAT_MODEL}))["state"] == "running"


# ---- nothing decisive: the stated order --------------------------------------------
#
# Best first: a timeout or error with a solution, then unknown, then a
# timeout without a solution, then an error; ties go to the earlier attempt.

RANKED_RACES = [
    (
        "solution-beats-unknown-and-error",
        [SYNTAX_ERROR_MODEL, PIGEONHOLE_MODEL, HANG_AFTER_FIRST_MODEL],
        ["error", "unknown", "timeout"],
        2,
    ),
    (
        "error-with-solution-beats-unknown",
        [PIGEONHOLE_MODEL, ERROR_AFTER_FIRST_MODEL],
        ["unknown", "error"],
        1,
    ),
    (
        "unknown-beats-timeout-without-solution",
        [SYNTAX_ERROR_MODEL, HANG_AT_FIRST_MODEL, PIGEONHOLE_MODEL],
        ["error", "timeout", "unknown"],
        2,
    ),
    (
        "timeout-without-solution-beats-error",
        [SYNTAX_ERROR_MODEL, HANG_AT_FIRST_MODEL],
        ["error", "timeout"],
        1,
    ),
    ("only-errors-earlier-wins", [TYPE_ERROR_MODEL, SYNTAX_ERROR_MODEL], ["error", "error"], 0),
    ("only-errors-earlier-wins-swapped", [SYNTAX_ERROR_MODEL, TYPE_ERROR_MODEL], ["error", "error"], 0),
]


async def test_without_a_decisive_verdict_the_best_attempt_wins(harness):
    # Every race at once, so the wall-clock kills overlap.
    env, marker = harness.tagged_env(SOLVERGATE_MAX_RUNNING_JOBS="16")
    async with harness.open("full", env=env) as launched:
        session = launched.session
        submitted = {}
        for case, models, _, _ in RANKED_RACES:
            job = await call_ok(
                session,
                "submit_portfolio_job",
                {"models": models, "solvers": [GECODE], "all_solutions": True, "per_attempt_timeout_ms": 1500},
            )
            submitted[case] = job
        for case, models, statuses, winner_index in RANKED_RACES:
            status, _ = await wait_job(session, submitted[case]["job_id"], tool="get_portfolio_job", timeout=20)
            assert status["state"] == "succeeded", f"{case}: {status}"
            result = status["result"]
            check_table(result, status, [(i, GECODE, None) for i in range(len(models))])
            assert [row["status"] for row in result["attempts"]] == statuses, f"{case}: {result['attempts']}"
            for row in result["attempts"]:
                assert row["state"] == ("timeout" if row["status"] == "timeout" else "succeeded"), f"{case}: {row}"
            assert result["status"] == "winner", f"{case}: {result}"
            assert result["winner_index"] == winner_index, f"{case}: {result['attempts']}"
            assert result["winner"]["status"] == statuses[winner_index]
            jobs = await attempt_jobs(session, status)
            assert result["winner"] == jobs[winner_index]["result"], f"{case}: winner is not its attempt's result"
            assert status["diagnostic"] == result["winner"]["diagnostic"]
            assert result["data_sha256"] is None and result["checker_sha256"] is None
            assert result["models_sha256"] == [sha256_hex(model) for model in models]
            assert result["solve_controls"] == {**DEFAULT_CONTROLS, "all_solutions": True}
            if case.startswith("solution-beats"):
                assert result["winner"]["solution"] == {"x": 1} and result["winner"]["timed_out"] is True
            if case.startswith("error-with-solution"):
                assert result["winner"]["solution"] == {"x": 1} and result["winner"]["timed_out"] is False
            if case == "only-errors-earlier-wins":
                assert result["winner"]["diagnostic"]["category"] == "type_error"
            if case == "only-errors-earlier-wins-swapped":
                assert result["winner"]["diagnostic"]["category"] == "syntax_or_compile_error"
        assert not solver_procs(marker)


async def test_empty_data_hashes_apart_from_no_data(harness):
    env, _ = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        hashes = []
        for data in ("", None):
            arguments = {"models": [OPT_MODEL], "solvers": ["gecode"], "per_attempt_timeout_ms": 5000}
            if data is not None:
                arguments["data"] = data
            job = await call_ok(session, "submit_portfolio_job", arguments)
            status, _ = await wait_job(session, job["job_id"], tool="get_portfolio_job")
            assert status["result"]["winner"]["status"] == "optimal"
            hashes.append(status["result"]["data_sha256"])
        assert hashes == [sha256_hex(""), None]


# ---- validation before anything runs ---------------------------------------------------

BASE = {"models": [OPT_MODEL], "solvers": ["gecode"], "per_attempt_timeout_ms": 5000}

PORTFOLIO_ERRORS = [
    ("no-models", {"models": []}, "invalid_request", ["models"]),
    ("empty-model", {"models": [OPT_MODEL, "  "]}, "invalid_request", ["models[1]"]),
    ("no-solvers", {"solvers": []}, "invalid_request", ["solvers"]),
    ("duplicate-seeds", {"seeds": [1, 1]}, "invalid_request", ["seeds"]),
    ("empty-seeds", {"seeds": []}, "invalid_request", ["seeds"]),
    ("seeds-and-seed-count", {"seeds": [1, 2], "seed_count": 2}, "invalid_request", ["seeds", "seed_count"]),
    ("seed-count-zero", {"seed_count": 0}, "invalid_request", ["seed_count"]),
    ("seed-count-negative", {"seed_count": -2}, "invalid_request", ["seed_count"]),
    ("timeout-zero", {"per_attempt_timeout_ms": 0}, "invalid_request", ["per_attempt_timeout_ms"]),
    ("random-seed", {"random_seed": 1}, "invalid_request", ["random_seed"]),
    ("single-model-argument", {"model": OPT_MODEL}, "invalid_request", ["model"]),
    ("parallel-zero", {"parallel": 0}, "invalid_request", ["parallel"]),
    ("empty-checker", {"checker": " "}, "invalid_request", ["checker"]),
    ("unknown-solver", {"solvers": ["gecode", "nosuch"]}, "solver_unavailable", ["nosuch"]),
    ("same-solver-twice", {"solvers": ["gecode", GECODE]}, "invalid_request", [GECODE]),
    (
        "seeds-on-a-solver-without-r",
        {"solvers": ["gecode", "org.minizinc.mip.scip"], "seed_count": 2},
        "unsupported_feature",
        ["org.minizinc.mip.scip", "-r"],
    ),
    (
        "all-solutions-without-a",
        {"solvers": ["org.minizinc.mip.scip"], "all_solutions": True},
        "unsupported_feature",
        ["-a"],
    ),
    (
        "beyond-capacity",
        {"models": [OPT_MODEL, SAT_MODEL, EASY_N_MODEL], "seed_count": 8},
        "invalid_request",
        ["24", "retry"],
    ),
]


async def test_invalid_portfolios_are_refused_before_anything_runs(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        # One real race first, so "unchanged" compares non-empty lists.
        first = await call_ok(session, "submit_portfolio_job", BASE)
        done, _ = await wait_job(session, first["job_id"], tool="get_portfolio_job")
        assert done["state"] == "succeeded"
        solve_before = await solve_job_ids(session)
        portfolio_before = await portfolio_job_ids(session)
        assert solve_before == done["attempt_job_ids"] and portfolio_before == [done["job_id"]]
        for case, change, category, fragments in PORTFOLIO_ERRORS:
            error = await call_error(session, "submit_portfolio_job", {**BASE, **change})
            assert error.category == category, f"{case}: {error.text}"
            for fragment in fragments:
                assert fragment in error.message, f"{case}: {fragment!r} not in {error.message!r}"
            assert await solve_job_ids(session) == solve_before, f"{case}: solve jobs were created"
            assert await portfolio_job_ids(session) == portfolio_before, f"{case}: a portfolio job was created"
        assert not solver_procs(marker), "a refused race started a process"
        for tool in ("get_portfolio_job", "cancel_portfolio_job"):
            error = await call_error(session, tool, {"job_id": "0123456789abcdef0123456789abcdef"})
            assert error.category == "invalid_request", error.text


# ---- cancellation ----------------------------------------------------------------------


async def test_cancel_a_running_race_stops_every_attempt(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        other = HARD_MODEL + "constraint q[1] < q[2];\n"
        submitted = await call_ok(
            session,
            "submit_portfolio_job",
            {"models": [HARD_MODEL, other], "solvers": ["gecode"], "seeds": [7, 8, 9], "per_attempt_timeout_ms": 60000},
        )
        assert len(submitted["attempt_job_ids"]) == 6
        procs = await anyio.to_thread.run_sync(wait_for_solver_procs, marker, 15.0, "fzn-gecode")
        assert procs, "no attempt reached its solver: the scan would prove nothing"
        jobs = await attempt_jobs(session, submitted)
        assert [job["state"] for job in jobs] == ["running"] * 4 + ["queued"] * 2

        with anyio.fail_after(10):
            cancelled = await call_ok(session, "cancel_portfolio_job", {"job_id": submitted["job_id"]})
        left = solver_procs(marker)
        assert not left, f"alive right after cancel_portfolio_job returned: {describe(left)}"
        check_portfolio_job(cancelled)
        assert cancelled["state"] == "cancelled", cancelled
        assert cancelled["result"] is None
        assert cancelled["diagnostic"]["category"] == "cancelled"

        jobs = await attempt_jobs(session, submitted)
        assert [job["state"] for job in jobs] == ["cancelled"] * 6, [job["state"] for job in jobs]
        assert all(job["started_at"] is None for job in jobs[4:]), "a queued attempt started"
        assert all(job["result"] is None for job in jobs)

        assert await call_ok(session, "cancel_portfolio_job", {"job_id": submitted["job_id"]}) == cancelled
        assert await call_ok(session, "get_portfolio_job", {"job_id": submitted["job_id"]}) == cancelled
        assert await portfolio_job_ids(session) == [submitted["job_id"]]
        assert not solver_procs(marker)


async def test_only_the_newest_finished_races_are_retained(harness):
    env, _ = harness.tagged_env(SOLVERGATE_MAX_RETAINED_TERMINAL="2")
    async with harness.open("full", env=env) as launched:
        session = launched.session
        ids = []
        for _ in range(3):
            job = await call_ok(session, "submit_portfolio_job", BASE)
            status, _ = await wait_job(session, job["job_id"], tool="get_portfolio_job")
            assert status["state"] == "succeeded"
            ids.append(job["job_id"])
        assert await portfolio_job_ids(session) == ids[1:]
        error = await call_error(session, "get_portfolio_job", {"job_id": ids[0]})
        assert error.category == "invalid_request", error.text
        assert ids[0] in error.message
        kept = await call_ok(session, "get_portfolio_job", {"job_id": ids[1]})
        assert kept["result"]["winner"]["status"] == "optimal", "a retained race keeps its result"
