"""What Trainyard asked of the platform during a bench's run, counts the machine's speed
does not skew: transactions in its database, messages to Celery, and the tasks a worker ran.

    counted, tally = platform_counts(), TaskTally(log_path)   # from here on
    ...                                                        # the run
    print_platform_counts("b0", counted, jobs=500)
    tally.print("b0", jobs=500)
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from pathlib import Path


def platform_counts() -> dict[str, int]:
    """What Trainyard asked of its database and broker so far: transactions committed in
    the scratch database (this process's polls among them) and messages sent to Celery's
    queues (Redis ``LPUSH``). Unlike CPU seconds, they do not vary with the machine."""
    import redis
    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_stat_clear_snapshot(), xact_commit FROM pg_stat_database"
            " WHERE datname = current_database()"
        )
        commits = cursor.fetchone()[1]
    pushes = 0  # the file-system broker (no REDIS_URL) keeps no count
    if settings.CELERY_BROKER_URL.startswith("redis"):
        broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        pushes = broker.info("commandstats").get("cmdstat_lpush", {}).get("calls", 0)
    return {"transactions": commits, "messages": pushes}


def print_platform_counts(label: str, before: dict[str, int], jobs: int) -> None:
    time.sleep(1.5)  # PostgreSQL's backends report their counts within a second
    after = platform_counts()
    print(
        f"({label}) per job: {(after['transactions'] - before['transactions']) / jobs:.1f} "
        f"database transactions, {(after['messages'] - before['messages']) / jobs:.2f} "
        "Celery messages"
    )


SUCCEEDED = re.compile(r"Task ([\w.]+)\[[^\]]+\] succeeded in ([\d.]+)s")


class TaskTally:
    """A worker's tasks, from its log at ``--loglevel INFO`` with ``TRAINYARD_VERBOSE=1``:
    per task, how many ran and the seconds they took (``Task <name>[<id>] succeeded in``)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.offset = log.stat().st_size if log.exists() else 0

    def counts(self) -> dict[str, tuple[int, float]]:
        """Task name -> (runs, seconds) since this tally began, most seconds first."""
        with self.log.open(errors="replace") as lines:
            lines.seek(self.offset)
            text = lines.read()
        runs: dict[str, list[float]] = defaultdict(list)
        for name, seconds in SUCCEEDED.findall(text):
            runs[name].append(float(seconds))
        tally = {name: (len(times), sum(times)) for name, times in runs.items()}
        return dict(sorted(tally.items(), key=lambda item: -item[1][1]))

    def print(self, label: str, jobs: int) -> None:
        for name, (runs, seconds) in self.counts().items():
            print(
                f"  ({label}) {name}: {runs} runs ({runs / jobs:.2f} a job), "
                f"{seconds:.1f} s, {seconds / runs * 1000:.0f} ms each"
            )
