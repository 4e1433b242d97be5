"""Jobs Slurm places (jobs/scheduler/lookahead.py): admitted by Trainyard, submitted at
once without a node, at most the look-ahead of them per model inside Slurm, in
Trainyard's order; their node and cards recorded when Slurm starts them
(jobs/execution/slurm/placed.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from jobs.execution.replica.folder import AttemptFolder
from jobs.execution.slurm.placed import record_where_started
from jobs.models import Job, JobEvent, Replica, ReplicaAttempt
from jobs.scheduler import run_pass
from jobs.scheduler.lookahead import Lookahead
from jobs.scheduler.lookahead_forecast import Queued
from resources.models import Allocation, GpuCard, Node
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, QuotaFactory, UserFactory
from tests.scheduling import assert_invariants, fresh
from tests.test_fair_share import used

pytestmark = pytest.mark.django_db


@pytest.fixture
def v100():
    model = GpuModelFactory(name="V100")
    for name in ("gpu01", "gpu02"):
        NodeFactory(name=name, gpu_model=model, gpu_count=4, executor=Node.Executor.SLURM)
    return model


def submitted(job: Job) -> bool:
    job = fresh(job)
    return job.state == Job.State.STARTING and job.state_reason.startswith("Submitted to Slurm")


def test_a_job_of_a_model_only_slurm_serves_is_submitted_without_a_node(v100):
    job = JobFactory(gpu_model=v100, gpu_count=2)

    run_pass()

    assert fresh(job).state_reason == "Submitted to Slurm, which picks the V100 node and cards"
    replica = Replica.objects.get(job=job)
    assert replica.node is None and replica.card_indices == []
    assert not Allocation.objects.exists()
    assert sum(Node.objects.values_list("gpu_allocated", flat=True)) == 0
    assert_invariants()


def test_the_lookahead_keeps_the_rest_in_trainyards_queue(v100):
    """The default look-ahead is two jobs per card of the model on Slurm nodes: when every
    card frees at once, Slurm still holds as many jobs again for the next wave while
    Trainyard refills (its tracking, report, pass and submission take a second or two
    under load, longer than a short job: with one per card, their cards stood idle)."""
    jobs = [JobFactory(gpu_model=v100, gpu_count=1) for _ in range(20)]

    run_pass()

    # The model's 8 cards on Slurm nodes: 16 inside Slurm.
    assert [submitted(job) for job in jobs] == [True] * 16 + [False] * 4
    waiting = fresh(jobs[16])
    assert waiting.state == Job.State.RESOURCE_WAIT
    assert waiting.state_reason == (
        "Waiting its turn to enter Slurm's queue: 16 V100 jobs admitted before it wait there "
        "(Trainyard's queue order decides who enters next)"
    )
    assert waiting.queue_position == 1
    assert waiting.estimated_start is None  # not "now": Slurm's queue is full


def test_the_lookahead_is_a_setting(v100, settings):
    settings.TRAINYARD_SLURM_LOOKAHEAD = 3
    jobs = [JobFactory(gpu_model=v100, gpu_count=1) for _ in range(5)]

    run_pass()

    assert [submitted(job) for job in jobs] == [True] * 3 + [False] * 2


def test_a_job_that_outranks_those_inside_slurm_enters_at_once(v100, settings, tmp_path):
    """A light user's job submitted after a heavy user's: none of the heavy user's jobs
    inside Slurm would go before it there (its nice is lower), so the look-ahead, full
    for another of theirs, lets it in; the heavy user's next waits for a place."""
    settings.TRAINYARD_NODE_ROOT = tmp_path
    settings.TRAINYARD_SLURM_LOOKAHEAD = 2
    heavy, light = UserFactory(), UserFactory()
    used(heavy, GpuModelFactory(name="P4"), hours=100, ago=timedelta(hours=1))
    heavies = [JobFactory(owner=heavy, gpu_model=v100, gpu_count=1) for _ in range(5)]
    run_pass()
    light_job = JobFactory(owner=light, gpu_model=v100, gpu_count=1)

    run_pass()

    assert submitted(light_job)
    assert [submitted(job) for job in heavies] == [True, True, False, False, False]
    light_second = JobFactory(owner=light, gpu_model=v100, gpu_count=1)
    run_pass()
    assert submitted(light_second)  # one of equal standing before it inside: under 2
    light_third = JobFactory(owner=light, gpu_model=v100, gpu_count=1)
    run_pass()
    assert fresh(light_third).state == Job.State.RESOURCE_WAIT  # two before it now

    slurm_started(light_job, node="gpu02", gpus="3")
    run_pass()

    assert submitted(light_third)
    assert [submitted(job) for job in heavies] == [True, True, False, False, False]


