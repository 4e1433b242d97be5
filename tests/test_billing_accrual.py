"""The usage accrual: units, prices, phases, platform faults, and exactly-once periods."""

from datetime import timedelta
from decimal import Decimal

import pytest

from accounting.services import usage_accrue
from accounting.services.hours import usage_hours_add
from billing.accounts import account_for_user
from billing.models import AttemptAccrual, FreeGrant, UsageRecord
from jobs.models import Job, ReplicaAttempt
from tests.billing_cast import (
    LATER,
    T0,
    attempt_of,
    hours_match_ledger,  # noqa: F401 (a fixture)
    hours_of,
    job_on,
    ledger,
    p4_model,
    seconds_covered,
    set_price,
    total,
    v100_model,
)
from tests.factories import GpuModelFactory, NodeFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hours_match_ledger")]


@pytest.fixture
def p4():
    model = p4_model()
    set_price(model, "3.00")
    return model


@pytest.fixture
def v100():
    model = v100_model()
    set_price(model, "12.00")
    return model


@pytest.fixture
def paid_user(admin_user):
    user = UserFactory(username="payer")
    from accounting.services import account_enable_billing

    account_enable_billing(account=account_for_user(user=user), actor=admin_user)
    return user


def test_free_p4_job_of_90_minutes_on_2_cards_uses_3_free_card_hours_and_bills_nothing(p4):
    job = job_on(p4, gpu_count=2)
    attempt_of(job, started=T0, ended=T0 + timedelta(minutes=90))

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert hours_of(rows) == 3
    assert hours_of(rows, "free_unit_seconds") == 3
    assert total(rows, "billable_unit_seconds") == 0
    assert total(rows, "amount") == 0
    assert all(row.billed for row in rows)
    grant = FreeGrant.objects.get(account__user=job.owner, gpu_model=p4)
    assert grant.used_card_hours == 3
    assert grant.remaining_card_hours == 97


def test_paid_v100_job_bills_at_the_v100_price(v100, paid_user):
    job = job_on(v100, owner=paid_user)
    attempt_of(job, started=T0, ended=T0 + timedelta(hours=1))

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert hours_of(rows, "billable_unit_seconds") == 1
    assert {row.unit_price for row in rows} == {Decimal("12.0000")}
    assert total(rows, "amount") == Decimal("12")


def test_virtual_gpu_at_50_percent_bills_half_a_card(v100, paid_user):
    job = job_on(
        v100,
        owner=paid_user,
        resource_kind="vgpu",
        gpu_count=1,
        vgpu_compute_percent=50,
        vgpu_memory_mib=8192,
    )
    attempt_of(job, started=T0, ended=T0 + timedelta(hours=2))

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert {row.quantity for row in rows} == {Decimal("0.5")}
    assert hours_of(rows) == 1
    assert total(rows, "amount") == Decimal("12")


def test_distributed_job_bills_every_replica(v100, paid_user):
    job = job_on(v100, owner=paid_user, replicas=3, gpu_count=2)
    for index in range(3):
        attempt_of(job, index=index, started=T0, ended=T0 + timedelta(minutes=30))

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert len({row.attempt_id for row in rows}) == 3
    assert hours_of(rows) == 3  # 3 replicas × 2 cards × ½ h
    assert total(rows, "amount") == Decimal("36")


def test_cpu_only_job_bills_core_hours_at_the_cpu_price(paid_user):
    set_price(None, "0.20")
    job = job_on(None, owner=paid_user, resource_kind="cpu", gpu_count=0, cpu_milli=12_500)
    attempt_of(job, started=T0, ended=T0 + timedelta(hours=2))

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert {(row.unit, row.gpu_model_id, row.quantity) for row in rows} == {
        ("core_hour", None, Decimal("12.5"))
    }
    assert hours_of(rows, "billable_unit_seconds") == 25
    # 12.5 cores × 1 min × 0.20 / h = 0.0416666…, rounded once per row; the total adds rows.
    assert {row.amount for row in rows} == {Decimal("0.041667")}
    assert total(rows, "amount") == Decimal("0.041667") * 120


def test_aggregated_request_bills_the_model_of_the_node_it_ran_on(paid_user):
    v100_32 = GpuModelFactory(name="V100-32G", card_memory_gib=32)
    set_price(v100_32, "15.00")
    star = GpuModelFactory(name="*V100")
    star.members.add(v100_32)
    job = job_on(star, owner=paid_user)
    node = NodeFactory(gpu_model=v100_32)
    from jobs.models import Replica

    replica = Replica.objects.create(job=job, index=0, node=node)
    ReplicaAttempt.objects.create(
        replica=replica, number=1, node=node, started_at=T0, ended_at=T0 + timedelta(hours=1)
    )

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert {row.gpu_model_id for row in rows} == {v100_32.pk}
    assert total(rows, "amount") == Decimal("15")


