"""One policy replayed through the real pass, in memory (``fair_queues.py`` runs it)."""

from __future__ import annotations

import bisect
import heapq
import math
import sys
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fair_queues_world import (  # noqa: E402
    AGGREGATE,
    BEHIND_HEAVY,
    CHECKPOINT_SECONDS,
    GRACE_SECONDS,
    MUTUAL,
    POLICIES,
    START,
    Outcome,
    SimJob,
    World,
)


class Replay:
    """One policy over the workload: simulated time, the real pass's decisions."""

    def __init__(self, world: World, policy: int) -> None:
        from jobs.scheduler.cluster import Cluster

        self.world = world
        self.policy = policy
        self.args = world.args
        self.cluster = Cluster(world.nodes(), world.catalog, world.typical)
        self.quotas = self._quotas()
        self.jobs: dict[int, SimJob] = {}
        self.waiting_jobs: dict[int, object] = {}  # pk -> WaitingJob, kept across passes
        self.queue: list[tuple[float, int]] = []  # (submitted, pk): submission order
        self.events: list[tuple[float, int, str, int, int]] = []  # (time, seq, kind, pk, attempt)
        self.seq = 0
        self.running: dict[int, SimJob] = {}
        self.running_cards = {user: 0.0 for user in world.users}
        self.decayed = {user: 0.0 for user in world.users}  # card-seconds, decayed
        self.decayed_at = 0.0
        self.stopping_for: dict[int, list[int]] = {}
        self.victim_nodes: dict[int, set[int]] = {}  # beneficiary -> its victims' nodes
        self.ever_preempted: set[int] = set()
        self.preempted_for: dict[int, set[int]] = {}  # victim -> the jobs it stopped for
        self.victims_stopped_at: dict[int, int] = {}  # beneficiary -> pass its victims stopped
        self.last_outcome: dict[int, str] = {}  # job -> why it waited in the last pass
        self.outcome = Outcome(POLICIES[policy])
        self.outcome.used = {user: 0.0 for user in world.users}
        self.outcome.waits = {user: [] for user in world.users}

    def _quotas(self):
        """``Quotas`` without its database reads (its ``__init__`` loads limits and holdings)."""
        from jobs.scheduler.admission import Quotas
        from resources.vector import gpu_key, vgpu_key

        quotas = Quotas.__new__(Quotas)
        quotas.catalog = self.world.catalog
        quotas.limits = {}
        if self.policy > 0:
            quotas.limits = {
                user: {gpu_key(AGGREGATE): cards, vgpu_key(AGGREGATE): 100 * cards}
                for user, cards in self.world.quota.items()
            }
        quotas.holdings = {user: {} for user in quotas.limits}
        quotas.usage = {user: {} for user in quotas.limits}
        quotas.borrowed = {user: {} for user in quotas.limits}
        quotas._borrow_limits = {}  # no borrow limits: borrowing is capped by idle capacity
        quotas._answers = {}
        quotas._options = {}
        return quotas

    def submit(self, spec: dict, pk_offset: int = 0) -> SimJob:
        from jobs.scheduler.queue import WaitingJob

        job = SimJob(
            pk=spec["pk"] + pk_offset,
            owner=spec["owner"],
            arrival=spec["arrival"],
            duration=spec["duration"],
            max_runtime_minutes=spec["max_runtime_minutes"],
            request=spec["request"],
            card_fraction=spec["card_fraction"],
        )
        self.jobs[job.pk] = job
        heavy = self.world.heavy
        if job.owner not in heavy:  # how many jobs the busiest heavy user has queued ahead
            queued = Counter(self.jobs[pk].owner for _at, pk in self.queue)
            job.behind_heavy = max((queued[user] for user in heavy), default=0)
        preemptible = self.policy == 3 and job.owner in heavy
        self.waiting_jobs[job.pk] = WaitingJob(
            job.pk, job.owner, "queued", "", None, None, job.max_runtime_minutes, 0, None,
            job.request, preemptible=preemptible,
        )  # fmt: skip
        bisect.insort(self.queue, (job.arrival, job.pk))
        return job

    def push(self, moment: float, kind: str, job: SimJob) -> None:
        self.seq += 1
        heapq.heappush(self.events, (moment, self.seq, kind, job.pk, job.attempt))

    def run(self) -> Outcome:
        began = time.perf_counter()
        specs = self.world.specs
        window, tick = self.world.window, self.args.tick
        horizon = 3 * window
        arrived = 0
        now = 0.0
        next_progress = 0.0
        while True:
            changed = False
            while arrived < len(specs) and specs[arrived]["arrival"] <= now:
                self.submit(specs[arrived])
                arrived += 1
                changed = True
            while self.events and self.events[0][0] <= now:
                moment, _seq, kind, pk, attempt = heapq.heappop(self.events)
                changed |= self.event(moment, kind, self.jobs[pk], attempt)
            if changed or any(self.waiting_jobs[pk].reclaiming for pk in self.stopping_for):
                self.run_pass(now)
            if now >= next_progress:
                print(
                    f"    [{self.outcome.name}] t={now / 3600:5.2f} h: {arrived} arrived, "
                    f"{len(self.queue)} queued, {len(self.running)} running, "
                    f"{self.outcome.passes} passes, {time.perf_counter() - began:.0f} s wall",
                    flush=True,
                )
                next_progress += window / 5
            upcoming = [self.events[0][0]] if self.events else []
            if arrived < len(specs):
                upcoming.append(specs[arrived]["arrival"])
            if not upcoming or now > horizon:
                break
            now = max(now + tick, math.ceil(min(upcoming) / tick) * tick)
        self.finish(now)
        self.outcome.wall = time.perf_counter() - began
        return self.outcome

    def event(self, moment: float, kind: str, job: SimJob, attempt: int) -> bool:
        if attempt != job.attempt or job.pk not in self.running:
            return False  # an end of an attempt already stopped
        if kind == "stop" and not job.stopping:
            return False
        self.release(job, moment)
        self.stopped(job)
        if kind == "end":
            job.done = True
            return True
        # A preempted job stopped: it waits again, in its place by submission.
        job.attempt += 1
        job.stopping = False
        bisect.insort(self.queue, (job.arrival, job.pk))
        return True

    def stopped(self, job: SimJob) -> None:
        """A victim stopped, or ended within its grace: its beneficiary waits on it no more."""
        for beneficiary, victims in list(self.stopping_for.items()):
            if job.pk in victims:
                victims.remove(job.pk)
                if not victims:
                    del self.stopping_for[beneficiary]
                    if self.jobs[beneficiary].started is not None:
                        self.outcome.started_elsewhere += 1
                    else:
                        self.victims_stopped_at[beneficiary] = self.outcome.passes

    def release(self, job: SimJob, moment: float) -> None:
        for use in job.uses:
            self.cluster.allocate(use, -1)
        self.quotas.give_back(job.owner, job.pk)
        del self.running[job.pk]
        self.running_cards[job.owner] -= job.card_fraction
        self.account(job, moment)

    def account(self, job: SimJob, moment: float) -> None:
        """The card-seconds of the attempt that ends at ``moment`` within the window."""
        overlap = max(0.0, min(moment, self.world.window) - job.started)
        self.outcome.used[job.owner] += overlap * job.card_fraction

    def factors(self, now: float) -> dict[int, float]:
        """Mirrors ``billing.fair_share.fair_share_factors`` on in-memory usage: card-seconds
        decayed by ½ per half-life (continuously, where ``decayed_usage`` decays per day);
        each user's shares are their quota's cards."""
        half_life = self.args.half_life_hours * 3600
        span = now - self.decayed_at
        decay = 0.5 ** (span / half_life)
        for user in self.decayed:
            self.decayed[user] = self.decayed[user] * decay + self.running_cards[user] * span
        self.decayed_at = now
        owners = {self.jobs[pk].owner for _submitted, pk in self.queue}
        users = owners | {user for user, used in self.decayed.items() if used > 0}
        total_usage = sum(self.decayed.values())
        total_shares = sum(self.world.quota[user] for user in users)
        if total_usage <= 0:
            return dict.fromkeys(owners, 1.0)
        return {
            user: 2.0
            ** (-(self.decayed[user] / total_usage) / (self.world.quota[user] / total_shares))
            for user in owners
        }

    def releases(self):
        from jobs.scheduler.backfill import Release

        held = []
        for order, job in enumerate(self.running.values()):
            end = START + timedelta(seconds=job.started, minutes=job.max_runtime_minutes)
            held.extend(Release(end, order, use, job.pk, end) for use in job.uses)
        return held

    def borrowing(self, now: datetime):
        from jobs.scheduler.preemption import Borrower, Borrowing

        candidates = {
            job.pk: Borrower(
                job.pk, job.owner, START + timedelta(seconds=job.started), tuple(job.uses)
            )
            for job in self.running.values()
            if job.borrowed and not job.stopping
        }
        stopping_for = {pk: list(victims) for pk, victims in self.stopping_for.items()}
        return Borrowing(candidates=candidates, stopping_for=stopping_for)

    def run_pass(self, now_s: float) -> float:
        """One pass at ``now_s``: order, consider, borrow; apply what it decided."""
        from jobs.scheduler.passes import SchedulingPass
        from jobs.scheduler.queue import in_fair_share_order

        began = time.perf_counter()
        now = START + timedelta(seconds=now_s)
        jobs = [self.waiting_jobs[pk] for _submitted, pk in self.queue]
        for job in jobs:
            job.on_victims = job.pk in self.stopping_for
        # waiting_rows' order: reclaiming first (those whose victims are gone, then those
        # whose victims still stop), then priority (all normal), then submission.
        jobs.sort(key=lambda job: (not job.reclaiming, job.on_victims))
        if self.policy >= 2:
            jobs = in_fair_share_order(jobs, self.factors(now_s))
        pass_ = SchedulingPass(
            now=now,
            cluster=self.cluster,
            jobs=jobs,
            quotas=self.quotas,
            releases=self.releases,
            ports=self.policy == 3,  # live: borrowing and preemption
        )
        if self.policy == 3:
            pass_._borrowing = self.borrowing(now)
            pass_.victim_nodes = self.victim_nodes
        ended_borrowing = pass_.decide()
        seconds = time.perf_counter() - began
        for pk in ended_borrowing:
            self.jobs[pk].borrowed = False
        self.outcome.passes += 1
        if seconds > self.outcome.slowest_pass:
            self.outcome.slowest_pass, self.outcome.slowest_queue = seconds, len(jobs)
        self.apply(pass_, now_s)
        return seconds

    def apply(self, pass_, now_s: float) -> None:
        for pk, (state, _reason) in pass_.outcomes.items():
            if state == "quota_wait" and pk in self.jobs:
                self.jobs[pk].quota_waited = True  # its own quota held it back at least once
        started = set()
        for start in pass_.starts:
            job = self.jobs[start.job.pk]
            started.add(job.pk)
            job.started, job.uses, job.borrowed = now_s, start.uses, start.borrowed
            if job.first_start is None:
                job.first_start = now_s
                self.outcome.waits[job.owner].append(now_s - job.arrival)
                self.note_light_wait(job, now_s - job.arrival)
                if not job.quota_waited:
                    self.outcome.within_quota.append((now_s - job.arrival, job.waited_on))
            self.waiting_jobs[job.pk].reclaiming = False
            self.victim_nodes.pop(job.pk, None)
            self.running[job.pk] = job
            self.running_cards[job.owner] += job.card_fraction
            self.push(now_s + job.duration, "end", job)
        if started:
            self.queue = [item for item in self.queue if item[1] not in started]
        for beneficiary, stopped_pass in list(self.victims_stopped_at.items()):
            if beneficiary in started:
                del self.victims_stopped_at[beneficiary]
            elif self.outcome.passes > stopped_pass + 1:
                del self.victims_stopped_at[beneficiary]
                self.outcome.cycles.append(
                    "did not start within one pass after its victims stopped, waiting for "
                    + self.last_outcome.get(beneficiary, "?")
                )
        self.last_outcome = {
            pk: getattr(reason, "code", reason) or state
            for pk, (state, reason) in pass_.outcomes.items()
        }
        for pk, why in self.last_outcome.items():
            if pk in self.jobs:
                self.jobs[pk].waited_on.add(why)
        for victim_pk, beneficiary in pass_.preempted.items():
            self.preempt(self.jobs[victim_pk], beneficiary, now_s)

    def preempt(self, victim: SimJob, beneficiary: int, now_s: float) -> None:
        if beneficiary in self.ever_preempted:
            self.outcome.cycles.append("preempted for a job that was itself preempted earlier")
        if victim.pk in self.preempted_for.get(beneficiary, ()):
            self.outcome.cycles.append(MUTUAL)
        if victim.stopping:
            self.outcome.cycles.append("chosen again while stopping")
        if victim.owner == self.jobs[beneficiary].owner:
            self.outcome.own_preemptions += 1
        self.ever_preempted.add(victim.pk)
        self.preempted_for.setdefault(victim.pk, set()).add(beneficiary)
        victim.stopping = True
        self.stopping_for.setdefault(beneficiary, []).append(victim.pk)
        self.victim_nodes.setdefault(beneficiary, set()).update(use.node_pk for use in victim.uses)
        self.waiting_jobs[beneficiary].reclaiming = True
        self.push(now_s + GRACE_SECONDS, "stop", victim)
        elapsed = now_s + GRACE_SECONDS - victim.started
        self.outcome.preemptions += 1
        self.outcome.lost_hours += victim.card_fraction * elapsed / 3600
        self.outcome.lost_hours_checkpointed += (
            victim.card_fraction * (elapsed % CHECKPOINT_SECONDS) / 3600
        )

    def note_light_wait(self, job: SimJob, wait: float) -> None:
        """A light user's job that arrived behind a heavy user's 200 or more queued jobs."""
        if job.behind_heavy >= BEHIND_HEAVY:
            self.outcome.light_behind.append(
                (wait, job.duration, job.quota_waited, frozenset(job.waited_on))
            )

    def finish(self, now: float) -> None:
        for job in list(self.running.values()):
            self.account(job, now)
        waiting = [self.jobs[pk] for _submitted, pk in self.queue]
        for job in waiting:
            if job.first_start is None:
                self.outcome.waits[job.owner].append(now - job.arrival)  # censored
                self.note_light_wait(job, now - job.arrival)
        self.outcome.unstarted = sum(1 for job in waiting if job.first_start is None)
        capacity = self.world.cards * self.world.window
        self.outcome.utilisation = sum(self.outcome.used.values()) / capacity
