"""The one way tests start and stop real processes (Celery workers, agents, beat, servers).

Each process leads a session of its own, so that a stop reaches everything it started,
and writes its output to a log file that a failing wait shows.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import redis
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
STOP_SECONDS = 10


def launch(argv: list[str], *, env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start ``argv`` in the repository root, its output (both streams) into ``log``."""
    with log.open("w") as output:
        return subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def celery(
    command: str,
    *,
    queues: str = "",
    concurrency: int = 2,
    hostname: str = "",
    beat_schedule: Path | None = None,
) -> list[str]:
    """The argv of a Celery ``worker`` (with ``-B`` when given a beat schedule) or ``beat``."""
    argv = [sys.executable, "-m", "celery", "-A", "trainyard", command, "--loglevel", "INFO"]
    if command == "beat":
        return argv + ["--schedule", str(beat_schedule)]
    argv += ["-Q", queues, "--concurrency", str(concurrency)]
    argv += ["--without-gossip", "--without-mingle", "--hostname", hostname]
    if beat_schedule is not None:
        argv += ["-B", "--schedule", str(beat_schedule)]
    return argv


def kill(process: subprocess.Popen) -> None:
    """What a crash does: the process and everything in its session die at once."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def stop(processes: Iterable[subprocess.Popen | None], timeout: float = STOP_SECONDS) -> None:
    """TERM every process's session at once, then wait; KILL what has not stopped in time."""
    running = [p for p in processes if p is not None and p.poll() is None]
    for process in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    for process in running:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill(process)


TASK_LINE = re.compile(r"Task ([\w.]+)\[([0-9a-f-]+)\] (received|succeeded|failed|retry|raised)")
# How kombu's Redis transport names a queue's lists of higher priorities.
PRIORITY_SEPARATOR = "\x06\x16"


def celery_idle(
    log: Path, queues: Iterable[str], *, tasks: Iterable[str] = (), settle: float = 0.2
) -> bool:
    """The worker writing ``log`` has finished every task it took (of the names in
    ``tasks``, if given: an agent's beat sends it polls all the time), and ``queues`` hold
    no message: whatever was sent to them before this call has run (needs the INFO log).

    Between popping a message and logging ``received`` a worker takes a few milliseconds:
    idle is seen twice, ``settle`` seconds apart, with nothing received in between.
    """
    first = _idle_tasks(log, list(queues), set(tasks))
    if first is None:
        return False
    time.sleep(settle)
    return _idle_tasks(log, list(queues), set(tasks)) == first


def _idle_tasks(log: Path, queues: list[str], names: set[str]) -> frozenset[str] | None:
    """The tasks the log shows finished, if none waits or runs; else None."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        for queue in queues:
            lists = [queue, *client.scan_iter(match=f"{queue}{PRIORITY_SEPARATOR}*")]
            if any(client.llen(key) for key in lists if client.type(key) == b"list"):
                return None
    finally:
        client.close()
    received, finished = set(), set()
    for name, task_id, what in TASK_LINE.findall(log.read_text()):
        if not names or name in names:
            (received if what == "received" else finished).add(task_id)
    return frozenset(finished) if received <= finished else None
