"""Load: 50 people browsing, refreshing, submitting and stopping for 2 minutes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/load.py [--users 50] [--seconds 120] [--past-jobs 50000]

Needs locust: ``.venv/bin/pip install -e ".[bench]"``.

A scratch database (``<name>_load``) gets ``--nodes`` nodes (V100, P4 and CPU-only),
the users with their projects and tokens, and ``--past-jobs`` finished jobs. Then
gunicorn (production settings, behind a pretend TLS proxy) and a Celery worker
with beat serve it while locust (headless, loopback only, ``bench/load_users.py``)
runs the users for ``--seconds``. It prints, per page and API call, the requests,
failures, median and p95, the totals, and whether anything is over-allocated at
the end (every node's and card's allocations against their capacity).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scratch import ROOT, django_setup, scratch_database  # noqa: E402
from bench.start_overhead import (  # noqa: E402
    child_env,
    spawn,
    spawn_notifications_worker,
    stop,
    wait_for,
)

TARGET_P95_MS = 300


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=120)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--past-jobs", type=int, default=50_000)
    args = parser.parse_args()
    django_setup()
    with scratch_database("load"):
        began = time.perf_counter()
        people = populate(args.nodes, args.users, args.past_jobs)
        print(
            f"{args.nodes} nodes, {args.users} users, {args.past_jobs} past jobs "
            f"in {time.perf_counter() - began:.1f} s"
        )
        with tempfile.TemporaryDirectory(prefix="trainyard-load-") as folder:
            roots = Path(folder)
            users_file = roots / "users.json"
            users_file.write_text(json.dumps(people))
            rows = run(args, roots, users_file)
        report(rows)
        over_allocation()


def populate(node_count: int, user_count: int, past_jobs: int) -> list[dict]:
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils import timezone

    from accounts.services import api_token_create
    from billing.models import Account
    from jobs.models import Image, Job, Project
    from resources.models import GpuCard, GpuModel, Node

    v100 = GpuModel.objects.create(
        name="V100", card_memory_gib=16, cpu_cores_per_card=12, memory_gib_per_card=56
    )
    p4 = GpuModel.objects.create(
        name="P4", card_memory_gib=8, cpu_cores_per_card=12, memory_gib_per_card=40, free_tier=True
    )
    shapes = [(v100, 8)] * 8 + [(p4, 4)] + [(None, 0)]  # 80 % V100, 10 % P4, 10 % CPU
    nodes = Node.objects.bulk_create(
        Node(
            name=f"load-{n:04d}",
            gpu_model=shapes[n % 10][0],
            gpu_count=shapes[n % 10][1],
            cpu_milli=96_000,
            memory_mib=448 * 1024,
        )
        for n in range(node_count)
    )
    GpuCard.objects.bulk_create(
        GpuCard(node=node, index=i, memory_mib=node.gpu_model.card_memory_mib)
        for node in nodes
        if node.gpu_model
        for i in range(node.gpu_count)
    )
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"user{n:03d}", password="!") for n in range(user_count)
    )
    Account.objects.bulk_create(Account(user=u, billing_enabled=True) for u in users)
    projects = Project.objects.bulk_create(
        Project(name=f"project-{u.username}", owner=u) for u in users
    )
    Image.objects.bulk_create(Image(project=p, name="pytorch", is_default=True) for p in projects)
    now = timezone.now()
    for start in range(0, past_jobs, 5000):
        Job.objects.bulk_create(
            Job(
                owner=users[n % user_count],
                project=projects[n % user_count],
                name=f"past-{n}",
                resource_kind="gpu",
                gpu_model=v100,
                gpu_count=1 + n % 4,
                cpu_milli=12_000,
                memory_mib=57_344,
                command="python train.py",
                state="succeeded" if n % 5 else "failed",
                finished_at=now - timedelta(minutes=n),
            )
            for n in range(start, min(start + 5000, past_jobs))
        )
    people = []
    for user, project in zip(users, projects, strict=True):
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        _row, token = api_token_create(user=user, name="load")
        people.append(
            {
                "token": token,
                "project": project.name,
                "session": session.session_key,
                "cookie_name": settings.SESSION_COOKIE_NAME,
            }
        )
    return people


def run(args, roots: Path, users_file: Path) -> list[dict]:
    import socket

    env = {
        **child_env(roots, 1.0),
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "TRAINYARD_LOAD_USERS": str(users_file),
    }
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gunicorn = ["-m", "gunicorn", "trainyard.wsgi", "--bind", f"127.0.0.1:{port}"]
    # Keep-alive longer than a user's pause: a server closing an idle connection just as
    # the client reuses it resets the request (behind a proxy the proxy holds them open).
    gunicorn += ["--workers", "3", "--threads", "4", "--keep-alive", "75", "--access-logfile", "-"]
    worker = ["-m", "celery", "-A", "trainyard", "worker", "-B", "-Q", "celery"]
    worker += ["--schedule", str(roots / "beat"), "--concurrency", "2", "--loglevel", "INFO"]
    worker += ["--without-gossip", "--without-mingle", "--hostname", "load@%h"]
    processes = [spawn(gunicorn, env, roots / "web.log"), spawn(worker, env, roots / "worker.log")]
    processes.append(spawn_notifications_worker(env, roots / "notify.log"))
    try:
        wait_for(lambda: "ready." in (roots / "worker.log").read_text(), 60, "the worker")
        wait_for(lambda: "Booting worker" in (roots / "web.log").read_text(), 60, "gunicorn")
        locust = [str(Path(sys.executable).with_name("locust")), "-f", "bench/load_users.py"]
        locust += ["--headless", "-u", str(args.users), "-r", str(max(1, args.users // 10))]
        locust += ["-t", f"{args.seconds}s", "--host", f"http://127.0.0.1:{port}"]
        locust += ["--csv", str(roots / "load"), "--only-summary", "--loglevel", "WARNING"]
        print(f"locust: {args.users} users for {args.seconds} s against 127.0.0.1:{port}")
        subprocess.run(locust, cwd=ROOT, env=env, check=False, timeout=args.seconds + 120)
        with (roots / "load_stats.csv").open() as stats:
            rows = list(csv.DictReader(stats))
        failures = (roots / "load_failures.csv").read_text().strip().splitlines()[1:6]
        for line in failures:
            print("failure:", line)
        errors = [line for line in (roots / "web.log").read_text().splitlines() if " 500 " in line]
        print(f"server 500s in the access log: {len(errors)}")
        for line in (roots / "web.log").read_text().splitlines():
            if "WORKER TIMEOUT" in line or "Traceback" in line or "[ERROR]" in line:
                print("server:", line)
        return rows
    finally:
        for process in processes:
            stop(process)


def report(rows: list[dict]) -> None:
    print(f"{'request':<32}{'count':>8}{'fail':>6}{'p50 ms':>8}{'p95 ms':>8}{'p99 ms':>8}")
    for row in rows:
        print(
            f"{row['Name'][:31]:<32}{row['Request Count']:>8}{row['Failure Count']:>6}"
            f"{row['50%']:>8}{row['95%']:>8}{row['99%']:>8}"
        )
    slow = [
        r["Name"] for r in rows if r["Name"] != "Aggregated" and float(r["95%"]) > TARGET_P95_MS
    ]
    total = next(r for r in rows if r["Name"] == "Aggregated")
    failed = int(total["Failure Count"])
    verdict = "met" if not slow and not failed else f"missed: slow {slow}, {failed} failures"
    print(f"target p95 ≤ {TARGET_P95_MS} ms and no errors: {verdict}")
    print(f"requests/s {float(total['Requests/s']):.1f}, failures {total['Failure Count']}")


def over_allocation() -> None:
    """The scheduler's invariants after the run, as the tests state them."""
    from jobs.models import Job
    from tests.scheduling import assert_invariants

    jobs = Job.objects.filter(name="load")
    held = jobs.filter(state__in=Job.ACTIVE_STATES).count()
    print(f"jobs submitted under load: {jobs.count()}, holding resources at the end: {held}")
    try:
        assert_invariants()
    except AssertionError as error:
        print(f"OVER-ALLOCATION or drift: {error}")
    else:
        print(
            "no over-allocation: every node's and card's columns equal their rows, within capacity"
        )


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")
    main()
