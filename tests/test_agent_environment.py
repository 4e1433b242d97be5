"""Each replica gets the documented variables and sees its data where they point."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import transaction

from jobs.execution.replica.network import reachable_address
from jobs.models import Job, JobDataset, JobPort, JobPretrainedModel
from tests.agent_support import attempts_of, make_node, place, wait_for_state
from tests.factories import (
    CodeVersionFactory,
    DatasetFactory,
    GpuModelFactory,
    JobFactory,
    PretrainedModelFactory,
)

pytestmark = pytest.mark.integration

DUMP = "env | sort > $TRAINYARD_DATA_OUT/env.txt\n"
READS = (
    "cat $TRAINYARD_DATA_IN1/sample.txt $TRAINYARD_DATA_IN2/sample.txt "
    "$TRAINYARD_PRETRAINED1/sample.txt $TRAINYARD_CODE/sample.txt > $TRAINYARD_DATA_OUT/read.txt\n"
    "pwd > $TRAINYARD_DATA_OUT/pwd.txt"
)


def on_disk(item, text: str):
    folder = settings.TRAINYARD_DATA_ROOT / item.path
    folder.mkdir(parents=True)
    (folder / "sample.txt").write_text(text + "\n")
    return item


def gpu_job_with_everything() -> Job:
    # One transaction: the agent's beat runs passes, and one that saw the job before its
    # port was added would place it without one (seen in CI: KeyError (0, 8080)).
    with transaction.atomic():
        return _gpu_job_with_everything()


def _gpu_job_with_everything() -> Job:
    v100 = GpuModelFactory()
    job = JobFactory(gpu_model=v100, gpu_count=2, command=DUMP + READS, max_runtime_minutes=30)
    project = job.project
    for position, name in enumerate(["cats", "dogs"], start=1):
        dataset = on_disk(DatasetFactory(project=project, name=name), name)
        JobDataset.objects.create(job=job, dataset=dataset, position=position)
    model = on_disk(PretrainedModelFactory(project=project, name="resnet"), "resnet")
    JobPretrainedModel.objects.create(job=job, pretrained_model=model, position=1)
    job.code_version = on_disk(CodeVersionFactory(project=project, name="v1"), "code")
    job.save(update_fields=["code_version"])
    JobPort.objects.create(job=job, port=8080)
    return job


def read_env(path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_replica_gets_trainyard_variables_cards_ports_and_data(agent_env):
    node = make_node(gpu_model=GpuModelFactory(), gpu_count=4)
    agent = agent_env([node])
    placed = place(gpu_job_with_everything(), [node], cards=[[2, 3]])
    job = wait_for_state(placed, Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    (attempt,) = attempts_of(job)
    output = settings.TRAINYARD_NODE_ROOT / node.name / "jobs" / str(job.pk) / "replica-0/output"
    env = read_env(output / "env.txt")
    host_port = placed.placed_ports[0, 8080]
    assert {k: v for k, v in env.items() if k.startswith("TRAINYARD_")} == {
        "TRAINYARD_JOB_ID": str(job.pk),
        "TRAINYARD_REPLICA": "0",
        "TRAINYARD_ATTEMPT": "1",
        "TRAINYARD_DEADLINE": env["TRAINYARD_DEADLINE"],
        "TRAINYARD_CODE": "/trainyard/code",
        "TRAINYARD_DATA_IN1": "/trainyard/data-1",
        "TRAINYARD_DATA_IN2": "/trainyard/data-2",
        "TRAINYARD_PRETRAINED1": "/trainyard/pretrained-1",
        "TRAINYARD_DATA_OUT": "/trainyard/output",
        "TRAINYARD_CHECKPOINT": "/trainyard/checkpoint",
        "TRAINYARD_PORT_8080": str(host_port),
        # Replica 0's port in a browser, through the authenticated proxy.
        "TRAINYARD_PORT_URL_8080": f"http://j{job.pk}-8080.jobs.localhost:8080/",
    }
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert attempt.deadline == attempt.started_at + timedelta(minutes=30)
    # Whole seconds, never later than the deadline the agent enforces.
    assert 0 <= attempt.deadline.timestamp() - int(env["TRAINYARD_DEADLINE"]) < 1.5
    assert not {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"} & set(env)
    assert "MASTER_ADDR" not in env
    assert (output / "read.txt").read_text().split() == ["cats", "dogs", "resnet", "code"]
    assert (output / "pwd.txt").read_text() == "/\n"


def test_distributed_replicas_get_rendezvous_variables(agent_env):
    nodes = [make_node(address="127.0.0.1"), make_node(address="127.0.0.1")]
    agent = agent_env(nodes)
    job = JobFactory(
        task_mode="distributed",
        replicas=2,
        resource_kind="cpu",
        gpu_model=None,
        gpu_count=0,
        cpu_milli=1000,
        memory_mib=2048,
        command=DUMP,
    )
    master_port = place(job, nodes).placed_ports[0, None]
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    for rank, node in enumerate(nodes):
        out = settings.TRAINYARD_NODE_ROOT / node.name / "jobs" / str(job.pk) / f"replica-{rank}"
        env = read_env(out / "output" / "env.txt")
        # In its own network a replica's 127.0.0.1 is its own: a loopback node address
        # becomes the job bridge's, where the rendezvous port is published.
        assert env["MASTER_ADDR"] == reachable_address("127.0.0.1") != "127.0.0.1"
        assert env["GLOO_SOCKET_IFNAME"] == env["NCCL_SOCKET_IFNAME"] == "eth0"
        assert env["MASTER_PORT"] == str(master_port)
        assert (env["RANK"], env["NODE_RANK"], env["TRAINYARD_REPLICA"]) == (str(rank),) * 3
        assert (env["WORLD_SIZE"], env["NNODES"], env["LOCAL_WORLD_SIZE"]) == ("2", "2", "1")
        assert env["CUDA_VISIBLE_DEVICES"] == ""
