"""Running one scheduling pass: one at a time (a database lock), in one transaction; then
its forecast of the likely starts, outside that lock.

The pass itself (what it decides and writes) is ``passes.SchedulingPass``; a node that
changes state while it runs makes it start over. Once it commits, the jobs it started
are launched, and the forecast (``forecast.py``, most of a pass's work when many jobs
wait) replays it from what it decided in memory, as Slurm's backfill plans the starts
apart from its main scheduler: no job waits for it to start, no submission or stop
waits for its lock. Its estimates are written only if no later pass has run meanwhile
(a generation each pass takes under the lock): that one's forecast follows, from newer
facts; but never more than ``STALE_SECONDS`` after the estimates were last made current
(written, or found right by a forecast).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

from .pass_load import load_pass
from .passes import PassReport, SchedulingPass
from .writes import NodeChanged, estimate_rows, write_estimates

logger = logging.getLogger(__name__)

# Any constant both passes agree on; "tryd" in ASCII.
PASS_LOCK_KEY = 0x74727964
# Incremented by every pass under its lock: a forecast whose pass is no longer the
# latest writes nothing, unless no forecast has made the estimates current (written
# them, or found them right) for STALE_SECONDS (a stream of changes, each superseding
# the pass before, must not starve the estimates).
GENERATION_KEY = "trainyard:scheduler-pass-generation"
CURRENT_AT_KEY = "trainyard:scheduler-forecast-current-at"
STALE_SECONDS = 10


def run_pass(
    *,
    launch: Callable[[list[int]], object] | None = None,
    preempt: Callable[[dict[int, int]], object] | None = None,
) -> PassReport:
    """Run one pass, then its forecast; the ids of the jobs it starts are handed to
    ``launch`` after commit, and the jobs it preempts (victim → the job it stops for)
    to ``preempt``.

    The scheduler decides and writes; launching and stopping are execution's, a layer it
    does not import: the task that runs the pass passes ``launch_each`` and
    ``preempt_each`` in. Without them (tests and benchmarks that time the scheduler
    alone) nothing is launched or stopped. ``seconds`` is the pass's, under its lock;
    ``forecast_seconds`` the forecast's after it. A pass starts at most
    ``TRAINYARD_PASS_MAX_STARTS`` jobs; if it stopped there (``truncated``), the jobs
    after them are left as they were, and its caller runs another pass at once.
    """
    began = time.perf_counter()
    for _attempt in range(3):
        try:
            with cycles_collected_after():
                report, scheduling, generation = locked_pass(launch=launch, preempt=preempt)
            report.seconds = time.perf_counter() - began
            break
        except NodeChanged:
            logger.info("a node changed state during the pass; running it again")
    else:
        return PassReport(seconds=time.perf_counter() - began)
    if report.truncated:
        return report  # the next pass, which its caller queues at once, forecasts
    forecast_began = time.perf_counter()
    with cycles_collected_after():
        forecast(scheduling, generation)
    report.forecast_seconds = time.perf_counter() - forecast_began
    return report


@contextmanager
def cycles_collected_after() -> Iterator[None]:
    """Python's cycle collector paused while a pass or its forecast runs.

    A pass over thousands of jobs makes hundreds of thousands of short-lived objects
    (rows, uses, releases, scores); every few hundred of them start a collection, and
    every hundredth collection walks every object the worker holds. Over 8,000 queued
    jobs on the trace's 1,213 nodes that was about a third of a steady pass
    (``bench/scheduler_trace.py``). What a pass drops is freed by reference counting
    as it goes; a cycle it leaves waits for the collector's next run, after it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def locked_pass(
    *,
    launch: Callable[[list[int]], object] | None = None,
    preempt: Callable[[dict[int, int]], object] | None = None,
) -> tuple[PassReport, SchedulingPass, int]:
    """The pass itself, committed: its report, its decisions (for its forecast) and its
    generation. ``NodeChanged`` if a node changed state meanwhile."""
    with transaction.atomic():
        _acquire_pass_lock()
        generation = _new_generation()
        scheduling = load_pass(now=timezone.now())
        scheduling.max_starts = settings.TRAINYARD_PASS_MAX_STARTS
        report = scheduling.run()
        if launch is not None and report.started:
            transaction.on_commit(partial(launch, list(report.started)))
        if preempt is not None and report.preempted:
            transaction.on_commit(partial(preempt, dict(report.preempted)))
    return report, scheduling, generation


def forecast(scheduling: SchedulingPass, generation: int) -> bool:
    """Write the likely starts of the jobs ``scheduling`` left waiting where they changed,
    unless a later pass has run (its own forecast follows); whether any were written.
    Finding none to change makes the estimates as current as writing them does."""
    if _superseded(generation):
        return False
    rows = []
    if scheduling.left_waiting:
        rows = estimate_rows(scheduling.left_waiting, scheduling.estimates())
    if rows:
        with transaction.atomic():
            _acquire_pass_lock()  # no pass writes meanwhile, and none has since ``generation``
            if _superseded(generation):
                return False
            write_estimates(rows)
    cache.set(CURRENT_AT_KEY, time.time(), timeout=None)
    return bool(rows)


def _superseded(generation: int) -> bool:
    """A later pass has run, and a forecast made the estimates current lately."""
    later = cache.get(GENERATION_KEY) != generation
    return later and time.time() - cache.get(CURRENT_AT_KEY, 0) < STALE_SECONDS


def _new_generation() -> int:
    cache.add(GENERATION_KEY, 0, timeout=None)
    try:
        return cache.incr(GENERATION_KEY)
    except ValueError:  # evicted between the two: start again
        cache.set(GENERATION_KEY, 1, timeout=None)
        return 1


def _acquire_pass_lock() -> None:
    # SQLite: transactions begin IMMEDIATE (settings), which already takes the
    # database's single write lock for the whole pass.
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PASS_LOCK_KEY])
