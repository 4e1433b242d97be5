"""Host ports from the platform pool: one per job port per replica, plus a rendezvous port."""

import pytest
from django.db.models import F

from jobs.models import Job, JobPort, PortAllocation
from jobs.scheduler import run_pass
from resources.models import SiteSettings
from tests.factories import GpuModelFactory, JobFactory, NodeFactory
from tests.scheduling import assert_invariants, end_job, fresh, run_job, states

pytestmark = pytest.mark.django_db


@pytest.fixture
def v100():
    return GpuModelFactory(name="V100")


def with_ports(job: Job, *ports: int) -> Job:
    for port in ports:
        JobPort.objects.create(job=job, port=port)
    return job


def pool(size: int, start: int = 30000) -> None:
    SiteSettings.objects.update_or_create(
        pk=1, defaults={"port_pool_start": start, "port_pool_size": size}
    )


def test_every_replica_gets_a_host_port_per_job_port_and_replica_0_a_rendezvous_port(v100):
    pool(100)
    NodeFactory.create_batch(2, gpu_model=v100)
    job = with_ports(JobFactory(gpu_model=v100, task_mode="distributed", replicas=2), 8888, 6006)

    run_pass()

    rows = list(
        PortAllocation.objects.filter(replica__job=job)
        .order_by("replica__index", F("job_port").asc(nulls_first=True))
        .values_list("replica__index", "job_port", "host_port")
    )
    assert [(index, port) for index, port, _host in rows] == [
        (0, None),
        (0, 6006),
        (0, 8888),
        (1, 6006),
        (1, 8888),
    ]
    hosts = [host for _i, _p, host in rows]
    assert len(set(hosts)) == 5
    assert all(30000 <= host < 30100 for host in hosts)


def test_a_short_pool_puts_the_job_in_resource_wait_with_that_reason(v100):
    pool(3)
    NodeFactory(gpu_model=v100)
    first = with_ports(JobFactory(gpu_model=v100), 8000, 8001)
    second = with_ports(JobFactory(gpu_model=v100), 8000, 8001)
    portless = JobFactory(gpu_model=v100)

    run_pass()

    assert states([first, second, portless]) == [
        Job.State.STARTING,
        Job.State.RESOURCE_WAIT,
        Job.State.STARTING,
    ]
    assert fresh(second).state_reason == (
        "Waiting for resources: needs 2 host ports; 1 of the pool's 3 are free"
    )
    assert_invariants()

    run_job(first)
    end_job(first)
    run_pass()

    assert fresh(second).state == Job.State.STARTING
    assert PortAllocation.objects.filter(replica__job=second).count() == 2


def test_host_ports_never_repeat_across_passes(v100):
    pool(10)
    NodeFactory(gpu_model=v100)
    jobs = [with_ports(JobFactory(gpu_model=v100), 9000) for _ in range(4)]
    run_pass()
    run_job(jobs[1])
    end_job(jobs[1])
    more = [with_ports(JobFactory(gpu_model=v100), 9000) for _ in range(3)]

    run_pass()

    assert all(fresh(job).state != Job.State.RESOURCE_WAIT for job in jobs + more)
    hosts = list(PortAllocation.objects.values_list("host_port", flat=True))
    assert len(hosts) == len(set(hosts)) == 6
