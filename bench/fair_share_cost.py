"""What one fair-share factor costs over a large ledger: summed afresh against kept.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/fair_share_cost.py [--rows 1000000] [--repeat 9] [--owners 50]

Every scheduling pass, every Slurm submission and every job's API record asks for the
factors of some owners (``billing.fair_share.fair_share_factors``). The ledger is
``bench/billing.py``'s (1,000 accounts, one-minute rows of one month, written in one
statement) in a scratch database (``<name>_fairsharebench``); the factors are asked a
month later, so every row lies within the ten half-lives summed. Prints, side by side,
the median wall time and the queries of a factor whose decayed usage is summed from the
ledger (the baseline: every call before the usage was kept, and the first call of each
refresh now) and of one within the refresh (``USAGE_REFRESH_SECONDS``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import timedelta

from scratch import django_setup, scratch_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--owners", type=int, default=50, help="owners of waiting jobs asked")
    args = parser.parse_args()
    django_setup()  # the project first on the path: ``billing`` is the app from here on
    from bench.billing import FIRST_DAY, populate

    with scratch_database("fairsharebench"):
        populate(args.rows, 1)
        measure(FIRST_DAY + timedelta(days=31), args.owners, args.repeat)


def measure(now, owners: int, repeat: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from billing.fair_share import fair_share_factors, forget_recent_usage

    user_ids = set(get_user_model().objects.order_by("pk").values_list("pk", flat=True)[:owners])

    def timed(forget: bool) -> tuple[float, int, dict]:
        times, queries, factors = [], 0, {}
        for _ in range(repeat):
            if forget:
                forget_recent_usage()
            with CaptureQueriesContext(connection) as captured:
                began = time.perf_counter()
                factors = fair_share_factors(user_ids=user_ids, now=now)
                times.append(time.perf_counter() - began)
            queries = len(captured)
        return statistics.median(times), queries, factors

    summed, summed_queries, summed_factors = timed(forget=True)
    kept, kept_queries, kept_factors = timed(forget=False)
    assert kept_factors == summed_factors, "a kept factor differs from the ledger's"
    print(f"factors of {len(user_ids)} owners, median of {repeat}:")
    print(f"  summed from the ledger (baseline)  {summed * 1000:8.1f} ms  {summed_queries} queries")
    print(f"  kept within the refresh            {kept * 1000:8.1f} ms  {kept_queries} queries")
    print(f"  ratio summed / kept                {summed / kept:8.1f}")


if __name__ == "__main__":
    main()
