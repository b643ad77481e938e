"""The correction corpus (tests/corpus/corrections.json) through the real
client, on each runtime: every case comes back OPTIMAL with exactly the
fields a person would correct, each with its observed and corrected
value, and the equations that must stay violated (and no others). The
text part of a correction is snapshotted in tests/mcp_text.rs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import result_text

pytestmark = pytest.mark.anyio

CORPUS = json.loads((Path(__file__).resolve().parents[1] / "corpus" / "corrections.json").read_text())


def cases() -> list:
    return [
        pytest.param(case, id=case["name"], marks=[pytest.mark.skip(reason=case["open"])] if "open" in case else [])
        for case in CORPUS["cases"]
    ]


@pytest.mark.parametrize("case", cases())
async def test_the_correction_a_person_expects(full, case):
    result = await full.session.call_tool("correct_values", case["request"])
    assert not result.is_error, result_text(result)
    data = result.structured_content
    expect = case["expect"]
    assert data["status"] == "OPTIMAL", (case["name"], data["status"], data["diagnostic"], data["corrected"])
    changed = {name: [value["observed"], value["corrected"]] for name, value in data["changed"].items()}
    assert changed == expect["changed"], (case["name"], data["corrected"])
    for name, value in expect.get("corrected", {}).items():
        assert data["corrected"][name] == value, (case["name"], data["corrected"])
    assert [v["place"] for v in data["violations"]] == expect.get("violated", []), data["violations"]
    assert data["solver"] == "org.gecode.gecode" and data["diagnostic"] is None, data


async def test_a_failing_solver_shows_its_own_error_not_its_warnings(full):
    """Chuffed cannot hold the correction model's ±2·10⁹ domains: it prints a
    harmless warning, then fails an assertion. The diagnostic shows the
    failure and what to do, not the warning."""
    solvers = (await full.session.call_tool("list_available_solvers", {})).structured_content["solvers"]
    if not any(solver["id"] == "org.chuffed.chuffed" and solver["available"] for solver in solvers):
        pytest.skip("this runtime has no Chuffed")
    case = next(case for case in CORPUS["cases"] if case["name"] == "invoice_total_misread")
    result = await full.session.call_tool("correct_values", {**case["request"], "solver": "chuffed"})
    data = result.structured_content
    assert data["status"] == "UNKNOWN", data
    message = data["diagnostic"]["message"]
    assert "Assertion" in message and "omit solver to use Gecode" in message, message
    assert "WARNING" not in message and "--time-out" not in message, message
