"""Fault drills: the platform's processes as production runs them, and the checks after a fault.

A drill breaks something for real (``kill -9``, a server stopped, every database
connection cut), repairs it, and then asserts with ``assert_recovered``:

- every job ended as expected, within the drill's bound (nothing stuck in
  ``starting`` or ``running``);
- no replica ran twice: each command appends one line per run to its output;
- no allocation leaked: ended jobs hold nothing, node columns agree with the rows;
- the ledger bills each second of each attempt exactly once, and a second
  accrual run finds nothing to add.

Bounds count from the moment the repaired service answers again: how long a
Celery process takes to import Django on a loaded CI machine is not the
platform's recovery time.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from accounting.services import usage_accrue
from billing.models import UsageRecord
from billing.periods import to_second
from jobs.models import Job, PortAllocation, ReplicaAttempt
from jobs.scheduler.run import PASS_LOCK_KEY
from resources.models import Allocation, CardAllocation, Node
from tests.agent_support import Agent, cpu_job, make_node
from tests.conftest import database_url_for_subprocess
from tests.scheduling import assert_invariants
from tests.support import processes
from tests.support.waiting import wait_until

# The drills hold row and table locks from a second session and cut sessions: PostgreSQL's.
needs_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="fault drills need PostgreSQL (DATABASE_URL)"
)
# Seconds between two polls of each agent in the drills (production: 2).
POLL_SECONDS = 0.5
# A command that leaves one line in its output per run, so a second run shows.
RUN_MARK = 'echo "run $TRAINYARD_ATTEMPT" >> "$TRAINYARD_DATA_OUT/runs"\n'
# A command that runs until the drill lets it end (``let_end``).
UNTIL_LET_END = 'until [ -e "$TRAINYARD_DATA_OUT/end" ]; do sleep 0.1; done\n'


def marked_job(command: str = "", **fields) -> Job:
    """A waiting CPU job (the beat's scheduling pass places it) that records each run."""
    return cpu_job(RUN_MARK + command, **fields)


def let_end(job: Job) -> None:
    """Let a job running ``UNTIL_LET_END`` exit (through its output folder, as root)."""
    (output,) = Path(settings.TRAINYARD_NODE_ROOT).glob(f"*/jobs/{job.pk}/replica-0/output")
    (output / "end").touch()


def drill_env() -> dict[str, str]:
    """What every platform process of a drill gets: the test database, roots, fast polls."""
    return {
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
        "TRAINYARD_VAR_DIR": str(settings.VAR_DIR),
        "TRAINYARD_NODE_ROOT": str(settings.TRAINYARD_NODE_ROOT),
        "TRAINYARD_DATA_ROOT": str(settings.TRAINYARD_DATA_ROOT),
        "TRAINYARD_AGENT_POLL_SECONDS": str(POLL_SECONDS),
    }


class Service(Agent):
    """The central Celery worker (``-Q celery``) or beat, as in the Procfile.

    ``start()`` returns at once; ``wait_ready()`` waits for its ready line.
    ``kill9()`` is what a crash or the OOM killer does: the whole process group dies.
    """

    def __init__(self, tmp_path: Path, kind: str, env: dict[str, str] | None = None) -> None:
        assert kind in ("worker", "beat")
        super().__init__(tmp_path, [], beat=kind == "beat")
        self.kind = kind
        self.extra_env = env or {}
        self.name = f"{kind}-{self.name}"

    @property
    def log_path(self) -> Path:
        return self.tmp_path / f"{self.name}-{self.starts}.log"

    def start(self) -> Service:
        self.starts += 1
        hostname = f"{self.name}-{self.starts}@%h"
        schedule = self.tmp_path / f"{self.name}-{self.starts}.schedule"
        if self.kind == "worker":
            argv = processes.celery("worker", queues="celery", hostname=hostname)
        else:
            argv = processes.celery("beat", beat_schedule=schedule)
        env = {**drill_env(), **self.extra_env}
        self.process = processes.launch(argv, env=env, log=self.log_path)
        return self

    def wait_ready(self) -> None:
        ready = "ready." if self.kind == "worker" else "beat: Starting..."
        wait_until(lambda: ready in self.logs(), what=f"{self.name} ready", logs=self.logs)

    def logs(self) -> str:
        return self.log_path.read_text()


@dataclass
class Site:
    """One node with its agent (``run_agent``), the central worker and beat, as in production."""

    worker: Service
    beat: Service
    agent: Agent

    @classmethod
    def start(cls, agent_env, tmp_path: Path, env: dict[str, str] | None = None) -> Site:
        """``agent_env``: the fixture of ``tests.agent_support``; ``env``: for every process."""
        worker = Service(tmp_path, "worker", env).start()
        beat = Service(tmp_path, "beat", env).start()
        agent = agent_env(
            [make_node()], env={**drill_env(), **(env or {})}, beat=False, command=True
        )
        worker.wait_ready()
        beat.wait_ready()
        return cls(worker, beat, agent)

    @property
    def node(self) -> Node:
        return self.agent.nodes[0]

    def logs(self) -> str:
        return "\n".join([self.worker.logs(), self.agent.logs()])

    def stop(self) -> None:
        processes.stop([self.worker.process, self.beat.process, self.agent.process])


def states_are(jobs: Iterable[Job], states: Iterable[str]) -> Callable[[], bool]:
    wanted = set(states)
    pks = [job.pk for job in jobs]

    def check() -> bool:
        found = set(Job.objects.filter(pk__in=pks).values_list("state", flat=True))
        return bool(found) and found <= wanted

    return check


class SideSession:
    """A second session on the test database that holds the locks a drill needs.

    ``blocked(text)`` lists the sessions waiting on a lock whose current statement
    contains ``text``: the platform process caught where the drill wants it.
    """

    def __init__(self) -> None:
        self.conn = psycopg.connect(database_url_for_subprocess())

    def execute(self, sql: str, params: Iterable = ()) -> list[tuple]:
        cursor = self.conn.execute(sql, list(params))
        return cursor.fetchall() if cursor.description else []

    def blocked(self, text: str) -> list[int]:
        # Activity is snapshotted once per transaction, and the lock's transaction stays open.
        self.execute("SELECT pg_stat_clear_snapshot()")
        rows = self.execute(
            "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return [pid for pid, query in rows if text in query]

    def pass_blocked(self) -> list[int]:
        """Scheduling passes (holders of the pass lock) waiting on a row lock."""
        holders = {
            pid
            for (pid,) in self.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND classid = 0 AND objid = %s",
                [PASS_LOCK_KEY],
            )
        }
        return [pid for pid in self.blocked("") if pid in holders]

    def alive(self, pid: int) -> bool:
        self.execute("SELECT pg_stat_clear_snapshot()")
        return bool(self.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]))

    def release(self) -> None:
        """End the transaction, and with it every lock held."""
        self.conn.rollback()

    def close(self) -> None:
        self.conn.close()


