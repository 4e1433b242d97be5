"""Time from ``POST /api/v1/jobs`` to ``starting``, with a real Celery worker and Redis.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/submit_latency.py [--jobs 200]

Each job is posted with a bearer token through the whole Django stack (the
test client, no network); its submit commits and enqueues a scheduling pass,
which a separate worker process runs. The latency is the time of the job's
``starting`` event minus the moment before the POST (one machine, one clock).
Jobs go one after the other onto free resources. Prints p50, p90, p99 and max.

It works in its own scratch database (``<name>_latency``), created and dropped
here, and starts and stops its own worker.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

from scratch import ROOT, django_setup, scratch_database

NODES = 30  # 240 V100 cards: every job finds free resources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL"):
        sys.exit("Set REDIS_URL (and DATABASE_URL to PostgreSQL): the bench needs the real broker.")

    django_setup()
    with scratch_database("latency"):
        token = site_setup()
        worker = start_worker()
        try:
            latencies = [submit_one(token, number) for number in range(args.jobs)]
        finally:
            worker.terminate()
            worker.wait(timeout=30)
            forget_node_queues()
        report(latencies)


def site_setup() -> str:
    from django.contrib.auth import get_user_model

    from accounts.models import ApiToken
    from billing.accounts import account_for_user
    from jobs.models import Image, Project
    from resources.models import GpuCard, GpuModel, Node

    v100 = GpuModel.objects.create(
        name="V100", card_memory_gib=16, cpu_cores_per_card=12, memory_gib_per_card=56
    )
    nodes = Node.objects.bulk_create(
        Node(
            name=f"lat-{i:02d}",
            gpu_model=v100,
            gpu_count=8,
            cpu_milli=96_000,
            memory_mib=448 * 1024,
        )
        for i in range(NODES)
    )
    GpuCard.objects.bulk_create(
        GpuCard(node=node, index=i, memory_mib=16 * 1024) for node in nodes for i in range(8)
    )
    user = get_user_model().objects.create_user(username="bench", password="bench-password")
    account = account_for_user(user=user)
    account.billing_enabled = True
    account.save(update_fields=["billing_enabled"])
    project = Project.objects.create(name="bench", owner=user)
    Image.objects.create(project=project, name="pytorch", is_default=True)
    _row, token = ApiToken.issue(user=user, name="bench")
    return token


def start_worker() -> subprocess.Popen:
    from tests.conftest import database_url_for_subprocess

    url = database_url_for_subprocess()
    log = open(ROOT / "var" / "bench-worker.log", "w")  # noqa: SIM115
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "trainyard",
            "worker",
            "-Q",
            "celery",
            "--concurrency",
            "2",
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"bench-{os.getpid()}@%h",
        ],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": url},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while "ready." not in (ROOT / "var" / "bench-worker.log").read_text():
        if worker.poll() is not None or time.monotonic() > deadline:
            sys.exit("the worker did not start: see var/bench-worker.log")
        time.sleep(0.2)
    return worker


def submit_one(token: str, number: int) -> float:
    from django.test import Client

    from jobs.models import JobEvent

    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = {
        "project": "bench",
        "name": f"latency-{number}",
        "resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 1},
        "command": "true",
    }
    posted = datetime.now(UTC)
    response = client.post("/api/v1/jobs", body, content_type="application/json")
    if response.status_code != 201:
        sys.exit(f"POST /api/v1/jobs answered {response.status_code}: {response.content[:500]}")
    job_id = response.json()["id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        event = JobEvent.objects.filter(job_id=job_id, to_state="starting").first()
        if event is not None:
            return (event.created_at - posted).total_seconds()
        time.sleep(0.005)
    sys.exit(f"job {job_id} did not reach starting in 30 s")


def report(latencies: list[float]) -> None:
    ordered = sorted(latencies)

    def percentile(p: float) -> float:
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]

    print(f"POST /api/v1/jobs → starting, {len(ordered)} jobs one after another:")
    print(
        f"  p50 {percentile(50) * 1e3:.0f} ms   p90 {percentile(90) * 1e3:.0f} ms   "
        f"p99 {percentile(99) * 1e3:.0f} ms   max {ordered[-1] * 1e3:.0f} ms   "
        f"mean {statistics.mean(ordered) * 1e3:.0f} ms"
    )


def forget_node_queues() -> None:
    """The launches went to node queues nobody consumes here; drop them."""
    import redis

    from resources.models import node_queue

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    for i in range(NODES):
        client.delete(node_queue(f"lat-{i:02d}"))


if __name__ == "__main__":
    main()
