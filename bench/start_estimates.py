"""Expected starts against actual starts: the Alibaba trace (2023) replayed under load.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/start_estimates.py [--tasks 1000] [--nodes 8] [--load 1.3]

Replays the trace's tasks through the real scheduler (``run_pass``) on a
sample of its GPU nodes, in simulated time (a clock that jumps from event to
event; nothing sleeps). Each task runs for its real duration (deletion minus
scheduled time) and gets a max run time drawn independently: that duration ×
a uniform factor in 1–4 (seeded), in whole minutes. Arrivals keep the trace's
order and spacing, compressed so that the GPU work offered is ``--load`` ×
what the sampled cards can do over the arrival window: the trace as recorded
never has more than ~56 tasks alive at once, so nobody would wait.

Each job's start estimate is recorded after the first pass that sees it ("at
submit"): the scheduler's own (``estimated_start``, the forecast) and, in the
same run, the estimator it replaced (``start_estimates_baseline.py``). Over
the jobs that waited at least two passes, it prints the median and p90 of
|estimate − actual start| / actual wait for both, with how many jobs had no
estimate, and the time a pass took.

Tasks longer than ``--max-hours`` (24 h: about 1 % of them) are left out: at
the compressed arrival rate each would hold its node past the end of the
replay. A task never scheduled in the trace (``Pending``) has no duration and
is left out too. It works in its own scratch database (``<name>_startest``).
The trace lives outside the repository (``../shared/traces``); CI never runs this.
"""

from __future__ import annotations

import argparse
import heapq
import logging
import math
import random
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scheduler_trace import TRACE, cluster_setup, job_fields, read_csv
from scratch import django_setup, scratch_database

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass
class Task:
    name: str
    row: dict[str, str]
    arrival: float  # seconds after START, compressed
    duration: int  # seconds, as in the trace
    max_runtime_minutes: int


@dataclass
class Record:
    arrival: datetime
    estimate: datetime | None = None
    baseline: datetime | None = None
    started: datetime | None = None
    passes_waited: int = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--tasks", type=int, default=1000, help="tasks replayed, in trace order")
    parser.add_argument("--first", type=int, default=3000, help="index of the first task")
    parser.add_argument("--nodes", type=int, default=8, help="GPU nodes sampled from the trace")
    parser.add_argument("--load", type=float, default=1.3, help="GPU work offered / capacity")
    parser.add_argument("--max-hours", type=float, default=24.0)
    parser.add_argument("--tick", type=int, default=10, help="seconds between passes, at most")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    django_setup()
    logging.disable(logging.INFO)  # the job events' log lines
    rng = random.Random(args.seed)
    nodes = sample_nodes(read_csv(args.trace / "openb_node_list_gpu_node.csv"), args.nodes, rng)
    tasks = choose_tasks(read_csv(args.trace / "openb_pod_list_default.csv"), args, rng, nodes)
    began = time.perf_counter()
    with scratch_database("startest"), simulated_clock() as clock:
        records, pass_seconds, forecast_seconds = replay(nodes, tasks, args.tick, clock)
    report(records, pass_seconds, forecast_seconds, time.perf_counter() - began)


def sample_nodes(rows, count: int, rng: random.Random) -> list[dict[str, str]]:
    """``count`` GPU nodes of the trace, one of them with 8 cards (the largest tasks')."""
    big = [row for row in rows if int(row["gpu"]) == 8]
    chosen = [rng.choice(big)]
    others = [row for row in rows if row is not chosen[0]]
    return chosen + rng.sample(others, count - 1)


def gpu_work(row: dict[str, str]) -> float:
    """Cards a task holds (a share counts its fraction of one card)."""
    count, milli = int(row["num_gpu"]), int(row["gpu_milli"])
    return count if milli >= 1000 else milli / 1000 * count


