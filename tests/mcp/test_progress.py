"""Progress notifications (with a token) and log notifications."""

from __future__ import annotations

import pytest

from helpers import OPT_MODEL, SYNTAX_ERROR_MODEL, structured

pytestmark = pytest.mark.anyio

CALLS = [
    ("solve_minizinc_model", {"model": OPT_MODEL}),
    ("check_minizinc_model", {"model": OPT_MODEL}),
    ("inspect_minizinc_model", {"model": OPT_MODEL}),
    ("solve_minizinc_model", {"model": SYNTAX_ERROR_MODEL}),
]


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=["solve", "check", "inspect", "solve-error"])
async def test_progress_stages_arrive_in_order(full, tool, arguments):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await full.session.call_tool(tool, arguments, progress_callback=on_progress)
    structured(result)
    assert [p for p, _, _ in seen] == [1, 2, 3, 4], seen
    assert all(total is None for _, total, _ in seen), "total is deliberately omitted"
    assert all(message and message.strip() for _, _, message in seen), seen
    assert "finished" in seen[-1][2]


async def test_solve_progress_names_the_solver_and_status(full):
    seen: list[str] = []

    async def on_progress(progress, total, message):
        seen.append(message)

    res = structured(
        await full.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}, progress_callback=on_progress)
    )
    assert "org.gecode.gecode" in seen[1]
    assert res["status"] in seen[3]


async def test_refused_call_reports_no_later_stage(full):
    seen: list[float] = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    result = await full.session.call_tool(
        "solve_minizinc_model", {"model": OPT_MODEL, "timeout_ms": 0}, progress_callback=on_progress
    )
    assert result.is_error
    assert 4 not in seen and 2 not in seen, seen


async def test_call_without_progress_token_works(full):
    res = structured(await full.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}))
    assert res["status"] == "optimal"


async def test_log_notifications_carry_the_milestones(harness):
    async with harness.open("full") as launched:
        structured(await launched.session.call_tool("solve_minizinc_model", {"model": OPT_MODEL}))
        messages = [str(log.data) for log in launched.logs if str(log.level) .endswith("info")]
        assert any("solve_minizinc_model" in m and "solving" in m for m in messages), launched.logs
        assert any("finished" in m for m in messages), launched.logs
