"""Submit → a pass on a real Celery worker → starting, with the launch sent to the node."""

import pytest

from jobs.models import Job, ReplicaAttempt
from jobs.services.submit import job_submit
from tests.job_site import build_site, job_body
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def test_a_submitted_job_is_started_by_the_worker_and_launched(start_celery_worker, project, owner):
    build_site(project=project, billing_for=[owner])
    start_celery_worker(queues="celery")

    job = job_submit(user=owner, data=job_body(ports=[8888]))

    wait_until(lambda: Job.objects.get(pk=job.pk).state == Job.State.STARTING, what="starting")
    job = Job.objects.get(pk=job.pk)
    assert job.state_reason.startswith("Starting on v100-")
    # The launch ran on commit of the pass: the attempt exists for the node agent.
    wait_until(
        lambda: ReplicaAttempt.objects.filter(replica__job=job, number=1).exists(),
        what="the launch's attempt",
    )
