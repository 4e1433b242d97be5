"""The real-agent test helpers (tests/agent_support.py): placing a job, cleaning up after."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from jobs.models import Job, Replica
from jobs.scheduler import run_pass
from tests.agent_support import Agent, cpu_job, make_node, place
from tests.factories import ReplicaAttemptFactory
from tests.support.workers import ATTEMPT_IDS_PER_PROCESS, worker_index


@pytest.mark.django_db(transaction=True)
def test_a_job_a_pass_placed_first_is_not_placed_again():
    """An agent's beat runs passes: one placed a test's fresh job just before the helper
    did, and the job had two replicas and two attempts (seen in the parallel suite)."""
    node = make_node()
    job = cpu_job("true")
    run_pass()  # no launch: the pass only writes its placement
    assert Job.objects.get(pk=job.pk).state == Job.State.STARTING

    placed = place(job, [node], launch=False)

    assert Replica.objects.filter(job=job).count() == 1
    assert placed.state == Job.State.STARTING


def test_killing_a_tests_replicas_leaves_a_finished_attempts_network_name_alone(tmp_path):
    """Test workers have databases of their own, so two can both have an attempt 32: the
    finished one's spec still names ``ty-32-a32`` when the other's replica makes it anew,
    and the first test's teardown deleted the second's namespace (seen in the suite)."""
    namespace = f"ty-{os.getpid() % 1000 + 9000}-a1"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        folder = tmp_path / "nodes" / "n1" / "attempts" / "1"
        folder.mkdir(parents=True)
        network = {"namespace": namespace, "slot": 9000, "address": "10.213.0.9", "published": {}}
        (folder / "spec.json").write_text(json.dumps({"cgroup": None, "network": network}))
        (folder / "exit.json").write_text(json.dumps({"exit_code": 0}))
        agent = Agent(tmp_path, [])
        agent.node_root = tmp_path / "nodes"

        agent.kill_replicas()

        assert (Path("/run/netns") / namespace).exists()
    finally:
        subprocess.run(["ip", "netns", "delete", namespace], check=False)


@pytest.mark.django_db
def test_each_test_process_numbers_its_attempts_in_a_range_of_its_own():
    """An attempt id names host-wide things (its network namespace ``ty-<slot>-a<id>``). Test
    processes have databases of their own: with ids from 1 in each, one process's cleanup
    of its attempt 32 deleted another's live ``ty-32-a32`` (seen twice in the suite)."""
    attempt = ReplicaAttemptFactory()
    first = ((worker_index() or 0) + 1) * ATTEMPT_IDS_PER_PROCESS
    assert first <= attempt.pk < first + ATTEMPT_IDS_PER_PROCESS
