"""The load planner through the real client on the real runtime: cohorts
where air, full containers or the optimised mix win, an infeasible one,
the cheapest mix of container types as the packer fills them, the plan in
words (each order's mode and why), the narration guard on a real stored
result (thousands separators too), determinism and the disk store across
processes, the complete input the server offers, and bad input (a missing
field's shape).
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers import call_error, call_ok, kept_whole

pytestmark = pytest.mark.anyio

RATES = {
    "air": {"per_kg": 4.2, "min_charge": 150, "volumetric_divisor": 6000, "transit_days": 3},
    "lcl": {"per_cbm": 85, "min_cbm": 1, "transit_days": 30},
    "fcl": {
        "transit_days": 28,
        "containers": [
            {"type": "20GP", "length_cm": 589, "width_cm": 235, "height_cm": 239, "max_payload_kg": 28000, "price": 1800},
            {"type": "40HC", "length_cm": 1203, "width_cm": 235, "height_cm": 269, "max_payload_kg": 26500, "price": 2900},
        ],
    },
}


def pallets(count: int, height: int = 110, kg: float = 300, stackable: bool = False) -> list[dict]:
    return [{"length_cm": 120, "width_cm": 80, "height_cm": height, "weight_kg": kg, "count": count, "stackable": stackable}]


URGENT = {
    "orders": [
        {"id": "U-1", "deadline_days": 5, "pallets": pallets(1, kg=120)},
        {"id": "U-2", "deadline_days": 6, "pallets": pallets(2, kg=90)},
    ],
    "rates": RATES,
}
BULK = {
    "orders": [
        {"id": "B-1", "deadline_days": 60, "pallets": pallets(30, stackable=True, kg=400)},
        {"id": "B-2", "deadline_days": 70, "pallets": pallets(10, stackable=True, kg=400)},
    ],
    "rates": RATES,
}
MIXED = {
    "orders": [
        {"id": "M-AIR", "deadline_days": 5, "pallets": pallets(1, kg=150)},
        {"id": "M-FCL", "deadline_days": 50, "pallets": pallets(36, stackable=True, kg=350)},
        # Too tall for any container: LCL or air only.
        {"id": "M-LCL", "deadline_days": 60, "pallets": pallets(1, height=280, kg=80)},
    ],
    "rates": RATES,
}
INFEASIBLE = {
    "orders": [{"id": "LATE", "deadline_days": 2, "pallets": pallets(1)}],
    "rates": RATES,
}
CARD_NAMES = ["all_air", "all_lcl", "all_fcl", "optimised"]
# The cost-only optimum breaks the policy: P-TIGHT (deadline 33) rides in
# the containers with P-LONG, so the container shipment's tightest deadline
# is 33 days and it misses with 0.1; with the air order's 0.03 the plan
# misses with 1 - 0.97 * 0.9 = 0.127 > 0.1. Within the policy: P-TIGHT by
# air, P-LONG still by container (its own deadline leaves 22 days of slack).
POLICY_BINDS = {
    "orders": [
        {"id": "P-AIR", "deadline_days": 6, "pallets": pallets(1, kg=150)},
        {"id": "P-TIGHT", "deadline_days": 33, "pallets": pallets(2, kg=300)},
        {"id": "P-LONG", "deadline_days": 50, "pallets": pallets(36, stackable=True, kg=350)},
    ],
    "rates": RATES,
    "policy": {"max_miss_probability": 0.1},
}
# No plan meets a policy of 0.05: N-AIR can only fly, and by air its 4-day
# deadline is missed with 0.08.
NO_PLAN_MEETS = {
    "orders": [
        {"id": "N-AIR", "deadline_days": 4, "pallets": pallets(1, kg=120)},
        {"id": "N-TIGHT", "deadline_days": 33, "pallets": pallets(2, kg=300)},
        {"id": "N-LONG", "deadline_days": 50, "pallets": pallets(36, stackable=True, kg=350)},
    ],
    "rates": RATES,
    "policy": {"max_miss_probability": 0.05},
}


@pytest.fixture(scope="module")
async def server(harness):
    async with harness.open("full") as launched:
        yield launched


def signed_zeros(value, at: str = "") -> list[str]:
    """Where a structured result holds a -0.0."""
    if isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0:
        return [at]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in signed_zeros(item, f"{at}.{key}")]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in signed_zeros(item, f"{at}[{index}]")]
    return []


#: A signed zero written as a number (`-0`, `-0.0`), not inside an id
#: such as SO-00001.
SIGNED_ZERO_TEXT = re.compile(r"(?<![\w-])-0(?:\.0+)?(?![\w.])")


async def plan(session, problem: dict) -> dict:
    reply = await session.call_tool("plan_load", {"problem": problem})
    assert not reply.is_error, reply.content
    planned = reply.structured_content
    # No signed zero anywhere, in the result or its text part.
    assert signed_zeros(planned) == [], signed_zeros(planned)
    assert not SIGNED_ZERO_TEXT.search(reply.content[0].text), reply.content[0].text
    assert planned["result_id"] == planned["content_hash"]
    assert len(planned["result_id"]) == 64
    result = planned["result"]
    assert [card["name"] for card in result["cards"]] == CARD_NAMES
    for card in result["cards"]:
        if card["feasible"]:
            assert card["checker"] == "CORRECT", card
            assert card["cost"]["total"] == pytest.approx(
                card["cost"]["air"] + card["cost"]["lcl"] + card["cost"]["fcl"]
            ), card
            assert 0 <= card["miss_probability"] <= 1
            # The containers booked cost no more than any one type alone,
            # as the packer fills it with the card's FCL pallets.
            alone = [each["cost"] for each in card["single_type_costs"] if each["cost"] is not None]
            assert bool(card["containers"]) == bool(card["single_type_costs"]), card
            if card["containers"]:
                assert alone and card["cost"]["fcl"] <= min(alone), card
            # Each shipment's orders, in groups with a reason; ten named.
            for shipment in card["shipments"]:
                groups = shipment["why"]
                assert sum(group["orders"] for group in groups) == shipment["orders"], shipment
                assert all(len(group["named"]) + group["more"] == group["orders"] for group in groups), shipment
                assert sum(len(group["named"]) for group in groups) == min(10, shipment["orders"]), shipment
        else:
            assert card["infeasible_reason"], card
    # The optimised plan is never worse than a feasible single-mode plan
    # (it is bounded by the best of them, and falls back to it).
    singles = [c["cost"]["total"] for c in result["cards"][:3] if c["feasible"]]
    optimised = result["cards"][3]
    if singles:
        assert optimised["feasible"] and optimised["cost"]["total"] <= min(singles), result["cards"]
    recommended = [card["name"] for card in result["cards"] if card["recommended"]]
    assert recommended == ([result["recommended"]] if result["recommended"] else []), result
    assert len(set(result["notes"])) == len(result["notes"]), result["notes"]
    return planned


def cards(result: dict) -> dict[str, dict]:
    return {card["name"]: card for card in result["result"]["cards"]}


async def test_an_urgent_cohort_goes_by_air(server):
    planned = await plan(server.session, URGENT)
    by_name = cards(planned)
    assert planned["result"]["recommended"] == "all_air", by_name
    assert by_name["all_air"]["feasible"] and not by_name["all_lcl"]["feasible"] and not by_name["all_fcl"]["feasible"]
    assert by_name["optimised"]["modes"] == {"U-1": "air", "U-2": "air"}
    assert by_name["all_air"]["cost"]["air"] > 0 and by_name["all_air"]["cost"]["fcl"] == 0


async def test_a_bulk_cohort_goes_by_full_container(server):
    planned = await plan(server.session, BULK)
    by_name = cards(planned)
    assert planned["result"]["recommended"] in ("all_fcl", "optimised"), by_name
    recommended = by_name[planned["result"]["recommended"]]
    assert set(recommended["modes"].values()) == {"fcl"}, recommended
    assert recommended["containers"], recommended
    assert by_name["all_fcl"]["cost"]["total"] < by_name["all_lcl"]["cost"]["total"] < by_name["all_air"]["cost"]["total"]
    assert 0 < recommended["fill_rate"] <= 1
    packing = {row["type"]: row for row in planned["result"]["packing"]}
    assert set(packing) == {"20GP", "40HC"} and all(row["unplaceable"] == [] for row in packing.values())
    assert all(row["unplaceable_pallets"] == 0 for row in packing.values())


async def test_a_mixed_cohort_is_cheapest_as_a_mix(server):
    planned = await plan(server.session, MIXED)
    by_name = cards(planned)
    optimised = by_name["optimised"]
    assert planned["result"]["recommended"] == "optimised", by_name
    assert optimised["modes"] == {"M-AIR": "air", "M-FCL": "fcl", "M-LCL": "lcl"}, optimised
    for name in ("all_air", "all_lcl", "all_fcl"):
        card = by_name[name]
        if card["feasible"]:
            assert optimised["cost"]["total"] < card["cost"]["total"], (name, card["cost"])
    assert {s["mode"] for s in optimised["shipments"]} == {"air", "lcl", "fcl"}
    notes = planned["result"]["notes"]
    assert any("M-LCL" in note and "fits no container" in note for note in notes), notes


async def test_a_cohort_no_mode_can_carry_is_reported_infeasible(server):
    planned = await call_ok(server.session, "plan_load", {"problem": INFEASIBLE})
    result = planned["result"]
    assert result["recommended"] is None
    assert all(not card["feasible"] and card["status"] == "unsatisfiable" for card in result["cards"]), result["cards"]
    assert any("LATE" in note for note in result["notes"]), result["notes"]
    explained = await call_ok(server.session, "explain_load_plan", {"result_id": planned["result_id"]})
    assert explained["narration"].startswith("No plan is feasible"), explained
    assert explained["check"]["ok"] is True


async def test_the_policy_is_a_constraint_of_the_optimisation_not_a_filter_after_it(server):
    planned = await plan(server.session, POLICY_BINDS)
    result = planned["result"]
    by_name = cards(planned)
    recommended = by_name[result["recommended"]]
    assert recommended["within_policy"] and recommended["miss_probability"] <= 0.1, recommended
    # Cheaper than every single-mode plan within the policy (here all_air;
    # the other two cannot carry P-AIR in time).
    within = [by_name[name] for name in ("all_air", "all_lcl", "all_fcl") if by_name[name]["within_policy"]]
    assert [card["name"] for card in within] == ["all_air"], by_name
    assert by_name["all_air"]["cost"]["total"] == 56070.0, by_name["all_air"]
    for card in within:
        assert recommended["cost"]["total"] < card["cost"]["total"], (recommended["cost"], card["name"], card["cost"])
    optimised = by_name["optimised"]
    assert result["recommended"] == "optimised", by_name
    assert optimised["objective"] == "cheapest_within_policy", optimised
    assert optimised["modes"] == {"P-AIR": "air", "P-TIGHT": "air", "P-LONG": "fcl"}, optimised
    assert optimised["cost"] == {"air": 3150.0, "lcl": 0.0, "fcl": 2900.0, "total": 6050.0}, optimised
    assert optimised["miss_probability"] == 0.03, optimised
    assert [(s["mode"], s["orders"], s["miss_probability"]) for s in optimised["shipments"]] == [
        ("air", 2, 0.03),
        ("fcl", 1, 0.0),
    ], optimised["shipments"]
    assert not any("least risky" in note for note in result["notes"]), result["notes"]


async def test_no_plan_meets_the_policy_so_the_least_risky_is_recommended_and_said_so(server):
    planned = await plan(server.session, NO_PLAN_MEETS)
    result = planned["result"]
    by_name = cards(planned)
    assert not any(card["within_policy"] for card in by_name.values()), by_name
    optimised = by_name["optimised"]
    assert result["recommended"] == "optimised", by_name
    assert optimised["objective"] == "least_risky", optimised
    # The least risky: the air order's 0.08 is unavoidable, every other
    # order travels with no chance of a miss — and of those plans the
    # cheapest (N-LONG by container, not by air).
    assert optimised["modes"] == {"N-AIR": "air", "N-TIGHT": "air", "N-LONG": "fcl"}, optimised
    assert optimised["miss_probability"] == 0.08, optimised
    assert optimised["cost"]["total"] == 5924.0, optimised
    assert by_name["all_air"]["miss_probability"] == 0.08
    assert optimised["cost"]["total"] < by_name["all_air"]["cost"]["total"]
    assert any("no plan meets the policy" in note and "least risky" in note for note in result["notes"]), result["notes"]
    explained = await call_ok(server.session, "explain_load_plan", {"result_id": planned["result_id"]})
    assert "least risky" in explained["narration"] and "no plan meets the policy" in explained["narration"], explained
    assert explained["check"]["ok"] is True


async def test_at_the_policys_very_bound_the_exact_figure_decides(server):
    # One air order whose deadline is missed with exactly 0.03, under a
    # policy of 0.03: the model's rounding (terms up, budget down) refuses
    # the plan, the exact figure admits it — the optimised card is then the
    # single-mode plan the exact figure puts within the policy, said so.
    problem = {
        "orders": [{"id": "EDGE", "deadline_days": 6, "pallets": pallets(1, kg=120)}],
        "rates": RATES,
        "policy": {"max_miss_probability": 0.03},
    }
    planned = await plan(server.session, problem)
    result = planned["result"]
    by_name = cards(planned)
    assert by_name["all_air"]["miss_probability"] == 0.03 and by_name["all_air"]["within_policy"], by_name
    optimised = by_name["optimised"]
    assert optimised["within_policy"] and optimised["modes"] == {"EDGE": "air"}, optimised
    assert optimised["objective"] == "cheapest_within_policy" and optimised["status"] == "satisfied", optimised
    assert result["recommended"] == "all_air", result
    assert any("rounding" in note and "all_air" in note for note in result["notes"]), result["notes"]


async def test_a_policy_that_bounds_nothing_leaves_the_cost_only_optimum(server):
    problem = copy.deepcopy(POLICY_BINDS)
    problem["policy"] = {"max_miss_probability": 1.0}
    planned = await plan(server.session, problem)
    optimised = cards(planned)["optimised"]
    assert planned["result"]["recommended"] == "optimised"
    assert optimised["objective"] == "cheapest", optimised
    assert optimised["modes"] == {"P-AIR": "air", "P-TIGHT": "fcl", "P-LONG": "fcl"}, optimised
    assert optimised["miss_probability"] == 0.127, optimised
    assert optimised["within_policy"] is True


async def test_the_guard_on_a_real_result(server):
    planned = await plan(server.session, MIXED)
    result_id = planned["result_id"]
    optimised = cards(planned)["optimised"]
    total = optimised["cost"]["total"]
    air = optimised["cost"]["air"]
    miss = optimised["miss_probability"]

    explained = await call_ok(server.session, "explain_load_plan", {"result_id": result_id})
    assert explained["check"] == {"ok": True, "offending": [], "tokens_checked": explained["check"]["tokens_checked"]}
    assert explained["narration"].startswith("Recommended plan: optimised.")
    assert json.dumps(total) in explained["narration"]

    def shown(value: float) -> str:
        return json.dumps(value)

    rounded = str(round(total, -2) + (100 if round(total, -2) == total else 0)).rstrip("0").rstrip(".")
    percent = f"{miss * 100:.2f}%"
    summed = shown(round(total + air, 2))
    rejected = [
        (f"About {rounded} in total.", rounded),
        (f"A {percent} chance of a miss.", percent.rstrip("%")),
        (f"Air and total together: {summed}.", summed),
        ("It saves 12345 compared with sea.", "12345"),
    ]
    for narration, token in rejected:
        check = await call_ok(server.session, "verify_narration", {"narration": narration, "result_id": result_id})
        assert check["ok"] is False and token in check["offending"], (narration, check)
    allowed = [
        f"The optimised plan costs {shown(total)} with a miss chance of {shown(miss)}.",
        "The eta_p90_days figure names 90, and order M-FCL is one of them.",
        f"Solved with {planned['result']['solver']}.",
    ]
    for narration in allowed:
        check = await call_ok(server.session, "verify_narration", {"narration": narration, "result_id": result_id})
        assert check["ok"] is True, (narration, check)


async def test_the_same_cohort_gives_the_same_id_in_another_process_and_the_store_survives(harness, tmp_path):
    async with harness.open("full") as first:
        planned = await call_ok(first.session, "plan_load", {"problem": MIXED})
    async with harness.open("full") as second:
        explained = await call_ok(second.session, "explain_load_plan", {"result_id": planned["result_id"]})
        assert explained["check"]["ok"] is True
        again = await call_ok(second.session, "plan_load", {"problem": copy.deepcopy(MIXED)})
        assert again["result_id"] == planned["result_id"]
        assert again["result"] == planned["result"]

        stored = Path(harness.env["XDG_DATA_HOME"]) / "solvergate" / "planner" / f"{planned['result_id']}.json"
        assert stored.is_file(), stored
        text = stored.read_text()
        assert '"rates"' not in text and '"per_kg"' not in text, "the store holds the problem"
        stored.write_text(text.replace('"recommended":true', '"recommended":false', 1))
        error = await call_error(second.session, "explain_load_plan", {"result_id": planned["result_id"]})
        assert error.category == "not_verified" and "tampered" in error.message, error.text
        error = await call_error(second.session, "verify_narration", {"narration": "x", "result_id": planned["result_id"]})
        assert error.category == "not_verified", error.text
        stored.unlink()
        error = await call_error(second.session, "explain_load_plan", {"result_id": planned["result_id"]})
        assert error.category == "invalid_request" and "no stored planner result" in error.message, error.text


def generated(harness, pallets: int) -> dict:
    """`solvergate plan --example --pallets N`: orders of 20 pallets of six
    kinds, deadlines over 6..60 days, the example's rates, policy 0.1."""
    printed = subprocess.run(
        [harness.binary, "plan", "--example", "--pallets", str(pallets)],
        capture_output=True, check=True, env=harness.env, timeout=60,
    )
    return json.loads(printed.stdout)


