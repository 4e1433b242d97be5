"""A real node agent for tests: a Celery worker (with beat for the polls) on temporary folders.

Replicas run as real processes (bubblewrap where installed); nothing is mocked.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, transaction

from jobs.execution.agent.isolation import release
from jobs.execution.agent.tasks import agent_queues
from jobs.execution.launch import job_launch
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, PortAllocation, Replica, ReplicaAttempt
from resources.models import Node, SiteSettings
from resources.services import node_sync_cards
from tests.conftest import database_url_for_subprocess
from tests.factories import JobFactory, UserFactory
from tests.support import processes
from tests.support.waiting import wait_until
from tests.support.workers import empty_broker, host_port_offset

ROOT = Path(__file__).resolve().parent.parent
POLL_SECONDS = 0.3
WAIT_SECONDS = 60


class Agent:
    """One agent worker serving ``nodes``; ``kill9()`` and ``start()`` for restart tests."""

    def __init__(
        self, tmp_path: Path, nodes: list[Node], *, beat: bool = True, command: bool = False
    ) -> None:
        self.tmp_path = tmp_path
        self.nodes = nodes
        self.beat = beat  # beat sends every node its poll and checks heartbeats
        self.command = command  # start it as `manage.py run_agent` (no central queue, no beat)
        self.name = uuid.uuid4().hex[:6]
        self.node_root = Path(settings.TRAINYARD_NODE_ROOT)
        self.data_root = Path(settings.TRAINYARD_DATA_ROOT)
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.extra_env: dict[str, str] = {}
        self.prefix: list[str] = []  # e.g. ip netns exec <host>: an agent on a stand-in host

    @property
    def log_path(self) -> Path:
        return self.tmp_path / f"agent-{self.name}-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        env = {
            **os.environ,
            "DATABASE_URL": database_url_for_subprocess(),
            "TRAINYARD_VAR_DIR": str(settings.VAR_DIR),
            "TRAINYARD_NODE_ROOT": str(self.node_root),
            "TRAINYARD_DATA_ROOT": str(self.data_root),
            "TRAINYARD_AGENT_POLL_SECONDS": str(POLL_SECONDS),
            "TRAINYARD_AGENT_NODES": ",".join(node.name for node in self.nodes),
            **self.extra_env,
        }
        self.process = processes.launch(self.prefix + self.argv(), env=env, log=self.log_path)
        wait_until(
            lambda: "ready." in self.log_path.read_text(), what="agent ready", logs=self.logs
        )

    def argv(self) -> list[str]:
        if self.command:
            argv = [sys.executable, "manage.py", "run_agent", "--concurrency", "3"]
            return argv + [arg for node in self.nodes for arg in ("--node", node.name)]
        node_queues = [queue for node in self.nodes for queue in agent_queues(node.name)]
        return processes.celery(
            "worker",
            queues=",".join(["celery"] * self.beat + node_queues),
            concurrency=3,
            hostname=f"agent-{self.name}-{self.starts}@%h",
            beat_schedule=self.tmp_path / f"beat-{self.name}-{self.starts}" if self.beat else None,
        )

    def kill9(self) -> None:
        """What a crash does: the worker, its pool and beat die at once; replicas do not."""
        assert self.process is not None
        processes.kill(self.process)

    def stop(self) -> None:
        processes.stop([self.process], timeout=15)

    def kill_replicas(self) -> None:
        """Nothing a test started outlives it, not even the memory cgroups of its replicas."""
        for current in self.node_root.glob("*/attempts/*/current.json"):
            with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
                os.killpg(json.loads(current.read_text())["pgid"], signal.SIGKILL)
        for spec in self.node_root.glob("*/attempts/*/spec.json"):
            if (spec.parent / "exit.json").exists():
                # Its runner released it. The names it held are free: another test worker
                # (a database of its own, so the same attempt ids) may hold them now.
                continue
            with contextlib.suppress(ValueError, KeyError, OSError):
                data = json.loads(spec.read_text())
                if cgroup := data["cgroup"]:
                    _remove_cgroup(Path(cgroup))
                release({"network": data.get("network")})

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.tmp_path.glob("agent-*.log")))


def _remove_cgroup(path: Path, timeout: float = 5) -> None:
    """Remove an attempt's cgroup once its killed processes have left it (EBUSY until then)."""
    deadline = time.monotonic() + timeout
    while path.exists() and time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError, OSError):
            os.rmdir(path)
        time.sleep(0.05)


def make_node(name: str | None = None, **fields) -> Node:
    fields.setdefault("cpu_milli", 16_000)
    fields.setdefault("memory_mib", 64 * 1024)
    node = Node.objects.create(name=name or f"n{uuid.uuid4().hex[:8]}", **fields)
    node_sync_cards(node=node)
    return node