def runs_of(job: Job, replica_index: int = 0) -> list[str]:
    """The lines ``RUN_MARK`` left, on whatever node the replica ran."""
    node_root = Path(settings.TRAINYARD_NODE_ROOT)
    lines = []
    for runs in node_root.glob(f"*/jobs/{job.pk}/replica-{replica_index}/output/runs"):
        lines += runs.read_text().splitlines()
    return lines


def assert_recovered(
    jobs: list[Job], *, state: str = Job.State.SUCCEEDED, accrued: bool = False
) -> None:
    """Every job in ``state``, each replica run once, nothing held, each second billed once."""
    for job in jobs:
        job.refresh_from_db()
        assert job.state == state, f"{job}: {job.state} ({job.state_reason})"
        attempts = list(ReplicaAttempt.objects.filter(replica__job=job))
        assert len(attempts) == job.replicas, f"{job} has attempts {attempts}"
        for index in range(job.replicas):
            assert runs_of(job, index) == ["run 1"], f"{job} replica {index} ran more than once"
    assert_nothing_held(jobs)
    assert_billed_once(
        list(ReplicaAttempt.objects.filter(replica__job__in=jobs, started_at__isnull=False)),
        accrued=accrued,
    )


def assert_nothing_held(jobs: list[Job]) -> None:
    ended = [job.pk for job in jobs if job.state in Job.FINAL_STATES]
    assert not Allocation.objects.filter(replica__job__in=ended).exists()
    assert not PortAllocation.objects.filter(replica__job__in=ended).exists()
    assert_invariants()
    if not Job.objects.filter(state__in=Job.ACTIVE_STATES).exists():
        assert not Allocation.objects.exists() and not CardAllocation.objects.exists()
        held = Node.objects.exclude(cpu_allocated_milli=0, memory_allocated_mib=0)
        assert not held.exists(), list(held.values("name", "cpu_allocated_milli"))


