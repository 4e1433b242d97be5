"""Keeping a job's checkpoint as an output, as its owner asks for it: the API, New job, the page.

One rule behind the API, the form and the CLI (``job_input._keep_checkpoint``); the agent's
poll reads the flag (``tests/test_agent_checkpoints.py``), the page lists what was kept
(``tests/test_checkpoint_downloads.py``).
"""

from html.parser import HTMLParser

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from jobs.models import Job
from jobs.services.submit import job_submit
from tests.job_site import build_site, form_post, job_body

pytestmark = pytest.mark.django_db
JSON = "application/json"
NEW = "/jobs/new/"


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


class Inputs(HTMLParser):
    """The page's ``<input>`` elements by name."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, dict] = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("name"):
            self.found[attrs["name"]] = attrs


def keep_box(html: str) -> dict:
    parser = Inputs()
    parser.feed(html)
    assert "keep_checkpoint" in parser.found, "no Keep the checkpoint checkbox"
    return parser.found["keep_checkpoint"]


# The API and the submit service ---------------------------------------------------------------


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


# New job, Run again, personal templates -------------------------------------------------------


def test_the_form_offers_the_checkbox_with_its_help(owner_client, site):
    html = owner_client.get(NEW).content.decode()
    box = keep_box(html)
    assert box["type"] == "checkbox" and "checked" not in box
    assert box["aria-describedby"] == "id_keep_checkpoint_helptext"
    assert "Keep the checkpoint as an output</label>" in html
    assert "Once the job has ended, what it saved in TRAINYARD_CHECKPOINT stays and" in html


@pytest.mark.parametrize(("ticked", "expected"), [({"keep_checkpoint": "on"}, True), ({}, False)])
def test_the_checkbox_keeps_the_checkpoint_or_not(owner_client, site, ticked, expected):
    response = owner_client.post(NEW, form_post(**ticked))
    assert response.status_code == 302
    assert Job.objects.get().keep_checkpoint is expected


def test_a_refused_form_keeps_the_tick(owner_client, site):
    response = owner_client.post(NEW, form_post(keep_checkpoint="on", command=""))
    assert response.status_code == 200
    assert "Enter a startup command" in response.content.decode()
    assert "checked" in keep_box(response.content.decode())
    assert not Job.objects.exists()


def test_run_again_and_a_personal_template_open_the_form_ticked(owner_client, owner, site):
    job = job_submit(user=owner, data=job_body(keep_checkpoint=True))
    assert "checked" in keep_box(owner_client.get(NEW, {"from": job.pk}).content.decode())
    saved = owner_client.post(
        reverse("jobs:save_template", args=[job.pk]), {"template_name": "kept"}
    )
    assert saved.status_code == 302
    template = owner.personal_templates.get(name="kept")
    assert template.body["keep_checkpoint"] is True
    html = owner_client.get(NEW, {"saved": template.pk}).content.decode()
    assert "checked" in keep_box(html)


# The job page ----------------------------------------------------------------------------------


def test_the_job_page_says_whether_the_checkpoint_is_kept(owner_client, owner, site):
    removed = job_submit(user=owner, data=job_body(name="plain"))
    kept = job_submit(user=owner, data=job_body(name="kept", keep_checkpoint=True))
    for job, shown in ((removed, "Removed once the job has ended"), (kept, "Kept as an output")):
        html = owner_client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert f'<dt>Checkpoint</dt><dd id="job-keep-checkpoint">{shown}</dd>' in html


def test_the_job_page_says_it_in_chinese(owner_client, owner, site):
    job = job_submit(user=owner, data=job_body(keep_checkpoint=True))
    owner_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    html = owner_client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert '<dt>检查点</dt><dd id="job-keep-checkpoint">作为输出保留</dd>' in html
    form = owner_client.get(NEW).content.decode()
    assert "将检查点作为输出保留</label>" in form
