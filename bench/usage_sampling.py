"""The agent's CPU cost of sampling 100 running attempts (jobs/execution/agent/usage.py),
side by side with the same counts read through psutil.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/usage_sampling.py

100 "attempts" of 3 real sleeping processes each (a launcher, bwrap's child, the job's
Python, as a sandboxed replica has); each pass reads every process's CPU time, I/O and
resident memory, and inserts one sample per attempt into a scratch database
(``<name>_usagebench``). Prints the CPU time of one pass, per attempt, and the share of
one core at the default interval (10 s).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from scratch import django_setup, scratch_database

PROCESSES_PER_ATTEMPT = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attempts", type=int, default=100)
    parser.add_argument("--passes", type=int, default=30)
    args = parser.parse_args()
    django_setup()
    import psutil

    from jobs.execution.agent.usage import _process_counts
    from tests.factories import ProjectFactory, UserFactory
    from tests.running_job import running_job

    with scratch_database("usagebench"):
        owner = UserFactory(username="bench")
        project = ProjectFactory(name="bench", owner=owner)
        attempt = running_job(owner=owner, project=project).attempt
        sleepers = [
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            for _ in range(args.attempts * PROCESSES_PER_ATTEMPT)
        ]
        groups = [
            [p.pid for p in sleepers[i : i + PROCESSES_PER_ATTEMPT]]
            for i in range(0, len(sleepers), PROCESSES_PER_ATTEMPT)
        ]
        try:
            ours = _passes(args.passes, groups, attempt, lambda pid: _process_counts(pid))
            theirs = _passes(args.passes, groups, attempt, lambda pid: _psutil_counts(psutil, pid))
        finally:
            for process in sleepers:
                process.kill()
                process.wait()

    print(f"{args.attempts} attempts × {PROCESSES_PER_ATTEMPT} processes, {args.passes} passes")
    print(f"  {'':34} {'/proc':>9} {'psutil':>9} {'ratio':>7}")
    for label, key in (
        ("CPU ms per pass (median)", "median"),
        ("CPU ms per pass (max)", "max"),
        ("CPU µs per attempt (median)", "per_attempt"),
        ("% of one core at a 10 s interval", "share"),
    ):
        a, b = ours[key], theirs[key]
        print(f"  {label:34} {a:9.2f} {b:9.2f} {b / a:7.2f}")


def _passes(count: int, groups: list[list[int]], attempt, read) -> dict:
    from django.utils import timezone

    from jobs.models import AttemptSample

    times = []
    for _ in range(count):
        start = time.process_time()
        samples = []
        for pids in groups:
            totals = [0, 0, 0, 0]
            for pid in pids:
                counts = read(pid)
                if counts:
                    totals = [a + b for a, b in zip(totals, counts, strict=True)]
            samples.append(
                AttemptSample(
                    attempt=attempt,
                    at=timezone.now(),
                    cpu_seconds=totals[0] / 100,
                    memory_mib=totals[3] // (1024 * 1024),
                    read_bytes=totals[1],
                    write_bytes=totals[2],
                )
            )
        AttemptSample.objects.bulk_create(samples)
        times.append((time.process_time() - start) * 1000)
    median = statistics.median(times)
    return {
        "median": median,
        "max": max(times),
        "per_attempt": median * 1000 / len(groups),
        "share": median / 10_000 * 100,
    }


def _psutil_counts(psutil, pid: int):
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            cpu = process.cpu_times()
            io = process.io_counters()
            memory = process.memory_info()
    except psutil.Error:
        return None
    ticks = int((cpu.user + cpu.system + cpu.children_user + cpu.children_system) * 100)
    return ticks, io.read_bytes, io.write_bytes, memory.rss


if __name__ == "__main__":
    main()
