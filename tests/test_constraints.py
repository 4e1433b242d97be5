"""Every database constraint refuses the bad row it exists for."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from billing.models import Account, FreeGrant, Price, UsageRecord
from jobs.models import Image, JobPort, PortAllocation, Replica, ReplicaAttempt
from resources.models import GpuCard, Node, Quota, SiteSettings, Spec
from tests.factories import (
    GpuModelFactory,
    ImageFactory,
    JobFactory,
    NodeFactory,
    ProjectFactory,
    SpecFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def refused(make) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make()


@pytest.mark.parametrize(
    "field, value",
    [
        ("gpu_allocated", 9),
        ("cpu_allocated_milli", 96_001),
        ("memory_allocated_mib", 448 * 1024 + 1),
        ("storage_allocated_gib", 501),
    ],
)
def test_node_refuses_overcommit(field, value):
    node = NodeFactory()
    refused(lambda: Node.objects.filter(pk=node.pk).update(**{field: value}))


def test_node_refuses_negative_allocation():
    node = NodeFactory()
    refused(lambda: Node.objects.filter(pk=node.pk).update(gpu_allocated=-1))


def test_node_with_gpus_needs_a_model():
    refused(lambda: NodeFactory(gpu_model=None, gpu_count=2))


def test_card_refuses_more_than_100_percent_compute():
    card = NodeFactory().cards.first()
    refused(lambda: GpuCard.objects.filter(pk=card.pk).update(compute_allocated_percent=101))


def test_card_refuses_more_memory_than_it_has():
    card = NodeFactory().cards.first()
    refused(
        lambda: GpuCard.objects.filter(pk=card.pk).update(memory_allocated_mib=card.memory_mib + 1)
    )


def test_site_settings_is_a_singleton():
    SiteSettings.load()
    refused(lambda: SiteSettings.objects.create(pk=2))


def test_site_settings_port_pool_stays_in_range():
    SiteSettings.load()
    refused(
        lambda: SiteSettings.objects.filter(pk=1).update(
            port_pool_start=60000, port_pool_size=19500
        )
    )


@pytest.mark.parametrize("compute", [0, 101])
def test_spec_vgpu_compute_between_1_and_100(compute):
    refused(lambda: SpecFactory(kind="vgpu", vgpu_compute_percent=compute))


def test_spec_storage_at_least_2_gib():
    refused(lambda: SpecFactory(storage_gib=1))


def test_cpu_spec_has_no_gpu():
    refused(lambda: SpecFactory(kind="cpu", gpu_count=1))


def test_quota_gpu_needs_a_model():
    refused(lambda: Quota.objects.create(user=UserFactory(), resource="gpu", limit=1))


def test_quota_once_per_user_and_model():
    user, model = UserFactory(), GpuModelFactory()
    Quota.objects.create(user=user, resource="gpu", gpu_model=model, limit=1)
    refused(lambda: Quota.objects.create(user=user, resource="gpu", gpu_model=model, limit=2))


def test_default_quota_once_per_resource():
    Quota.objects.create(user=None, resource="cpu_milli", limit=1)
    refused(lambda: Quota.objects.create(user=None, resource="cpu_milli", limit=2))


def test_one_default_image_per_project():
    project = ProjectFactory()
    ImageFactory(project=project, is_default=True)
    refused(lambda: Image.objects.create(project=project, name="other", is_default=True))


@pytest.mark.parametrize(
    "fields",
    [
        {"task_mode": "single", "replicas": 2},
        {"task_mode": "distributed", "replicas": 1},
        {"resource_kind": "cpu"},
        {"resource_kind": "gpu", "gpu_count": 0},
        {"resource_kind": "vgpu", "vgpu_compute_percent": 0, "vgpu_memory_mib": 1024},
        {"resource_kind": "vgpu", "vgpu_compute_percent": 101, "vgpu_memory_mib": 1024},
        {"storage_gib": 1},
        {"max_retries": 11},
        {"command": "x" * 10_001},
        {"max_runtime_minutes": 0},
        {"config_mode": "spec", "spec": None},
        {"cpu_milli": 0},
    ],
)
def test_job_refuses_bad_request(fields):
    refused(lambda: JobFactory(**fields))


@pytest.mark.parametrize("port", [1024, 65536])
def test_job_port_in_range(port):
    job = JobFactory()
    refused(lambda: JobPort.objects.create(job=job, port=port))


def test_job_port_unique_per_job():
    job = JobFactory()
    JobPort.objects.create(job=job, port=8080)
    refused(lambda: JobPort.objects.create(job=job, port=8080))


def test_host_port_held_by_one_replica_only():
    replica_a = Replica.objects.create(job=JobFactory(), index=0)
    replica_b = Replica.objects.create(job=JobFactory(), index=0)
    PortAllocation.objects.create(replica=replica_a, job_port=8080, host_port=40000)
    refused(
        lambda: PortAllocation.objects.create(replica=replica_b, job_port=8080, host_port=40000)
    )


def test_host_port_in_range():
    replica = Replica.objects.create(job=JobFactory(), index=0)
    refused(lambda: PortAllocation.objects.create(replica=replica, job_port=8080, host_port=80))


def test_attempt_numbers_start_at_1_and_are_unique():
    replica = Replica.objects.create(job=JobFactory(), index=0)
    node = NodeFactory()
    refused(lambda: ReplicaAttempt.objects.create(replica=replica, number=0, node=node))
    ReplicaAttempt.objects.create(replica=replica, number=1, node=node)
    refused(lambda: ReplicaAttempt.objects.create(replica=replica, number=1, node=node))


def test_price_is_not_negative():
    refused(
        lambda: Price.objects.create(
            gpu_model=GpuModelFactory(), unit="card_hour", amount=-1, valid_from=timezone.now()
        )
    )


def test_cpu_price_is_per_core_hour():
    refused(
        lambda: Price.objects.create(
            gpu_model=None, unit="card_hour", amount=1, valid_from=timezone.now()
        )
    )


def test_free_grant_given_once():
    account = Account.objects.create(user=UserFactory())
    model = GpuModelFactory(name="P4")
    FreeGrant.objects.create(account=account, gpu_model=model, card_hours=100)
    refused(lambda: FreeGrant.objects.create(account=account, gpu_model=model, card_hours=100))


def _usage(**overrides) -> UsageRecord:
    job = JobFactory()
    replica = Replica.objects.create(job=job, index=0)
    attempt = ReplicaAttempt.objects.create(replica=replica, number=1, node=NodeFactory())
    start = timezone.now()
    fields = {
        "account": Account.objects.create(user=job.owner),
        "job": job,
        "attempt": attempt,
        "gpu_model": job.gpu_model,
        "unit": "card_hour",
        "period_start": start,
        "period_end": start + timedelta(minutes=1),
        "quantity": 1,
        "unit_seconds": 60,
        "free_unit_seconds": 0,
        "billable_unit_seconds": 60,
        "unit_price": 12,
        "amount": 12,
    }
    fields.update(overrides)
    return UsageRecord.objects.create(**fields)


def test_usage_period_is_positive():
    refused(lambda: _usage(period_end=timezone.now() - timedelta(hours=1)))


def test_usage_free_units_within_units():
    refused(lambda: _usage(free_unit_seconds=30, billable_unit_seconds=31))


def test_unbilled_usage_has_a_reason():
    refused(lambda: _usage(billed=False, billable_unit_seconds=0, amount=0))


def test_usage_once_per_attempt_and_period():
    row = _usage()
    refused(
        lambda: UsageRecord.objects.create(
            account=row.account,
            job=row.job,
            attempt=row.attempt,
            unit="card_hour",
            period_start=row.period_start,
            period_end=row.period_end,
            quantity=1,
            unit_seconds=60,
            billable_unit_seconds=60,
            unit_price=1,
            amount=1,
        )
    )


def test_spec_name_unique():
    SpecFactory(name="same")
    refused(lambda: Spec.objects.create(name="same", kind="cpu", cpu_milli=1000, memory_mib=1024))
