"""Which attempt wins a race, and what a race cannot do to the server.

- On a maximisation that no attempt proves within its budget, the default
  `best_objective` policy returns the better formulation every time, with
  both objectives in the attempts table; `first_decisive` keeps the
  reference's rule (the first `satisfied` attempt wins).
- With retention 1 the winner is still reported: the coordinator keeps the
  final snapshots it receives instead of re-reading evicted jobs.
- Plans too large to run are refused with `invalid_request` before anything
  is allocated, and the server keeps answering.
- A solve that panics (a debug-build test hook) ends `failed` or as an error
  result, and frees its slot.
- List tools return summaries, small even with 64 retained jobs.
"""

from __future__ import annotations

import json

import anyio
import pytest

from helpers import (
    OPT_MODEL,
    SAT_MODEL,
    call_error,
    call_ok,
    check_solve_job,
    list_jobs,
    rfc3339,
    solve_job_ids,
    solver_procs,
    structured,
    wait_job,
)

pytestmark = pytest.mark.anyio

GECODE = "org.gecode.gecode"

# One instance, two formulations that differ only in value ordering: trying
# large values first finds a far better incumbent within the budget than
# trying small values first. Neither proves optimality in 2 s.
RACE_INSTANCE = """int: n = 50;
array[1..n] of int: w = [ (i * 37) mod 23 + 5 | i in 1..n ];
array[1..n] of int: v = [ (i * 53) mod 31 + 3 | i in 1..n ];
array[1..n] of var 0..3: x;
constraint sum(i in 1..n)(w[i] * x[i]) <= 800;
var int: value = sum(i in 1..n)(v[i] * x[i]);
"""
GOOD_ORDER = RACE_INSTANCE + "solve :: int_search(x, input_order, indomain_max) maximize value;\n"
POOR_ORDER = RACE_INSTANCE + "solve :: int_search(x, input_order, indomain_min) maximize value;\n"
RACE = {"models": [POOR_ORDER, GOOD_ORDER], "solvers": ["gecode"], "per_attempt_timeout_ms": 2000}


async def run_race(session, **extra) -> dict:
    submitted = await call_ok(session, "submit_portfolio_job", {**RACE, **extra})
    status, _ = await wait_job(session, submitted["job_id"], tool="get_portfolio_job", timeout=30)
    assert status["state"] == "succeeded", status
    return status["result"]


