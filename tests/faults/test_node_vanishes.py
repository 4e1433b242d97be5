"""A node vanishes under running jobs: its agent is killed -9 and heartbeats stop.

The bound: a node silent for longer than the site's heartbeat timeout is
taken down at the next heartbeat check (every agent poll interval, beat), and
its unfinished replicas end as lost in the same step. So the replicas are lost
at most ``heartbeat timeout + poll interval`` after the last heartbeat; the
test allows ``LOST_SLACK_SECONDS`` more for a busy machine's Celery delivery.
Lost replicas are platform faults: not the user's retries, not billed; their
jobs give back everything they held and wait to be placed elsewhere.
"""

from __future__ import annotations

import json
import time

import pytest

from jobs.execution.files import attempt_dir
from jobs.models import Job, PortAllocation, ReplicaAttempt
from jobs.services.submit import job_submit
from resources.models import Allocation, Node, SiteSettings
from tests.agent_support import attempts_of, make_node, wait_for_state
from tests.factories import ImageFactory
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

HEARTBEAT_TIMEOUT_SECONDS = 3
LOST_SLACK_SECONDS = 3
# Runs until it is lost; its next attempt (elsewhere) finishes at once.
COMMAND = 'test "$TRAINYARD_ATTEMPT" -ge 2 || sleep 300\necho "done on attempt $TRAINYARD_ATTEMPT"'


def cpu_body(name: str) -> dict:
    resources = {"kind": "cpu", "gpu_model": None, "gpu_count": None, "cpu_cores": 1}
    return {"project": "vision", "name": name, "resources": resources, "command": COMMAND}


def held_by(node: Node) -> tuple[int, int, int]:
    node.refresh_from_db()
    allocations = Allocation.objects.filter(node=node).count()
    return node.cpu_allocated_milli, node.memory_allocated_mib, allocations


def test_jobs_on_a_vanished_node_are_lost_within_the_bound_released_and_run_elsewhere(
    agent_env, project, owner
):
    SiteSettings.objects.filter(pk=1).update(heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT_SECONDS)
    ImageFactory(project=project, name="pytorch", is_default=True)
    doomed = make_node("doomed", cpu_milli=4000, memory_mib=16 * 1024)
    central = agent_env([])  # the scheduler's passes, the polls and the heartbeat check
    doomed_agent = agent_env([doomed], beat=False)
    jobs = [job_submit(user=owner, data=cpu_body(f"long-{i}")) for i in range(2)]
    for job in jobs:
        wait_for_state(job, Job.State.RUNNING, central)
    assert held_by(doomed)[2] == 2
    assert held_by(doomed)[0] == 2000

    doomed_agent.kill9()
    killed_at = time.monotonic()
    wait_until(
        lambda: all(attempts_of(job)[0].state == ReplicaAttempt.State.LOST for job in jobs),
        what="the replicas lost",
        timeout=HEARTBEAT_TIMEOUT_SECONDS + 30,
    )
    lost_after = time.monotonic() - killed_at
    assert lost_after <= HEARTBEAT_TIMEOUT_SECONDS + LOST_SLACK_SECONDS, lost_after
    doomed.refresh_from_db()
    assert doomed.state == Node.State.DOWN
    assert "No heartbeat from the node agent" in doomed.state_reason

    # Nothing stuck: every job gave back its node share and ports and waits for a node.
    assert held_by(doomed) == (0, 0, 0)
    for job in jobs:
        job.refresh_from_db()
        assert job.state == Job.State.RESOURCE_WAIT, job.state_reason
        assert job.events.filter(reason__contains="was lost with node doomed").exists()
        assert not PortAllocation.objects.filter(replica__job=job).exists()
        (first,) = attempts_of(job)
        assert first.platform_fault and first.ended_at is not None

    spare = make_node("spare", cpu_milli=4000, memory_mib=16 * 1024)
    agent_env([spare], beat=False)
    for job in jobs:
        job = wait_for_state(job, Job.FINAL_STATES, central)
        assert job.state == Job.State.SUCCEEDED, job.state_reason
        first, second = attempts_of(job)
        assert (second.number, second.node_id) == (2, spare.pk)
    assert held_by(spare) == (0, 0, 0)

    # The node comes back: its orphaned replicas are killed, never reported a second time.
    doomed_agent.start()
    for job in jobs:
        exit_file = attempt_dir(doomed.name, attempts_of(job)[0].pk) / "exit.json"
        wait_until(exit_file.exists, what="the orphan killed", logs=doomed_agent.logs)
        assert json.loads(exit_file.read_text())["summary"] == "killed by SIGKILL"
        assert attempts_of(job)[0].state == ReplicaAttempt.State.LOST
    wait_until(lambda: Node.objects.get(pk=doomed.pk).state == Node.State.READY, what="ready")
