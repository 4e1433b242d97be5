"""A burst of jobs into Slurm: how long until each is in Slurm's queue, or has its place.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/slurm_burst.py [--jobs 2000] [--clients 4]

On the 4-node development cluster (``deploy/slurm-dev``), one-card ``sleep 3600`` jobs
(they are cancelled at the end), three ways in one run:

(a) ``sbatch`` from here, ``--clients`` at once: until the last ``sbatch`` returned;
(b) through Trainyard's API with the default look-ahead: until every job is decided,
    either inside Slurm (it has a Slurm job id) or waiting its turn to enter with its
    place in Trainyard's queue;
(b*) the same with a look-ahead as large as the burst: until every job has a Slurm job
    id, that is, until the whole burst is inside Slurm's queue.

For (b) and (b*) it prints the API's part, the time to the end, and the CPU Trainyard's
processes (web, workers) spent per job; (a)'s baseline beside them, with the ratios.
Uses a scratch database (``<name>_slurmbench``) and temporary folders, as
``slurm_side_by_side.py`` does.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")

from bench.slurm_sbatch import in_parallel  # noqa: E402
from bench.slurm_side_by_side import (  # noqa: E402
    CONF,
    SLURM_DEV,
    cancel_slurm_jobs,
    cast,
    session_cpu_seconds,
    start_trainyard,
    trainyard_env,
)
from bench.start_overhead import stop, wait_for  # noqa: E402

COMMAND = "sleep 3600"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4, help="submitting at once")
    parser.add_argument("--poll", type=float, default=0.5, help="Slurm tracking poll (s)")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("Set DATABASE_URL to a PostgreSQL database (the bench uses <name>_slurmbench).")
    db = settings.DATABASES["default"]
    db["TEST"]["NAME"] = f"{db['NAME']}_slurmbench"
    started_cluster = subprocess.run([SLURM_DEV, "status"], capture_output=True).returncode != 0
    if started_cluster:
        subprocess.run([SLURM_DEV, "start"], check=True, capture_output=True)
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    roots = Path(tempfile.mkdtemp(prefix="trainyard-slurmburst-"))
    os.chmod(roots, 0o755)
    prefix = f"tyburst{uuid.uuid4().hex[:6]}"
    settings.TRAINYARD_SLURM_CONF = str(CONF)
    settings.TRAINYARD_SLURM_JOB_PREFIX = prefix
    settings.TRAINYARD_SLURM_PARTITION = "trainyard"
    settings.TRAINYARD_NODE_ROOT = roots / "nodes"
    settings.TRAINYARD_DATA_ROOT = roots / "data"
    rows = []
    try:
        token, _nodes = cast()
        rows.append(("(a) sbatch", sbatch_burst(args, roots, f"{prefix}-a"), None, None))
        cancel_slurm_jobs([f"{prefix}-a"])
        for label, lookahead in (("(b) default look-ahead", 0), ("(b*) all inside", args.jobs)):
            env = trainyard_env(args, roots, prefix)
            env["TRAINYARD_SLURM_LOOKAHEAD"] = str(lookahead)
            processes: list[subprocess.Popen] = []
            try:
                port = start_trainyard(env, roots, processes)
                before = sum(session_cpu_seconds(processes).values())
                api, whole = api_burst(args, port, token, label, all_inside=bool(lookahead))
                cpu = sum(session_cpu_seconds(processes).values()) - before
            finally:
                for process in processes:
                    stop(process)
                cancel_slurm_jobs([prefix])
                clear_jobs()
            rows.append((label, whole, api, cpu / args.jobs))
        report(args, rows)
    finally:
        cancel_slurm_jobs([prefix])
        connection.creation.destroy_test_db(old_name, verbosity=0)
        if started_cluster:
            subprocess.run([SLURM_DEV, "stop"], capture_output=True)


def sbatch_burst(args, roots: Path, name: str) -> float:
    env = {"PATH": os.defpath, "SLURM_CONF": str(CONF)}
    argv = ["sbatch", "--parsable", "--partition=trainyard", "--gres=gpu:v100:1"]
    argv += [f"--job-name={name}", f"--output={roots}/a-%j.out", f"--wrap={COMMAND}"]

    def submit(_index: int) -> None:
        subprocess.run(argv, env=env, capture_output=True, check=True)

    began = time.time()
    in_parallel(args.jobs, args.clients, submit)
    return time.time() - began


def api_burst(args, port: int, token: str, label: str, *, all_inside: bool):
    """(seconds for the API to take every job, seconds until the burst is decided)."""
    from jobs.models import Job, ReplicaAttempt

    local = threading.local()
    ids: list[int] = []

    def submit(index: int) -> None:
        if not hasattr(local, "connection"):
            local.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        body = {
            "project": "bench",
            "name": f"burst-{index}",
            "command": COMMAND,
            "resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 1},
        }
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        headers["X-Forwarded-Proto"] = "https"
        local.connection.request("POST", "/api/v1/jobs", json.dumps(body), headers)
        response = local.connection.getresponse()
        payload = response.read()
        if response.status != 201:
            raise SystemExit(f"submit answered {response.status}: {payload[:500]!r}")
        ids.append(json.loads(payload)["id"])

    began = time.time()
    in_parallel(args.jobs, args.clients, submit)
    api = time.time() - began
    jobs = Job.objects.filter(pk__in=ids)
    inside = ReplicaAttempt.objects.filter(replica__job__in=jobs).exclude(external_id="")

    def decided() -> bool:
        in_slurm = inside.values("replica__job").distinct().count()
        if all_inside:
            return in_slurm == len(ids)
        placed = jobs.filter(state=Job.State.RESOURCE_WAIT, queue_position__isnull=False)
        return in_slurm + placed.count() == len(ids)

    wait_for(decided, 3600, label)
    return api, time.time() - began


def clear_jobs() -> None:
    """The burst's jobs out of the way of the next one (their Slurm jobs are cancelled)."""
    from jobs.models import Job

    Job.objects.all().update(state=Job.State.STOPPED, state_reason="bench: burst over")


def report(args, rows) -> None:
    baseline = rows[0][1]
    print(f"\n{args.jobs} one-card jobs at once, {args.clients} clients:")
    print(f"{'way':26} {'to the end s':>13} {'x (a)':>7} {'API s':>8} {'CPU ms/job':>11}")
    for label, whole, api, cpu in rows:
        api_text = "" if api is None else f"{api:.1f}"
        cpu_text = "" if cpu is None else f"{cpu * 1000:.0f}"
        print(f"{label:26} {whole:13.1f} {whole / baseline:7.2f} {api_text:>8} {cpu_text:>11}")


if __name__ == "__main__":
    main()