def slurm_started(job: Job, *, node: str, gpus: str) -> ReplicaAttempt:
    """What the replica script notes when Slurm starts the job (``slurm/scripts.py``)."""
    replica = Replica.objects.get(job=job)
    attempt = ReplicaAttempt.objects.create(replica=replica, number=1, node=None)
    folder = AttemptFolder.of(attempt)
    folder.path.mkdir(parents=True)
    note = {"started_at": "2026-12-03T10:00:00+00:00", "node": node, "gpus": gpus}
    folder.write("phase-training", note)
    record_where_started(attempt, folder)
    return attempt


def test_slurms_node_and_cards_are_recorded_and_held(v100, settings, tmp_path):
    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = JobFactory(gpu_model=v100, gpu_count=2)
    run_pass()
    assert Lookahead.load().inside_jobs == {
        "V100": [((job.owner_id, 0), Queued(job.pk, 2, None, None))]
    }

    attempt = slurm_started(job, node="gpu02", gpus="1,3")

    gpu02 = Node.objects.get(name="gpu02")
    attempt.refresh_from_db()
    assert attempt.node == gpu02
    replica = Replica.objects.get(job=job)
    assert (replica.node, replica.card_indices) == (gpu02, [1, 3])
    assert gpu02.gpu_allocated == 2
    held = GpuCard.objects.filter(node=gpu02, compute_allocated_percent=100)
    assert sorted(held.values_list("index", flat=True)) == [1, 3]
    assert Allocation.objects.get(replica=replica).gpu_count == 2
    event = JobEvent.objects.filter(job=job).latest("pk")
    assert event.reason == "Slurm started it on gpu02 (cards 1, 3)"
    assert Lookahead.load().inside_jobs == {}  # its place in Slurm's queue is free
    assert_invariants()


@pytest.mark.parametrize(
    ("node", "gpus", "recorded", "cards"),
    [
        ("gpu03", "0", None, None),  # not a node of ours
        ("../etc", "0", None, None),  # not a node name
        ("gpu01", "4", "gpu01", []),  # no such card: the node's count is taken, no card
        ("gpu01", "0,1,2", "gpu01", []),  # more cards than it asked for
        ("gpu01", "$(reboot)", "gpu01", []),
    ],
)
def test_what_slurms_side_noted_is_checked(v100, settings, tmp_path, node, gpus, recorded, cards):
    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = JobFactory(gpu_model=v100, gpu_count=1)
    run_pass()

    attempt = slurm_started(job, node=node, gpus=gpus)

    attempt.refresh_from_db()
    assert (attempt.node.name if attempt.node else None) == recorded
    if recorded:
        assert Replica.objects.get(job=job).card_indices == cards
        assert Node.objects.get(name=recorded).gpu_allocated == 1


def test_a_model_local_nodes_serve_too_is_placed_by_trainyard(v100):
    NodeFactory(name="local", gpu_model=v100, gpu_count=1, state=Node.State.DOWN)
    job = JobFactory(gpu_model=v100, gpu_count=1)

    run_pass()

    assert Replica.objects.get(job=job).node.name in {"gpu01", "gpu02"}
    assert fresh(job).state_reason.startswith("Starting on gpu0")


def test_a_distributed_job_is_submitted_whole_for_slurm_to_place(v100):
    job = JobFactory(gpu_model=v100, gpu_count=4, replicas=2, task_mode="distributed")

    run_pass()

    assert submitted(job)
    replicas = Replica.objects.filter(job=job).order_by("index")
    assert [(r.index, r.node) for r in replicas] == [(0, None), (1, None)]
    # Its 8 cards count against the look-ahead's replay as one job's.
    assert Lookahead.load().inside_jobs["V100"][0][1].cards == 8
    assert_invariants()