async def test_a_cohort_of_10000_pallets_plans_to_the_same_id_in_two_processes(harness):
    # 500 orders in 330 classes of interchangeable orders; the solves prove
    # or stop at a limit that does not depend on the machine's speed, so
    # the result is the same in another process.
    problem = generated(harness, 10_000)
    ids = []
    for _ in range(2):
        async with harness.open("full") as launched:
            planned = await plan(launched.session, problem)
        ids.append(planned["result_id"])
        result = planned["result"]
        assert result["recommended"] == "optimised", result["cards"][3]
        optimised = cards(planned)["optimised"]
        assert optimised["within_policy"] and len(optimised["modes"]) == 500, optimised["status"]
        # Long lists are cut to ten names and a count, in reasons and notes.
        for card in result["cards"]:
            if card["infeasible_reason"]:
                assert "and " in card["infeasible_reason"] and " more " in card["infeasible_reason"], card
                assert card["infeasible_reason"].count("SO-") == 10, card["infeasible_reason"]
    assert ids[0] == ids[1]


async def test_a_cohort_of_100000_pallets_plans_with_a_recommendation(harness):
    # The slow tier (once per CI pass, on the first runtime): 5,000 orders
    # through the real client, every card confirmed by the checker, the
    # text part brief, and explain and the guard on the large result.
    if not os.environ.get("SOLVERGATE_TEST_ONCE"):
        pytest.skip("the 100,000-pallet plan runs once per CI pass: set SOLVERGATE_TEST_ONCE=1 (scripts/test does, on the first runtime)")
    problem = generated(harness, 100_000)
    assert len(problem["orders"]) == 5_000
    async with harness.open("full") as launched:
        reply = await launched.session.call_tool("plan_load", {"problem": problem})
        assert not reply.is_error, reply.content
        text = reply.content[0].text
        assert len(text.encode()) <= 16 * 1024, len(text)
        # The response holds 128 KiB: every card stays, their orders give way
        # to markers; the whole plan is read from the kept result.
        shown = [card["name"] for card in reply.structured_content["result"]["cards"]]
        planned = await kept_whole(launched.session, reply)
        assert shown == [card["name"] for card in planned["result"]["cards"]]
        result = planned["result"]
        # Each mode of the recommended card names ten orders and counts the rest.
        recommended = next(card for card in result["cards"] if card["recommended"])
        for mode in {"air", "lcl", "fcl"} & set(recommended["modes"].values()):
            ids = sorted(order for order, each in recommended["modes"].items() if each == mode)
            line = f"Orders of {recommended['name']} by {mode} ({len(ids)}): {', '.join(ids[:10])}"
            if len(ids) > 10:
                line += f" and {len(ids) - 10} more"
            assert line in text.splitlines(), text
        assert result["recommended"] is not None, result["notes"]
        for card in result["cards"]:
            assert card["feasible"] == (card["checker"] == "CORRECT"), card["name"]
            if card["feasible"]:
                assert len(card["modes"]) == 5_000 and card["within_policy"] is (card["miss_probability"] <= 0.1)
            else:
                assert card["infeasible_reason"], card["name"]
        recommended = cards(planned)[result["recommended"]]
        assert recommended["feasible"] and recommended["within_policy"], recommended["status"]
        singles = [c["cost"]["total"] for c in result["cards"][:3] if c["within_policy"]]
        assert all(recommended["cost"]["total"] <= total for total in singles), singles
        # The costs are above the 32-bit cents range: solved in whole units,
        # reported exact, and said so.
        assert recommended["cost"]["total"] > 21_474_836.47, recommended["cost"]
        assert any("every cost shown is exact to the cent" in note for note in result["notes"]), result["notes"]
        explained = await call_ok(launched.session, "explain_load_plan", {"result_id": planned["result_id"]})
        assert explained["check"]["ok"] is True, explained["check"]
        assert len(explained["narration"].encode()) <= 16 * 1024
        total = recommended["cost"]["total"]
        check = await call_ok(
            launched.session, "verify_narration",
            {"narration": f"The {result['recommended']} plan costs {total}.", "result_id": planned["result_id"]},
        )
        assert check["ok"] is True, check
        check = await call_ok(
            launched.session, "verify_narration",
            {"narration": f"The {result['recommended']} plan costs {total + 1}.", "result_id": planned["result_id"]},
        )
        assert check["ok"] is False, check


