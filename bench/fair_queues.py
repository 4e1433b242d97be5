"""Queue policies side by side: the Alibaba GPU trace (2023) replayed through the real pass.

    .venv/bin/python bench/fair_queues.py [--node-every 8] [--load 1.3] [--tick 10]

Runs fully in memory (no database): the decisions are the scheduler's own classes
(``SchedulingPass.consider`` / ``consider_borrowing``, ``Quotas``, ``Cluster``,
``choose_victims`` through ``_preempt_for``, ``in_fair_share_order``); the bench only
simulates time, arrivals, ends, and the stop of preempted jobs (victims free their
capacity ``GRACE_SECONDS`` after the pass that chose them, then wait again).

Workload: the trace's 8,152 tasks, in creation order, cut into bursts (geometric sizes)
each owned by one of 20 users drawn by Zipf weights (a few heavy, many light); burst
times are uniform over an arrival window sized so the GPU work offered is ``--load`` ×
the capacity of the cluster. The cluster is every ``--node-every``-th trace node (by
name): the trace as recorded never has more than ~56 tasks alive, so the cluster is
shrunk and arrivals compressed. Run times are the trace's (deletion − scheduled time),
clipped to ``--max-hours``; max run time = run time × uniform 1–4. Quotas: the
cluster's cards split equally over the users (on ``*ANY``, plus the same in vGPU
percent: admission keeps whole cards and shares on separate keys).

Prints the setup (offered load, window, cluster), progress lines, then one column per
policy — (0) FIFO, no quotas; (1) priority + submit order with quotas; (2) + fair
share; (3) + borrowing (heavy users' jobs preemptible) and preemption — with GPU
utilisation over the arrival window, light/heavy users' median and p95 waits, Jain's
index of used share / min(entitled, demanded) (and with each ratio capped at 1),
preemptions, GPU-hours lost (without and with a checkpoint every 10 minutes),
preemption cycles by kind (a job preempted for one that was itself preempted; for one
preempted for it; a beneficiary that did not start in the pass after its victims
stopped, with why it waited), the slowest pass; then a per-user table, the time of
passes over all 8,152 tasks queued at once, and the targets, MET or NOT MET. Decisions
only are timed: no database reads or writes. About 30 s on 2 cores with the defaults.
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import math
import random
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scheduler_trace import CARD_MEMORY_GIB, TRACE, read_csv  # noqa: E402
from scratch import django_setup  # noqa: E402

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
USERS = 20
HEAVY_USERS = 3  # the Zipf ranks whose jobs are preemptible in policy 3
ZIPF_EXPONENT = 1.2
MEAN_BURST = 12
GRACE_SECONDS = 60
CHECKPOINT_SECONDS = 600
AGGREGATE = "*ANY"
MUTUAL = "preempted for a job that was earlier preempted for it"
POLICIES = ("0 FIFO", "1 quotas", "2 fair", "3 borrow")


@dataclass
class SimJob:
    pk: int
    owner: int
    arrival: float
    duration: int
    max_runtime_minutes: int
    request: object
    card_fraction: float  # cards held while running (shares count their percent)
    first_start: float | None = None
    started: float | None = None
    attempt: int = 0
    uses: tuple = ()
    borrowed: bool = False
    stopping: bool = False
    reclaiming: bool = False
    done: bool = False


@dataclass
class Outcome:
    name: str
    utilisation: float = 0.0
    waits: dict[int, list[float]] = field(default_factory=dict)
    unstarted: int = 0
    used: dict[int, float] = field(default_factory=dict)  # card-seconds in the window
    preemptions: int = 0
    lost_hours: float = 0.0
    lost_hours_checkpointed: float = 0.0
    cycles: list[str] = field(default_factory=list)
    started_elsewhere: int = 0  # beneficiaries that started before their victims stopped
    own_preemptions: int = 0  # victim and beneficiary of one owner
    passes: int = 0
    slowest_pass: float = 0.0
    slowest_queue: int = 0
    wall: float = 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--node-every", type=int, default=8, help="keep every n-th node")
    parser.add_argument("--load", type=float, default=1.3, help="GPU work offered / capacity")
    parser.add_argument("--max-hours", type=float, default=4.0, help="run times clipped here")
    parser.add_argument("--tick", type=int, default=10, help="simulated seconds between passes")
    parser.add_argument("--half-life-hours", type=float, default=2.0)
    parser.add_argument("--tasks", type=int, default=0, help="only the first n tasks (0: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--policies", default="0123")
    args = parser.parse_args()
    django_setup()
    began = time.perf_counter()
    node_rows = read_csv(args.trace / "openb_node_list_gpu_node.csv")
    tasks = read_csv(args.trace / "openb_pod_list_default.csv")
    if args.tasks:
        tasks = tasks[: args.tasks]
    world = World(node_rows, tasks, args)
    world.describe()
    outcomes = []
    for number in args.policies:
        outcome = Replay(world, int(number)).run()
        outcomes.append(outcome)
        print(f"  policy {outcome.name}: done in {outcome.wall:.0f} s wall", flush=True)
    report(world, outcomes)
    big = big_queue_passes(world)
    targets(world, outcomes, big)
    print(f"\ntotal wall time {time.perf_counter() - began:.0f} s")


class World:
    """The shrunk cluster, the catalog, and the workload every policy replays."""

    def __init__(self, node_rows, tasks, args) -> None:
        from jobs.scheduler.cluster import typical_of
        from resources.catalog import ModelCatalog
        from resources.models import GpuModel

        self.args = args
        rng = random.Random(args.seed)
        models = {
            name: GpuModel(
                pk=pk, name=name, card_memory_gib=gib, cpu_cores_per_card=12, memory_gib_per_card=48
            )
            for pk, (name, gib) in enumerate(CARD_MEMORY_GIB.items(), start=1)
        }
        models[AGGREGATE] = GpuModel(
            pk=99, name=AGGREGATE, card_memory_gib=16, cpu_cores_per_card=12, memory_gib_per_card=48
        )
        self.catalog = ModelCatalog.build(
            models=models, memberships=[(AGGREGATE, name) for name in CARD_MEMORY_GIB]
        )
        self.node_rows = sorted(node_rows, key=lambda row: row["sn"])[:: args.node_every]
        self.cards = sum(int(row["gpu"]) for row in self.node_rows)
        weights = [1 / rank**ZIPF_EXPONENT for rank in range(1, USERS + 1)]
        self.users = list(range(1, USERS + 1))  # user id = Zipf rank
        self.heavy = set(self.users[:HEAVY_USERS])
        self.quota = {user: self.cards // USERS for user in self.users}
        for user in self.users[: self.cards % USERS]:
            self.quota[user] += 1
        ordered = sorted(tasks, key=lambda task: (int(task["creation_time"]), task["name"]))
        self.specs = []
        pk = burst = 0
        while pk < len(ordered):
            size = min(len(ordered) - pk, 1 + int(rng.expovariate(1 / (MEAN_BURST - 1))))
            owner = rng.choices(self.users, weights)[0]
            burst += 1
            for task in ordered[pk : pk + size]:
                pk += 1
                self.specs.append({**self._spec(pk, owner, task, rng), "burst": burst})
        self.work = sum(spec["duration"] * spec["card_fraction"] for spec in self.specs)
        self.window = self.work / (args.load * self.cards)
        burst_times = {}
        for spec in self.specs:
            burst = spec.pop("burst")
            if burst not in burst_times:
                burst_times[burst] = rng.uniform(0, self.window)
            spec["arrival"] = burst_times[burst]
        self.specs.sort(key=lambda spec: (spec["arrival"], spec["pk"]))
        self.typical = typical_of(spec["request"] for spec in self.specs)
        self.demand = {user: 0.0 for user in self.users}
        for spec in self.specs:
            self.demand[spec["owner"]] += spec["duration"] * spec["card_fraction"]

    def _spec(self, pk: int, owner: int, task, rng) -> dict:
        from resources.quota import request_from_values

        count, milli = int(task["num_gpu"]), int(task["gpu_milli"])
        cpu, memory = max(int(task["cpu_milli"]), 1), max(int(task["memory_mib"]), 1)
        if count == 0:
            values, fraction = ("cpu", None, 0, None, None, cpu, memory, 2, 1), 0.0
        elif milli >= 1000:
            values, fraction = ("gpu", AGGREGATE, count, None, None, cpu, memory, 2, 1), count
        else:
            percent = max(1, round(milli / 10))
            share_memory = max(1, 16 * 1024 * percent // 100)
            values = ("vgpu", AGGREGATE, 1, percent, share_memory, cpu, memory, 2, 1)
            fraction = percent / 100
        try:
            seconds = int(task["deletion_time"]) - int(
                task["scheduled_time"] or task["creation_time"]
            )
        except ValueError:
            seconds = 60
        duration = int(min(max(seconds, 60), self.args.max_hours * 3600))
        return {
            "pk": pk,
            "owner": owner,
            "duration": duration,
            "max_runtime_minutes": math.ceil(duration * rng.uniform(1, 4) / 60),
            "request": request_from_values(values, self.catalog),
            "card_fraction": fraction,
        }

    def nodes(self):
        from placement_baselines import build_nodes

        return build_nodes(self.node_rows, CARD_MEMORY_GIB)

    def describe(self) -> None:
        a = self.args
        print(
            f"cluster: every {a.node_every}th trace node: {len(self.node_rows)} nodes, "
            f"{self.cards} GPU cards (trace: 1,213 nodes, 6,212 cards)"
        )
        print(
            f"workload: {len(self.specs)} tasks, run times clipped to {a.max_hours:g} h, "
            f"{self.work / 3600:.0f} card-hours; {USERS} users (Zipf {ZIPF_EXPONENT}), "
            f"bursts of mean {MEAN_BURST} tasks"
        )
        shares = sorted(self.demand.items(), key=lambda item: -item[1])
        print(
            "  demand share per user: "
            + " ".join(f"u{u}:{d / self.work:.0%}" for u, d in shares[:8])
            + " ..."
        )
        print(
            f"arrival window {self.window / 3600:.2f} h simulated: offered load "
            f"{self.work / (self.cards * self.window):.2f}x capacity; quota "
            f"{min(self.quota.values())}-{max(self.quota.values())} cards per user "
            f"(sum {sum(self.quota.values())}); fair-share half-life {a.half_life_hours:g} h; "
            f"passes every {a.tick} s with events",
            flush=True,
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
        quotas.holdings = {user: [] for user in quotas.limits}
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
        preemptible = self.policy == 3 and job.owner in self.world.heavy
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
        if kind == "end":
            job.done = True
            return True
        # A preempted job stopped: it waits again, in its place by submission.
        job.attempt += 1
        job.stopping = False
        bisect.insort(self.queue, (job.arrival, job.pk))
        for beneficiary, victims in list(self.stopping_for.items()):
            if job.pk in victims:
                victims.remove(job.pk)
                if not victims:
                    del self.stopping_for[beneficiary]
                    if self.jobs[beneficiary].started is not None:
                        self.outcome.started_elsewhere += 1
                    else:
                        self.victims_stopped_at[beneficiary] = self.outcome.passes
        return True

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
        # waiting_rows' order: reclaiming first, then priority (all normal), then submission.
        jobs.sort(key=lambda job: not job.reclaiming)
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
        started = set()
        for start in pass_.starts:
            job = self.jobs[start.job.pk]
            started.add(job.pk)
            job.started, job.uses, job.borrowed = now_s, start.uses, start.borrowed
            if job.first_start is None:
                job.first_start = now_s
                self.outcome.waits[job.owner].append(now_s - job.arrival)
            self.waiting_jobs[job.pk].reclaiming = False
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
        self.waiting_jobs[beneficiary].reclaiming = True
        self.push(now_s + GRACE_SECONDS, "stop", victim)
        elapsed = now_s + GRACE_SECONDS - victim.started
        self.outcome.preemptions += 1
        self.outcome.lost_hours += victim.card_fraction * elapsed / 3600
        self.outcome.lost_hours_checkpointed += (
            victim.card_fraction * (elapsed % CHECKPOINT_SECONDS) / 3600
        )

    def finish(self, now: float) -> None:
        for job in list(self.running.values()):
            self.account(job, now)
        waiting = [self.jobs[pk] for _submitted, pk in self.queue]
        for job in waiting:
            if job.first_start is None:
                self.outcome.waits[job.owner].append(now - job.arrival)  # censored
        self.outcome.unstarted = sum(1 for job in waiting if job.first_start is None)
        capacity = self.world.cards * self.world.window
        self.outcome.utilisation = sum(self.outcome.used.values()) / capacity


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def jain(world: World, outcome: Outcome, cap: float = math.inf) -> float:
    """Jain's index of each user's used share over min(entitled share, demanded share);
    ``cap=1``: a user's ratio counts at most 1 (borrowing beyond it is not held against
    the others)."""
    capacity = world.cards * world.window
    ratios = []
    for user in world.users:
        deserved = min(world.quota[user] / world.cards, world.demand[user] / capacity)
        if deserved > 0:
            ratios.append(min(cap, outcome.used[user] / capacity / deserved))
    return sum(ratios) ** 2 / (len(ratios) * sum(r * r for r in ratios))


def group_waits(world: World, outcome: Outcome, heavy: bool) -> tuple[float, float, float]:
    """Minutes: the median of per-user medians, of per-user p95s, and the worst p95."""
    users = [u for u in world.users if (u in world.heavy) == heavy and outcome.waits[u]]
    medians = [statistics.median(outcome.waits[u]) / 60 for u in users]
    p95s = [percentile(outcome.waits[u], 0.95) / 60 for u in users]
    return statistics.median(medians), statistics.median(p95s), max(p95s)


def report(world: World, outcomes: list[Outcome]) -> None:
    print("\n" + f"{'':44}" + "".join(f"{o.name:>14}" for o in outcomes))

    def row(label: str, values) -> None:
        print(f"{label:44}" + "".join(f"{v:>14}" for v in values))

    row("GPU utilisation (arrival window)", [f"{o.utilisation:.1%}" for o in outcomes])
    for heavy, label in ((False, "light users"), (True, "heavy users")):
        waits = [group_waits(world, o, heavy) for o in outcomes]
        row(f"{label}: median of medians (min)", [f"{w[0]:.1f}" for w in waits])
        row(f"{label}: median of p95s (min)", [f"{w[1]:.1f}" for w in waits])
        row(f"{label}: worst user's p95 (min)", [f"{w[2]:.1f}" for w in waits])
    row("never started (waits counted to the end)", [o.unstarted for o in outcomes])
    row("Jain's index (used / min(entitled, demand))", [f"{jain(world, o):.3f}" for o in outcomes])
    row("  same, each ratio capped at 1", [f"{jain(world, o, cap=1):.3f}" for o in outcomes])
    row("preemptions", [o.preemptions for o in outcomes])
    row("GPU-hours lost, no checkpoints", [f"{o.lost_hours:.1f}" for o in outcomes])
    row(
        "GPU-hours lost, checkpoint every 10 min",
        [f"{o.lost_hours_checkpointed:.1f}" for o in outcomes],
    )
    row("  of them: victim and beneficiary one owner's", [o.own_preemptions for o in outcomes])
    row("preemption cycles (see below)", [len(o.cycles) for o in outcomes])
    row("beneficiary started before victims stopped", [o.started_elsewhere for o in outcomes])
    row("passes", [o.passes for o in outcomes])
    row("slowest pass (s)", [f"{o.slowest_pass:.3f}" for o in outcomes])
    row("  queued then", [o.slowest_queue for o in outcomes])
    print("\nper user (rank 1 = heaviest; H: heavy): demand and quota shares of the capacity;")
    print("  per policy: used share, median/p95 wait (min)")
    capacity = world.cards * world.window
    for user in world.users:
        cells = [
            f"{outcome.used[user] / capacity:5.1%} "
            f"{statistics.median(outcome.waits[user] or [0]) / 60:5.0f}/"
            f"{percentile(outcome.waits[user], 0.95) / 60:<5.0f}"
            for outcome in outcomes
        ]
        print(
            f"  u{user:<3}{'H' if user in world.heavy else ' '} demand "
            f"{world.demand[user] / capacity:6.1%} quota {world.quota[user] / world.cards:5.1%} | "
            + " | ".join(cells)
        )
    for outcome in outcomes:
        kinds = Counter(outcome.cycles)
        kinds.setdefault(MUTUAL, 0)
        for kind, count in kinds.most_common():
            print(f"  cycles in {outcome.name}: {count} x {kind}")


def big_queue_passes(world: World) -> dict[str, float]:
    """Passes with every task queued at once, under policy 3 (quotas, fair share,
    borrowing, preemption). First the heavy users' tasks alone on the empty cluster:
    within their quotas, then borrowing the rest; then the leftovers are dropped and all
    the tasks queued again, so the light users' jobs within quota preempt borrowers.
    Decisions only; ``waiting_changes`` (reasons, start forecast) timed apart. The
    database's reads and writes are not part of these figures."""
    print(f"\npasses with all {len(world.specs)} tasks queued at once (policy 3 settings):")
    replay = Replay(world, 3)
    for spec in world.specs:
        if spec["owner"] in world.heavy and spec["request"].is_gpu:
            replay.submit({**spec, "arrival": 0.0})
    queued = len(replay.queue)
    times = {"heavy": replay.run_pass(0.0)}
    borrowing = sum(job.borrowed for job in replay.running.values())
    print(
        f"  heavy users' {queued} whole-card tasks, empty cluster: {times['heavy']:.3f} s; started "
        f"{len(replay.running)}, {borrowing} of them borrowing",
        flush=True,
    )
    replay.queue = []
    for spec in world.specs:
        replay.submit({**spec, "arrival": 60.0}, pk_offset=len(world.specs))
    for number in (1, 2):
        queued, before = len(replay.queue), replay.outcome.preemptions
        seconds = times[f"full {number}"] = replay.run_pass(60.0 + 30 * (number - 1))
        print(
            f"  full cluster, pass {number}: {seconds:.3f} s over {queued} queued; "
            f"{replay.outcome.preemptions - before} preemptions",
            flush=True,
        )
    times["reasons"] = timed_waiting_changes(replay)
    return times


