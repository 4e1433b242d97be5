"""Rows the billing tests share: GPU models with prices, and attempts with given times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from billing.accounts import account_for_user
from billing.models import FreeGrant, Price, UsageRecord
from jobs.models import Job, Replica, ReplicaAttempt
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, ReplicaAttemptFactory

PRICES_FROM = datetime(2026, 1, 1, tzinfo=UTC)
T0 = datetime(2026, 3, 10, 8, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=30)


def p4_model():
    return GpuModelFactory(
        name="P4",
        card_memory_gib=8,
        memory_gib_per_card=40,
        relative_speed=1.0,
        supports_vgpu=True,
        free_tier=True,
    )


def v100_model():
    return GpuModelFactory(name="V100")


def set_price(gpu_model, amount: str, valid_from: datetime = PRICES_FROM) -> Price:
    if gpu_model is None:
        return Price.objects.create(unit="core_hour", amount=Decimal(amount), valid_from=valid_from)
    return Price.objects.create(
        gpu_model=gpu_model, unit="card_hour", amount=Decimal(amount), valid_from=valid_from
    )


def grant_of(user, hours: str) -> FreeGrant:
    """The user's free grant, set to ``hours`` card-hours."""
    account_for_user(user=user)
    FreeGrant.objects.filter(account__user=user).update(card_hours=Decimal(hours))
    return FreeGrant.objects.get(account__user=user)


def job_on(gpu_model, *, owner=None, state: str = Job.State.RUNNING, **fields) -> Job:
    extra = {"owner": owner} if owner is not None else {}
    if fields.get("replicas", 1) > 1:
        fields.setdefault("task_mode", Job.TaskMode.DISTRIBUTED)
    return JobFactory(gpu_model=gpu_model, state=state, **extra, **fields)


def attempt_of(
    job: Job,
    *,
    started: datetime,
    ended: datetime | None = None,
    index: int = 0,
    number: int = 1,
    **fields,
) -> ReplicaAttempt:
    replica = Replica.objects.filter(job=job, index=index).first()
    if replica is None:
        node = (
            NodeFactory(gpu_model=job.gpu_model)
            if job.gpu_model
            else NodeFactory(gpu_model=None, gpu_count=0)
        )
        replica = Replica.objects.create(job=job, index=index, node=node)
    if ended is not None:
        fields.setdefault("state", ReplicaAttempt.State.SUCCEEDED)
    return ReplicaAttemptFactory(
        replica=replica,
        node=replica.node,
        number=number,
        started_at=started,
        ended_at=ended,
        **fields,
    )


def ledger(**filters) -> list[UsageRecord]:
    return list(UsageRecord.objects.filter(**filters).order_by("attempt_id", "period_start"))


def total(rows: list[UsageRecord], field: str) -> Decimal:
    return sum((getattr(row, field) for row in rows), Decimal(0))


def hours_of(rows: list[UsageRecord], field: str = "unit_seconds") -> Decimal:
    return total(rows, field) / 3600


def seconds_covered(rows: list[UsageRecord]) -> int:
    return sum(int((r.period_end - r.period_start).total_seconds()) for r in rows)


def ledger_hours() -> dict[tuple, dict[str, Decimal]]:
    """The ledger summed by hour the way ``UsageHour`` keys it, from the rows themselves."""
    from collections import defaultdict

    from accounting.services.hours import SUMMED, local_hour

    sums: dict[tuple, dict[str, Decimal]] = defaultdict(
        lambda: dict.fromkeys((*SUMMED, "ledger_rows"), Decimal(0))
    )
    for row in UsageRecord.objects.all():
        key = (row.account_id, row.job_id, row.gpu_model_id, row.unit, row.unit_price)
        totals = sums[(*key, local_hour(row.period_start))]
        for name in SUMMED:
            totals[name] += getattr(row, name)
        totals["ledger_rows"] += 1
    return dict(sums)


def stored_hours() -> dict[tuple, dict[str, Decimal]]:
    from accounting.services.hours import SUMMED
    from billing.models import UsageHour

    return {
        (h.account_id, h.job_id, h.gpu_model_id, h.unit, h.unit_price, h.hour): {
            name: getattr(h, name) for name in (*SUMMED, "ledger_rows")
        }
        for h in UsageHour.objects.all()
    }


@pytest.fixture
def hours_match_ledger(db):
    """After the test: the hourly sums the pages read add up to the ledger, exactly."""
    yield
    assert stored_hours() == ledger_hours()