async def test_pallets_too_tall_for_one_container_type_are_counted_not_listed(server):
    # 2,000 pallets of 250 cm fit a 40HC (269 cm) but no 20GP (239 cm): the
    # result names ten and counts them all, instead of 2,000 labels.
    problem = {
        "orders": [
            {"id": f"T-{i}", "deadline_days": 60, "pallets": pallets(20, height=250, kg=300)}
            for i in range(100)
        ],
        "rates": RATES,
    }
    planned = await plan(server.session, problem)
    packing = {row["type"]: row for row in planned["result"]["packing"]}
    assert packing["20GP"]["containers"] == 0 and packing["20GP"]["unplaceable_pallets"] == 2_000, packing
    assert packing["20GP"]["unplaceable"] == [f"order T-0 line 1 pallet {n}" for n in range(1, 11)], packing
    assert packing["40HC"]["unplaceable_pallets"] == 0 and packing["40HC"]["containers"] > 0, packing
    assert cards(planned)["optimised"]["containers"][0]["type"] == "40HC"


async def test_plan_load_reports_each_step_as_progress(server):
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    reply = await server.session.call_tool("plan_load", {"problem": MIXED}, progress_callback=on_progress)
    assert not reply.is_error, reply.content
    values = [value for value, _ in seen]
    assert values == sorted(set(values)), seen
    messages = [message or "" for _, message in seen]
    steps = [m for m in messages if m.startswith(("packing", "solving"))]
    assert steps[0] == "packing 38 pallets into each container type", seen
    assert steps[1].startswith("solving the four plans with ") and steps[1].endswith(" (at most 20 s each)"), seen
    # Each card as it ends: "all_lcl done (1 of 4)", ...
    ended = [m.split(": ", 1)[1].split(" ") for m in steps if m.startswith("solving the four plans") and ": " in m]
    assert sorted(card for card, *_ in ended) == ["all_air", "all_fcl", "all_lcl", "optimised"], seen
    assert [" ".join(rest) for _, *rest in ended] == [f"done ({n} of 4)" for n in range(1, 5)], seen


