"""Keeping a job's checkpoint as an output, as its owner asks for it: the API, New job, the page.

One rule behind the API, the form and the CLI (``job_input._keep_checkpoint``); the agent's
poll reads the flag (``tests/test_agent_checkpoints.py``), the page lists what was kept
(``tests/test_checkpoint_downloads.py``).
"""

import pytest
from django.core.exceptions import ValidationError

from jobs.models import Job
from jobs.services.submit import job_submit
from tests.job_site import build_site, job_body

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def test_the_api_submits_a_job_that_keeps_its_checkpoint_and_says_so(owner_client, site):
    response = owner_client.post("/api/v1/jobs", job_body(keep_checkpoint=True), content_type=JSON)
    assert response.status_code == 201, response.json()
    assert response.json()["keep_checkpoint"] is True
    job = Job.objects.get()
    assert job.keep_checkpoint is True
    assert owner_client.get(f"/api/v1/jobs/{job.pk}").json()["keep_checkpoint"] is True
    [item] = owner_client.get("/api/v1/jobs").json()["items"]
    assert item["keep_checkpoint"] is True


def test_a_job_does_not_keep_its_checkpoint_unless_asked(owner_client, site):
    for body in (job_body(), job_body(keep_checkpoint=False), job_body(keep_checkpoint=None)):
        data = owner_client.post("/api/v1/jobs", body, content_type=JSON).json()
        assert data["keep_checkpoint"] is False
    assert not Job.objects.filter(keep_checkpoint=True).exists()


@pytest.mark.parametrize("value", ["maybe", 2, [True], {"yes": 1}])
def test_a_keep_checkpoint_that_is_not_true_or_false_is_a_422_naming_the_field(
    owner_client, site, value
):
    response = owner_client.post("/api/v1/jobs", job_body(keep_checkpoint=value), content_type=JSON)
    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["keep_checkpoint"]
    assert not Job.objects.exists()


def test_the_submit_service_names_a_bad_keep_checkpoint(owner, site):
    """The rule itself, for callers without the API's schema (the form, a saved body)."""
    with pytest.raises(ValidationError) as refused:
        job_submit(user=owner, data=job_body(keep_checkpoint="yes"))
    assert refused.value.message_dict == {
        "keep_checkpoint": ["Keep the checkpoint must be true or false; you gave yes"]
    }


def test_the_refusal_reads_in_chinese(owner_client, site):
    response = owner_client.post(
        "/api/v1/jobs",
        job_body(keep_checkpoint="yes"),
        content_type=JSON,
        headers={"accept-language": "zh-hans"},
    )
    assert response.status_code == 422
    assert response.json()["errors"] == {
        "keep_checkpoint": ["保留检查点须为 true 或 false；您填写了 yes"]
    }


def test_the_export_carries_the_flag(owner_client, owner, site):
    job = job_submit(user=owner, data=job_body(keep_checkpoint=True))
    body = owner_client.get(f"/api/v1/jobs/{job.pk}/export").json()
    assert body["keep_checkpoint"] is True
    again = owner_client.post("/api/v1/jobs", body, content_type=JSON)
    assert again.status_code == 201 and again.json()["keep_checkpoint"] is True