def test_paid_account_uses_its_free_p4_hours_before_paying(p4, paid_user):
    FreeGrant.objects.filter(account__user=paid_user).update(card_hours=1)
    job = job_on(p4, owner=paid_user, gpu_count=2)
    attempt_of(job, started=T0, ended=T0 + timedelta(hours=1))

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert hours_of(rows, "free_unit_seconds") == 1
    assert hours_of(rows, "billable_unit_seconds") == 1
    assert total(rows, "amount") == Decimal("3")
    # The grant went to the earliest periods; the first paid one is where it ran out.
    first_paid = next(row for row in rows if row.billable_unit_seconds)
    assert first_paid.period_start == T0 + timedelta(minutes=30)


def test_price_change_mid_month_applies_from_its_moment_and_splits_the_period(v100, paid_user):
    change = T0 + timedelta(minutes=30, seconds=20)
    set_price(v100, "24.00", valid_from=change)
    job = job_on(v100, owner=paid_user)
    attempt_of(job, started=T0, ended=T0 + timedelta(hours=1))

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    before = [row for row in rows if row.period_start < change]
    after = [row for row in rows if row.period_start >= change]
    assert {row.unit_price for row in before} == {Decimal("12")}
    assert {row.unit_price for row in after} == {Decimal("24")}
    assert before[-1].period_end == change  # the minute that held the change is cut at it
    assert seconds_covered(rows) == 3600
    # 30 whole minutes at 0.20, 20 s at 12/h (0.066667), 40 s at 24/h (0.266667), 29 at 0.40.
    assert total(rows, "amount") == Decimal("6") + Decimal("0.066667") + Decimal(
        "0.266667"
    ) + Decimal("11.6")


def test_a_price_change_never_rewrites_rows_already_written(v100, paid_user):
    job = job_on(v100, owner=paid_user)
    attempt_of(job, started=T0, ended=T0 + timedelta(hours=1))
    usage_accrue(now=LATER)
    written = {(r.pk, r.unit_price, r.amount) for r in ledger(job=job)}

    set_price(v100, "99.00", valid_from=T0)  # back-dated
    usage_accrue(now=LATER + timedelta(minutes=5))

    assert {(r.pk, r.unit_price, r.amount) for r in ledger(job=job)} == written


def test_each_row_amount_is_rounded_once_to_a_millionth(paid_user):
    set_price(None, "0.20")
    job = job_on(None, owner=paid_user, resource_kind="cpu", gpu_count=0, cpu_milli=1000)
    attempt_of(job, started=T0, ended=T0 + timedelta(seconds=37))

    usage_accrue(now=LATER)

    (row,) = ledger(job=job)
    assert row.amount == Decimal("0.002056")  # 37 × 0.20 / 3600 = 0.0020555…


def test_node_lost_time_is_recorded_unbilled_with_the_reason(v100, paid_user):
    job = job_on(v100, owner=paid_user)
    attempt_of(
        job,
        started=T0,
        ended=T0 + timedelta(minutes=20),
        state=ReplicaAttempt.State.LOST,
        platform_fault=True,
        reason="node gpu-07 lost: no heartbeat for 60 s",
    )

    usage_accrue(now=LATER)

    rows = ledger(job=job)
    assert seconds_covered(rows) == 20 * 60
    assert not any(row.billed for row in rows)
    assert total(rows, "amount") == total(rows, "free_unit_seconds") == 0
    assert all("node gpu-07 lost" in row.unbilled_reason for row in rows)


def test_attempt_failed_by_user_code_is_billed(v100, paid_user):
    job = job_on(v100, owner=paid_user, state=Job.State.FAILED)
    attempt_of(
        job,
        started=T0,
        ended=T0 + timedelta(minutes=6),
        state=ReplicaAttempt.State.FAILED,
        exit_code=1,
    )

    usage_accrue(now=LATER)

    assert total(ledger(job=job), "amount") == Decimal("1.2")


