"""What submitting the jobs of one pass to Slurm costs the platform: the jobs a pass
started go to Slurm in one task, in the pass's order, and what they share is read once.

Against the real development cluster; the submission task runs in the test process.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.execution.launch import jobs_launch
from jobs.execution.slurm import submit
from jobs.lifecycle.transitions import job_transition
from jobs.models import Job, Replica, ReplicaAttempt
from resources.models import GpuModel
from tests.factories import JobFactory

pytestmark = pytest.mark.integration
JOBS = 6


def slurm_placed_job(model: GpuModel) -> Job:
    """A one-card job the pass admitted for Slurm to place (no node yet)."""
    job = JobFactory(gpu_model=model, gpu_count=1, cpu_milli=1000, memory_mib=1024, command="true")
    job_transition(job=job, to_state=Job.State.STARTING, reason="admitted", attempt=1)
    Replica.objects.create(job=job, index=0, slurm_model=model)
    return job


def test_the_jobs_a_pass_started_reach_slurm_in_its_order_at_a_shared_cost(slurm_here):
    model = GpuModel.objects.get(name="V100")
    jobs = [slurm_placed_job(model) for _ in range(JOBS)]
    order = [job.pk for job in reversed(jobs)]  # the pass's queue order, not the ids'

    with CaptureQueriesContext(connection) as queries:
        jobs_launch(order)

    submitted = dict(
        ReplicaAttempt.objects.filter(replica__job__in=order).values_list(
            "replica__job_id", "external_id"
        )
    )
    assert all(submitted.values()), submitted
    # Slurm numbers its jobs as they arrive: it queued them in the pass's order.
    slurm_ids = [int(submitted[pk]) for pk in order]
    assert slurm_ids == sorted(slurm_ids)
    # Per job 2: its reload under its folder's lock and its record. What the jobs share
    # (the site's grace, the users' fair share, the model's Slurm type and the nodes it
    # must avoid), what their plans read (datasets, pretrained models, ports asked for and
    # held), and the launch's own reads and writes are read once for them all: 22. It was
    # 17 a job (102 here), then 9 a job, the plan's reads among them, some twice (72).
    assert len(queries) <= 22 + 2 * JOBS, [q["sql"] for q in queries.captured_queries]


def test_one_jobs_failing_submission_holds_back_none_of_the_others(slurm_here, monkeypatch, caplog):
    model = GpuModel.objects.get(name="V100")
    first, broken, last = (slurm_placed_job(model) for _ in range(3))
    plan = submit._plan

    def plan_or_fail(group, *args):
        if group[0].replica.job_id == broken.pk:
            raise OSError("disk full")
        return plan(group, *args)

    monkeypatch.setattr(submit, "_plan", plan_or_fail)
    jobs_launch([first.pk, broken.pk, last.pk])

    submitted = dict(ReplicaAttempt.objects.values_list("replica__job_id", "external_id"))
    assert submitted[first.pk] and submitted[last.pk] and not submitted[broken.pk]
    assert f"submitting job {broken.pk} failed" in caplog.text