def choose_tasks(rows, args, rng: random.Random, nodes) -> list[Task]:
    eligible = []
    for row in rows:
        if not row["scheduled_time"]:
            continue  # never ran in the trace
        duration = int(row["deletion_time"]) - int(row["scheduled_time"])
        if 0 < duration <= args.max_hours * 3600:
            eligible.append((int(row["creation_time"]), duration, row))
    eligible.sort(key=lambda item: (item[0], item[2]["name"]))
    window = eligible[args.first : args.first + args.tasks]
    capacity = sum(int(node["gpu"]) for node in nodes)
    span = window[-1][0] - window[0][0]
    scale = compression(window, capacity, args.load)
    tasks = []
    for created, duration, row in window:
        factor = rng.uniform(1.0, 4.0)
        tasks.append(
            Task(
                name=row["name"],
                row=row,
                arrival=(created - window[0][0]) * scale,
                duration=duration,
                max_runtime_minutes=max(1, math.ceil(duration * factor / 60)),
            )
        )
    print(
        f"{len(tasks)} tasks (trace #{args.first}…), {len(nodes)} nodes with {capacity} cards; "
        f"arrivals over {span * scale / 3600:.1f} h (trace: {span / 3600:.1f} h), "
        f"offered load {offered(window, capacity, scale):.2f} × capacity"
    )
    return tasks


def offered(window, capacity: int, scale: float) -> float:
    """GPU work the tasks offer within the compressed arrival window, over its capacity.

    A task counts until the window ends: the trace's durations are heavy-tailed, and
    the work of a day-long task arriving late is not offered while the others wait.
    """
    first, last = window[0][0], window[-1][0]
    end = (last - first) * scale
    work = sum(
        gpu_work(row) * min(duration, end - (created - first) * scale)
        for created, duration, row in window
    )
    return work / (capacity * end)


def compression(window, capacity: int, load: float) -> float:
    """The factor on the trace's spacing that offers ``load`` × capacity (bisection)."""
    low, high = 1e-6, 1.0
    for _ in range(60):
        middle = math.sqrt(low * high)
        if offered(window, capacity, middle) > load:
            low = middle
        else:
            high = middle
    return high


class simulated_clock:
    """``timezone.now()`` answers the simulated time while inside."""

    def __enter__(self):
        from django.utils import timezone

        self.timezone = timezone
        self.real_now = timezone.now
        self.now = START
        timezone.now = lambda: self.now
        return self

    def __exit__(self, *exc) -> None:
        self.timezone.now = self.real_now


def on_tick(seconds: float, tick: int) -> datetime:
    return START + timedelta(seconds=math.ceil(seconds / tick) * tick)


def replay(nodes, tasks: list[Task], tick: int, clock):
    from start_estimates_baseline import baseline_starts

    from jobs.lifecycle.release import job_release
    from jobs.lifecycle.transitions import job_transition
    from jobs.models import Job
    from jobs.scheduler import run_pass

    forecast_seconds = time_forecasts()
    cluster_setup(nodes)
    arrivals = [(on_tick(task.arrival, tick), index) for index, task in enumerate(tasks)]
    arrivals.reverse()
    ends: list[tuple[datetime, int]] = []
    records: dict[int, Record] = {}
    durations: dict[int, int] = {}
    pass_seconds: list[float] = []
    while arrivals or ends:
        clock.now = min(moment for moment in (peek(arrivals), peek_heap(ends)) if moment)
        while ends and ends[0][0] <= clock.now:
            _end, job_id = heapq.heappop(ends)
            job = Job.objects.get(pk=job_id)
            job_transition(job=job, to_state=Job.State.SUCCEEDED, reason="bench")
            job_release(job=job)
        new = []
        while arrivals and arrivals[-1][0] <= clock.now:
            _at, index = arrivals.pop()
            job = submit(tasks[index], index)
            records[job.pk] = Record(arrival=clock.now)
            durations[job.pk] = tasks[index].duration
            new.append(job.pk)
        report = run_pass()
        pass_seconds.append(report.seconds)
        for job in Job.objects.filter(pk__in=report.started):
            job_transition(job=job, to_state=Job.State.RUNNING, reason="bench")
            records[job.pk].started = clock.now
            heapq.heappush(ends, (clock.now + timedelta(seconds=durations[job.pk]), job.pk))
        waiting = dict(
            Job.objects.filter(state__in=Job.WAITING_STATES).values_list("pk", "estimated_start")
        )
        for job_id in waiting:
            records[job_id].passes_waited += 1
        new_waiting = [job_id for job_id in new if job_id in waiting]
        if new_waiting:
            baseline = baseline_starts(clock.now)
            for job_id in new_waiting:
                records[job_id].estimate = waiting[job_id]
                records[job_id].baseline = baseline.get(job_id)
    return records, pass_seconds, forecast_seconds


