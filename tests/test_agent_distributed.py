"""A real two-replica torch.distributed job (gloo) through the agent, with a restart of both."""

import pytest
from django.conf import settings

from jobs.execution.files import replica_output_dir, storage_name
from jobs.models import Job, ReplicaAttempt
from tests.agent_support import attempts_of, make_node, place, wait_for_state
from tests.factories import CodeVersionFactory, JobFactory

pytestmark = pytest.mark.integration

ALL_REDUCE = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from the platform
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
out = os.path.join(os.environ["TRAINYARD_DATA_OUT"], "sum.txt")
with open(out, "w") as handle:
    handle.write(f"{dist.get_rank()} {dist.get_world_size()} {value.item()}")
dist.destroy_process_group()
"""


def all_reduce_job(extra_first_line: str = "") -> Job:
    code = CodeVersionFactory(name="allreduce")
    folder = settings.TRAINYARD_DATA_ROOT / code.path
    folder.mkdir(parents=True)
    (folder / "allreduce.py").write_text(ALL_REDUCE)
    return JobFactory(
        project=code.project,
        owner=code.project.owner,
        code_version=code,
        task_mode="distributed",
        replicas=2,
        resource_kind="cpu",
        gpu_model=None,
        gpu_count=0,
        cpu_milli=1000,
        memory_mib=8 * 1024,
        max_retries=1,
        command=extra_first_line + "python -W ignore $TRAINYARD_CODE/allreduce.py",
    )


def sums(job: Job, nodes) -> list[str]:
    return [
        (replica_output_dir(storage_name(node), job.pk, rank) / "sum.txt").read_text()
        for rank, node in enumerate(nodes)
    ]


def test_two_replicas_all_reduce_with_gloo(agent_env):
    nodes = [make_node(), make_node()]
    agent = agent_env(nodes)
    job = wait_for_state(place(all_reduce_job(), nodes), Job.FINAL_STATES, agent, timeout=120)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert sums(job, nodes) == ["0 2 3.0", "1 2 3.0"]


def test_replica_1_failing_its_first_attempt_restarts_both(agent_env):
    nodes = [make_node(), make_node()]
    agent = agent_env(nodes)
    fail_once = 'test "$TRAINYARD_REPLICA-$TRAINYARD_ATTEMPT" != 1-1\n'
    job = place(all_reduce_job(fail_once), nodes)
    job = wait_for_state(job, Job.FINAL_STATES, agent, timeout=120)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    State = ReplicaAttempt.State
    assert [(a.number, a.replica.index, a.state) for a in attempts_of(job)] == [
        (1, 0, State.STOPPED),  # waiting at the rendezvous when its peer failed
        (1, 1, State.FAILED),
        (2, 0, State.SUCCEEDED),
        (2, 1, State.SUCCEEDED),
    ]
    assert sums(job, nodes) == ["0 2 3.0", "1 2 3.0"]