async def test_ten_thousand_orders_that_differ_plan_at_the_limit(harness):
    # Adversarial for the class model and the packer: 10,000 orders (the
    # limit) of 20 pallets (200,000, the limit), no two alike in size,
    # weight, stackability and deadline together, so every order is its own
    # class and the packer meets a thousand kinds of pallet. Slow tier.
    if not os.environ.get("SOLVERGATE_TEST_ONCE"):
        pytest.skip("the 200,000-pallet plan runs once per CI pass: set SOLVERGATE_TEST_ONCE=1 (scripts/test does, on the first runtime)")
    orders = [
        {
            "id": f"X-{i:05d}",
            "deadline_days": 6 + (i * 29) % 55,
            "pallets": [{
                "length_cm": 60 + (i * 7) % 61, "width_cm": 40 + (i * 11) % 61,
                "height_cm": 50 + (i * 13) % 151, "weight_kg": 50 + (i * 17) % 851 + 0.5,
                "count": 20, "stackable": i % 3 == 0,
            }],
        }
        for i in range(10_000)
    ]
    problem = {"orders": orders, "rates": RATES, "policy": {"max_miss_probability": 0.1}}
    async with harness.open("full") as launched:
        reply = await launched.session.call_tool("plan_load", {"problem": problem})
        assert not reply.is_error, reply.content
        assert len(reply.content[0].text.encode()) <= 16 * 1024
        whole = await kept_whole(launched.session, reply)
        assert reply.structured_content["result"]["recommended"] == whole["result"]["recommended"]
        result = whole["result"]
        assert result["recommended"] is not None, result["notes"]
        for card in result["cards"]:
            assert card["feasible"] == (card["checker"] == "CORRECT"), card["name"]
            if not card["feasible"]:
                assert card["infeasible_reason"].count("X-") == 10, card["infeasible_reason"]
        recommended = cards(whole)[result["recommended"]]
        assert len(recommended["modes"]) == 10_000 and recommended["within_policy"], recommended["status"]
        # One more order is refused, naming the limit.
        problem["orders"].append({"id": "X-extra", "deadline_days": 30, "pallets": pallets(1)})
        error = await call_error(launched.session, "plan_load", {"problem": problem})
        assert "at most 10000" in error.message, error.message


