"""The job detail page (stop, ports, environment, events) and the job list's filters."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobs.models import Job, JobPort
from jobs.services.ports import job_ports_update
from jobs.services.submit import job_submit
from tests.factories import JobFactory, ProjectFactory
from tests.job_site import build_site, job_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


@pytest.fixture
def job(site, owner) -> Job:
    return job_submit(user=owner, data=job_body(ports=[8080], max_runtime_minutes=120))


def detail(job: Job) -> str:
    return reverse("jobs:detail", args=[job.pk])


def test_detail_shows_the_job(owner_client, job):
    html = owner_client.get(detail(job)).content.decode()
    assert "Waiting for quota" in html
    assert "Queued; waiting for the scheduler" in html
    assert "1 × V100, 12 CPU cores, 56 GiB memory, 10 GiB temporary storage" in html
    assert "TRAINYARD_PORT_8080" in html and "TRAINYARD_DATA_IN2" in html
    assert "Submitted by owner; waiting for the scheduler" in html
    assert '<section id="job-runtime"' in html
    assert "120 minutes" in html


def test_the_time_card_says_why_it_is_empty(owner_client, job):
    """No run-time estimate (no past runs of its kind) and no attempt yet: the card says
    so in words rather than showing a bare heading."""
    html = owner_client.get(detail(job)).content.decode()
    card = html[html.index('id="job-times"') :]
    card = card[: card.index("</section>")]
    assert "No run-time estimate yet, and no attempt has started." in card


def queries(client, url: str, **params) -> int:
    with CaptureQueriesContext(connection) as context:
        assert client.get(url, params).status_code == 200
    return len(context)


def test_detail_queries_do_not_grow_with_events_and_ports(owner_client, owner, job):
    queries(owner_client, detail(job))  # the factor's decayed usage, kept for a refresh
    few = queries(owner_client, detail(job))
    for port in range(9000, 9009):
        job_ports_update(job=job, ports=[8080, *range(9000, port + 1)], actor=owner)
    assert job.events.count() == 10
    assert queries(owner_client, detail(job)) == few


def test_project_member_sees_the_job(client, member, job):
    client.force_login(member)
    assert client.get(detail(job)).status_code == 200


def test_outsider_gets_404(client, outsider, job):
    client.force_login(outsider)
    assert client.get(detail(job)).status_code == 404
    assert client.post(reverse("jobs:stop", args=[job.pk])).status_code == 404
    assert client.post(reverse("jobs:ports", args=[job.pk]), {"ports": "9000"}).status_code == 404
    assert Job.objects.get().state == Job.State.QUOTA_WAIT


def test_stop_button_stops_a_waiting_job(owner_client, job):
    response = owner_client.post(reverse("jobs:stop", args=[job.pk]))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == Job.State.STOPPED
    assert job.state_reason == "Stopped by owner"
    assert "Stop job" not in owner_client.get(detail(job)).content.decode()


def test_stop_asks_first_and_only_a_post_stops(owner_client, job):
    html = owner_client.get(reverse("jobs:stop", args=[job.pk])).content.decode()
    assert f"Stop job #{job.pk}?" in html
    assert f'<form method="post" action="{reverse("jobs:stop", args=[job.pk])}"' in html
    assert f'href="{detail(job)}">Cancel</a>' in html
    job.refresh_from_db()
    assert job.state == Job.State.QUOTA_WAIT and job.stop_requested_at is None


def test_the_page_asks_before_it_stops(owner_client, job):
    html = owner_client.get(detail(job)).content.decode()
    # The job page's Stop job opens the confirmation; it posts nothing itself.
    assert f'<form method="get" action="{reverse("jobs:stop", args=[job.pk])}"' in html
    assert f'<form method="post" action="{reverse("jobs:stop", args=[job.pk])}"' not in html


def test_a_finished_job_has_nothing_to_confirm(owner_client, job):
    owner_client.post(reverse("jobs:stop", args=[job.pk]))
    response = owner_client.get(reverse("jobs:stop", args=[job.pk]))
    assert response.status_code == 302 and response.url == detail(job)


def test_ports_can_be_edited_on_the_page(owner_client, job):
    response = owner_client.post(reverse("jobs:ports", args=[job.pk]), {"ports": "6006, 8080"})
    assert response.status_code == 302
    assert list(JobPort.objects.values_list("port", flat=True)) == [6006, 8080]


def test_bad_ports_are_refused_with_the_input_kept(owner_client, job):
    response = owner_client.post(reverse("jobs:ports", args=[job.pk]), {"ports": "8080, 80"})
    html = response.content.decode()
    assert response.status_code == 422
    assert "Port 80 is out of range: ports must be between 1025 and 65535" in html
    assert 'value="8080, 80"' in html
    assert list(JobPort.objects.values_list("port", flat=True)) == [8080]


def test_finished_job_has_no_stop_or_port_form(owner_client, job):
    Job.objects.filter(pk=job.pk).update(state=Job.State.SUCCEEDED)
    html = owner_client.get(detail(job)).content.decode()
    assert "Stop job" not in html and "Save ports" not in html


def test_list_links_to_details_and_new_job(owner_client, job):
    html = owner_client.get(reverse("jobs:list")).content.decode()
    assert f'href="{detail(job)}"' in html
    assert f'href="{reverse("jobs:new")}' in html


def test_list_filters_by_project_and_state(owner_client, owner, site, job):
    other = ProjectFactory(name="audio", owner=owner)
    JobFactory(owner=owner, project=other, name="speech-job", state=Job.State.RUNNING)
    names = lambda **q: [j.name for j in owner_client.get(reverse("jobs:list"), q).context["page"]]  # noqa: E731
    assert names(project="audio") == ["speech-job"]
    assert names(project="vision") == ["train"]
    assert names(state="running") == ["speech-job"]
    assert names(state="running", project="vision") == []


def test_list_does_not_offer_others_projects(owner_client, site, job):
    html = owner_client.get(reverse("jobs:list")).content.decode()
    assert "secret-project" not in html


def test_list_pages_keep_the_filters(owner_client, owner, site):
    for i in range(30):
        JobFactory(owner=owner, project=site.project, name=f"j{i}")
    html = owner_client.get(reverse("jobs:list"), {"project": "vision"}).content.decode()
    assert 'href="?project=vision&amp;page=2"' in html


def test_list_queries_do_not_grow_with_jobs(owner_client, owner, site):
    JobFactory(owner=owner, project=site.project, name="first")
    queries(owner_client, reverse("jobs:list"), project="vision")  # the factors' usage kept
    one = queries(owner_client, reverse("jobs:list"), project="vision")
    for i in range(30):
        JobFactory(owner=owner, project=site.project, name=f"j{i}")
    assert queries(owner_client, reverse("jobs:list"), project="vision") == one
