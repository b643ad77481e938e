"""The race as a picture (issue 27), through the official client:
`include_plot` on `get_portfolio_job` and `get_solve_job` adds an image part
that decodes as an SVG of the stated size, one line per attempt with the
winner's drawn thick, and says so in the text; a job with nothing timed to
draw says that instead; a bad `include_plot` is refused like any argument.
"""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET

import pytest

from helpers import HARD_MODEL, SAT_MODEL, call_error, call_ok, result_text, structured, wait_job

pytestmark = pytest.mark.anyio

SVG = "{http://www.w3.org/2000/svg}"


def image_parts(result) -> list:
    return [part for part in result.content if getattr(part, "type", None) == "image"]


def decoded_svg(part) -> ET.Element:
    assert part.mime_type == "image/svg+xml", part.mime_type
    return ET.fromstring(base64.b64decode(part.data))


async def test_a_race_is_drawn_with_its_winner_marked(full):
    race = await call_ok(
        full.session,
        "submit_portfolio_job",
        {"models": [HARD_MODEL], "solvers": ["gecode"], "seeds": [1, 2], "per_attempt_timeout_ms": 2500},
    )
    done, _ = await wait_job(full.session, race["job_id"], tool="get_portfolio_job", timeout=60)
    assert done["state"] == "succeeded" and done["result"]["winner_index"] is not None, done
    result = await full.session.call_tool("get_portfolio_job", {"job_id": race["job_id"], "include_plot": True})
    assert structured(result) == done, "the plot changes nothing of the status"
    (image,) = image_parts(result)
    svg = decoded_svg(image)
    assert (svg.get("width"), svg.get("height")) == ("640", "400")
    lines = [line for line in svg.iter(f"{SVG}polyline") if line.get("stroke-width") == "3"]
    assert len(lines) == 2, "the winner's line and its legend mark are drawn thick"
    texts = [(text.text or "").strip() for text in svg.iter(f"{SVG}text")]
    winner = done["result"]["winner_index"]
    assert f"attempt {winner} (gecode) — winner" in texts, texts
    assert f"attempt {1 - winner} (gecode)" in texts, texts
    assert last_line(result) == "plot: the objective over time of 2 attempt(s), image/svg+xml 640×400", result_text(result)[-300:]
    # Without include_plot: no image, the text as before.
    plain = await full.session.call_tool("get_portfolio_job", {"job_id": race["job_id"]})
    assert image_parts(plain) == [] and "plot:" not in result_text(plain)


def last_line(result) -> str:
    """The text's last line before the one naming the kept result."""
    lines = [line for line in result_text(result).splitlines() if not line.startswith("Whole result: ")]
    return lines[-1]


async def test_a_solve_job_is_drawn_and_one_with_nothing_timed_says_so(full):
    job = await call_ok(full.session, "submit_solve_job", {"model": HARD_MODEL, "timeout_ms": 2500})
    await wait_job(full.session, job["job_id"], timeout=60)
    result = await full.session.call_tool("get_solve_job", {"job_id": job["job_id"], "include_plot": True})
    (image,) = image_parts(result)
    svg = decoded_svg(image)
    points = [line.get("points") for line in svg.iter(f"{SVG}polyline") if line.get("stroke-width") == "1"]
    assert any(len(re.findall(r"\d+,\d+", p)) >= 2 for p in points), "the solve's line has its points"

    satisfy = await call_ok(full.session, "submit_solve_job", {"model": SAT_MODEL})
    await wait_job(full.session, satisfy["job_id"])
    nothing = await full.session.call_tool("get_solve_job", {"job_id": satisfy["job_id"], "include_plot": True})
    assert image_parts(nothing) == []
    assert last_line(nothing) == (
        "plot: none — no attempt has timed objectives yet (a satisfaction model, a job still queued,"
        " or all_solutions, which records no times)"
    )
    error = await call_error(full.session, "get_solve_job", {"job_id": satisfy["job_id"], "include_plot": "yes"})
    assert (error.category, error.message) == (
        "invalid_request",
        'invalid arguments: include_plot: invalid type: string "yes", expected a boolean',
    ), error
