"""Leave-one-out over seed 000's measured tables: predict each point from the others.

Run: .venv/bin/python bench/estimate_loo.py  (pure Python, no database, ~1 s)
"""

import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.estimates.prior import PRIOR_LOG_SPREAD, PriorPoint, leave_one_out  # noqa: E402
from jobs.estimates.seed_tables import TEMPLATES, seed_points  # noqa: E402

# Seed 000's GPU speeds relative to a P4, as seed_demo sets them.
SPEEDS = {"V100": 2.3, "P40": 1.4, "P4": 1.0}


def main() -> None:
    points = [
        PriorPoint(p.template, p.gpu_model, p.samples, p.nodes, p.seconds, p.kind == "measured")
        for p in seed_points()
    ]
    started = time.perf_counter()
    predictions = leave_one_out(
        points, task_types={t.name: t.task_type for t in TEMPLATES}, speeds=SPEEDS
    )
    elapsed = time.perf_counter() - started
    rows = []
    for point, predicted in predictions:
        error = abs(predicted - point.seconds) / point.seconds
        rows.append((error, point, predicted))
        print(
            f"{point.template:27} {point.gpu_model:5} ×{point.cards}  "
            f"measured {point.seconds:7.0f} s  predicted {predicted:7.0f} s  {error:6.1%}"
        )
    errors = [error for error, _p, _pred in rows]
    worst = max(rows, key=lambda row: row[0])
    inside = sum(abs(math.log(pred / p.seconds)) <= PRIOR_LOG_SPREAD for _e, p, pred in rows)
    print()
    print(f"points: {len(rows)} measured (fits also use the 10 rough ranges)")
    print(f"median relative error: {statistics.median(errors):.1%}")
    print(f"mean relative error:   {statistics.fmean(errors):.1%}")
    print(
        f"worst relative error:  {worst[0]:.1%} ({worst[1].template} on "
        f"{worst[1].cards} × {worst[1].gpu_model}: measured {worst[1].seconds:.0f} s, "
        f"predicted {worst[2]:.0f} s)"
    )
    print(
        f"inside the stated range (×/÷ {math.exp(PRIOR_LOG_SPREAD):.2f}): {inside / len(rows):.0%}"
    )
    print(f"{len(rows)} refits in {elapsed:.2f} s")


if __name__ == "__main__":
    main()