def test_a_gang_is_charged_all_its_replicas_when_it_enters(v100):
    """Two gangs of 2 × 4 cards against a quota of 12: one enters, the other waits for
    quota (charged one replica in the pass, the first would have let the second in)."""
    owner = UserFactory()
    QuotaFactory(user=owner, gpu_model=v100, limit=12)
    gangs = [
        JobFactory(owner=owner, gpu_model=v100, gpu_count=4, replicas=2, task_mode="distributed")
        for _ in range(2)
    ]

    run_pass()

    assert [fresh(gang).state for gang in gangs] == [Job.State.STARTING, Job.State.QUOTA_WAIT]


def test_a_pass_submitting_for_slurm_costs_the_same_queries_for_20_or_100_jobs(v100):
    from tests.test_scheduler_queries import pass_queries

    users = [UserFactory() for _ in range(4)]
    for number in range(20):
        JobFactory(owner=users[number % 4], gpu_model=v100, gpu_count=1)
    small = pass_queries()
    Replica.objects.filter(node__isnull=True).delete()  # as if Slurm started them elsewhere
    Job.objects.filter(state=Job.State.STARTING).update(state=Job.State.SUCCEEDED)
    for number in range(100):
        JobFactory(owner=users[number % 4], gpu_model=v100, gpu_count=1)
    large = pass_queries()

    assert Job.objects.filter(state=Job.State.STARTING).count() == 16  # the look-ahead
    assert large <= small + 2 <= 40


def test_the_job_page_and_log_api_say_slurm_has_yet_to_place_it(v100, client, settings, tmp_path):
    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = JobFactory(gpu_model=v100, gpu_count=1)
    run_pass()
    replica = Replica.objects.get(job=job)
    ReplicaAttempt.objects.create(replica=replica, number=1, node=None)
    client.force_login(job.owner)

    page = client.get(reverse("jobs:detail", args=[job.pk]))
    log = client.get(f"/api/v1/jobs/{job.pk}/logs")

    assert page.status_code == 200
    assert "Slurm, not placed yet" in page.content.decode()
    assert log.status_code == 200, log.content
    assert log.json()["node"] == "Slurm, not placed yet"


def test_the_page_gives_no_cards_or_deadline_before_slurm_starts_it(v100, settings, tmp_path):
    """Inside Slurm, not started: shown as for a job still waiting (its deadline assigned
    at start, its cards counted from 0), not as an empty CUDA_VISIBLE_DEVICES and deadline."""
    from jobs.detail_views import page_environment

    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = JobFactory(gpu_model=v100, gpu_count=2, max_runtime_minutes=30)
    run_pass()
    ReplicaAttempt.objects.create(replica=Replica.objects.get(job=job), number=1, node=None)

    env = page_environment(fresh(job))

    assert env["TRAINYARD_DEADLINE"] == "<assigned at start>"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"

    attempt = ReplicaAttempt.objects.get(replica__job=job)
    attempt.delete()
    slurm_started(job, node="gpu02", gpus="1,3")
    assert page_environment(fresh(job))["CUDA_VISIBLE_DEVICES"] == "1,3"


def test_inside_slurm_trainyards_order_is_the_nice_value(v100):
    """High priority first; within a priority, less recent use first; never negative."""
    from jobs.execution.slurm.priority import slurm_nices

    heavy, light = UserFactory(), UserFactory()
    used(heavy, GpuModelFactory(name="P4"), hours=100, ago=timedelta(hours=1))
    jobs = {
        "light": JobFactory(owner=light, gpu_model=v100),
        "heavy": JobFactory(owner=heavy, gpu_model=v100),
        "heavy, high": JobFactory(owner=heavy, gpu_model=v100, priority=Job.Priority.HIGH),
        "light, high": JobFactory(owner=light, gpu_model=v100, priority=Job.Priority.HIGH),
    }

    nices = slurm_nices(list(jobs.values()))

    nice = {name: nices[job.pk] for name, job in jobs.items()}
    assert nice["light, high"] == 0
    assert 0 < nice["heavy, high"] < nice["light"] < nice["heavy"]


def test_an_attempt_that_ended_before_slurm_placed_it_says_so(v100, settings, tmp_path):
    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = JobFactory(gpu_model=v100, gpu_count=1)
    run_pass()
    attempt = ReplicaAttempt.objects.create(
        replica=Replica.objects.get(job=job), number=1, node=None, state="failed"
    )

    assert attempt.where == "Slurm, never placed"
