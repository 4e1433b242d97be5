"""One scheduling pass: admit, place and start what can start, explain the rest.

The pass runs under a database lock (one pass at a time) in one transaction.
It reads the cluster, the waiting jobs and the quotas once (a fixed number of
queries, whatever the queue length), decides everything in memory, and writes
in bulk. Jobs are taken in queue order (priority, fair share, then submission time); each
requested model is its own queue, and the first job of a queue that cannot
start gets a reservation that later jobs may not delay (EASY backfill).

A job within its quota that waits for capacity held by borrowing jobs preempts them
(``preemption.py``). After every job was considered, preemptible jobs beyond their
quota may borrow what is still idle, where no job within its quota waits.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from core.reasons import Reason
from jobs.models import Job

from .admission import Quotas
from .backfill import (
    Release,
    Reservation,
    ends_at,
    plan_reservation,
    release_order,
    reservations_view,
)
from .checkpoints import away_from_checkpoints, place_where_it_ran
from .cluster import Cluster, ReplicaUse
from .explain import waiting_changes, waiting_estimates
from .forecast import likely_end
from .lookahead import Lookahead, submit_for_slurm
from .placement import Shape, place
from .ports import PortPool
from .preemption import Borrowing, choose_victims
from .queue import WaitingJob
from .reasons import (
    held_reason,
    image_reason,
    kept_reason,
    nothing_idle_reason,
    ports_reason,
    preempting_reason,
)
from .reclaim import Claim, claim, make_claims
from .releases import load_releases
from .writes import (
    Start,
    Waiting,
    write_borrowing_ended,
    write_preemptions,
    write_starts,
    write_waiting,
)

PENDING_ORDER = 1 << 40


@dataclass
class PassReport:
    waiting: int = 0
    started: list[int] = field(default_factory=list)
    quota_wait: int = 0
    resource_wait: int = 0
    seconds: float = 0.0  # the pass, under its lock
    forecast_seconds: float = 0.0  # its forecast, after it (``run.py``)
    truncated: bool = False  # it started ``max_starts``: the jobs after them are the next's
    preempted: dict[int, int] = field(default_factory=dict)  # victim -> the job it stops for


class SchedulingPass:
    def __init__(
        self,
        *,
        now: datetime,
        cluster: Cluster,
        jobs: list[WaitingJob],
        quotas: Quotas | None = None,
        releases: Callable[[], list[Release]] | None = None,
        ports: bool = True,
    ) -> None:
        """``quotas``, ``releases`` (what is held, in the order it ends) and ``ports=False``:
        a pass the start forecast replays (which neither preempts nor borrows)."""
        self.now = now
        self.catalog = cluster.catalog
        self.cluster = cluster
        self.jobs = jobs
        self.quotas = quotas
        self.with_ports = ports
        self.starts: list[Start] = []
        # job → (state, reason), or "" for a resource wait whose reason is found at the end
        self.outcomes: dict[int, tuple[str, Reason | str]] = {}
        self.shapes: dict[int, Shape] = {}
        self.reservations_by_node: dict[int, list[Reservation | Claim]] = {}
        self.blocked: set[str] = set()
        self.failed_on_capacity: set[Shape] = set()
        self.failed_held: dict[Shape, tuple[float, Reason]] = {}
        self._ports: PortPool | None = None
        self._load_releases = releases or partial(load_releases, cluster, now)
        self._releases: list[Release] | None = None
        self._pending_releases: list[Release] = []
        self.live = ports
        self.ran_on: dict[int, list[tuple[int, str]]] = {}  # requeued job -> checkpoint nodes
        self.borrowers: list[WaitingJob] = []  # beyond quota, preemptible: considered last
        self.wanted: dict[str | None, int] = {}  # model (None: any) -> a job within quota waiting
        self._borrowing: Borrowing | None = None
        self.preempted: dict[int, int] = {}  # victim -> the job it stops for (new)
        self.asked_again: dict[int, int] = {}
        self.reclaiming: list[WaitingJob] = []
        self.victim_nodes: dict[int, set[int]] = {}  # reclaiming job -> its victims' nodes
        self.claims: dict[int, Claim] = {}  # reclaiming job -> where it starts (``reclaim``)
        self.lookahead: Lookahead | None = None  # jobs Slurm places (live passes only)
        self.left_waiting: list[Waiting] = []  # what ``run`` wrote of the jobs not started
        # Live passes: once this many have started, the jobs after them wait for the next
        # pass, as they are (``truncated``).
        self.max_starts: int | None = None
        self.truncated = False

    def run(self) -> PassReport:
        report = PassReport(waiting=len(self.jobs))
        if not self.jobs:
            return report
        if self.quotas is None:
            owners = {job.owner_id for job in self.jobs}
            self.quotas = Quotas(owner_ids=owners, catalog=self.catalog)
        write_borrowing_ended(self.decide())
        report.truncated = self.truncated
        # What was held before this pass, read before its starts are written: those are
        # pending releases already, and read from the database as well they count twice.
        self.releases()
        report.started = write_starts(self.starts, self.cluster)
        report.preempted = write_preemptions(self.preempted, self.now) | self.asked_again
        changes = self.left_waiting = self.waiting_changes()
        write_waiting(changes)
        report.quota_wait = sum(1 for c in changes if c.state == Job.State.QUOTA_WAIT)
        report.resource_wait = len(changes) - report.quota_wait
        return report

    def decide(self) -> list[int]:
        """Every decision, in memory (``bench/fair_queues.py`` replays it); the borrowing
        jobs whose owners' quotas hold them from now on."""
        if self.live:
            self.claims = make_claims(self)
        for job in self.jobs:
            if self.max_starts is not None and len(self.starts) >= self.max_starts:
                self.truncated = True  # the rest, borrowing included, are the next pass's
                return []
            self.consider(job)
        # What the jobs within quota left of it holds borrowing jobs now (their owners' own
        # waiting jobs never preempt them: ``_preempt_for``).
        ended = self.quotas.end_borrowing()
        for job in self.borrowers:
            self.consider_borrowing(job)
        for job in self.reclaiming:  # charged while it waited on its victims (below)
            self.quotas.give_back(job.owner_id, job.pk)
        return ended

    def consider(self, job: WaitingJob) -> None:
        if job.image_adding is not None:  # nothing to start it in yet; it holds no one back
            self.outcomes[job.pk] = (Job.State.RESOURCE_WAIT, image_reason(job.image_adding))
            return
        admission = self.quotas.admit(job)
        if not admission.admitted:
            self.outcomes[job.pk] = (Job.State.QUOTA_WAIT, admission.reason)
            if job.preemptible and self.live:
                self.borrowers.append(job)
            return
        shape = Shape.of(job.request, admission.models)
        self.shapes[job.pk] = shape
        ends = ends_at(self.now, job.max_runtime_minutes)
        if job.on_victims and self.live and self._preempt_for(job, shape, ends):
            return  # it waits for its victims (``reclaim.py``)
        if job.pk in self.claims:
            self._start(job, self.claims[job.pk].uses, ends)
            return
        if submit_for_slurm(self, job, shape):
            return
        cached = self._failed_before(shape, job.max_runtime_minutes)
        uses = None if cached is not None else self._place_again(job, shape, ends)
        if uses is None and cached is None:
            uses = self._place(job, shape, ends)
        if uses is None:
            held = (
                cached
                if cached is not None
                else self._failed_before(shape, job.max_runtime_minutes)
            )
            if held == "" and self.live and self._preempt_for(job, shape, ends):
                return
            self._wait_for_nodes(job, shape, held)
            return
        self._start(job, uses, ends)

    def consider_borrowing(self, job: WaitingJob) -> None:
        """A preemptible job beyond its quota: start it on idle capacity that no job within
        its quota waits for, within its owner's borrow limits; else it stays in quota wait."""
        admission = self.quotas.admit_borrowing(job)
        if not admission.admitted:
            self.outcomes[job.pk] = (Job.State.QUOTA_WAIT, admission.reason)
            return
        models = admission.models
        for model in (None,) + (models or tuple(self.wanted)):
            if model in self.wanted:
                self.outcomes[job.pk] = (Job.State.QUOTA_WAIT, kept_reason(self.wanted[model]))
                return
        shape = Shape.of(job.request, models)
        ends = ends_at(self.now, job.max_runtime_minutes)
        failed = self._failed_before(shape, job.max_runtime_minutes) is not None
        uses = None if failed else self._place(job, shape, ends)
        if uses is None:
            quota_wait = self.outcomes[job.pk][1]
            self.outcomes[job.pk] = (Job.State.QUOTA_WAIT, nothing_idle_reason(quota_wait))
            return
        self._start(job, uses, ends, borrowed=True)

    def _start(self, job: WaitingJob, uses, ends, *, borrowed: bool = False) -> None:
        host_ports = self._take_ports(job)
        if host_ports is None:
            return
        for use in uses:
            for reservation in self.reservations_by_node.get(use.node_pk, ()):
                reservation.consume(use, ends)
            self.cluster.allocate(use)
            # Ordered after everything loaded: among unknown ends, the newest ends last.
            order = PENDING_ORDER + len(self._pending_releases)
            likely = likely_end(self.now, job.likely_seconds, ends, self.now)
            self._pending_releases.append(Release(ends, order, use, job.pk, likely))
        node_models = [self.cluster.nodes[use.node_pk].model for use in uses]
        self.quotas.charge_started(job, node_models, self.now, borrowed=borrowed)
        away = away_from_checkpoints(self.ran_on.get(job.pk, ()), uses)
        self.starts.append(Start(job, uses, tuple(host_ports), borrowed, away))

    def _preempt_for(self, job: WaitingJob, shape: Shape, ends) -> bool:
        """Stop borrowing jobs whose capacity lets ``job`` (within quota) start; whether it
        waits for such (now or from an earlier pass)."""
        borrowing = self.borrowing()
        victims = borrowing.stopping_for.get(job.pk)
        if victims is not None:
            self.asked_again.update(dict.fromkeys(borrowing.unanswered(job.pk, self.now), job.pk))
        elif borrowing.candidates:
            chosen = choose_victims(
                [b for b in borrowing.candidates.values() if b.owner_id != job.owner_id],
                cluster=self.cluster,
                fits=lambda: self._placement(shape, ends, [], job.pk).uses is not None,
                now=self.now,
            )
            if chosen:
                borrowing.claim(chosen, job.pk)
                victims = [victim.job_id for victim in chosen]
                self.preempted.update(dict.fromkeys(victims, job.pk))
                held = [use for victim in chosen for use in victim.uses]
                claim(self, job, shape, held, {use.node_pk for use in held})
        if not victims:
            return False
        self.outcomes[job.pk] = (Job.State.RESOURCE_WAIT, preempting_reason(victims))
        # What it will hold counts against its owner's quota now: their later jobs may not
        # preempt on the same headroom (nor borrow it).
        model = shape.models[0] if shape.models else None
        self.quotas.charge_started(job, [model] * job.request.replicas, self.now)
        self.reclaiming.append(job)
        return True

    def borrowing(self) -> Borrowing:
        """The borrowing jobs, those stopping and for whom (loaded when first needed)."""
        if self._borrowing is None:
            self._borrowing = Borrowing.load(self.releases())
        return self._borrowing

    def _place_again(self, job: WaitingJob, shape: Shape, ends) -> tuple[ReplicaUse, ...] | None:
        """A requeued job on the nodes that hold its checkpoints, if it fits there."""
        nodes = [pk for pk, _name in self.ran_on.get(job.pk, ())]
        if not nodes:
            return None
        return place_where_it_ran(self.cluster, shape, nodes, self.narrowing(ends, [], job.pk))

    def _placement(self, shape: Shape, ends, refusing: list[Reservation], job_id: int):
        """Where job ``job_id``'s ``shape`` fits now within the reservations (but its own);
        those that narrowed a node are added to ``refusing``."""

        return place(self.cluster, shape, self.narrowing(ends, refusing, job_id))

    def narrowing(self, ends, refusing: list[Reservation], job_id: int):
        """What the other jobs' reservations leave of a node to job ``job_id`` ending at
        ``ends`` (None: all); those that narrowed a node are added to ``refusing``."""
        return reservations_view(self.reservations_by_node, ends, refusing, job_id)

    def _failed_before(self, shape: Shape, max_runtime: int | None) -> Reason | str | None:
        """The reason a shape failed earlier in this pass, if it must fail again.

        Free resources only shrink during a pass, so a shape that did not fit
        does not fit later; one refused by reservations is refused again for a
        job that runs at least as long (unknown counts as longest).
        """
        if shape in self.failed_on_capacity:
            return ""
        held = self.failed_held.get(shape)
        if held is not None and _runtime_order(max_runtime) >= held[0]:
            return held[1]
        return None

    def _place(self, job: WaitingJob, shape: Shape, ends) -> tuple[ReplicaUse, ...] | None:
        refusing: list[Reservation] = []
        outcome = self._placement(shape, ends, refusing, job.pk)
        if outcome.uses is None and not outcome.refused:
            self.failed_on_capacity.add(shape)
        elif outcome.uses is None:
            runtime = _runtime_order(job.max_runtime_minutes)
            if runtime < self.failed_held.get(shape, (math.inf,))[0]:
                self.failed_held[shape] = (runtime, held_reason(job_id=refusing[0].job_id))
        return outcome.uses

    def _wait_for_nodes(self, job: WaitingJob, shape: Shape, held: Reason | str) -> None:
        """Resource wait; the first such job of its queue gets a reservation."""
        self.outcomes[job.pk] = (Job.State.RESOURCE_WAIT, held)
        self._want(job, shape)
        if job.queue in self.blocked:
            return
        self.blocked.add(job.queue)
        reservation = plan_reservation(
            cluster=self.cluster,
            shape=shape,
            job_id=job.pk,
            releases=self.releases_in_order(),
            excluded=set(self.reservations_by_node),
        )
        if reservation is not None:
            for node_pk in reservation.extra:
                self.reservations_by_node.setdefault(node_pk, []).append(reservation)

    def _want(self, job: WaitingJob, shape: Shape) -> None:
        """``job``, within its quota, waits for capacity on ``shape``'s models: none of it
        is lent to borrowing jobs in this pass (a CPU job's wait keeps every node)."""
        for model in shape.models or (None,):
            self.wanted.setdefault(model, job.pk)

    def _take_ports(self, job: WaitingJob) -> list[int] | None:
        need = job.host_ports_needed
        if not need or not self.with_ports:
            return []
        if self._ports is None:
            self._ports = PortPool.load()
        taken = self._ports.take(need)
        if taken is None:
            reason = ports_reason(need=need, free=self._ports.free, size=self._ports.size)
            self.outcomes[job.pk] = (Job.State.RESOURCE_WAIT, reason)
        return taken

    def releases(self) -> list[Release]:
        """What is held now and when it is given back (loaded once, when first needed)."""
        if self._releases is None:
            self._releases = self._load_releases()
        return self._releases + self._pending_releases

    def releases_in_order(self) -> Iterator[Release]:
        """``releases`` in the order they end (``release_order``), as they are wanted: the
        loaded ones come in that order, this pass's starts are merged in."""
        self.releases()
        pending = sorted(self._pending_releases, key=release_order)
        return heapq.merge(self._releases, pending, key=release_order)

    def waiting_changes(self) -> list[Waiting]:
        """Each job left waiting: its state, reason and position."""
        return waiting_changes(self)

    def estimates(self) -> dict[int, datetime | None]:
        """Each job left waiting → its likely start (run after the pass: ``run.py``)."""
        return waiting_estimates(self, step=self._replayed)

    @staticmethod
    def _replayed(
        now: datetime,
        cluster: Cluster,
        quotas: Quotas,
        releases: Callable[[], list[Release]],
        jobs: list[WaitingJob],
    ) -> list[Start]:
        """What a pass at ``now`` would start (the forecast's step; ports aside)."""
        step = SchedulingPass(
            now=now, cluster=cluster, jobs=jobs, quotas=quotas, releases=releases, ports=False
        )
        for job in jobs:
            step.consider(job)
        return step.starts


def _runtime_order(max_runtime_minutes: int | None) -> float:
    return math.inf if max_runtime_minutes is None else max_runtime_minutes
