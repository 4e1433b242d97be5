"""What reporting Slurm jobs costs: the round trips of the jobs Slurm placed, ran and ended.

No cluster needed: the replicas' notes and exits are written as their Slurm side writes
them, and the report runs as the tracking pass's task runs it.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.execution.replica.folder import AttemptFolder
from jobs.execution.slurm import replica_reports
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, JobEvent, ReplicaAttempt
from resources.models import Allocation
from tests.factories import GpuModelFactory, JobFactory, NodeFactory

State = ReplicaAttempt.State
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def slurm_placed_attempt(gpu_model, number: int) -> ReplicaAttempt:
    """A one-card job inside Slurm, not started yet: no node until Slurm starts it."""
    job = JobFactory(gpu_model=gpu_model, gpu_count=1, cpu_milli=1000, memory_mib=1024)
    job_transition(job=job, to_state=Job.State.STARTING, reason="in Slurm", attempt=1)
    replica = job.replica_set.create(index=0)
    return ReplicaAttempt.objects.create(replica=replica, number=1, external_id=str(number))


def ran(attempt: ReplicaAttempt, node, card: int, *, ended: bool) -> None:
    """What the replica's Slurm side writes: the first phase's note, then (maybe) its exit."""
    folder = AttemptFolder.of(attempt)
    folder.path.mkdir(parents=True)
    started = T0 + timedelta(seconds=card)
    note = {"started_at": started.isoformat(), "node": node.name, "gpus": str(card)}
    folder.write(f"phase-{ReplicaAttempt.Phase.TRAINING}", note)
    folder.log.write_text("training\n")
    if ended:
        exit = {
            "exit_code": 0,
            "summary": "exit code 0",
            "ended_at": (started + timedelta(seconds=1)).isoformat(),
        }
        folder.write("exit", exit)


def four_ran_and_ended() -> list[ReplicaAttempt]:
    """Four one-card jobs Slurm placed on gpu01, each seen started and ended at once."""
    model = GpuModelFactory(name="V100")
    node = NodeFactory(name="gpu01", executor="slurm", gpu_model=model, gpu_count=8)
    attempts = [slurm_placed_attempt(model, number) for number in range(4)]
    for card, attempt in enumerate(attempts):
        ran(attempt, node, card, ended=True)
    return attempts


@pytest.fixture
def cluster(db, settings, tmp_path):
    settings.TRAINYARD_NODE_ROOT = tmp_path
    model = GpuModelFactory(name="V100")
    node = NodeFactory(name="gpu01", executor="slurm", gpu_model=model, gpu_count=8)
    return model, node


def test_slurm_jobs_reported_started_and_ended_at_once_cost_a_few_round_trips_each(cluster):
    """The tracking pass hands one task the news of many Slurm jobs: one read of their
    attempts, then each job's start and end (a `sleep 1` job is often seen both at once)."""
    model, node = cluster
    attempts = [slurm_placed_attempt(model, number) for number in range(8)]
    for card, attempt in enumerate(attempts):
        ran(attempt, node, card, ended=True)
    reports = [(attempt.external_id, [attempt.pk]) for attempt in attempts]

    with CaptureQueriesContext(connection) as queries:
        replica_reports.report_from_files(reports)

    assert set(Job.objects.values_list("state", flat=True)) == {Job.State.SUCCEEDED}
    ended = ReplicaAttempt.objects.filter(state=State.SUCCEEDED, node=node)
    assert ended.count() == 8
    assert sorted(a.replica.card_indices for a in ended.select_related("replica")) == [
        [card] for card in range(8)
    ]
    # Seen ended already when its start was recorded: its cards were never counted taken.
    assert not Allocation.objects.exists()
    node.refresh_from_db()
    assert node.gpu_allocated == 0
    placed = JobEvent.objects.filter(reason_code="start.slurm_node")
    assert [event.data["counted"] for event in placed] == [False] * 8
    # One read of every attempt for the whole task; then per job its start (node, cards,
    # running) and its end (attempt, job, release), all in one transaction whose
    # transitions add no savepoints: 21 here, 2 of them that transaction's savepoint in
    # the test's. It was 31, in four transactions and three savepoints; before that 46, in
    # a task per job, holding the cards of a job already ended only to give them back.
    assert len(queries) <= 1 + 8 * 21, len(queries)


