"""A generated cohort for the planner at scale: `python3 cohort.py PALLETS`
prints it as JSON (the README's scale cohort; the bench and the slow test
use the same one).

Orders of 20 pallets (the last one takes the rest), each of one of six
kinds of pallet, with deadlines spread over 6..60 days; the example's
rates and a policy of 0.1.
"""

from __future__ import annotations

import json
import sys

# (length, width, height cm, kg, stackable)
KINDS = [
    (120, 80, 110, 350, True),
    (120, 80, 150, 520, False),
    (120, 100, 120, 450, True),
    (120, 100, 160, 700, False),
    (80, 60, 90, 120, True),
    (110, 110, 130, 600, True),
]
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


def cohort(pallets: int, per_order: int = 20, policy: float = 0.1) -> dict:
    orders = []
    left = pallets
    i = 0
    while left > 0:
        count = min(per_order, left)
        length, width, height, kg, stackable = KINDS[i % len(KINDS)]
        orders.append({
            "id": f"SO-{i + 1:05d}",
            "deadline_days": 6 + (i * 37) % 55,
            "pallets": [{
                "length_cm": length, "width_cm": width, "height_cm": height,
                "weight_kg": kg, "count": count, "stackable": stackable,
            }],
        })
        left -= count
        i += 1
    return {"orders": orders, "rates": RATES, "policy": {"max_miss_probability": policy}}


if __name__ == "__main__":
    json.dump(cohort(int(sys.argv[1])), sys.stdout)