def assert_billed_once(attempts: list[ReplicaAttempt], *, accrued: bool = False) -> None:
    """Ledger rows tile each ended attempt from its start to its end, once; rerunning adds none.

    ``accrued``: the platform's own accrual runs have billed everything already.
    """
    assert ledger_key_is_unique()
    written = usage_accrue()
    assert not (accrued and written), f"{written} rows were left for this run to write"
    assert usage_accrue() == 0, "a second accrual run found something left to bill"
    for attempt in attempts:
        attempt.refresh_from_db()
        assert attempt.ended_at is not None, f"{attempt} has not ended"
        rows = list(UsageRecord.objects.filter(attempt=attempt).order_by("period_start"))
        expected = to_second(attempt.ended_at) - to_second(attempt.started_at)
        covered = sum((row.period_end - row.period_start for row in rows), timedelta())
        assert covered == expected, f"{attempt}: billed {covered}, ran {expected}"
        if rows:
            assert rows[0].period_start == to_second(attempt.started_at)
            assert rows[-1].period_end == to_second(attempt.ended_at)
        for before, after in zip(rows, rows[1:], strict=False):
            assert before.period_end == after.period_start, f"{attempt}: gap or overlap"


def ledger_key_is_unique() -> bool:
    """The database itself refuses a second row for an attempt's period."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, UsageRecord._meta.db_table)
    return any(
        c["unique"] and c["columns"] == ["attempt_id", "period_start"] for c in constraints.values()
    )


class PrivateRedis:
    """A Redis server of the drill's own (no persistence, as CI runs it), to stop and start.

    The machine's Redis is shared with other test sessions: a drill never restarts it.
    """

    def __init__(self, tmp_path: Path) -> None:
        if shutil.which("redis-server") is None:
            why = "needs redis-server (apt-get install redis-server)"
            if os.environ.get("TRAINYARD_REQUIRE_SERVICES"):
                pytest.fail(f"{why}; CI must run it")
            pytest.skip(why)
        self.tmp_path = tmp_path
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(self.tmp_path)]
        log = (self.tmp_path / f"redis-{self.port}.log").open("a")
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        wait_until(self.answers, what="redis-server to answer", timeout=20)
        return self

    def answers(self) -> bool:
        ping = subprocess.run(
            ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
        )
        return ping.stdout.strip() == "PONG"

    def kill9(self) -> None:
        """A crash: whatever was queued, and not yet taken, is gone."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.kill9()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class DatabaseOutage:
    """The test database goes away for the platform and comes back, as a restart does for it.

    Every session of the database but the test's own is terminated and no new one is
    let in until ``end()``. The machine's PostgreSQL serves other test sessions too:
    a drill never restarts it.
    """

    def __init__(self) -> None:
        self.name = connection.settings_dict["NAME"]
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (self.observer,) = cursor.fetchone()
        url = database_url_for_subprocess().rsplit("/", 1)[0] + "/postgres"
        self.admin = psycopg.connect(url, autocommit=True)

    def begin(self) -> int:
        """Cut every session (the observer's aside); return how many were cut."""
        self.admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
        cut = self.admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> %s",
            [self.name, self.observer],
        ).fetchone()[0]
        return cut

    def end(self) -> None:
        self.admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')
        self.admin.close()