# The issue's container types: the inside of a 20GP and of a 40GP, at 2,200
# and 3,500. The packer puts 11 EUR pallets of 139 cm in a 20ft and 25 in a
# 40ft (never stacked); by weight a 40ft takes 22 of 1,200 kg.
ISSUE_RATES = {
    "air": {"per_kg": 4.2, "min_charge": 150, "volumetric_divisor": 6000, "transit_days": 3},
    "lcl": {"per_cbm": 85, "min_cbm": 1, "transit_days": 30},
    "fcl": {
        "transit_days": 28,
        "containers": [
            {"type": "20ft", "length_cm": 589, "width_cm": 235, "height_cm": 239, "max_payload_kg": 28000, "price": 2200},
            {"type": "40ft", "length_cm": 1203, "width_cm": 235, "height_cm": 239, "max_payload_kg": 26500, "price": 3500},
        ],
    },
}


def eur_cohort(count: int, kg: float = 500, per_cbm: float = 85) -> dict:
    rates = copy.deepcopy(ISSUE_RATES)
    rates["lcl"]["per_cbm"] = per_cbm
    return {
        "orders": [{"id": "E-1", "deadline_days": 45, "pallets": [
            {"length_cm": 120, "width_cm": 80, "height_cm": 139, "weight_kg": kg, "count": count},
        ]}],
        "rates": rates,
    }


