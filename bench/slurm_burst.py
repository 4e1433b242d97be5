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
Uses a scratch database (``<name>_slurmbench``) and temporary folders
(``slurm_site.scratch_site``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")

from bench.slurm_sbatch import in_parallel  # noqa: E402
from bench.slurm_side_by_side import (  # noqa: E402
    cast,
    session_cpu_seconds,
    start_trainyard,
    trainyard_env,
)
from bench.slurm_site import CONF, cancel_slurm_jobs, scratch_site, submit_job  # noqa: E402
from bench.start_overhead import stop, wait_for  # noqa: E402

COMMAND = "sleep 3600"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4, help="submitting at once")
    parser.add_argument("--poll", type=float, default=0.5, help="Slurm tracking poll (s)")
    args = parser.parse_args()

    with scratch_site("slurmburst") as scratch:
        roots, prefix = scratch.roots, scratch.prefix
        token, _nodes = cast()
        rows = [("(a) sbatch", sbatch_burst(args, roots, f"{prefix}-a"), None, None)]
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

    ids: list[int] = []

    def submit(index: int) -> None:
        ids.append(submit_job(port, token, name=f"burst-{index}", command=COMMAND))

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
