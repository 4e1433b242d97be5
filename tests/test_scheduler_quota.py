"""Admission: quota per user per resource, counted from starting and running jobs."""

from datetime import timedelta

import pytest

from jobs.models import Job
from jobs.quota_usage import quota_usage
from jobs.scheduler import run_pass
from resources.models import Quota
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, QuotaFactory, UserFactory
from tests.scheduling import assert_invariants, end_job, fresh, run_job, states

pytestmark = pytest.mark.django_db


@pytest.fixture
def v100():
    return GpuModelFactory(name="V100")


@pytest.fixture
def user():
    return UserFactory(username="ada")


def test_ten_one_card_jobs_against_a_quota_of_eight_start_exactly_eight(v100, user):
    NodeFactory.create_batch(3, gpu_model=v100)
    QuotaFactory(user=user, gpu_model=v100, limit=8)
    jobs = [JobFactory(owner=user, gpu_model=v100) for _ in range(10)]

    run_pass()

    assert states(jobs) == [Job.State.STARTING] * 8 + [Job.State.QUOTA_WAIT] * 2
    assert_invariants()


def test_quota_wait_reason_names_the_model_the_need_the_limit_and_the_use(v100, user):
    NodeFactory.create_batch(2, gpu_model=v100)
    QuotaFactory(user=user, gpu_model=v100, limit=8)
    JobFactory(owner=user, gpu_model=v100, gpu_count=6)
    waiting = JobFactory(owner=user, gpu_model=v100, gpu_count=4)

    run_pass()

    waiting = fresh(waiting)
    assert waiting.state == Job.State.QUOTA_WAIT
    assert waiting.state_reason == (
        "Waiting for quota: needs 4 V100 cards; your quota is 8 and 6 are in use"
    )
    assert waiting.queue_position == 1
    event = waiting.events.get()
    assert (event.from_state, event.to_state) == ("quota_wait", "quota_wait")
    assert event.reason == waiting.state_reason


def test_cpu_and_memory_quotas_are_reasons_in_cores_and_gib(user):
    NodeFactory(gpu_model=None, gpu_count=0)
    Quota.objects.create(user=user, resource=Quota.Resource.CPU, limit=16_000)
    Quota.objects.create(user=user, resource=Quota.Resource.MEMORY, limit=64 * 1024)
    cpu_job = JobFactory(
        owner=user, resource_kind="cpu", gpu_model=None, gpu_count=0, cpu_milli=24_000
    )
    memory_job = JobFactory(
        owner=user,
        resource_kind="cpu",
        gpu_model=None,
        gpu_count=0,
        cpu_milli=1_000,
        memory_mib=100 * 1024,
    )

    run_pass()

    assert fresh(cpu_job).state_reason == (
        "Waiting for quota: needs 24 CPU cores; your quota is 16 and 0 are in use"
    )
    assert fresh(memory_job).state_reason == (
        "Waiting for quota: needs 100 GiB of memory; your quota is 64 GiB and 0 GiB are in use"
    )


def test_quota_is_per_user(v100, user):
    other = UserFactory(username="grace")
    NodeFactory(gpu_model=v100)
    QuotaFactory(user=user, gpu_model=v100, limit=1)
    mine = [JobFactory(owner=user, gpu_model=v100) for _ in range(2)]
    theirs = [JobFactory(owner=other, gpu_model=v100) for _ in range(2)]

    run_pass()

    assert states(mine) == [Job.State.STARTING, Job.State.QUOTA_WAIT]
    assert states(theirs) == [Job.State.STARTING, Job.State.STARTING]


def test_site_default_quota_applies_to_users_without_their_own(v100, user):
    NodeFactory(gpu_model=v100)
    Quota.objects.create(user=None, resource=Quota.Resource.GPU, gpu_model=v100, limit=2)
    jobs = [JobFactory(owner=user, gpu_model=v100) for _ in range(3)]

    run_pass()

    assert states(jobs) == [Job.State.STARTING, Job.State.STARTING, Job.State.QUOTA_WAIT]


def test_a_quota_waiting_job_starts_when_the_owner_releases_quota(v100, user):
    NodeFactory(gpu_model=v100)
    QuotaFactory(user=user, gpu_model=v100, limit=1)
    first, second = (JobFactory(owner=user, gpu_model=v100) for _ in range(2))
    run_pass()
    assert states([first, second]) == [Job.State.STARTING, Job.State.QUOTA_WAIT]

    run_job(first)
    end_job(first)
    run_pass()

    assert fresh(second).state == Job.State.STARTING
    assert fresh(second).queue_position is None
    assert list(fresh(second).events.values_list("to_state", flat=True)) == [
        "quota_wait",
        "starting",
    ]
    assert_invariants()


def test_quota_wait_estimate_is_when_the_owner_jobs_reach_their_max_run_time(v100, user):
    NodeFactory(gpu_model=v100)
    QuotaFactory(user=user, gpu_model=v100, limit=1)
    first = JobFactory(owner=user, gpu_model=v100, max_runtime_minutes=60)
    second = JobFactory(owner=user, gpu_model=v100)
    run_pass()
    run_job(first, started_minutes_ago=20)

    run_pass()

    ends = fresh(first).started_at + timedelta(minutes=60)
    assert fresh(second).estimated_start == ends.replace(microsecond=0)


def test_quota_wait_has_no_estimate_when_the_running_job_has_no_max_run_time(v100, user):
    NodeFactory(gpu_model=v100)
    QuotaFactory(user=user, gpu_model=v100, limit=1)
    JobFactory(owner=user, gpu_model=v100)
    second = JobFactory(owner=user, gpu_model=v100)

    run_pass()

    assert fresh(second).state == Job.State.QUOTA_WAIT
    assert fresh(second).estimated_start is None


def test_virtual_gpu_compute_quota_counts_count_times_percent(user):
    t4 = GpuModelFactory(name="T4", supports_vgpu=True)
    NodeFactory(gpu_model=t4, gpu_count=4)
    Quota.objects.create(user=user, resource=Quota.Resource.VGPU_COMPUTE, gpu_model=t4, limit=100)
    vgpu = {
        "resource_kind": "vgpu",
        "gpu_model": t4,
        "gpu_count": 2,
        "vgpu_compute_percent": 30,
        "vgpu_memory_mib": 4096,
    }
    first = JobFactory(owner=user, **vgpu)
    second = JobFactory(owner=user, **vgpu)

    run_pass()

    assert states([first, second]) == [Job.State.STARTING, Job.State.QUOTA_WAIT]
    assert fresh(second).state_reason == (
        "Waiting for quota: needs 60% of T4 virtual-GPU compute; "
        "your quota is 100% and 60% are in use"
    )
    assert quota_usage(user=user)["vgpu_compute_percent:T4"] == 60


def test_a_quota_blocked_head_does_not_block_other_users_in_its_queue(v100, user):
    other = UserFactory(username="grace")
    NodeFactory(gpu_model=v100)
    QuotaFactory(user=user, gpu_model=v100, limit=1)
    run_first = JobFactory(owner=user, gpu_model=v100)
    over_quota = JobFactory(owner=user, gpu_model=v100)
    others = JobFactory(owner=other, gpu_model=v100)

    run_pass()

    assert states([run_first, over_quota, others]) == [
        Job.State.STARTING,
        Job.State.QUOTA_WAIT,
        Job.State.STARTING,
    ]
