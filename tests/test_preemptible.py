"""Preemptible jobs as their owners ask for them and see them: the API, New job, the pages.

One rule behind the API, the form and the CLI (``job_input._preemptible``); ``borrowed``
is the scheduler's, read-only everywhere.
"""

import pytest
from django.core.exceptions import ValidationError

from jobs.models import Job
from jobs.services.submit import job_submit
from resources.models import SiteSettings
from tests.job_site import build_site, job_body

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


@pytest.fixture
def borrowing_job(site, owner) -> Job:
    """A preemptible job the scheduler started beyond its owner's quota; the site's grace 90 s."""
    SiteSettings.objects.filter(pk=SiteSettings.load().pk).update(preempt_grace_seconds=90)
    job = job_submit(user=owner, data=job_body(name="borrower", preemptible=True))
    Job.objects.filter(pk=job.pk).update(state=Job.State.RUNNING, borrowed=True, attempt=1)
    job.refresh_from_db()
    return job


# The API ------------------------------------------------------------------------------------


def test_the_api_submits_a_preemptible_job_and_says_so(owner_client, site):
    response = owner_client.post("/api/v1/jobs", job_body(preemptible=True), content_type=JSON)
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["preemptible"], data["borrowed"], data["attempt"]) == (True, False, 0)
    assert Job.objects.get().preemptible is True


def test_a_job_is_not_preemptible_unless_asked(owner_client, site):
    for body in (job_body(), job_body(preemptible=False), job_body(preemptible=None)):
        data = owner_client.post("/api/v1/jobs", body, content_type=JSON).json()
        assert data["preemptible"] is False
    assert not Job.objects.filter(preemptible=True).exists()


def test_the_api_record_and_list_say_when_a_job_borrows(owner_client, borrowing_job):
    record = owner_client.get(f"/api/v1/jobs/{borrowing_job.pk}").json()
    assert (record["preemptible"], record["borrowed"], record["attempt"]) == (True, True, 1)
    [item] = owner_client.get("/api/v1/jobs").json()["items"]
    assert (item["borrowed"], item["attempt"]) == (True, 1)


@pytest.mark.parametrize("value", ["maybe", 2, [True], {"yes": 1}])
def test_a_preemptible_that_is_not_true_or_false_is_a_422_naming_the_field(
    owner_client, site, value
):
    response = owner_client.post("/api/v1/jobs", job_body(preemptible=value), content_type=JSON)
    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["preemptible"]
    assert not Job.objects.exists()


def test_borrowed_is_the_schedulers_and_cannot_be_submitted(owner_client, site):
    response = owner_client.post("/api/v1/jobs", job_body(borrowed=True), content_type=JSON)
    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["borrowed"]


def test_the_submit_service_names_a_bad_preemptible(owner, site):
    """The rule itself, for callers without the API's schema (the form, a saved body)."""
    with pytest.raises(ValidationError) as refused:
        job_submit(user=owner, data=job_body(preemptible="yes"))
    assert refused.value.message_dict == {
        "preemptible": ["Preemptible must be true or false; you gave yes"]
    }


def test_the_export_carries_the_flag(owner_client, owner, borrowing_job):
    body = owner_client.get(f"/api/v1/jobs/{borrowing_job.pk}/export").json()
    assert body["preemptible"] is True
    assert "borrowed" not in body and "attempt" not in body
    again = owner_client.post("/api/v1/jobs", body, content_type=JSON)
    assert again.status_code == 201 and again.json()["preemptible"] is True