# (case, pallets, kg, containers booked, what they cost, each type alone):
# the small type wins, the big type wins, a mix wins — the cases the issue
# measured first (a mix of one of each for 10 and two 20ft and a 40ft for
# 30 pallets, up to 2.6 times the cheapest).
CHEAPEST_MIX = [
    ("10-pallets-one-20ft", 10, 500, {"20ft": 1}, 2200.0, {"20ft": (1, 2200.0), "40ft": (1, 3500.0)}),
    ("30-pallets-one-of-each", 30, 500, {"20ft": 1, "40ft": 1}, 5700.0, {"20ft": (3, 6600.0), "40ft": (2, 7000.0)}),
    ("11-pallets-a-full-20ft", 11, 500, {"20ft": 1}, 2200.0, {"20ft": (1, 2200.0), "40ft": (1, 3500.0)}),
    ("12-pallets-one-40ft", 12, 500, {"40ft": 1}, 3500.0, {"20ft": (2, 4400.0), "40ft": (1, 3500.0)}),
    ("25-pallets-a-full-40ft", 25, 500, {"40ft": 1}, 3500.0, {"20ft": (3, 6600.0), "40ft": (1, 3500.0)}),
    ("37-pallets-two-40ft", 37, 500, {"40ft": 2}, 7000.0, {"20ft": (4, 8800.0), "40ft": (2, 7000.0)}),
    ("61-pallets-a-20ft-two-40ft", 61, 500, {"20ft": 1, "40ft": 2}, 9200.0, {"20ft": (6, 13200.0), "40ft": (3, 10500.0)}),
    ("25-heavy-pallets-payload-bound", 25, 1200, {"20ft": 1, "40ft": 1}, 5700.0, {"20ft": (3, 6600.0), "40ft": (2, 7000.0)}),
]


@pytest.mark.parametrize(("case", "count", "kg", "booked", "cost", "alone"), CHEAPEST_MIX, ids=[c[0] for c in CHEAPEST_MIX])
async def test_full_containers_are_the_cheapest_mix_the_packer_fills(server, case, count, kg, booked, cost, alone):
    # With sea consolidation dear, the optimised plan goes by full
    # containers too, and books the same containers.
    for problem in (eur_cohort(count, kg), eur_cohort(count, kg, per_cbm=900)):
        planned = await plan(server.session, problem)
        by_name = cards(planned)
        all_fcl = by_name["all_fcl"]
        assert all_fcl["status"] == "optimal" and all_fcl["checker"] == "CORRECT", all_fcl
        assert {c["type"]: c["count"] for c in all_fcl["containers"]} == booked, all_fcl
        assert all_fcl["cost"]["fcl"] == cost, all_fcl["cost"]
        assert {a["type"]: (a["containers"], a["cost"]) for a in all_fcl["single_type_costs"]} == alone, all_fcl
        # One order of one kind of pallet: the model's estimate of what a
        # container holds is exact, and nothing is solved again.
        assert not any("solved again" in note for note in planned["result"]["notes"]), planned["result"]["notes"]
    optimised = by_name["optimised"]
    assert optimised["modes"] == {"E-1": "fcl"}, optimised
    assert {c["type"]: c["count"] for c in optimised["containers"]} == booked, optimised
    assert optimised["cost"]["total"] == cost, optimised


async def test_a_cohort_of_many_kinds_books_what_the_packer_fills(harness, server):
    # 1,000 pallets of six kinds: the model's estimate of what a 40HC holds
    # (from the packer's full containers over every eligible pallet) books
    # one container fewer than the packer needs for the optimised plan's
    # own pallets, so the plan's containers are solved again, said so, and
    # the card is a plan the model admits, not one it proved the cheapest.
    planned = await plan(server.session, generated(harness, 1_000))
    optimised = cards(planned)["optimised"]
    assert optimised["checker"] == "CORRECT" and optimised["status"] == "satisfied", optimised["status"]
    alone = {a["type"]: a["containers"] for a in optimised["single_type_costs"]}
    assert optimised["containers"] == [{"type": "40HC", "count": alone["40HC"]}], (optimised["containers"], alone)
    notes = planned["result"]["notes"]
    assert any(note.startswith("optimised: the containers the model booked") and "solved again" in note for note in notes), notes


