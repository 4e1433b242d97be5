"""A job's life seen in the browser, with the real scheduler, worker and node agent."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from jobs.services.submit import job_submit
from resources.models import Quota
from tests.agent_support import make_node, wait_for_state
from tests.browser.conftest import screenshot, settle
from tests.factories import ImageFactory

SCRIPT = (
    "echo hello-from-the-job; echo 42 > /trainyard/output/answer.txt;"
    " sleep 4; echo done-with-the-job"
)


@pytest.fixture
def cpu_site(agent_env, project):
    """One CPU node served by a real agent (worker, beat and scheduler passes)."""
    ImageFactory(project=project, name="pytorch", is_default=True)
    node = make_node("cpu-live")
    return agent_env([node])


def cpu_body(name: str, command: str, **extra) -> dict:
    resources = {"kind": "cpu", "gpu_model": None, "gpu_count": None, "cpu_cores": 2}
    return {"project": "vision", "name": name, "resources": resources, "command": command, **extra}


def test_submitted_job_goes_from_waiting_to_succeeded_without_a_reload(
    pages, cpu_site, owner, outsider
):
    page = pages.open(owner, "/jobs/new/")
    page.get_by_label("CPU", exact=True).check()
    settle(page)
    page.get_by_label("CPU cores").fill("1")
    page.get_by_label("CPU cores").press("Tab")
    settle(page)
    page.get_by_label("Name", exact=True).fill("hello")
    page.get_by_label("Startup command").fill(SCRIPT)
    page.get_by_role("button", name="Submit job").click()
    expect(page.locator("h1")).to_contain_text("hello")
    job = Job.objects.get(name="hello")
    live = page.locator("#job-state-badge")
    # The runtime panel polls: no reload from here on.
    page.evaluate("() => { window.notReloaded = true; }")
    expect(live).to_contain_text("Running", timeout=60_000)
    expect(page.locator("pre.log")).to_contain_text("hello-from-the-job", timeout=20_000)
    screenshot(page, "job-running")
    expect(live).to_contain_text("Succeeded", timeout=60_000)
    expect(page.locator("pre.log")).to_contain_text("done-with-the-job")
    # The rest of the page followed too: no Stop for a finished job, its times filled in.
    expect(page.get_by_role("button", name="Stop job")).to_have_count(0)
    expect(page.locator("#state-card dt:text('Finished') + dd")).not_to_have_text("—")
    expect(page.locator("#state-card")).not_to_contain_text("Expected start")
    expect(page.locator("#events-card")).to_contain_text("Succeeded")
    assert page.evaluate("() => window.notReloaded") is True
    screenshot(page, "job-succeeded")

    with page.expect_download() as download:
        page.get_by_role("link", name="answer.txt").click()
    assert Path(download.value.path()).read_text() == "42\n"

    # Someone outside the project sees neither the job nor its files.
    stranger = pages.open(outsider, "/jobs/")
    expect(stranger.locator("main")).not_to_contain_text("hello")
    assert stranger.request.get(pages.url(f"/jobs/{job.pk}/")).status == 404
    assert stranger.request.get(download.value.url).status == 404


def test_stop_a_running_job_and_see_the_next_one_wait_for_quota(pages, cpu_site, owner):
    Quota.objects.create(user=owner, resource=Quota.Resource.CPU, limit=2000)
    first = job_submit(
        user=owner, data=cpu_body("long", "echo started; sleep 300", max_runtime_minutes=90)
    )
    second = job_submit(user=owner, data=cpu_body("next", "echo second"))
    wait_for_state(first, Job.State.RUNNING, cpu_site)

    page = pages.open(owner, f"/jobs/{second.pk}/")
    facts = page.locator("#state-title + dl")
    expect(page.locator("#job-state-badge")).to_contain_text("Waiting for quota")
    expect(facts).to_contain_text("Queue position")
    expect(facts.locator("dt:text('Queue position') + dd")).to_have_text("1")
    expect(facts.locator("dt:text('Reason') + dd")).not_to_have_text("—")
    # The running job has a max run time: the waiting one has an expected start.
    expect(facts.locator("dt:text('Expected start') + dd")).not_to_have_text("—")
    screenshot(page, "job-waiting")

    page.goto(pages.url("/jobs/"))
    waiting_row = page.locator("tr", has_text="next")
    expect(waiting_row).to_contain_text("#1 in its queue")
    expect(waiting_row).to_contain_text("expected start")

    page.goto(pages.url(f"/jobs/{first.pk}/"))
    expect(page.locator("#job-state-badge")).to_contain_text("Running")
    # Elapsed training time against the max run time, in words a person reads.
    bar = page.get_by_role("progressbar", name="Run time")
    expect(bar).to_have_attribute("max", "5400")
    expect(page.locator(".run-time-progress label")).to_contain_text("of at most 1 h 30 min")
    page.get_by_role("button", name="Stop job").click()
    page.get_by_role("button", name=f"Yes, stop job #{first.pk}").click()
    expect(page.locator("#job-state-badge")).to_contain_text("Stopped", timeout=60_000)
    # The stopped job freed the quota: the waiting one runs now.
    wait_for_state(second, Job.State.SUCCEEDED, cpu_site)
