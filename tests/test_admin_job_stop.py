"""The Django admin stops jobs too (issue 18, point 5): an action on the Jobs changelist."""

import pytest

from jobs.models import Job
from jobs.services.stop import stop_requester
from tests.factories import JobFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_the_admin_action_stops_the_chosen_unfinished_jobs_and_says_who(admin_client, admin_user):
    waiting = JobFactory(owner=UserFactory(username="alice"))
    done = JobFactory(owner=UserFactory(username="bob"), state=Job.State.SUCCEEDED)
    response = admin_client.post(
        "/admin/jobs/job/",
        {"action": "stop_jobs", "_selected_action": [waiting.pk, done.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "Stop requested for 1 job" in response.content.decode()
    assert Job.objects.get(pk=waiting.pk).state == Job.State.STOPPED
    assert stop_requester(job=Job.objects.get(pk=waiting.pk)) == admin_user
    assert Job.objects.get(pk=done.pk).state == Job.State.SUCCEEDED