async def test_best_objective_returns_the_better_incumbent_every_time(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        for run in range(5):
            result = await run_race(launched.session)
            attempts = result["attempts"]
            assert [row["status"] for row in attempts] == ["satisfied", "satisfied"], f"run {run}: {attempts}"
            assert [row["state"] for row in attempts] == ["succeeded", "succeeded"], f"run {run}: {attempts}"
            poor, good = (row["objective"] for row in attempts)
            assert isinstance(poor, int) and isinstance(good, int), attempts
            assert good > poor, f"run {run}: the orderings did not separate: {attempts}"
            assert result["winner_index"] == 1, f"run {run}: the poorer incumbent won: {attempts}"
            assert result["winner"]["objective"] == good
            assert result["winner_policy"] == "best_objective"
            assert result["selection_policy"].startswith("best_objective:")
        assert not solver_procs(marker)


async def test_first_decisive_keeps_the_reference_rule(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        result = await run_race(session, winner_policy="first_decisive")
        assert result["winner_policy"] == "first_decisive"
        assert result["selection_policy"].startswith("first_decisive:")
        index = result["winner_index"]
        winner = result["attempts"][index]
        assert winner["status"] == "satisfied" and winner["state"] == "succeeded", result["attempts"]
        other = result["attempts"][1 - index]
        # The loser was cancelled, or had finished (satisfied) an instant
        # later; never did the race wait to compare objectives.
        assert other["state"] in ("cancelled", "succeeded"), other
        if other["state"] == "succeeded":
            jobs = [await call_ok(session, "get_solve_job", {"job_id": row["job_id"]}) for row in (winner, other)]
            assert rfc3339(jobs[0]["finished_at"]) <= rfc3339(jobs[1]["finished_at"]), jobs
        error = await call_error(session, "submit_portfolio_job", {**RACE, "winner_policy": "fastest"})
        assert error.category == "invalid_request", error.text
        assert not solver_procs(marker)


async def test_retention_of_one_still_reports_the_winner(harness):
    env, _ = harness.tagged_env(SOLVERGATE_MAX_RETAINED_TERMINAL="1")
    async with harness.open("full", env=env) as launched:
        result = await run_race(launched.session)
        assert result["status"] == "winner", result
        assert result["winner_index"] == 1, result["attempts"]
        assert [row["state"] for row in result["attempts"]] == ["succeeded", "succeeded"], result["attempts"]
        assert all(isinstance(row["objective"], int) for row in result["attempts"]), result["attempts"]
        assert all(row["message"] is None for row in result["attempts"]), result["attempts"]
        # Only one attempt job is still retained; the race did not need it.
        assert len(await solve_job_ids(launched.session)) == 1


HUGE_PLANS = [
    ("seed-count-max-i64", {"seed_count": 9223372036854775807}, ["seed_count", "1000"]),
    ("seed-count-100m", {"seed_count": 100000000}, ["seed_count", "1000"]),
    ("seed-count-over-cap", {"seed_count": 1001}, ["seed_count", "1000"]),
    ("seeds-100k", {"seeds": list(range(100_000))}, ["seeds", "1000"]),
    ("parallel-huge", {"parallel": 10**12}, ["parallel", "256"]),
    ("beyond-capacity", {"seed_count": 1000}, ["1000 attempts", "retry"]),
]


async def test_huge_plans_are_refused_and_the_server_keeps_answering(harness):
    env, marker = harness.tagged_env()
    async with harness.open("full", env=env) as launched:
        session = launched.session
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        published = tools["submit_portfolio_job"].input_schema
        schema = published["properties"]
        assert schema["seed_count"]["maximum"] == 1000, schema["seed_count"]
        assert schema["seeds"]["maxItems"] == 1000, schema["seeds"]
        assert schema["parallel"]["maximum"] == 256, schema["parallel"]
        policy = schema["winner_policy"]
        if "$ref" in policy:
            policy = published["$defs"][policy["$ref"].rsplit("/", 1)[-1]]
        assert set(policy["enum"]) == {"best_objective", "first_decisive"}, policy
        base = {"models": [OPT_MODEL], "solvers": ["gecode"], "per_attempt_timeout_ms": 5000}
        for case, change, fragments in HUGE_PLANS:
            with anyio.fail_after(20):
                error = await call_error(session, "submit_portfolio_job", {**base, **change})
            assert error.category == "invalid_request", f"{case}: {error.text}"
            for fragment in fragments:
                assert fragment in error.message, f"{case}: {fragment!r} not in {error.message!r}"
            assert await solve_job_ids(session) == [], f"{case}: attempts were admitted"
            # Still answering, at once.
            with anyio.fail_after(10):
                solved = await call_ok(session, "solve_minizinc_model", {"model": SAT_MODEL, "solver": "gecode"})
            assert solved["status"] == "satisfied", f"{case}: {solved}"
        error = await call_error(session, "solve_minizinc_model", {"model": SAT_MODEL, "parallel": 10**12})
        assert error.category == "invalid_request" and "256" in error.message, error.text
        assert not solver_procs(marker)


PANIC_MODEL = "% solvergate-test-hook: panic\nvar 1..3: x;\nsolve satisfy;\n"


async def test_a_panicking_solve_fails_and_frees_its_slot(harness):
    env, marker = harness.tagged_env(SOLVERGATE_TEST_HOOKS="1", SOLVERGATE_MAX_RUNNING_JOBS="1")
    async with harness.open("full", env=env) as launched:
        session = launched.session
        doomed = await call_ok(session, "submit_solve_job", {"model": PANIC_MODEL, "solver": "gecode"})
        after = await call_ok(session, "submit_solve_job", {"model": SAT_MODEL, "solver": "gecode"})
        failed, _ = await wait_job(session, doomed["job_id"], timeout=10)
        assert failed["state"] == "failed", failed
        assert "panicked" in failed["message"] and "test hook" in failed["message"], failed
        assert failed["diagnostic"]["category"] == "job_failed", failed
        done, _ = await wait_job(session, after["job_id"], timeout=20)
        assert done["state"] == "succeeded" and done["result"]["status"] == "satisfied", done

        # A synchronous call that panics answers with an error result.
        with anyio.fail_after(10):
            error = await call_error(session, "solve_minizinc_model", {"model": PANIC_MODEL, "solver": "gecode"})
        assert error.category == "unknown", error.text
        assert "internal error" in error.message and "test hook" in error.message, error.text

        # A race with a panicking formulation: that attempt fails, the other wins.
        submitted = await call_ok(
            session,
            "submit_portfolio_job",
            {"models": [PANIC_MODEL, SAT_MODEL], "solvers": ["gecode"], "per_attempt_timeout_ms": 5000},
        )
        status, _ = await wait_job(session, submitted["job_id"], tool="get_portfolio_job", timeout=20)
        result = status["result"]
        assert [row["state"] for row in result["attempts"]] == ["failed", "succeeded"], result["attempts"]
        assert result["winner_index"] == 1 and result["winner"]["status"] == "satisfied", result
        with anyio.fail_after(10):
            assert (await call_ok(session, "solve_minizinc_model", {"model": SAT_MODEL}))["status"] == "satisfied"
        assert not solver_procs(marker)


# Every solution of this model prints a wide line: each finished job holds a
# result of a few hundred kilobytes.
CHATTY_MODEL = "array[1..8] of var 0..2: x;\nsolve satisfy;\noutput [show(x), \"\\n\"];\n"


async def test_lists_are_summaries_even_with_64_retained_jobs(harness):
    env, _ = harness.tagged_env(SOLVERGATE_MAX_RUNNING_JOBS="4", SOLVERGATE_MAX_QUEUED_JOBS="60")
    async with harness.open("full", env=env) as launched:
        session = launched.session
        arguments = {"model": CHATTY_MODEL, "solver": "gecode", "all_solutions": True, "timeout_ms": 20000}
        ids = [(await call_ok(session, "submit_solve_job", arguments))["job_id"] for _ in range(64)]
        for job_id in ids:
            job, _ = await wait_job(session, job_id, timeout=120)
            assert job["state"] == "succeeded", job
        one = await call_ok(session, "get_solve_job", {"job_id": ids[0]})
        check_solve_job(one)
        full_size = len(json.dumps(one))
        assert full_size > 100_000, f"the chatty job is not chatty ({full_size} bytes): the bound proves nothing"

        reply = await session.call_tool("list_solve_jobs", {})
        rows = await list_jobs(session, "list_solve_jobs", "solve")
        assert [row["job_id"] for row in rows] == ids
        assert all(row["status"] == "satisfied" for row in rows), rows[:3]
        size = len(json.dumps(structured(reply))) + sum(len(part.text) for part in reply.content)
        assert size < 64 * 1024, f"list_solve_jobs answered {size} bytes for 64 jobs"