def test_a_slurm_job_seen_running_holds_its_cards_until_its_end_is_reported(cluster):
    model, node = cluster
    attempt = slurm_placed_attempt(model, 1)
    ran(attempt, node, 3, ended=False)

    replica_reports.report_from_files([(attempt.external_id, [attempt.pk])])
    node.refresh_from_db()
    assert (node.gpu_allocated, Job.objects.get().state) == (1, Job.State.RUNNING)
    assert list(
        node.cards.filter(compute_allocated_percent=100).values_list("index", flat=True)
    ) == [3]

    AttemptFolder.of(attempt).write(
        "exit", {"exit_code": 0, "summary": "exit code 0", "ended_at": T0.isoformat()}
    )
    replica_reports.report_from_files([(attempt.external_id, [attempt.pk])])
    node.refresh_from_db()
    assert (node.gpu_allocated, Job.objects.get().state) == (0, Job.State.SUCCEEDED)
    assert not Allocation.objects.exists()


def test_one_slurm_jobs_failing_report_does_not_hold_back_the_others(cluster, caplog):
    model, node = cluster
    first, second = (slurm_placed_attempt(model, number) for number in (1, 2))
    ran(first, node, 0, ended=True)
    ran(second, node, 1, ended=True)
    note = {"started_at": "not a time", "node": node.name, "gpus": "0"}
    AttemptFolder.of(first).write(f"phase-{ReplicaAttempt.Phase.TRAINING}", note)

    replica_reports.report_from_files(
        [(first.external_id, [first.pk]), (second.external_id, [second.pk])]
    )
    states = dict(Job.objects.values_list("pk", "state"))
    assert states[first.replica.job_id] == Job.State.STARTING
    assert states[second.replica.job_id] == Job.State.SUCCEEDED
    assert f"reporting Slurm job {first.external_id} failed" in caplog.text


def test_a_slurm_jobs_report_that_fails_midway_writes_nothing_of_it(cluster, monkeypatch):
    """A job's start and end are reported in one transaction: an end that fails leaves no
    start behind (no node, no running state, no event), for the next pass to send again."""
    from jobs.execution import report

    model, node = cluster
    attempt = slurm_placed_attempt(model, 1)
    ran(attempt, node, 0, ended=True)
    events = JobEvent.objects.count()

    def fails(**_):
        raise RuntimeError("the end's write failed")

    monkeypatch.setattr(report, "job_settle", fails)
    replica_reports.report_from_files([(attempt.external_id, [attempt.pk])])

    attempt.refresh_from_db()
    assert (attempt.state, attempt.node_id) == (State.PENDING, None)
    assert Job.objects.get().state == Job.State.STARTING
    assert JobEvent.objects.count() == events


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_reports_asks_for_one_scheduling_pass_not_one_per_job(
    settings, tmp_path, monkeypatch
):
    """Each start and end frees or takes capacity and asks for a pass when it commits;
    within one report task they are read by one pass, asked for when the batch is done."""
    from jobs.lifecycle import pass_requests

    settings.TRAINYARD_NODE_ROOT = tmp_path
    settings.TRAINYARD_SHARED_CACHE = False  # else a queued pass already covers some of them
    sent = []
    monkeypatch.setattr(pass_requests, "send_task", lambda name, **_: sent.append(name))
    attempts = four_ran_and_ended()
    sent.clear()

    replica_reports.report_from_files([(a.external_id, [a.pk]) for a in attempts])

    assert set(Job.objects.values_list("state", flat=True)) == {Job.State.SUCCEEDED}
    assert sent == [pass_requests.SCHEDULE_PASS_TASK]

    pass_requests.request_pass()  # outside a batch, as before
    assert sent == [pass_requests.SCHEDULE_PASS_TASK] * 2


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_reports_sends_its_notifications_in_one_task(settings, tmp_path, monkeypatch):
    """Each job's start and end notifies its owner (two events a job); within one report
    task the notifications go to their worker as one task, not one per event."""
    from celery.app.task import Task

    from notifications.models import Notification

    settings.TRAINYARD_NODE_ROOT = tmp_path
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(
        Task, "apply_async", lambda task, args=(), *_, **__: sent.append((task.name, args))
    )
    attempts = four_ran_and_ended()
    sent.clear()

    replica_reports.report_from_files([(a.external_id, [a.pk]) for a in attempts])

    notifying = [(name, args) for name, args in sent if name.startswith("notifications.")]
    assert len(notifying) == 1, notifying
    [(name, args)] = notifying
    monkeypatch.undo()
    from celery import current_app

    current_app.tasks[name](*args)  # as the notifications worker runs it
    kinds = sorted(Notification.objects.values_list("job_id", "kind"))
    jobs = sorted(a.replica.job_id for a in attempts)
    assert kinds == sorted((job, kind) for job in jobs for kind in ("started", "succeeded"))
