"""Running one scheduling pass: one at a time (a database lock), in one transaction.

The pass itself (what it decides and writes) is ``passes.SchedulingPass``; a node that
changes state while it runs makes it start over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial

from django.db import connection, transaction
from django.utils import timezone

from .passes import PassReport, SchedulingPass
from .writes import NodeChanged

logger = logging.getLogger(__name__)

# Any constant both passes agree on; "tryd" in ASCII.
PASS_LOCK_KEY = 0x74727964


def run_pass(
    *,
    launch: Callable[[list[int]], object] | None = None,
    preempt: Callable[[dict[int, int]], object] | None = None,
) -> PassReport:
    """Run one pass; the ids of the jobs it starts are handed to ``launch`` after commit,
    and the jobs it preempts (victim → the job it stops for) to ``preempt``.

    The scheduler decides and writes; launching and stopping are execution's, a layer it
    does not import: the task that runs the pass passes ``launch_each`` and
    ``preempt_each`` in. Without them (tests and benchmarks that time the scheduler
    alone) nothing is launched or stopped.
    """
    began = time.perf_counter()
    for _attempt in range(3):
        try:
            with transaction.atomic():
                _acquire_pass_lock()
                report = SchedulingPass.load(now=timezone.now()).run()
                if launch is not None and report.started:
                    transaction.on_commit(partial(launch, list(report.started)))
                if preempt is not None and report.preempted:
                    transaction.on_commit(partial(preempt, dict(report.preempted)))
            report.seconds = time.perf_counter() - began
            return report
        except NodeChanged:
            logger.info("a node changed state during the pass; running it again")
    return PassReport(seconds=time.perf_counter() - began)


def _acquire_pass_lock() -> None:
    # SQLite: transactions begin IMMEDIATE (settings), which already takes the
    # database's single write lock for the whole pass.
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PASS_LOCK_KEY])