def time_forecasts() -> list[float]:
    """Time each pass's start forecast apart (``forecast_starts``, wrapped)."""
    from jobs.scheduler import passes

    seconds: list[float] = []
    forecast = passes.forecast_starts

    def timed(**kwargs):
        began = time.perf_counter()
        starts = forecast(**kwargs)
        seconds.append(time.perf_counter() - began)
        return starts

    passes.forecast_starts = timed
    return seconds


def peek(arrivals) -> datetime | None:
    return arrivals[-1][0] if arrivals else None


def peek_heap(ends) -> datetime | None:
    return ends[0][0] if ends else None


def submit(task: Task, number: int):
    """Create the job as submit does, with its expected run time (``expected_seconds``)."""
    from jobs.estimates.expected import expected_seconds
    from jobs.models import Job, Project
    from resources.models import GpuModel

    aggregate = GpuModel.objects.get(name="*ANY")
    projects = list(Project.objects.filter(name__startswith="trace").order_by("pk"))
    project = projects[number % len(projects)]
    fields = job_fields(task.row, aggregate)
    fields.update(
        # Each task its own command: the estimator knows nothing of it but the shares of
        # their max run times that earlier jobs used.
        command=f"python {task.name}.py",
        max_runtime_minutes=task.max_runtime_minutes,
        state=Job.State.QUOTA_WAIT,
    )
    job = Job.objects.create(owner_id=project.owner_id, project=project, **fields)
    job.expected_seconds = expected_seconds(job)
    job.save(update_fields=["expected_seconds"])
    return job


def report(records: dict[int, Record], pass_seconds, forecast_seconds, wall: float) -> None:
    waited = [r for r in records.values() if r.passes_waited >= 2 and r.started]
    print(
        f"{len(records)} jobs, {len(waited)} waited at least two passes "
        f"(median wait {statistics.median(wait(r) for r in waited) / 60:.0f} min); "
        f"{len(pass_seconds)} passes, {statistics.mean(pass_seconds) * 1e3:.0f} ms mean, "
        f"p90 {quantile(pass_seconds, 0.9) * 1e3:.0f} ms; {wall / 60:.1f} min in all"
    )
    print(
        f"  the forecast in the {len(forecast_seconds)} passes with jobs waiting: "
        f"{statistics.mean(forecast_seconds) * 1e3:.0f} ms mean, "
        f"p90 {quantile(forecast_seconds, 0.9) * 1e3:.0f} ms"
    )
    print(f"  {'estimator':<22} {'median':>8} {'p90':>8} {'bias':>8} {'no estimate':>12}")
    for label, pick in (("forecast (now)", "estimate"), ("baseline (before)", "baseline")):
        signed = [
            (getattr(r, pick) - r.started).total_seconds() / wait(r)
            for r in waited
            if getattr(r, pick) is not None
        ]
        errors = [abs(error) for error in signed]
        missing = len(waited) - len(errors)
        print(
            f"  {label:<22} {statistics.median(errors):>8.1%} {quantile(errors, 0.9):>8.1%}"
            f" {statistics.median(signed):>+8.1%} {missing:>12}"
        )
    print("  (bias: the median of (expected − actual) / wait; + is late)")


def wait(record: Record) -> float:
    return (record.started - record.arrival).total_seconds()


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


if __name__ == "__main__":
    main()
