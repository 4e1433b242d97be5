"""The agent trusts nothing a job can write or send: names, folders, records and links.

Replays of what a hostile job did (issue 17, finding 2): it planted a node
folder of its own (inside its output folder, whose host path it can learn) and
sent the agent ``jobs.agent.poll`` with that folder's absolute path as the
node name; the agent then signalled the process group a planted
``current.json`` named and wrote ``stop.json`` through a planted
``stop.json.partial`` link. Each test sets the trap as the job did, runs the
agent's own code on it, and checks that nothing outside the job was touched.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from jobs.execution.agent import tasks
from jobs.execution.replica.folder import AttemptFolder
from jobs.models import Job, Replica, ReplicaAttempt
from jobs.services.stop import job_stop
from tests.agent_support import attempts_of, cpu_job, make_node, place, wait_for_state
from tests.support.waiting import wait_until


@pytest.fixture
def victim():
    """A root process in a group of its own: what the planted records point at."""
    process = subprocess.Popen(["sleep", "120"], start_new_session=True)
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def victim_file(tmp_path):
    path = tmp_path / "root-owned.conf"
    path.write_text("untouched\n")
    return path


def plant_node_folder(root: Path, attempt_id: int, *, victim_pgid: int, victim_file: Path):
    """What the job built in its output folder: a node folder the agent would act on."""
    attempt = root / "attempts" / str(attempt_id)
    attempt.mkdir(parents=True)
    (root / "active").mkdir()
    (root / "active" / str(attempt_id)).touch()
    (attempt / "spec.json").write_text(json.dumps({"sandboxed": False, "cgroup": None}))
    (attempt / "current.json").write_text(json.dumps({"pgid": victim_pgid, "phase": "training"}))
    (attempt / "stop.json.partial").symlink_to(victim_file)
    # The job holds run.lock itself, so the runner looks alive.
    lock = os.open(attempt / "run.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def overdue_attempt(node) -> ReplicaAttempt:
    """Another user's running attempt whose deadline has passed: the poll would stop it."""
    job = cpu_job("sleep 60")
    replica = Replica.objects.create(job=job, index=0, node=node)
    return ReplicaAttempt.objects.create(
        replica=replica,
        node=node,
        number=1,
        state=ReplicaAttempt.State.RUNNING,
        started_at=timezone.now() - timedelta(minutes=5),
        deadline=timezone.now() - timedelta(minutes=1),
    )


@pytest.mark.django_db
def test_poll_of_a_path_instead_of_a_node_touches_nothing(tmp_path, victim, victim_file, settings):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    node = make_node()
    settings.TRAINYARD_AGENT_NODES = [node.name]
    attempt = overdue_attempt(node)
    planted = tmp_path / "job-output" / "fake-node"
    lock = plant_node_folder(planted, attempt.pk, victim_pgid=victim.pid, victim_file=victim_file)
    try:
        tasks.poll(str(planted))
        tasks.poll("../" * 8 + str(planted).lstrip("/"))
    finally:
        os.close(lock)
    assert victim.poll() is None, "the agent signalled a process the job named"
    assert victim_file.read_text() == "untouched\n", "the agent wrote through the job's link"
    assert not (planted / "attempts" / str(attempt.pk) / "stop.json").exists()


@pytest.mark.django_db
def test_agent_refuses_attempts_of_nodes_it_does_not_serve(tmp_path, settings):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    served, other = make_node(), make_node()
    settings.TRAINYARD_AGENT_NODES = [served.name]
    attempt = overdue_attempt(other)
    tasks.stop_attempt(attempt.pk, "stopped by a job that reached the broker")
    assert ReplicaAttempt.objects.get(pk=attempt.pk).state == ReplicaAttempt.State.RUNNING
    assert not AttemptFolder(other.name, attempt.pk).path.exists()


@pytest.mark.django_db
def test_state_files_are_written_without_following_links(tmp_path, victim_file, settings):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    folder = AttemptFolder(make_node().name, 1)
    folder.path.mkdir(parents=True)
    (folder.path / "stop.json.partial").symlink_to(victim_file)
    (folder.path / "current.json").symlink_to(victim_file)
    folder.write("stop", {"kind": "stopped"})
    folder.write("current", {"pgid": 1})
    assert victim_file.read_text() == "untouched\n"
    assert folder.read("stop") == {"kind": "stopped"}
    assert not (folder.path / "current.json").is_symlink()


@pytest.mark.integration
def test_a_stop_signals_only_the_attempts_own_processes(agent, victim):
    """A record that names another process group (however it got there) is not obeyed."""
    job = place(cpu_job("echo up\nsleep 60"), agent.nodes[:1])
    wait_for_state(job, Job.State.RUNNING, agent)
    attempt = attempts_of(job)[0]
    folder = AttemptFolder(attempt.node.name, attempt.pk)
    wait_until(lambda: folder.exists("current"), what="the runner's record")
    folder.write("current", {**folder.read("current"), "pgid": victim.pid})
    job_stop(job=Job.objects.get(pk=job.pk), actor=job.owner)
    job = wait_for_state(job, Job.State.STOPPED, agent, timeout=30)
    assert victim.poll() is None, "the agent signalled a process outside the attempt"
    assert victim.returncode is None
