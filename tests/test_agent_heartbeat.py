"""A node whose agent falls silent goes down; its replicas are lost and the job is placed again."""

import json

import pytest

from jobs.execution.files import attempt_dir
from jobs.models import Job, Replica, ReplicaAttempt
from resources.models import Node, SiteSettings
from tests.agent_support import attempts_of, cpu_job, make_node, place, wait_for_state
from tests.support.waiting import wait_until

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
    wait_until(exit_json.exists, what="the orphaned replica to be killed", logs=doomed_agent.logs)
    assert json.loads(exit_json.read_text())["summary"] == "killed by SIGKILL"
    wait_until(lambda: Node.objects.get(pk=doomed.pk).state == Node.State.READY, what="ready")
    assert ReplicaAttempt.objects.get(pk=first.pk).state == ReplicaAttempt.State.LOST


@pytest.mark.django_db(transaction=True)
def test_heartbeat_goes_on_while_an_attempt_is_busy_starting(tmp_path, settings):
    """Finding 3: a slow start held the attempt's lock, the poll waited on it, the node went lost.

    However long preparing one replica takes, the poll heartbeats and looks at
    the other attempts; the busy one waits for the next pass.
    """
    import fcntl
    import threading
    from datetime import timedelta

    from django.utils import timezone

    from jobs.execution.agent.poll import poll_node
    from jobs.execution.replica.folder import AttemptFolder

    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    node = make_node()
    Node.objects.filter(pk=node.pk).update(last_heartbeat=timezone.now() - timedelta(minutes=1))
    replica = Replica.objects.create(job=cpu_job("sleep 60"), index=0, node=node)
    attempt = ReplicaAttempt.objects.create(replica=replica, node=node, number=1)
    busy = AttemptFolder(node.name, attempt.pk)
    busy.mark_active()
    busy.path.mkdir(parents=True)
    with (busy.path / "agent.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # what start_attempt holds while it prepares
        poll = threading.Thread(target=poll_node, args=(node.name,), daemon=True)
        poll.start()
        poll.join(timeout=20)
        assert not poll.is_alive(), "the poll waited on a busy attempt"
    beat = Node.objects.get(pk=node.pk).last_heartbeat
    assert beat > timezone.now() - timedelta(seconds=30)
