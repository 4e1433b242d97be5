"""Preemptible jobs as their owners ask for them and see them: the API, New job, the pages.

One rule behind the API, the form and the CLI (``job_input._preemptible``); ``borrowed``
is the scheduler's, read-only everywhere.
"""

from html.parser import HTMLParser

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from jobs.models import Job
from jobs.services.submit import job_submit
from resources.models import Quota, SiteSettings
from tests.job_site import build_site, form_post, job_body

pytestmark = pytest.mark.django_db
JSON = "application/json"
NEW = "/jobs/new/"
HTMX = {"HTTP_HX_REQUEST": "true"}
BORROWING_EN = "Borrowing idle quota — may be preempted (grace 90 s)"
BORROWING_ZH = "正在借用空闲配额——可能被抢占（宽限 90 秒）"


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


@pytest.fixture
def one_card_quota(site, owner) -> Quota:
    """One V100 card within the quota; preemptible jobs may borrow up to 4."""
    return Quota.objects.create(
        user=owner, resource=Quota.Resource.GPU, gpu_model=site.v100, limit=1, borrow_limit=4
    )


class Checkbox(HTMLParser):
    """Whether the ``preemptible`` checkbox is there and ticked."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("name") == "preemptible":
            self.found = attrs


def preemptible_box(html: str) -> dict:
    parser = Checkbox()
    parser.feed(html)
    assert parser.found is not None, "no Preemptible checkbox"
    return parser.found


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


def test_the_feasibility_check_counts_what_a_preemptible_job_may_borrow(
    owner_client, one_card_quota
):
    """As submit does: beyond the whole quota is refused unless the job may borrow."""
    body = {"resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 2}}
    url = "/api/v1/resources/feasibility"
    plain = owner_client.post(url, body, content_type=JSON).json()
    assert plain["feasible"] is False and "quota" in plain["reasons"][0]
    spare = owner_client.post(url, {**body, "preemptible": True}, content_type=JSON).json()
    assert spare == {"feasible": True, "reasons": []}
    bad = owner_client.post(url, {**body, "preemptible": "maybe"}, content_type=JSON)
    assert bad.status_code == 422 and list(bad.json()["errors"]) == ["preemptible"]


# New job --------------------------------------------------------------------------------------


def test_the_form_offers_the_checkbox_with_its_help(owner_client, site):
    html = owner_client.get(NEW).content.decode()
    box = preemptible_box(html)
    assert box["type"] == "checkbox" and "checked" not in box
    assert box["aria-describedby"] == "id_preemptible_helptext"
    assert 'id="id_preemptible_helptext"' in html
    assert "May start beyond your quota on idle cards; stopped (TERM, then KILL after" in html
    assert "Use TRAINYARD_CHECKPOINT to resume." in html


@pytest.mark.parametrize(("ticked", "expected"), [({"preemptible": "on"}, True), ({}, False)])
def test_the_checkbox_makes_the_job_preemptible_or_not(owner_client, site, ticked, expected):
    response = owner_client.post(NEW, form_post(**ticked))
    assert response.status_code == 302
    assert Job.objects.get().preemptible is expected


def test_a_refused_form_keeps_the_tick(owner_client, site):
    response = owner_client.post(NEW, form_post(preemptible="on", command=""))
    assert response.status_code == 200
    assert "Enter a startup command" in response.content.decode()
    assert "checked" in preemptible_box(response.content.decode())
    assert not Job.objects.exists()


def test_new_jobs_feasibility_check_follows_the_checkbox(owner_client, one_card_quota):
    data = form_post(gpu_count="2", _action="feasibility")
    assert "Not feasible:" in owner_client.post(NEW, data, **HTMX).content.decode()
    ticked = owner_client.post(NEW, {**data, "preemptible": "on"}, **HTMX).content.decode()
    assert "Feasible: enough nodes can hold this request" in ticked


def test_run_again_opens_the_form_ticked(owner_client, borrowing_job):
    html = owner_client.get(NEW, {"from": borrowing_job.pk}).content.decode()
    assert "checked" in preemptible_box(html)


# The job page and the list ---------------------------------------------------------------------


def test_the_job_page_says_whether_the_job_is_preemptible(owner_client, owner, site):
    plain = job_submit(user=owner, data=job_body(name="plain"))
    preemptible = job_submit(user=owner, data=job_body(name="spare", preemptible=True))
    for job, shown in ((plain, "No"), (preemptible, "Yes")):
        html = owner_client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
        assert f'<dt>Preemptible</dt><dd id="job-preemptible">{shown}</dd>' in html
        assert 'id="borrowing-note"' not in html  # not borrowing (yet)


def test_a_borrowing_job_page_says_it_may_be_preempted_and_the_grace(owner_client, borrowing_job):
    html = owner_client.get(reverse("jobs:detail", args=[borrowing_job.pk])).content.decode()
    assert BORROWING_EN in html
    # The state card is refreshed by the page's polls: they keep the line.
    poll = owner_client.get(reverse("jobs:runtime", args=[borrowing_job.pk])).content.decode()
    assert BORROWING_EN in poll


def test_the_borrowing_line_reads_in_chinese(owner_client, borrowing_job):
    owner_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    html = owner_client.get(reverse("jobs:detail", args=[borrowing_job.pk])).content.decode()
    assert BORROWING_ZH in html
    assert '<dt>可抢占</dt><dd id="job-preemptible">是</dd>' in html


def test_the_jobs_list_marks_borrowing_jobs(owner_client, owner, borrowing_job):
    job_submit(user=owner, data=job_body(name="within-quota"))
    html = owner_client.get(reverse("jobs:list")).content.decode()
    assert html.count('class="badge borrowing"') == 1
