"""The job page while a job runs: assigned values, where to connect, the log first and whole."""

import pytest
from django.urls import reverse

from jobs.models import Job
from tests.running_job import running_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(settings, tmp_path, project, owner):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    return running_job(owner=owner, project=project)


def page(client, job, **params) -> str:
    return client.get(reverse("jobs:detail", args=[job.pk]), params).content.decode()


def panel(client, job, **params) -> str:
    response = client.get(
        reverse("jobs:runtime", args=[job.pk]), params, headers={"HX-Request": "true"}
    )
    return response.content.decode()


def env_value(html: str, name: str) -> str:
    row = html[html.index(f"<code>{name}</code>") :]
    return row[row.index("<td><code>", 5) + 10 : row.index("</code></td></tr>")]


def test_the_environment_shows_the_values_assigned_at_start(owner_client, running):
    html = page(owner_client, running.job)
    assert env_value(html, "TRAINYARD_PORT_8080") == "40123"
    assert env_value(html, "TRAINYARD_DEADLINE") == str(running.deadline_epoch)
    assert env_value(html, "TRAINYARD_JOB_ID") == str(running.job.pk)


def test_each_open_port_says_where_to_connect_with_a_copy_button(owner_client, running):
    html = page(owner_client, running.job)
    assert "<code>10.0.0.5:40123</code>" in html
    assert 'data-copy="10.0.0.5:40123"' in html


def test_the_api_record_says_where_to_connect(owner_client, running):
    body = owner_client.get(f"/api/v1/jobs/{running.job.pk}").json()
    assert body["connect"] == [
        {
            "port": 8080,
            "replica": 0,
            "node": "gpu-a",
            "host": "10.0.0.5",
            "host_port": 40123,
            "url": f"http://j{running.job.pk}-8080.jobs.localhost:8080/",
        }
    ]


def test_the_log_comes_first(owner_client, running):
    html = page(owner_client, running.job)
    assert html.index('id="job-runtime"') < html.index('id="state-title"')
    assert html.index('id="job-runtime"') < html.index('id="request-title"')


def test_more_than_the_last_200_lines_on_request(owner_client, running):
    assert "line 100\n" not in page(owner_client, running.job)
    html = page(owner_client, running.job, lines=1000)
    assert "line 1\n" in html and "line 500</code>" in html
    # The panel's polls keep asking for as many lines.
    assert "lines=1000" in html[html.index('id="runtime-panel"') :][:400]
    assert "line 1\n" in panel(owner_client, running.job, lines=1000)
    # Never more than the API's bound; a bad value is the default.
    assert "line 100\n" not in page(owner_client, running.job, lines="lots")


def test_search_finds_lines_in_the_whole_log(owner_client, running):
    html = page(owner_client, running.job, log_q="needle")
    assert "line 7 needle" in html and "line 450 needle" in html
    assert "line 449\n" not in html and "line 500<" not in html
    assert 'value="needle"' in html
    assert "2 lines contain" in html
    assert "line 7 needle" in panel(owner_client, running.job, log_q="needle")


def test_a_finished_job_does_not_wait_for_outputs(owner_client, settings, tmp_path, owner, project):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    done = running_job(owner=owner, project=project, state=Job.State.SUCCEEDED)
    html = page(owner_client, done.job)
    assert "Nothing in /trainyard/output yet" not in html
    assert "The job wrote nothing to /trainyard/output." in html


def test_a_page_opened_before_the_start_gets_the_assigned_values_with_the_state(
    owner_client, running
):
    # The page last showed the job waiting: the poll that sees it running refreshes the values.
    html = panel(owner_client, running.job, state="quota_wait")
    assert 'id="environment-card" hx-swap-oob="true"' in html
    assert env_value(html, "TRAINYARD_PORT_8080") == "40123"
    assert 'id="environment-card"' not in panel(owner_client, running.job, state="running")
