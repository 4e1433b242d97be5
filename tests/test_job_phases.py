"""The augmentation search runs before training in the same replica; the max run time
limits training alone; billing counts both phases and records which."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounting.services import usage_accrue
from billing.accounts import account_for_user
from billing.models import Price, UsageRecord
from jobs.execution.report import attempt_phase_started, attempt_running
from jobs.models import Job, Replica, ReplicaAttempt
from tests.agent_support import attempt_log, attempts_of, cpu_job, place, wait_for_state
from tests.billing_cast import PRICES_FROM, T0, attempt_of, job_on, set_price, v100_model
from tests.factories import JobFactory, NodeFactory


def pending_attempt(job: Job) -> ReplicaAttempt:
    node = NodeFactory(gpu_model=job.gpu_model)
    replica = Replica.objects.create(job=job, index=0, node=node)
    return ReplicaAttempt.objects.create(replica=replica, number=1, node=node)


@pytest.mark.django_db
def test_deadline_counts_from_the_start_of_training_not_of_the_search():
    job = JobFactory(
        max_runtime_minutes=30, augmentation_command="python search.py", state=Job.State.STARTING
    )
    attempt = pending_attempt(job)
    started = timezone.now() - timedelta(hours=2)
    attempt_running(attempt_id=attempt.pk, started_at=started, phase="augmentation")
    searching = ReplicaAttempt.objects.get(pk=attempt.pk)
    assert (searching.phase, searching.deadline, searching.training_started_at) == (
        "augmentation",
        None,
        None,
    )

    training_from = timezone.now() - timedelta(minutes=10)
    assert attempt_phase_started(attempt_id=attempt.pk, phase="training", at=training_from)

    training = ReplicaAttempt.objects.get(pk=attempt.pk)
    assert training.phase == "training"
    assert training.training_started_at == training_from
    # 2 h after the attempt began, yet 20 min of its 30 min training time are left.
    assert training.deadline == training_from + timedelta(minutes=30)
    assert training.deadline > timezone.now()


@pytest.mark.django_db
def test_job_without_a_max_run_time_gets_no_deadline_when_training_starts():
    job = JobFactory(augmentation_command="python search.py", state=Job.State.STARTING)
    attempt = pending_attempt(job)
    attempt_running(attempt_id=attempt.pk, started_at=timezone.now(), phase="augmentation")
    attempt_phase_started(attempt_id=attempt.pk, phase="training", at=timezone.now())
    assert ReplicaAttempt.objects.get(pk=attempt.pk).deadline is None


@pytest.mark.django_db
def test_billing_charges_both_phases_and_records_each_on_its_rows(owner):
    v100 = v100_model()
    set_price(v100, "12.00")
    account = account_for_user(user=owner)
    account.billing_enabled = True
    account.save()
    job = job_on(v100, owner=owner, augmentation_command="python search.py", max_runtime_minutes=5)
    # 20 min of augmentation search, then 10 min of training (longer than the
    # search would be allowed under the max run time: only training counts there).
    attempt_of(
        job,
        started=T0,
        training_started_at=T0 + timedelta(minutes=20),
        ended=T0 + timedelta(minutes=30),
    )

    usage_accrue(now=T0 + timedelta(days=1))

    rows = list(UsageRecord.objects.filter(job=job))
    seconds = {"augmentation": 0, "training": 0}
    for row in rows:
        seconds[row.phase] += (row.period_end - row.period_start).total_seconds()
    assert seconds == {"augmentation": 20 * 60, "training": 10 * 60}
    assert all(row.billed for row in rows)
    # 30 card-minutes at 12.00 per card-hour, the free grant being for P4 only.
    assert sum(row.amount for row in rows) == Decimal("6.00")
    assert PRICES_FROM < T0


@pytest.mark.integration
def test_replica_runs_the_search_then_training_and_bills_both(agent):
    Price.objects.create(unit="core_hour", amount=Decimal("0.20"), valid_from=PRICES_FROM)
    job = cpu_job(
        "echo training with $TRAINYARD_DATA_OUT\nsleep 1.5",
        augmentation_command="echo searching augmentations\nsleep 1.2",
        max_runtime_minutes=1,
    )
    job = wait_for_state(place(job, agent.nodes), Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    (attempt,) = attempts_of(job)
    log = attempt_log(attempt)
    assert log.index("searching augmentations") < log.index("training with")
    assert (attempt.training_started_at - attempt.started_at).total_seconds() >= 1.2
    assert attempt.deadline == attempt.training_started_at + timedelta(minutes=1)
    assert attempt.phase == "training"

    usage_accrue(now=timezone.now() + timedelta(minutes=5))
    phases = set(UsageRecord.objects.filter(job=job).values_list("phase", flat=True))
    assert phases == {"augmentation", "training"}
