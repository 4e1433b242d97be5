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
index of used share / min(entitled, demanded) (also with each ratio capped at 1, and
over each user's max-min fair share, water-filled by quota and capped by demand),
preemptions, GPU-hours lost (without and with a checkpoint every 10 minutes),
preemption cycles by kind (a job preempted for one that was itself preempted; for one
preempted for it; a beneficiary that did not start in the pass after its victims
stopped, with why it waited), the slowest pass; then a per-user table, the time of
passes over all 8,152 tasks queued at once, and the targets, MET or NOT MET. Decisions
only are timed: no database reads or writes. About 30 s on 2 cores with the defaults.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fair_queues_replay import Replay  # noqa: E402
from fair_queues_world import (  # noqa: E402
    GRACE_SECONDS,
    MUTUAL,
    POLICIES,
    START,
    Outcome,
    World,
)
from scheduler_trace import TRACE, read_csv  # noqa: E402
from scratch import django_setup  # noqa: E402


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


def water_filled(world: World) -> dict[int, float]:
    """Each user's max-min fair share of the capacity, weighted by quota and capped by
    demand (the entitled share where every user wants it all; what idle entitlement
    leaves to those who want more, in proportion to their quotas): card-seconds."""
    left, share = world.cards * world.window, {}
    wanting = {user for user in world.users if world.demand[user] > 0}
    while wanting:
        per_weight = left / sum(world.quota[user] for user in wanting)
        sated = {u for u in wanting if world.demand[u] <= per_weight * world.quota[u]}
        if not sated:
            share.update({user: per_weight * world.quota[user] for user in wanting})
            break
        for user in sated:
            share[user] = world.demand[user]
            left -= world.demand[user]
        wanting -= sated
    return share


def jain_water_filled(world: World, outcome: Outcome) -> float:
    """Jain's index of each user's used share over their max-min fair share."""
    deserved = water_filled(world)
    ratios = [outcome.used[user] / deserved[user] for user in deserved if deserved[user] > 0]
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
    row(
        "  used / max-min fair share (water-filled)",
        [f"{jain_water_filled(world, o):.3f}" for o in outcomes],
    )
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
    """One more pass, then its reasons (``waiting_changes``) and start forecast
    (``estimates``, which runs after the pass has committed), timed together."""
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
        pass_.estimates()
    except Exception as error:  # a part that reads the database after all
        print(f"  reasons + forecast could not run in memory: {error!r}")
        return math.nan
    seconds = time.perf_counter() - began
    print(
        f"  its reasons + start forecast (waiting_changes, estimates): {seconds:.3f} s "
        f"for {len(changes)} jobs"
    )
    return seconds


def light_behind(borrow: Outcome) -> None:
    """The issue's "a light user's job never waits behind a heavy user's 200 queued jobs
    for longer than one of their run times". Counted apart: waits on the owner's own
    quota, and waits only for the grace of the preemption that made room for the job
    (it was first in the queue; a run shorter than the grace cannot beat it)."""
    behind = borrow.light_behind
    longer = [item for item in behind if item[0] > item[1]]
    own = [item for item in longer if item[2]]
    grace = [item for item in longer if not item[2] and item[3] <= {"wait.preempting"}]
    theirs = [item for item in longer if item not in own and item not in grace]
    label = "(3) light jobs behind a heavy user's 200+ queued: wait <= run time"
    figure = f"{len(theirs)} of {len(behind)} longer"
    print(f"  {label:52} {figure:>24}  {'MET' if not theirs else 'NOT MET'}")
    for label, items in (
        ("on their owner's own quota", own),
        (f"only for the {GRACE_SECONDS} s grace of the preemption that made room", grace),
        ("", theirs),
    ):
        if items:
            wait, run = max(((w, r) for w, r, *_ in items), key=lambda item: item[0] - item[1])
            counted = "" if label else "counted; "
            print(
                f"    {len(items)} {'waited ' + label if label else 'of them'} "
                f"({counted}the most: {wait:.1f} s for a {run} s run)"
            )


def within_quota(borrow: Outcome, tick: int) -> None:
    """The issue's "a job within its quota whose quota is free starts within grace + one
    pass", over the jobs their owner's quota never held back. Capacity that preemption
    cannot free (held by jobs within their quotas, or a node reserved for an earlier
    job) is not the quota's: those waits are counted apart."""
    limit = GRACE_SECONDS + tick
    longer = [(wait, why) for wait, why in borrow.within_quota if wait > limit]
    # Reasons of a wait that no preemption could end: capacity within others' quotas
    # (no reason code: "needs a node with ..."), reservations, ports.
    beyond = {"resource_wait", "wait.held", "wait.ports"}
    theirs = [(wait, why) for wait, why in longer if not why & beyond]
    print(
        f"  {'(3) job within free quota starts within grace + one pass':52} "
        f"{f'{len(theirs)} of {len(borrow.within_quota)} longer':>24}  "
        f"{'MET' if not theirs else 'NOT MET'}"
    )
    if theirs:
        print(f"    the longest: {max(wait for wait, _why in theirs):.0f} s")
    if len(longer) > len(theirs):
        worst = max(wait for wait, why in longer if why & beyond)
        print(
            f"    {len(longer) - len(theirs)} more waited on capacity no preemption could free "
            f"(not counted; the longest {worst:.0f} s)"
        )


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
        line("(3) Jain's index >= 0.9, as the issue defines it", f"{index:.3f}", index >= 0.9)
        print(
            "    (borrowing gives heavy users the idle share light users leave, so their used "
            "share exceeds min(entitled, demand): a ratio > 1 counts as unfairness)"
        )
        index = jain_water_filled(world, borrow)
        line("(3) Jain's index >= 0.9, over max-min fair shares", f"{index:.3f}", index >= 0.9)
        line("(3) zero preemption cycles", f"{len(borrow.cycles)}", not borrow.cycles)
        light_behind(borrow)
        within_quota(borrow, world.args.tick)
    slowest = max(seconds for name, seconds in big.items() if name != "reasons")
    line("a pass over ~8,000 queued under 2 s (decisions)", f"{slowest:.3f} s", slowest < 2)
    if not math.isnan(big.get("reasons", math.nan)):
        total = slowest + big["reasons"]
        line("  same, with reasons + forecast", f"{total:.3f} s", total < 2)


if __name__ == "__main__":
    main()