async def test_the_plan_in_words_names_each_orders_mode_and_why(server):
    planned = await plan(server.session, POLICY_BINDS)
    optimised = cards(planned)["optimised"]
    # P-AIR can only fly; P-TIGHT could go by container, but with it there
    # the plan would miss with 0.127, over the policy of 0.1; P-LONG could
    # fly within the policy, but the containers make the plan cheaper.
    assert [(s["mode"], s["why"]) for s in optimised["shipments"]] == [
        ("air", [
            {"why": "deadline", "orders": 1, "named": ["P-AIR"], "more": 0},
            {"why": "risk", "orders": 1, "named": ["P-TIGHT"], "more": 0},
        ]),
        ("fcl", [{"why": "cost", "orders": 1, "named": ["P-LONG"], "more": 0}]),
    ], optimised["shipments"]
    explained = await call_ok(server.session, "explain_load_plan", {"result_id": planned["result_id"]})
    assert explained["check"]["ok"] is True, explained["check"]
    narration = explained["narration"]
    section = narration.split("Which orders go by which mode, and why:\n", 1)[1].split("All plans:", 1)[0]
    assert section.splitlines() == [
        "- By air, 2 orders: arrives in 3 days at the median and 4 days at the 90th percentile, and misses its "
        "tightest deadline with 0.03; costs 3150.0. P-AIR: no other mode meets its deadline at the 90th "
        "percentile. P-TIGHT: any other mode that meets its deadline would take the plan's chance of a miss "
        "over the policy.",
        "- By full containers (FCL), 1 order: arrives in 28 days at the median and 33 days at the 90th "
        "percentile, and misses its tightest deadline with 0.0; costs 2900.0. P-LONG: another mode would meet "
        "its deadline within the policy, and the plan with it here is the cheapest found.",
    ], section


async def test_the_plan_in_words_names_ten_orders_a_mode_and_counts_the_rest(harness, server):
    planned = await plan(server.session, generated(harness, 1_000))
    recommended = cards(planned)[planned["result"]["recommended"]]
    explained = await call_ok(server.session, "explain_load_plan", {"result_id": planned["result_id"]})
    assert explained["check"]["ok"] is True, explained["check"]
    section = explained["narration"].split("Which orders go by which mode, and why:\n", 1)[1].split("All plans:", 1)[0]
    lines = section.splitlines()
    assert len(lines) == len(recommended["shipments"]) >= 2, section
    for line, shipment in zip(lines, recommended["shipments"]):
        assert len(re.findall(r"\bSO-\d{5}\b", line)) == min(10, shipment["orders"]), line
        for group in shipment["why"]:
            if not group["named"]:
                # After the shipment's ten names, a group is counted.
                assert f" {group['orders']} more order" in line, (line, group)
            elif group["more"]:
                assert f"and {group['more']} more:" in line, (line, group)


async def test_the_guard_reads_thousands_separators(server):
    # One order of 55,017 kg that can only fly, at 0.25 a kg: all air costs
    # 13,754.25 (no container carries it, no sea consolidation in time).
    problem = {
        "orders": [{"id": "HEAVY", "deadline_days": 5, "pallets": pallets(1, kg=55017)}],
        "rates": copy.deepcopy(RATES),
    }
    problem["rates"]["air"]["per_kg"] = 0.25
    planned = await plan(server.session, problem)
    assert cards(planned)["all_air"]["cost"]["total"] == 13754.25, cards(planned)["all_air"]
    result_id = planned["result_id"]
    for narration, ok, offending, checked in [
        ("All air costs 13,754.25.", True, [], 1),
        ("All air costs 13754.25.", True, [], 1),
        ("All air costs 13,755.25.", False, ["13,755.25"], 1),
        ("All air costs 13,754.", False, ["13,754"], 1),
        # Not thousands groups: each comma separates two numbers.
        ("All air costs 1,3754.25.", False, ["3754.25"], 2),
        ("It arrives in 3,4 days.", True, [], 2),
        ("Codes 12,34,567.", False, ["12", "34", "567"], 3),
    ]:
        check = await call_ok(server.session, "verify_narration", {"narration": narration, "result_id": result_id})
        assert check == {"ok": ok, "offending": offending, "tokens_checked": checked}, (narration, check)
    reply = await server.session.call_tool(
        "verify_narration", {"narration": "All air costs 13,755.25.", "result_id": result_id}
    )
    assert reply.content[0].text == (
        "Rejected: 1 of 1 numeric token(s) are not in the stored result: 13,755.25\n"
    ), reply.content[0].text


async def test_the_offered_example_plans_as_it_is(server):
    prompts = {prompt.name: prompt for prompt in (await server.session.list_prompts()).prompts}
    assert "plan_shipping_loads" in prompts, sorted(prompts)
    rendered = await server.session.get_prompt(
        "plan_shipping_loads", {"problem": "Four orders from Hamburg to Shanghai; rates as quoted."}
    )
    text = rendered.messages[0].content.text
    for tool in ("plan_load", "explain_load_plan", "verify_narration"):
        assert tool in text, tool
    offered = text.split("```json\n", 1)[1].split("\n```", 1)[0]
    planned = await plan(server.session, json.loads(offered))
    assert planned["result"]["recommended"] == "optimised", planned["result"]["cards"]
    assert text.rstrip().endswith("Four orders from Hamburg to Shanghai; rates as quoted.")