def timed_waiting_changes(replay: Replay) -> float:
    """One more pass, then its reasons and start forecast (``waiting_changes``), timed."""
    from jobs.scheduler.passes import SchedulingPass
    from jobs.scheduler.queue import in_fair_share_order

    now_s = 120.0
    jobs = [replay.waiting_jobs[pk] for _submitted, pk in replay.queue]
    jobs = in_fair_share_order(jobs, replay.factors(now_s))
    pass_ = SchedulingPass(
        now=START + timedelta(seconds=now_s),
        cluster=replay.cluster,
        jobs=jobs,
        quotas=replay.quotas,
        releases=replay.releases,
        ports=False,
    )
    for job in jobs:
        pass_.consider(job)
    began = time.perf_counter()
    try:
        changes = pass_.waiting_changes()
    except Exception as error:  # a part that reads the database after all
        print(f"  waiting_changes (reasons + forecast) could not run in memory: {error!r}")
        return math.nan
    seconds = time.perf_counter() - began
    print(
        f"  its reasons + start forecast (waiting_changes): {seconds:.3f} s for {len(changes)} jobs"
    )
    return seconds


def targets(world: World, outcomes: list[Outcome], big: dict[str, float]) -> None:
    by_name = {outcome.name: outcome for outcome in outcomes}
    fifo, borrow = by_name.get(POLICIES[0]), by_name.get(POLICIES[3])
    print("\ntargets:")

    def line(label: str, figure: str, met: bool) -> None:
        print(f"  {label:52} {figure:>24}  {'MET' if met else 'NOT MET'}")

    if fifo and borrow:
        gap = fifo.utilisation - borrow.utilisation
        line(
            "(3) utilisation within 5% of (0)",
            f"{borrow.utilisation:.1%} vs {fifo.utilisation:.1%}",
            gap <= 0.05 * fifo.utilisation,
        )
    if borrow:
        index = jain(world, borrow)
        line("(3) Jain's index >= 0.9", f"{index:.3f}", index >= 0.9)
        line("(3) zero preemption cycles", f"{len(borrow.cycles)}", not borrow.cycles)
    slowest = max(seconds for name, seconds in big.items() if name != "reasons")
    line("a pass over ~8,000 queued under 2 s (decisions)", f"{slowest:.3f} s", slowest < 2)
    if not math.isnan(big.get("reasons", math.nan)):
        total = slowest + big["reasons"]
        line("  same, with reasons + forecast", f"{total:.3f} s", total < 2)


if __name__ == "__main__":
    main()
