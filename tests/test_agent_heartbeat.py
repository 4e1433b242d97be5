"""A node whose agent falls silent goes down; its replicas are lost and the job is placed again."""

import json

import pytest

from jobs.execution.files import attempt_dir
from jobs.models import Job, ReplicaAttempt
from resources.models import Node, SiteSettings
from tests.agent_support import attempts_of, cpu_job, make_node, place, wait_for_state, wait_until

pytestmark = pytest.mark.integration


def test_silent_node_goes_down_its_replica_is_lost_and_runs_again_elsewhere(agent_env):
    SiteSettings.objects.filter(pk=1).update(heartbeat_timeout_seconds=4)
    doomed, spare = make_node(), make_node()
    central = agent_env([spare])  # with beat: polls and the heartbeat check
    doomed_agent = agent_env([doomed], beat=False)
    wait_until(lambda: Node.objects.get(pk=doomed.pk).last_heartbeat, what="a first heartbeat")
    command = 'echo "attempt $TRAINYARD_ATTEMPT"\ntest "$TRAINYARD_ATTEMPT" -ge 2 || sleep 300'
    job = place(cpu_job(command), [doomed])
    wait_for_state(job, Job.State.RUNNING, central)

    doomed_agent.kill9()
    wait_until(lambda: Node.objects.get(pk=doomed.pk).state == Node.State.DOWN, what="node down")
    lost = ReplicaAttempt.State.LOST
    wait_until(lambda: attempts_of(job)[0].state == lost, what="the replica lost")
    first = attempts_of(job)[0]
    assert first.platform_fault
    # It ended, for all anyone knows, when the node was last heard of (or when it started).
    assert first.ended_at == max(first.started_at, Node.objects.get(pk=doomed.pk).last_heartbeat)
    assert "No heartbeat from the node agent" in Node.objects.get(pk=doomed.pk).state_reason

    job = wait_for_state(job, Job.FINAL_STATES, central)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    second = attempts_of(job)[1]
    assert (second.number, second.node_id) == (2, spare.pk)
    reasons = list(job.events.values_list("to_state", flat=True))
    assert Job.State.RESOURCE_WAIT in reasons

    # The old replica still runs on the silent node; its agent's return must end it.
    doomed_agent.start()
    exit_json = attempt_dir(doomed.name, first.pk) / "exit.json"
    wait_until(exit_json.exists, what="the orphaned replica to be killed", proc=doomed_agent)
    assert json.loads(exit_json.read_text())["summary"] == "killed by SIGKILL"
    wait_until(lambda: Node.objects.get(pk=doomed.pk).state == Node.State.READY, what="ready")
    assert ReplicaAttempt.objects.get(pk=first.pk).state == ReplicaAttempt.State.LOST
