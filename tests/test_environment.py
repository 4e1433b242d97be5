import pytest

from jobs.environment import (
    UNKNOWN,
    EnvironmentInput,
    ReplicaPlacement,
    environment_input_for_job,
    job_environment,
)
from jobs.execution.replica.prepare import replica_placement
from jobs.models import ReplicaAttempt
from resources.models import SiteSettings
from tests.factories import JobFactory
from tests.running_job import running_job


def test_distributed_replica_gets_rendezvous_and_paths():
    spec = EnvironmentInput(
        job_id=7,
        replicas=2,
        distributed=True,
        kind="gpu",
        gpu_count=2,
        dataset_count=2,
        pretrained_count=1,
        ports=(8080,),
    )
    placement = ReplicaPlacement(
        index=1,
        attempt=3,
        card_indices=[4, 5],
        host_ports={8080: 40001},
        master_addr="10.0.0.1",
        master_port=40000,
        deadline_epoch=1_900_000_000,
    )
    env = job_environment(spec, placement)
    assert env["TRAINYARD_DATA_IN1"] == "/trainyard/data-1"
    assert env["TRAINYARD_DATA_IN2"] == "/trainyard/data-2"
    assert env["TRAINYARD_PRETRAINED1"] == "/trainyard/pretrained-1"
    assert env["TRAINYARD_CODE"] == "/trainyard/code"
    assert env["TRAINYARD_DATA_OUT"] == "/trainyard/output"
    assert env["TRAINYARD_CHECKPOINT"] == "/trainyard/checkpoint"
    assert "TRAINYARD_PREEMPT_GRACE" not in env  # not preemptible
    assert env["TRAINYARD_PORT_8080"] == "40001"
    assert env["CUDA_VISIBLE_DEVICES"] == "4,5"
    assert (env["RANK"], env["NODE_RANK"], env["WORLD_SIZE"], env["NNODES"]) == ("1", "1", "2", "2")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("10.0.0.1", "40000")
    assert (env["TRAINYARD_ATTEMPT"], env["TRAINYARD_DEADLINE"]) == ("3", "1900000000")


def test_form_preview_shows_placeholders_for_what_start_decides():
    spec = EnvironmentInput(
        job_id=None,
        replicas=1,
        distributed=False,
        kind="vgpu",
        gpu_count=1,
        vgpu_compute_percent=50,
        vgpu_memory_mib=8192,
        ports=(6006,),
    )
    env = job_environment(spec)
    assert env["TRAINYARD_JOB_ID"] == UNKNOWN
    assert env["TRAINYARD_PORT_6006"] == UNKNOWN
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=8192M"
    assert "MASTER_ADDR" not in env


def test_a_preemptible_job_is_told_its_grace_a_plain_one_is_not():
    spec = EnvironmentInput(
        job_id=3, replicas=1, distributed=False, kind="cpu", gpu_count=0, preempt_grace_seconds=45
    )
    env = job_environment(spec)
    assert env["TRAINYARD_PREEMPT_GRACE"] == "45"
    assert env["TRAINYARD_CHECKPOINT"] == "/trainyard/checkpoint"


@pytest.mark.django_db
def test_the_grace_is_the_sites_preemption_grace():
    SiteSettings.objects.update_or_create(pk=1, defaults={"preempt_grace_seconds": 90})
    preemptible = JobFactory(preemptible=True)
    plain = JobFactory(preemptible=False)
    assert (
        job_environment(environment_input_for_job(preemptible))["TRAINYARD_PREEMPT_GRACE"] == "90"
    )
    assert "TRAINYARD_PREEMPT_GRACE" not in job_environment(environment_input_for_job(plain))


@pytest.mark.django_db
def test_a_single_replicas_placement_asks_only_for_its_ports(
    owner, project, django_assert_num_queries
):
    """Every start asks for it: a job of one replica has no rendezvous and no master to read."""
    running = running_job(owner=owner, project=project)
    attempt = ReplicaAttempt.objects.select_related("replica__job").get(pk=running.attempt.pk)
    with django_assert_num_queries(1):  # the ports published for it
        placement = replica_placement(attempt)
    assert placement.host_ports == {8080: 40123}
    assert (placement.master_addr, placement.master_port) == (None, None)
