"""Expected starts: the pass replayed forward in time on a copy of what it decided.

After a pass, the jobs still waiting are replayed against a copy of the cluster
and of the owners' quotas. Everything held ends at its likely end (``likely_end``:
the job's expected run time from ``jobs.estimates.expected``, else its max run
time; unknown without either). At now and then at each moment something ends,
the scheduler's own decisions (``step``: admission, best-fit placement, EASY
reservations, in queue order) run on the waiting jobs left; each job that
starts there is given that moment and holds what it took until its own likely
end. So a job waiting for quota and one waiting for cards get the same kind of
answer, in queue order: #1, #2 and #3 behind cards that free at 2:06, 2:09 and
2:09 expect 2:06, 2:09 and 2:09.

It reads nothing from the database: what the pass loaded is all it needs. Each
step considers the first ``WINDOW`` jobs of each queue still waiting (like
Slurm's ``bf_max_job_test``), and steps further ahead cover longer spans
(``SPREAD``, after ``FINE_STEPS``), so a pass's forecast costs about (steps × window), not (queue²).
The first ``DEPTH`` waiting jobs of each queue get an expected start; the
others, and those waiting on something whose end is unknown, get None.
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .admission import Quotas
from .backfill import Release, ends_at, merged, release_order
from .cluster import Cluster
from .queue import WaitingJob
from .writes import Start

# How many waiting jobs of each queue get an expected start, and how many of them each
# replay step considers (the first still waiting: those behind them rarely start first;
# with 50, jobs deep in a queue of mixed sizes started later in the replay than in the
# scheduler, which fits small ones into gaps: bench/start_estimates.py, p90 347 % → 60 %).
DEPTH = 1000
WINDOW = 200

# Ends this close together are taken as one moment, the latest of them: a replay step
# costs a pass over the window, and an expected start is shown to the minute. After
# FINE_STEPS steps a step covers a twentieth of the time from now: a start five hours
# away is told to within 15 minutes.
RESOLUTION = timedelta(minutes=1)
FINE_STEPS = 50
SPREAD = 20

# One simulated pass: (now, cluster, quotas, what is held then, waiting jobs) → what starts.
Step = Callable[
    [datetime, Cluster, Quotas, Callable[[], list[Release]], list[WaitingJob]], list[Start]
]


def likely_end(
    start: datetime, expected_seconds: int | None, end: datetime | None, now: datetime
) -> datetime | None:
    """When a job that started at ``start`` and must end by ``end`` will likely end.

    Its expected run time if known (never past ``end``); a job already past it
    is expected halfway between now and its max run time (now, without one).
    """
    if expected_seconds is None:
        return None if end is None else max(now, end)
    likely = start + timedelta(seconds=expected_seconds)
    if end is not None:
        likely = min(likely, end)
    if likely >= now:
        return likely
    return now if end is None or end <= now else now + (end - now) / 2


@dataclass
class _Holder:
    """A job holding nodes and quota in the replay, until its likely end."""

    job_id: int
    owner_id: int | None
    end: datetime | None  # the max run time's end, for the scheduler's reservations
    releases: list[Release] = field(default_factory=list)  # what it holds, as the scheduler plans


def forecast_starts(
    *,
    now: datetime,
    cluster: Cluster,
    quotas: Quotas,
    jobs: list[WaitingJob],
    releases: Iterable[Release],
    step: Step,
) -> dict[int, datetime | None]:
    """The expected start of each of ``jobs`` (waiting, in queue order); None: unknown."""
    waiting = _first(jobs, DEPTH)
    starts: dict[int, datetime | None] = {job.pk: None for job in jobs}
    replay = _Replay(now, cluster.copy(), quotas.copy(), releases)
    moment: datetime | None = now
    while waiting and moment is not None:
        window = _first(waiting, WINDOW)
        started = step(moment, replay.cluster, replay.quotas, replay.releases, window)
        for start in started:
            starts[start.job.pk] = moment
            replay.hold(start, moment)
        if started:
            taken = {start.job.pk for start in started}
            waiting = [job for job in waiting if job.pk not in taken]
            if len(waiting) > len(window) - len(started):
                continue  # the window moved on: those behind may start at this moment too
        moment = replay.next_end() if waiting else None
    return starts


def _first(jobs: list[WaitingJob], count: int) -> list[WaitingJob]:
    """The first ``count`` jobs of each queue, in order."""
    per_queue: dict[str, int] = {}
    first = []
    for job in jobs:
        per_queue[job.queue] = per_queue.get(job.queue, 0) + 1
        if per_queue[job.queue] <= count:
            first.append(job)
    return first


class _Replay:
    """The copied cluster and quotas, and what ends when."""

    def __init__(
        self, now: datetime, cluster: Cluster, quotas: Quotas, releases: Iterable[Release]
    ) -> None:
        self.now = now
        self.steps = 0
        self.cluster = cluster
        self.quotas = quotas
        self.holders: dict[int, _Holder] = {}
        self.ends: list[tuple[datetime, int]] = []  # (likely end, job)
        self.order = 0
        owners = {
            holding.job_id: (owner, holding)
            for owner, held in quotas.holdings.items()
            for holding in held.values()
        }
        likely: dict[int, datetime | None] = {}
        for release in releases:
            job_id = release.job_id
            holder = self.holders.get(job_id)
            if holder is None:
                owner = owners.pop(job_id, (None, None))[0]
                holder = self.holders[job_id] = _Holder(job_id, owner, release.end)
                likely[job_id] = release.likely_end
            holder.releases.append(release)
            self.order = max(self.order, release.order + 1)
        # Jobs holding quota but no ready node: their quota frees at their max run time.
        for job_id, (owner, holding) in owners.items():
            end = ends_at(holding.started_at or now, holding.max_runtime_minutes)
            self.holders[job_id] = _Holder(job_id, owner, end)
            likely[job_id] = None if end is None else max(now, end)
        for job_id, end in likely.items():
            if end is not None:
                heapq.heappush(self.ends, (end, job_id))
        # What is held, in the order it ends (sorted once); what the replay started, too.
        self._ordered = sorted(releases, key=release_order)
        self._added: list[Release] = []

    def releases(self) -> list[Release]:
        """What is held now, ending at its max run time, in that order: what the scheduler
        plans with. (What ended is dropped for good: a job holds once.)"""
        held = self.holders
        self._ordered = [release for release in self._ordered if release.job_id in held]
        self._added = [release for release in self._added if release.job_id in held]
        return merged(self._ordered, self._added)

    def hold(self, start: Start, moment: datetime) -> None:
        job = start.job
        holder = _Holder(job.pk, job.owner_id, ends_at(moment, job.max_runtime_minutes))
        for use in start.uses:
            holder.releases.append(Release(holder.end, self.order, use, job.pk))
            insort(self._added, holder.releases[-1], key=release_order)
            self.order += 1
        self.holders[job.pk] = holder
        seconds = job.likely_seconds
        if seconds is not None:
            heapq.heappush(self.ends, (moment + timedelta(seconds=seconds), job.pk))

    def next_end(self) -> datetime | None:
        """Give back what ends next (within ``RESOLUTION`` or more, further ahead); when
        (None: nothing ends)."""
        if not self.ends:
            return None
        first = self.ends[0][0]
        self.steps += 1
        span = RESOLUTION
        if self.steps > FINE_STEPS:
            span = max(span, (first - self.now) / SPREAD)
        until = first + span
        while self.ends and self.ends[0][0] < until:
            moment, job_id = heapq.heappop(self.ends)
            holder = self.holders.pop(job_id)
            for release in holder.releases:
                if release.use.node_pk in self.cluster.nodes:
                    self.cluster.allocate(release.use, -1)
            if holder.owner_id is not None:
                self.quotas.give_back(holder.owner_id, job_id)
        return moment
