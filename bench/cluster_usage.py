"""The staff's Utilisation page's day (jobs/cluster_usage.py): a day of 100 running
GPU attempts of 2 cards, sampled as the agent keeps them (every 10 s for the last hour,
one a minute before), averaged per hour in the database, side by side with the same
figures folded in Python from every sample's cards.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/cluster_usage.py

Runs in a scratch PostgreSQL database (``<name>_clusterbench``).
Prints the median wall time of ``cluster_day``, of the baseline, and the rows each reads.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from scratch import django_setup, scratch_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attempts", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    django_setup()
    from jobs.cluster_usage import _hourly_utils, cluster_day
    from jobs.models import AttemptSample, Job
    from tests.agent_support import make_node
    from tests.billing_cast import v100_model
    from tests.factories import JobFactory, UserFactory
    from tests.usage_cast import held, sampled

    now = datetime.now(UTC).replace(microsecond=0)
    hour = timedelta(hours=1)
    with scratch_database("clusterbench"):
        owner, v100 = UserFactory(username="bench"), v100_model()
        nodes = [
            make_node(name=f"gpu-{i}", gpu_model=v100, gpu_count=8)
            for i in range((args.attempts + 3) // 4)
        ]
        for n in range(args.attempts):
            node = nodes[n // 4]
            job = JobFactory(owner=owner, gpu_model=v100, gpu_count=2, state=Job.State.RUNNING)
            attempt = held(job, node, [2 * (n % 4), 2 * (n % 4) + 1], since=now - 25 * hour)
            sampled(attempt, {0: n % 100, 1: 50}, since=now - 24 * hour, until=now - hour, every=60)
            sampled(attempt, {0: n % 100, 1: 50}, since=now - hour, until=now)
        samples = AttemptSample.objects.count()
        ours = _timed(args.runs, lambda: cluster_day(now))
        rows = len(
            _hourly_utils(
                list(AttemptSample.objects.values_list("attempt_id", flat=True).distinct()),
                now - 24 * hour,
                now,
            )
        )
        theirs = _timed(args.runs, lambda: _python_fold(AttemptSample, now - 24 * hour, now))
    print(f"{args.attempts} running attempts × 2 cards, a day: {samples} samples")
    print(f"  {'':28} {'database':>10} {'Python':>10} {'ratio':>7}")
    print(f"  {'hour averages, median s':28} {ours:>10.3f} {theirs:>10.3f} {ours / theirs:>7.2f}")
    print(f"  {'rows read':28} {rows:>10} {samples:>10}")


def _timed(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _python_fold(model, since, now) -> dict:
    """The baseline: every sample's cards to Python, averaged per attempt and hour there."""
    sums: dict = defaultdict(lambda: [0.0, 0])
    rows = model.objects.filter(at__gte=since, at__lte=now).values_list("attempt_id", "at", "gpus")
    for attempt, at, cards in rows.iterator(chunk_size=5000):
        entry = sums[attempt, int(at.timestamp()) // 3600]
        entry[0] += sum(card["util"] for card in cards) / len(cards)
        entry[1] += 1
    return {key: total / count for key, (total, count) in sums.items()}


if __name__ == "__main__":
    main()
