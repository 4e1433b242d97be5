"""The New job form in a real Chromium: every mode, live ratios, panels, errors, no JavaScript."""

import pytest
from playwright.sync_api import Page, expect

from jobs.models import Job
from tests.browser_support import signed_in_context
from tests.job_site import build_site


@pytest.fixture
def site(transactional_db, project, owner):
    return build_site(project=project, billing_for=[owner])


def signed_in_page(browser, live_server, user, *, javascript: bool = True) -> Page:
    page = signed_in_context(browser, live_server, user, java_script_enabled=javascript).new_page()
    page.goto(f"{live_server.url}/jobs/new/")
    return page


def settle(page: Page) -> None:
    """Wait until htmx has no request in flight (a change re-renders a section)."""
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_gpu_job_with_feasibility_environment_refresh_and_submit(browser, live_server, site, owner):
    page = signed_in_page(browser, live_server, owner)
    page.get_by_label("Name", exact=True).fill("resnet")
    page.get_by_label("GPU model").select_option("V100")
    settle(page)
    # One card, then several: the model's per-card CPU and memory follow the count.
    expect(page.get_by_label("GPU count")).to_have_value("1")
    expect(page.get_by_label("CPU cores")).to_have_value("12")
    expect(page.get_by_label("Memory (GiB)")).to_have_value("56")
    page.get_by_label("GPU count").fill("2")
    page.get_by_label("GPU count").press("Tab")
    expect(page.get_by_label("CPU cores")).to_have_value("24")
    expect(page.get_by_label("Memory (GiB)")).to_have_value("112")

    page.get_by_role("button", name="Check feasibility").click()
    expect(page.locator("#feasibility-panel")).to_contain_text("Feasible")
    page.get_by_label("Startup command").fill("python train.py")
    page.get_by_role("button", name="View environment variables").click()
    expect(page.locator("#environment-panel")).to_contain_text("CUDA_VISIBLE_DEVICES")
    expect(page.locator("#environment-panel")).to_contain_text("TRAINYARD_DATA_IN2")

    as_of = page.locator("#free-panel .as-of")
    before = as_of.get_attribute("data-as-of")
    # The command's change re-renders the estimate panel 300 ms later: let it land first
    # (under load it landed after a network-idle wait, between the two reads of the form).
    page.wait_for_timeout(1100)  # and a new snapshot is at least a second newer
    page.wait_for_load_state("networkidle")
    form_before = page.locator("#job-form").inner_html()
    page.locator("#free-panel").get_by_role("button", name="Refresh").click()
    expect(as_of).not_to_have_attribute("data-as-of", before)
    expect(page.locator("#free-panel")).to_contain_text("V100")
    # Only the panel changed: the same page, the form exactly as it was.
    assert page.url.endswith("/jobs/new/")
    assert page.locator("#job-form").inner_html() == form_before
    assert page.get_by_label("Name", exact=True).input_value() == "resnet"

    page.get_by_role("button", name="Submit job").click()
    expect(page.locator("h1")).to_contain_text("resnet")
    expect(page.locator("body")).to_contain_text("Waiting for quota")
    job = Job.objects.get()
    assert (job.gpu_count, job.cpu_milli) == (2, 24_000)


def test_vgpu_cpu_and_distributed_modes_update_live(browser, live_server, site, owner):
    page = signed_in_page(browser, live_server, owner)
    page.get_by_label("GPU (virtual)").check()
    settle(page)
    page.get_by_label("GPU model").select_option("V100")
    settle(page)
    page.get_by_label("GPU count").fill("2")
    page.get_by_label("GPU count").press("Tab")
    settle(page)
    page.get_by_label("Compute per GPU (%)").fill("25")
    page.get_by_label("Compute per GPU (%)").press("Tab")
    expect(page.get_by_label("GPU memory per GPU (GiB)")).to_have_value("4")
    expect(page.locator("#resources-section")).to_contain_text(
        "Total compute: 50% · total GPU memory: 8 GiB"
    )
    page.get_by_label("Unlock the ratio and set GPU memory per GPU myself").check()
    expect(page.get_by_label("GPU memory per GPU (GiB)")).to_be_editable()

    page.get_by_label("CPU", exact=True).check()
    settle(page)
    page.get_by_label("CPU cores").fill("8")
    page.get_by_label("CPU cores").press("Tab")
    settle(page)
    page.get_by_label("Memory per core").select_option("8")
    expect(page.get_by_label("Memory (GiB)")).to_have_value("64")

    page.get_by_label("Distributed").check()
    expect(page.get_by_label("Nodes")).to_be_visible()
    page.get_by_label("Nodes").fill("7")
    page.get_by_label("Nodes").press("Tab")
    settle(page)
    page.get_by_label("Name", exact=True).fill("too-wide")
    page.get_by_label("Startup command").fill("echo hi")
    page.get_by_role("button", name="Submit job").click()
    expect(page.locator("#form-errors")).to_contain_text("At most 6 nodes per job; you gave 7")
    expect(page.get_by_label("Name", exact=True)).to_have_value("too-wide")
    expect(page.get_by_label("Startup command")).to_have_value("echo hi")
    expect(page.get_by_label("Nodes")).to_have_value("7")
    assert not Job.objects.exists()


def test_form_submits_without_javascript(browser, live_server, site, owner):
    page = signed_in_page(browser, live_server, owner, javascript=False)
    page.get_by_label("CPU", exact=True).check()
    page.get_by_role("button", name="Apply choices").first.click()
    expect(page.get_by_label("Memory per core")).to_be_visible()
    page.get_by_label("CPU cores").fill("2")
    page.get_by_label("Name", exact=True).fill("plain")
    page.get_by_label("Startup command").fill("echo plain")
    page.get_by_role("button", name="Check feasibility").click()
    expect(page.locator("#feasibility-panel")).to_contain_text("Feasible")
    expect(page.get_by_label("Name", exact=True)).to_have_value("plain")
    page.get_by_role("button", name="Submit job").click()
    expect(page.locator("h1")).to_contain_text("plain")
    job = Job.objects.get()
    assert (job.resource_kind, job.cpu_milli, job.memory_mib) == ("cpu", 2000, 8 * 1024)