def cpu_job(command: str, **fields) -> Job:
    """A CPU job of the test owner; ``command`` is the startup command."""
    fields.setdefault("owner", UserFactory(username="runner"))
    fields.setdefault("cpu_milli", 1000)
    fields.setdefault("memory_mib", 4096)
    return JobFactory(command=command, resource_kind="cpu", gpu_model=None, gpu_count=0, **fields)


def place(
    job: Job, nodes: list[Node], *, cards: list[list[int]] | None = None, launch: bool = True
) -> Job:
    """Put ``job`` on ``nodes`` and launch it, as the scheduler does after admission.

    Allocation bookkeeping is the scheduler's business and not what these tests
    are about; what the agent reads (replicas, card indices, ports, attempt) is
    written exactly as the scheduler writes it.

    A scheduling pass (an agent's beat, a node's capacity signal) may have placed the fresh
    job already: that placement stands (the job row, locked here, says so). One may be
    placing it at once; the two deadlock. PostgreSQL aborts the side that detects it, the
    one with the shorter ``deadlock_timeout``: here that is always the pass, which the next
    pass repeats, so the test's own placement stands.
    """
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL deadlock_timeout = '30s'")
        state = Job.objects.select_for_update().values_list("state", flat=True).get(pk=job.pk)
        if state not in Job.WAITING_STATES:
            # A pass placed it before this could (and launches it): that placement stands.
            return _as_placed(Job.objects.get(pk=job.pk))
        replicas = [
            Replica.objects.create(
                job=job, index=i, node=node, card_indices=cards[i] if cards else []
            )
            for i, node in enumerate(nodes)
        ]
        next_port = _free_host_port()
        # What was given, for assertions after the job ended (its ports are released then).
        job.placed_ports = {}
        for replica in replicas:
            for job_port in job.ports.values_list("port", flat=True):
                job.placed_ports[replica.index, job_port] = next(next_port)
        if job.replicas > 1:
            job.placed_ports[0, None] = next(next_port)
        PortAllocation.objects.bulk_create(
            PortAllocation(replica=replicas[index], job_port=job_port, host_port=host_port)
            for (index, job_port), host_port in job.placed_ports.items()
        )
        job_transition(job=job, to_state=Job.State.STARTING, reason="placed", attempt=1)
        job_id = job.pk
        if launch:
            transaction.on_commit(lambda: job_launch(job_id))
    return job


def _as_placed(job: Job) -> Job:
    job.placed_ports = {
        (allocation.replica.index, allocation.job_port): allocation.host_port
        for allocation in PortAllocation.objects.filter(replica__job=job).select_related("replica")
    }
    return job


def _free_host_port():
    settings_row = SiteSettings.load()
    used = set(PortAllocation.objects.values_list("host_port", flat=True))
    for port in range(settings_row.port_pool_start + 1000 + host_port_offset(), 65535):
        if port not in used:
            yield port


def job_state(job: Job) -> str:
    return Job.objects.values_list("state", flat=True).get(pk=job.pk)


def wait_for_state(job: Job, states, agent: Agent | None = None, timeout=WAIT_SECONDS) -> Job:
    states = {states} if isinstance(states, str) else set(states)
    wait_until(
        lambda: job_state(job) in states,
        what=f"job in {states}",
        logs=agent.logs if agent else None,
        timeout=timeout,
    )
    return Job.objects.get(pk=job.pk)


def attempts_of(job: Job) -> list[ReplicaAttempt]:
    return list(
        ReplicaAttempt.objects.filter(replica__job=job).order_by("number", "replica__index")
    )


def attempt_log(attempt: ReplicaAttempt) -> str:
    from jobs.execution.files import attempt_log_path, storage_name

    return attempt_log_path(storage_name(attempt.node), attempt.pk).read_text()


@pytest.fixture
def agent_env(transactional_db, tmp_path, settings):
    """Temporary node and data roots, short grace, an empty broker; returns a factory of
    agents."""
    empty_broker()
    # Not under pytest's own folder (0700): a replica's uid must pass through to its output.
    roots = Path(tempfile.mkdtemp(prefix="trainyard-agent-"))
    os.chmod(roots, 0o755)
    settings.TRAINYARD_NODE_ROOT = roots / "nodes"
    settings.TRAINYARD_DATA_ROOT = roots / "data"
    settings.TRAINYARD_DATA_ROOT.mkdir()
    SiteSettings.objects.update_or_create(
        pk=1, defaults={"stop_grace_seconds": 1, "heartbeat_timeout_seconds": 60}
    )
    agents: list[Agent] = []

    def start(
        nodes: list[Node],
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
        **options,
    ) -> Agent:
        agent = Agent(tmp_path, nodes, **options)
        agent.extra_env = env or {}
        agent.prefix = prefix or []
        agents.append(agent)
        agent.start()
        return agent

    yield start
    for agent in agents:
        agent.stop()
        agent.kill_replicas()
    shutil.rmtree(roots, ignore_errors=True)


@pytest.fixture
def agent(agent_env):
    """One agent for one fresh CPU node: ``agent.nodes[0]``."""
    return agent_env([make_node()])
