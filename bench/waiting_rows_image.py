"""What reading each waiting job's image state costs the scheduling pass's main query.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/waiting_rows_image.py [--jobs 8000] [--reads 15]

``queue.waiting_rows`` joins ``jobs_image`` for the image's state and name, so that a job
whose image is still being added waits for it (``image_reason``). This loads the Alibaba
trace's first ``--jobs`` tasks as waiting jobs on its 1,213 nodes (``scheduler_trace.py``'s
setup, in a scratch database of its own) and times the query with and without those two
columns, interleaved, in one run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import scheduler_trace as trace
from scratch import django_setup, scratch_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=8000)
    parser.add_argument("--reads", type=int, default=15)
    args = parser.parse_args()
    django_setup()
    with scratch_database("waitingrows"):
        nodes = trace.read_csv(trace.TRACE / "openb_node_list_gpu_node.csv")
        tasks = trace.read_csv(trace.TRACE / "openb_pod_list_default.csv")
        trace.reset()
        trace.cluster_setup(nodes)
        trace.submit(tasks[: args.jobs], offset=0)
        trace.analyze()
        ways = {
            "without the image's columns": (),
            "with them (joined)": ("image__state", "image__name"),
        }
        seconds: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.reads):
            for name, columns in ways.items():
                began = time.perf_counter()
                rows = read(columns)
                seconds[name].append(time.perf_counter() - began)
        print(f"{len(rows)} waiting jobs, {args.reads} interleaved reads each way")
        base = statistics.median(seconds["without the image's columns"])
        for name, times in seconds.items():
            median = statistics.median(times)
            print(f"  {name:30} median {median * 1000:6.1f} ms  ({median / base:.2f}x)")


def read(columns: tuple[str, ...]) -> list[tuple]:
    """``waiting_rows``' main query, with ``columns`` of the image's before the request's."""
    from django.db.models.functions import Coalesce

    from jobs.models import Job
    from jobs.scheduler.queue import WAITING_COLUMNS
    from resources.quota import REQUEST_FIELDS

    waiting = Job.objects.filter(state__in=Job.WAITING_STATES).annotate(
        queued=Coalesce("queue_since", "submitted_at")
    )
    fields = [column for column in WAITING_COLUMNS if not column.startswith("image__")]
    ordered = waiting.order_by("-priority", "queued", "pk")
    return list(ordered.values_list(*fields, *columns, *REQUEST_FIELDS))


if __name__ == "__main__":
    main()
