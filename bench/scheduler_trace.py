"""Replay the Alibaba GPU trace (2023) through the real scheduler on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/scheduler_trace.py [--sizes 1000 8000]

Prints, for each queue length: the time of a pass that starts what fits on an
empty cluster of the trace's 1,213 GPU nodes ("cold": at most
``TRAINYARD_PASS_MAX_STARTS`` of them, then the passes that start the rest), of
passes over that many queued jobs on a cluster the trace has filled ("full", the
steady state), and of a pass after some running jobs ended ("churn"), each beside
its forecast of the likely starts, which runs after the pass has committed
(``jobs/scheduler/run.py``); then placement quality —
the share of GPU capacity allocated when the trace's tasks first stop fitting
— for the scheduler's placement beside first-fit and best-fit baselines.

It works in its own scratch database (``<name>_bench``), created and dropped here.
The trace has no model constraints (``gpu_spec`` is empty), so every GPU task
asks for an aggregated model ``*ANY`` whose members are the trace's models;
a share below 1,000 milli-GPU is a virtual GPU of that compute percentage.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import time
from pathlib import Path

from scratch import ROOT, django_setup, scratch_database

TRACE = ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023"
CARD_MEMORY_GIB = {
    "P100": 16,
    "T4": 16,
    "V100M16": 16,
    "V100M32": 32,
    "A10": 24,
    "G2": 24,
    "G3": 32,
}
VGPU_MEMORY_BASE_MIB = 16 * 1024  # a share gets its percentage of the smallest card
USERS = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 8000])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--repeat", type=int, default=3, help="steady passes to time")
    args = parser.parse_args()

    django_setup()
    from django.conf import settings

    with scratch_database("bench"):
        nodes = read_csv(args.trace / "openb_node_list_gpu_node.csv")
        tasks = read_csv(args.trace / "openb_pod_list_default.csv")
        print(f"trace: {len(nodes)} GPU nodes, {len(tasks)} tasks")
        for size in args.sizes:
            for aware in (False, True):
                settings.TRAINYARD_FRAGMENTATION_AWARE = aware
                print(f"\n== placement: {'fragmentation-aware' if aware else 'best fit alone'}")
                replay(nodes, tasks, size, args.repeat)
        quality(nodes, tasks)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def timed_pass():
    """A pass without launches; its wall time and this process's CPU time.

    The machine is shared: wall time includes waiting for a CPU (see the load
    printed beside it), CPU time does not include PostgreSQL's own work.
    """
    from jobs.scheduler import run_pass

    cpu = time.process_time()
    report = run_pass()
    return report, time.process_time() - cpu


def figures(report, cpu: float, size: int) -> str:
    return (
        f"{report.seconds:.3f} s wall, its forecast after it {report.forecast_seconds:.3f} s; "
        f"{cpu:.3f} s CPU in all ({report.seconds / size * 1e3:.3f} ms/job), "
        f"load {os.getloadavg()[0]:.1f}; started {len(report.started)}, "
        f"waiting {report.quota_wait + report.resource_wait}"
    )


def replay(nodes, tasks, size: int, repeat: int) -> None:
    from django.db.models.functions import Now

    from jobs.models import Job

    reset()
    cluster_setup(nodes)
    submit(tasks[:size], offset=0)
    analyze()
    cold, cpu = timed_pass()
    print(f"\n{size} queued, empty cluster: cold pass {figures(cold, cpu, size)}")
    # A pass starts at most TRAINYARD_PASS_MAX_STARTS; the task runs the next at once.
    passes, seconds, started = 1, cold.seconds + cold.forecast_seconds, len(cold.started)
    report = cold
    while report.truncated:
        report, _cpu = timed_pass()
        passes, started = passes + 1, started + len(report.started)
        seconds += report.seconds + report.forecast_seconds
    if passes > 1:
        print(f"  until the burst was decided: {passes} passes, {seconds:.3f} s, started {started}")
    print(f"  GPU allocated after it: {gpu_share():.1%}")
    # Fill the cluster with the whole trace, then queue `size` more tasks behind it.
    reset()
    cluster_setup(nodes)
    submit(tasks, offset=0)
    fill, _cpu = timed_pass()
    while fill.truncated:
        more, _cpu = timed_pass()
        fill.started += more.started
        fill.truncated = more.truncated
    Job.objects.filter(state=Job.State.STARTING).update(state=Job.State.RUNNING, started_at=Now())
    Job.objects.filter(state__in=Job.WAITING_STATES).delete()
    submit([tasks[i % len(tasks)] for i in range(size)], offset=len(tasks))
    analyze()
    print(f"{size} queued, full cluster ({len(fill.started)} running, GPU {gpu_share():.1%}):")
    walls, forecasts, cpus = [], [], []
    for number in range(repeat + 1):
        report, cpu = timed_pass()
        label = "first pass (writes every reason)" if number == 0 else f"steady pass {number}"
        print(f"  {label}: {figures(report, cpu, size)}")
        if number:
            walls.append(report.seconds)
            forecasts.append(report.forecast_seconds)
            cpus.append(cpu)
    print(
        f"  median steady pass: {statistics.median(walls):.3f} s wall, its forecast after it "
        f"{statistics.median(forecasts):.3f} s, {statistics.median(cpus):.3f} s CPU in all"
    )
    churn = finish_some(fraction=0.02)
    report, cpu = timed_pass()
    print(f"  after {churn} running jobs ended: {figures(report, cpu, size)}")


def analyze() -> None:
    """Table statistics, as autovacuum keeps them on a running site: without, PostgreSQL
    plans the pass's reads of thousands of rows for a handful (nested loops)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def reset() -> None:
    from django.db import connection

    tables = [
        "resources_cardallocation",
        "resources_allocation",
        "jobs_portallocation",
        "jobs_replicaattempt",
        "jobs_replica",
        "jobs_jobevent",
        "jobs_jobport",
        "jobs_job",
        "resources_gpucard",
        "resources_node",
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


def cluster_setup(nodes) -> None:
    from django.contrib.auth import get_user_model

    from jobs.models import Project
    from resources.models import GpuCard, GpuModel, Node, Quota

    models = {}
    for name, memory in CARD_MEMORY_GIB.items():
        models[name], _ = GpuModel.objects.get_or_create(
            name=name,
            defaults={
                "card_memory_gib": memory,
                "cpu_cores_per_card": 12,
                "memory_gib_per_card": 48,
            },
        )
    aggregate, _ = GpuModel.objects.get_or_create(
        name="*ANY",
        defaults={"card_memory_gib": 16, "cpu_cores_per_card": 12, "memory_gib_per_card": 48},
    )
    aggregate.members.set(models.values())
    created = Node.objects.bulk_create(
        Node(
            name=row["sn"],
            gpu_model=models[row["model"]],
            gpu_count=int(row["gpu"]),
            cpu_milli=int(row["cpu_milli"]),
            memory_mib=int(row["memory_mib"]),
            storage_gib=10_000,
        )
        for row in nodes
    )
    GpuCard.objects.bulk_create(
        GpuCard(node=node, index=i, memory_mib=node.gpu_model.card_memory_gib * 1024)
        for node in created
        for i in range(node.gpu_count)
    )
    user_model = get_user_model()
    for number in range(USERS):
        user, _ = user_model.objects.get_or_create(username=f"trace{number}")
        Project.objects.get_or_create(owner=user, name=f"trace{number}")
    # A quota on the aggregate, large enough not to bind, so admission does its full work.
    Quota.objects.get_or_create(
        user=None, resource=Quota.Resource.GPU, gpu_model=aggregate, defaults={"limit": 100_000}
    )


def submit(tasks, offset: int) -> None:
    from jobs.models import Job, Project
    from resources.models import GpuModel

    aggregate = GpuModel.objects.get(name="*ANY")
    projects = list(Project.objects.filter(name__startswith="trace").order_by("pk"))
    jobs = []
    for number, task in enumerate(tasks, start=offset):
        project = projects[number % len(projects)]
        jobs.append(Job(owner_id=project.owner_id, project=project, **job_fields(task, aggregate)))
    Job.objects.bulk_create(jobs, batch_size=2000)


def job_fields(task: dict[str, str], aggregate) -> dict:
    count, milli = int(task["num_gpu"]), int(task["gpu_milli"])
    fields = {
        "name": task["name"],
        "command": "true",
        "cpu_milli": max(int(task["cpu_milli"]), 1),
        "memory_mib": max(int(task["memory_mib"]), 1),
        "storage_gib": 2,
        "max_runtime_minutes": runtime_minutes(task),
    }
    if count == 0:
        return {**fields, "resource_kind": "cpu"}
    if milli >= 1000:
        return {**fields, "resource_kind": "gpu", "gpu_model": aggregate, "gpu_count": count}
    percent = max(1, round(milli / 10))
    return {
        **fields,
        "resource_kind": "vgpu",
        "gpu_model": aggregate,
        "gpu_count": 1,
        "vgpu_compute_percent": percent,
        "vgpu_memory_mib": max(1, VGPU_MEMORY_BASE_MIB * percent // 100),
    }


def runtime_minutes(task: dict[str, str]) -> int | None:
    try:
        seconds = int(task["deletion_time"]) - int(task["scheduled_time"] or task["creation_time"])
    except ValueError:
        return None
    return max(1, math.ceil(seconds / 60)) if seconds > 0 else None


def gpu_share() -> float:
    from django.db.models import Sum

    from resources.models import GpuCard

    totals = GpuCard.objects.aggregate(used=Sum("compute_allocated_percent"))
    cards = GpuCard.objects.count()
    return (totals["used"] or 0) / (100 * cards) if cards else 0.0


def finish_some(fraction: float) -> int:
    from jobs.lifecycle.release import job_release
    from jobs.lifecycle.transitions import job_transition
    from jobs.models import Job

    running = list(Job.objects.filter(state=Job.State.RUNNING).order_by("pk"))
    chosen = running[:: max(1, int(1 / fraction))]
    for job in chosen:
        job_transition(job=job, to_state=Job.State.SUCCEEDED, reason="bench")
        job_release(job=job)
    return len(chosen)


def quality(nodes, tasks) -> None:
    from bench.placement_baselines import replay_policies

    print("\nplacement quality (tasks in trace order, no departures):")
    print(
        f"  {'policy':<12} {'placed before first miss':>25} {'GPU share then':>15}"
        f" {'placed in all':>14} {'GPU share at end':>17}"
    )
    for name, result in replay_policies(nodes, tasks, CARD_MEMORY_GIB).items():
        print(
            f"  {name:<12} {result.placed_before_miss:>25} {result.share_at_miss:>15.2%}"
            f" {result.placed_total:>14} {result.share_at_end:>17.2%}"
        )


if __name__ == "__main__":
    main()