def example(harness) -> dict:
    printed = subprocess.run(
        [harness.binary, "plan", "--example"], capture_output=True, check=True, env=harness.env, timeout=60
    )
    return json.loads(printed.stdout)


async def test_a_missing_field_shows_its_shape(harness, server):
    problem = example(harness)
    rates = problem.pop("rates")
    shape = json.dumps(rates, sort_keys=True, separators=(",", ":"))
    error = await call_error(server.session, "plan_load", {"problem": problem})
    assert error.category == "invalid_request", error.text
    assert error.message == f'invalid arguments: problem: missing field `rates` — it looks like "rates": {shape}', error.message
    # The shape shown plans: put back as shown, the problem plans.
    shown = json.loads(error.message.split('"rates": ', 1)[1])
    await plan(server.session, problem | {"rates": shown})
    # Deeper down, the path to the field and its own shape.
    problem = broken(["orders", 1, "pallets", 0, "weight_kg"], None)
    del problem["orders"][1]["pallets"][0]["weight_kg"]
    error = await call_error(server.session, "plan_load", {"problem": problem})
    assert error.message == (
        'invalid arguments: problem: orders[1].pallets[0]: missing field `weight_kg` — it looks like "weight_kg": 180'
    ), error.message
    error = await call_error(
        server.session, "save_load_plan", {"problem": {"orders": MIXED["orders"]}, "target_dir": "/nonexistent/x"}
    )
    assert error.message.startswith("invalid arguments: problem: missing field `rates` — it looks like"), error.message


def broken(path: list, value) -> dict:
    problem = copy.deepcopy(MIXED)
    target = problem
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return problem


BAD_INPUT = [
    ("negative-dimension", broken(["orders", 0, "pallets", 0, "length_cm"], -120), "orders[0].pallets[0].length_cm"),
    ("empty-cohort", broken(["orders"], []), "orders is empty"),
    ("unknown-container-field", broken(["rates", "fcl", "containers", 0, "volume_cbm"], 33), "volume_cbm"),
    ("no-containers", broken(["rates", "fcl", "containers"], []), "rates.fcl.containers is empty"),
    ("delays-not-summing-to-one", broken(["delays"], {"air": {"0": 0.5, "2": 0.3}}), "delays.air"),
    ("duplicate-order-id", broken(["orders", 1, "id"], "M-AIR"), "repeats"),
    ("zero-count", broken(["orders", 0, "pallets", 0, "count"], 0), "count"),
    ("too-many-pallets", broken(["orders", 1, "pallets", 0, "count"], 200_000), "the planner takes at most 200000"),
    (
        "too-many-orders",
        broken(["orders"], [{"id": f"O-{i}", "deadline_days": 30, "pallets": pallets(1)} for i in range(10_001)]),
        "a cohort takes at most 10000",
    ),
]


@pytest.mark.parametrize(("case", "problem", "fragment"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
async def test_bad_input_is_refused_with_the_field_named(server, case, problem, fragment):
    error = await call_error(server.session, "plan_load", {"problem": problem})
    assert error.category == "invalid_request", error.text
    assert fragment in error.message, f"{case}: {error.message}"


async def test_explain_takes_one_property(server):
    tools = {tool.name: tool for tool in (await server.session.list_tools()).tools}
    schema = tools["explain_load_plan"].input_schema
    assert list(schema["properties"]) == ["result_id"] and schema["required"] == ["result_id"]
    error = await call_error(server.session, "explain_load_plan", {"result_id": "x" * 64, "rate": 4.2})
    assert error.category == "invalid_request", error.text


async def test_a_plan_saves_and_replays_to_the_same_id(server, tmp_path):
    target = tmp_path / "mixed-plan"
    saved = await call_ok(server.session, "save_load_plan", {"problem": MIXED, "target_dir": str(target)})
    assert saved["status"] == "saved", saved
    assert saved["recommended"] == "optimised"
    names = {f["name"]: f for f in saved["files"]}
    assert set(names) == {"problem.json", "result.json", "model.mzn", "load_planner.mzc.mzn"}
    # The saved result is the stored one, byte for byte: its hash is the id.
    import hashlib

    assert hashlib.sha256((target / "result.json").read_bytes()).hexdigest() == saved["result_id"]
    assert json.loads((target / "problem.json").read_text()) == json.loads(json.dumps(MIXED)) | {
        "delays": {"air": None, "lcl": None, "fcl": None},
        "policy": {"max_miss_probability": 0.1},
    }
    manifest = json.loads((target / ".solvergate-artifact.json").read_text())
    assert manifest["backend"] == "planner" and manifest["planner"]["result_id"] == saved["result_id"]
    assert manifest["verification"]["status"] == "planned" and manifest["verification"]["level"] == "checked"

    replay = await call_ok(server.session, "replay_artifact", {"target_dir": str(target)})
    assert replay["reproduced"] is True, replay
    assert replay["result_id"] == replay["recorded_result_id"] == saved["result_id"]

    (target / "result.json").write_text((target / "result.json").read_text().replace("optimised", "optimized"))
    error = await call_error(server.session, "replay_artifact", {"target_dir": str(target)})
    assert error.category == "not_verified" and "result.json" in error.message, error.text

    nothing = tmp_path / "infeasible-plan"
    refused = await call_ok(server.session, "save_load_plan", {"problem": INFEASIBLE, "target_dir": str(nothing)})
    assert refused["status"] == "not_verified" and refused["files"] == [], refused
    assert refused["diagnostic"]["category"] == "not_verified"
    assert not nothing.exists()
