"""The fair-queue bench's world: the trace's workload, users, quotas and cluster, and what a
replay records (``fair_queues.py`` runs it)."""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scheduler_trace import CARD_MEMORY_GIB  # noqa: E402

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
USERS = 20
HEAVY_USERS = 3  # the Zipf ranks whose jobs are preemptible in policy 3
ZIPF_EXPONENT = 1.2
MEAN_BURST = 12
GRACE_SECONDS = 60
CHECKPOINT_SECONDS = 600
AGGREGATE = "*ANY"
MUTUAL = "preempted for a job that was earlier preempted for it"
BEHIND_HEAVY = 200  # the "a heavy user's 200 queued jobs"
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
    behind_heavy: int = 0  # the busiest heavy user's queued jobs when it arrived (light users)
    quota_waited: bool = False  # its owner's own quota held it back in some pass
    waited_on: set[str] = field(default_factory=set)  # the reasons it waited for, by code
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
    # (wait, run time, held by its own quota, the reasons it waited for) of light users'
    # jobs that arrived behind a heavy user's 200+ queued jobs
    light_behind: list[tuple[float, int, bool, frozenset]] = field(default_factory=list)
    # (wait, the reasons it waited for) of jobs their owner's quota never held back
    within_quota: list[tuple[float, set[str]]] = field(default_factory=list)


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
