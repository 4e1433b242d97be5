"""The disk of the job folder fills up: the job fails saying so, and the platform runs on.

One node's folder (``TRAINYARD_NODE_ROOT/<node>``: outputs, logs, the agent's
state) is a 20 MiB tmpfs; a job writes there until ``ENOSPC``. Its own error
cannot reach its log (the same disk), so the reason comes from the agent.
"""

from __future__ import annotations

import subprocess

import pytest

from jobs.execution.files import node_root, replica_output_dir
from jobs.models import Job, ReplicaAttempt
from resources.models import Node
from tests.agent_support import attempts_of, cpu_job, make_node, place, wait_for_state
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

DISK_MIB = 20
FILL = "echo filling\nhead -c 100M /dev/zero > $TRAINYARD_DATA_OUT/fill\necho never here"


@pytest.fixture
def small_disk_node(agent_env):
    """A node whose folder is a small file system of its own, and one agent for it and ``roomy``."""
    small, roomy = make_node("small"), make_node("roomy")
    folder = node_root(small.name)
    folder.mkdir(parents=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MIB}m,mode=0755", "tmpfs", str(folder)],
        check=True,
    )
    agent = agent_env([small, roomy])
    yield agent
    # Before the fixture's own teardown removes the folders: nothing may hold the mount.
    agent.stop()
    agent.kill_replicas()
    subprocess.run(["umount", "--lazy", str(folder)], check=True)


def test_job_that_fills_the_disk_fails_saying_so_and_the_platform_runs_on(small_disk_node):
    agent = small_disk_node
    small, roomy = agent.nodes
    job = place(cpu_job(FILL, max_retries=0), [small])
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.FAILED
    assert (
        f"Disk full: 0 MiB of {DISK_MIB} MiB free on node small, where the job writes its output"
        in job.state_reason
    ), job.state_reason
    (attempt,) = attempts_of(job)
    assert not attempt.platform_fault  # the job filled it: its own failure
    assert attempt.exit_code == 1
    written = (replica_output_dir(small.name, job.pk, 0) / "fill").stat().st_size
    assert (DISK_MIB - 1) * 2**20 < written < DISK_MIB * 2**20

    # The platform runs on: the agent heartbeats for both nodes, a job elsewhere succeeds.
    before = Node.objects.get(pk=small.pk).last_heartbeat
    elsewhere = place(cpu_job("echo fine > $TRAINYARD_DATA_OUT/ok"), [roomy])
    elsewhere = wait_for_state(elsewhere, Job.FINAL_STATES, agent)
    assert elsewhere.state == Job.State.SUCCEEDED, elsewhere.state_reason
    assert (replica_output_dir(roomy.name, elsewhere.pk, 0) / "ok").read_text() == "fine\n"
    wait_until(
        lambda: Node.objects.get(pk=small.pk).last_heartbeat > before, what="the full node's beat"
    )
    assert agent.process.poll() is None


def test_job_sent_to_a_full_node_is_not_stuck_there(small_disk_node):
    agent = small_disk_node
    small, _roomy = agent.nodes
    filled = wait_for_state(place(cpu_job(FILL), [small]), Job.FINAL_STATES, agent)
    assert filled.state == Job.State.FAILED

    job = place(cpu_job("echo hello"), [small])
    failed = ReplicaAttempt.State.FAILED
    first = wait_until(
        lambda: next((a for a in attempts_of(job) if a.state == failed), None),
        what="the replica refused",
        logs=agent.logs,
    )
    assert first.node_id == small.pk
    assert first.reason == (
        f"Disk full: 0 MiB of {DISK_MIB} MiB free on node small, "
        "where the job writes its output and log."
    )
    assert first.started_at is None  # refused before it started: it never ran there
    assert first.platform_fault  # the node's fault: the job is placed again, not failed
    # Not stuck in starting: placed again (the scheduler may try the full node again,
    # a bounded number of times, or the roomy one).
    wait_until(lambda: Job.objects.get(pk=job.pk).attempt >= 2, what="the job placed again")
