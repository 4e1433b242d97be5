"""Start overhead of the local agent: many `true` jobs, from submit to succeeded, for real.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/start_overhead.py [--jobs 100] [--nodes 4] [--poll 2]

Everything is the real path: ``job_submit``, the scheduler's pass in a Celery
worker (with beat), ``manage.py run_agent`` for the nodes, runners and
bubblewrap sandboxes, the agent's polls. Prints the median and p99 time from
``starting`` to ``running`` (the agent's start) and from submit to
``succeeded``, and how many jobs finished per minute. It works in its own
scratch database (``<name>_startbench``), created and dropped here, and in
temporary node and data folders.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--poll", type=float, default=2.0, help="agent poll interval (s)")
    parser.add_argument("--interval", type=float, default=0, help="seconds between submits")
    parser.add_argument("--logs", type=Path, help="copy the workers' logs into this folder")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("Set DATABASE_URL to a PostgreSQL database (the bench uses <name>_startbench).")
    db = settings.DATABASES["default"]
    db["TEST"]["NAME"] = f"{db['NAME']}_startbench"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    roots = Path(tempfile.mkdtemp(prefix="trainyard-startbench-"))
    os.chmod(roots, 0o755)
    processes: list[subprocess.Popen] = []
    try:
        run(args, roots, processes)
    finally:
        for process in processes:
            stop(process)
        kill_replicas(roots / "nodes")
        if args.logs:
            args.logs.mkdir(parents=True, exist_ok=True)
            for log in roots.glob("*.log"):
                shutil.copy(log, args.logs / log.name)
        shutil.rmtree(roots, ignore_errors=True)
        connection.creation.destroy_test_db(old_name, verbosity=0)


def run(args, roots: Path, processes: list[subprocess.Popen]) -> None:
    from django.utils import timezone

    from jobs.models import Job, JobEvent
    from jobs.services.submit import job_submit

    user, project, nodes = cast(args.nodes)
    env = child_env(roots, args.poll)
    processes.append(
        spawn(
            [
                "-m",
                "celery",
                "-A",
                "trainyard",
                "worker",
                "-B",
                "-Q",
                "celery",
                "--schedule",
                str(roots / "beat"),
                "--concurrency",
                "2",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                "central@%h",
            ],
            env,
            roots / "central.log",
        )
    )
    agent_argv = ["manage.py", "run_agent", "--concurrency", "4"]
    agent_argv += [arg for node in nodes for arg in ("--node", node.name)]
    processes.append(spawn(agent_argv, env, roots / "agent.log"))
    for log in ("central.log", "agent.log"):
        wait_for(lambda log=log: "ready." in (roots / log).read_text(), 60, log)

    began = time.monotonic()
    data = {"project": project.name, "command": "true", "resources": {"kind": "cpu"}}
    data["resources"].update(cpu_cores=1, memory_gib=1, storage_gib=2)
    ids = []
    for i in range(args.jobs):
        ids.append(job_submit(user=user, data={**data, "name": f"true-{i}"}).pk)
        time.sleep(args.interval)
    jobs = Job.objects.filter(pk__in=ids)
    wait_for(lambda: not jobs.exclude(state__in=Job.FINAL_STATES).exists(), 600, "all jobs")
    elapsed = time.monotonic() - began

    states = Counter(jobs.values_list("state", flat=True))
    stages = stage_times(jobs, JobEvent.objects.filter(job__in=ids))
    succeeded = jobs.filter(state=Job.State.SUCCEEDED).count()
    first = jobs.order_by("submitted_at").values_list("submitted_at", flat=True).first()
    last = jobs.order_by("-finished_at").values_list("finished_at", flat=True).first()
    span = (last - first).total_seconds()
    how = f"one every {args.interval} s" if args.interval else "all at once"
    print(
        f"{args.jobs} `true` jobs submitted {how} on {args.nodes} local nodes, agent poll "
        f"{args.poll} s ({timezone.now():%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f})"
    )
    print(f"  succeeded: {succeeded} of {args.jobs} ({dict(states)})")
    for stage, values in stages.items():
        print(f"  {stage}: median {median(values):.0f} ms, p99 {p99(values):.0f} ms")
    print(
        f"  finished per minute: {args.jobs / span * 60:.0f} "
        f"(first submit to last finish {span:.1f} s; wall {elapsed:.1f} s)"
    )


def stage_times(jobs, events) -> dict[str, list[float]]:
    """Milliseconds spent in each stage, per job, from its events."""
    at: dict[tuple[int, str], object] = {}
    for job_id, to_state, created in events.values_list("job_id", "to_state", "created_at"):
        at.setdefault((job_id, to_state), created)
    stages: dict[str, list[float]] = {
        "submit → starting": [],
        "starting → running": [],
        "running → succeeded": [],
        "submit → succeeded": [],
    }
    for job_id, submitted, finished in jobs.values_list("pk", "submitted_at", "finished_at"):
        starting, running = at.get((job_id, "starting")), at.get((job_id, "running"))
        marks = [("submit → starting", submitted, starting)]
        marks += [
            ("starting → running", starting, running),
            ("running → succeeded", running, finished),
        ]
        marks += [("submit → succeeded", submitted, finished)]
        for stage, begin, end in marks:
            if begin and end:
                stages[stage].append((end - begin).total_seconds() * 1000)
    return stages


def cast(node_count: int):
    from django.contrib.auth import get_user_model

    from billing.accounts import account_for_user
    from jobs.models import Project
    from resources.models import Node

    user = get_user_model().objects.create_user(username="bench", password=None)
    account = account_for_user(user=user)
    account.billing_enabled = True
    account.save()
    project = Project.objects.create(name="bench", owner=user)
    nodes = [
        Node.objects.create(name=f"bench-{i}", cpu_milli=32_000, memory_mib=128 * 1024)
        for i in range(node_count)
    ]
    return user, project, nodes


def child_env(roots: Path, poll: float) -> dict[str, str]:
    from django.conf import settings

    db = settings.DATABASES["default"]
    user, host, port = db.get("USER") or "postgres", db.get("HOST") or "127.0.0.1", db.get("PORT")
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{user}{password}@{host}:{port or 5432}/{db['NAME']}",
        "TRAINYARD_NODE_ROOT": str(roots / "nodes"),
        "TRAINYARD_DATA_ROOT": str(roots / "data"),
        "TRAINYARD_AGENT_POLL_SECONDS": str(poll),
    }


def spawn_notifications_worker(env: dict[str, str], log: Path, nice: int = 0) -> subprocess.Popen:
    """The notifications queue's own worker, at a lower CPU priority (10 below the other
    workers' ``nice``), as in the Procfile."""
    argv = ["-m", "celery", "-A", "trainyard", "worker", "-Q", "notifications"]
    argv += ["--concurrency", "1", "--loglevel", "INFO", "--without-gossip", "--without-mingle"]
    return spawn([*argv, "--hostname", "notify@%h"], env, log, nice=min(19, nice + 10))


def spawn(argv: list[str], env: dict[str, str], log: Path, nice: int = 0) -> subprocess.Popen:
    return subprocess.Popen(
        ["nice", "-n", str(nice), sys.executable, *argv] if nice else [sys.executable, *argv],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def kill_replicas(node_root: Path) -> None:
    import json

    for current in node_root.glob("*/attempts/*/current.json"):
        with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
            os.killpg(json.loads(current.read_text())["pgid"], signal.SIGKILL)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p99(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[98]


if __name__ == "__main__":
    main()
