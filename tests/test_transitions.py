import pytest

from jobs.lifecycle.transitions import TransitionRefused, job_transition
from jobs.models import Job
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


def test_transition_writes_an_event_with_the_reason():
    job = JobFactory()
    assert job_transition(job=job, to_state=Job.State.RESOURCE_WAIT, reason="no free V100")
    event = job.events.get()
    assert (event.from_state, event.to_state, event.reason) == (
        "quota_wait",
        "resource_wait",
        "no free V100",
    )
    assert Job.objects.get(pk=job.pk).state_reason == "no free V100"


def test_stale_transition_does_nothing():
    job = JobFactory()
    stale = Job.objects.get(pk=job.pk)
    job_transition(job=job, to_state=Job.State.STOPPED, reason="stopped by owner")
    assert not job_transition(job=stale, to_state=Job.State.STARTING, reason="placed")
    assert Job.objects.get(pk=job.pk).state == Job.State.STOPPED


def test_final_states_are_final():
    job = JobFactory()
    job_transition(job=job, to_state=Job.State.STOPPED, reason="stopped")
    with pytest.raises(TransitionRefused):
        job_transition(job=job, to_state=Job.State.RUNNING, reason="no")


def test_same_state_with_same_reason_writes_no_event():
    job = JobFactory()
    job_transition(job=job, to_state=Job.State.QUOTA_WAIT, reason="needs 4 V100")
    job_transition(job=job, to_state=Job.State.QUOTA_WAIT, reason="needs 4 V100")
    assert job.events.count() == 1
