"""What the owner's earlier runs of a command cost on a large jobs table, with and without
its index (``job_owner_command_idx``, migration 0019).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/own_runs_cost.py [--jobs 100000] [--owners 4] [--repeat 21]

Every submission (form, API, CLI) and every estimate of a job without a template asks
for them (``jobs.estimates.history.commands_runs``). The table holds ``--jobs`` jobs of
``--owners`` owners (the timed one a heavy user: a quarter of the table by default), each
with 50 commands of its own, two in three succeeded, written in a scratch database
(``<name>_ownrunsbench``). Without the index the lookup reads every job of the owner.
Prints, side by side, the median time of the lookup for a command the owner ran before
and for a new one, with the index and after dropping it (the baseline: the table as it
was before the migration).
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import timedelta

from scratch import django_setup, scratch_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--owners", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    django_setup()
    with scratch_database("ownrunsbench"):
        from django.db import connection

        from jobs.estimates.history import commands_runs

        owner_id = fill(args.jobs, args.owners)
        asked = {"a command run before": "python train.py --seed 7", "a new command": "new"}

        def timed() -> dict[str, float]:
            medians = {}
            for label, command in asked.items():
                times = []
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    commands_runs(keys={(owner_id, command)})
                    times.append(time.perf_counter() - start)
                medians[label] = statistics.median(times) * 1000
            return medians

        indexed = timed()
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX job_owner_command_idx")
            cursor.execute("ANALYZE jobs_job")
        baseline = timed()
    print(f"{args.jobs:,} jobs of {args.owners} owners; median of {args.repeat} lookups")
    print(f"{'':24s} {'no index (ms)':>14s} {'indexed (ms)':>13s} {'ratio':>6s}")
    for label in asked:
        ratio = baseline[label] / indexed[label]
        print(f"{label:24s} {baseline[label]:14.1f} {indexed[label]:13.1f} {ratio:6.1f}")


def fill(jobs: int, owners: int) -> int:
    """The jobs, written in bulk; the id of the first owner, whose lookups are timed."""
    from django.db import connection
    from django.utils import timezone

    from jobs.models import Job
    from tests.factories import GpuModelFactory, JobFactory, ProjectFactory, UserFactory

    users = UserFactory.create_batch(owners)
    projects = [ProjectFactory(owner=user) for user in users]
    template = JobFactory(owner=users[0], project=projects[0], gpu_model=GpuModelFactory())
    fields = {f.attname: getattr(template, f.attname) for f in Job._meta.concrete_fields}
    del fields["id"]
    now = timezone.now()
    rows = []
    for i in range(jobs):
        owner = i % owners
        row = dict(fields, owner_id=users[owner].pk, project_id=projects[owner].pk)
        row.update(name=f"j{i}", command=f"python train.py --seed {i // owners % 50}")
        row.update(state=Job.State.SUCCEEDED if i % 3 else Job.State.FAILED)
        row.update(finished_at=now - timedelta(minutes=jobs - i))
        rows.append(Job(**row))
    Job.objects.bulk_create(rows, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE jobs_job")
    return users[0].pk


if __name__ == "__main__":
    main()