def test_periods_lie_on_the_minute_grid_and_split_where_training_starts(v100, paid_user):
    start = T0 + timedelta(seconds=15, microseconds=700_000)
    job = job_on(v100, owner=paid_user)
    attempt_of(
        job,
        started=start,
        training_started_at=T0 + timedelta(minutes=2, seconds=30),
        ended=T0 + timedelta(minutes=4, seconds=10),
    )

    usage_accrue(now=LATER)

    periods = [(r.period_start - T0, r.period_end - T0, r.phase) for r in ledger(job=job)]
    s = lambda seconds: timedelta(seconds=seconds)  # noqa: E731
    assert periods == [
        (s(15), s(60), "augmentation"),
        (s(60), s(120), "augmentation"),
        (s(120), s(150), "augmentation"),
        (s(150), s(180), "training"),
        (s(180), s(240), "training"),
        (s(240), s(250), "training"),
    ]


def test_running_attempt_accrues_complete_settled_periods_then_closes_at_its_end(v100, paid_user):
    job = job_on(v100, owner=paid_user)
    attempt = attempt_of(job, started=T0)

    # Heartbeat timeout is 60 s: at 10:30 the settled grid ends at 09:29.
    usage_accrue(now=T0 + timedelta(minutes=30, seconds=30))
    assert seconds_covered(ledger(job=job)) == 29 * 60
    assert not AttemptAccrual.objects.get(attempt=attempt).closed

    attempt.ended_at = T0 + timedelta(minutes=45, seconds=5)
    attempt.state = ReplicaAttempt.State.SUCCEEDED
    attempt.save()
    usage_accrue(now=T0 + timedelta(minutes=46))

    rows = ledger(job=job)
    assert seconds_covered(rows) == 45 * 60 + 5
    assert rows[-1].period_end == attempt.ended_at
    assert AttemptAccrual.objects.get(attempt=attempt).closed


def test_running_twice_bills_nothing_more(v100, paid_user):
    job = job_on(v100, owner=paid_user)
    attempt_of(job, started=T0, ended=T0 + timedelta(minutes=90))

    first = usage_accrue(now=LATER)
    second = usage_accrue(now=LATER)

    assert first == 90
    assert second == 0
    assert seconds_covered(ledger(job=job)) == 90 * 60


def test_a_late_run_writes_exactly_the_rows_timely_runs_write(p4):
    FreeGrant.objects.all().delete()

    end = T0 + timedelta(hours=2, seconds=33)

    def run(owner_name: str, nows: list) -> list[tuple]:
        owner = UserFactory(username=owner_name)
        account_for_user(user=owner)
        FreeGrant.objects.filter(account__user=owner).update(card_hours=Decimal("0.5"))
        job = job_on(p4, owner=owner, gpu_count=2)
        attempt = attempt_of(job, started=T0 + timedelta(seconds=7))
        for now in nows:
            if now >= end:  # the executor records the end as it happens
                ReplicaAttempt.objects.filter(pk=attempt.pk).update(ended_at=end)
            usage_accrue(now=now)
        return [
            (r.period_start, r.period_end, r.unit_seconds, r.free_unit_seconds, r.billed)
            for r in ledger(job=job)
        ]

    timely = run("timely", [T0 + timedelta(minutes=m) for m in range(0, 200)])
    late = run("late", [T0 + timedelta(hours=5)])

    assert timely == late
    assert sum(r[3] for r in late) == 1800  # the half card-hour grant, to the second
    assert sum((r[1] - r[0]).total_seconds() for r in late) == 2 * 3600 + 33 - 7


def test_an_account_that_fails_is_rolled_back_whole_and_the_others_are_accrued(v100, paid_user):
    good = job_on(v100, owner=paid_user)
    attempt_of(good, started=T0, ended=T0 + timedelta(minutes=10))
    broken_owner = UserFactory(username="broken")
    account_for_user(user=broken_owner)
    broken = job_on(v100, owner=broken_owner)
    attempt_of(broken, started=T0, ended=T0 + timedelta(minutes=10))
    # A row already in the ledger for a period the accrual is about to write:
    # the database refuses the duplicate, and that account's whole transaction rolls back.
    already = UsageRecord.objects.create(
        account=account_for_user(user=broken_owner),
        job=broken,
        attempt=broken.replica_set.get().attempts.get(),
        gpu_model=v100,
        unit="card_hour",
        period_start=T0 + timedelta(minutes=5),
        period_end=T0 + timedelta(minutes=6),
        quantity=1,
        unit_seconds=60,
        billable_unit_seconds=60,
        unit_price=12,
        amount=Decimal("0.2"),
    )
    usage_hours_add(account_id=already.account_id, rows=[already])

    with pytest.raises(Exception, match="usage_once_per_attempt_period|UNIQUE"):
        usage_accrue(now=LATER)

    assert seconds_covered(ledger(job=good)) == 600
    assert len(ledger(job=broken)) == 1
    assert not AttemptAccrual.objects.filter(attempt__replica__job=broken).exists()
