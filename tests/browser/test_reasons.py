"""A person reading in Chinese sees why a job waits in Chinese, on its page and in the list."""

from playwright.sync_api import expect

from jobs.models import Job
from jobs.scheduler import run_pass
from tests.browser.conftest import screenshot
from tests.factories import JobFactory, QuotaFactory


def test_a_waiting_jobs_reason_reads_in_chinese(pages, site, owner):
    QuotaFactory(user=owner, gpu_model=site.v100, limit=1)
    JobFactory(owner=owner, project=site.project, gpu_model=site.v100, gpu_count=1, name="first")
    job = JobFactory(
        owner=owner, project=site.project, gpu_model=site.v100, gpu_count=1, name="second"
    )
    run_pass()
    assert Job.objects.get(pk=job.pk).state == Job.State.QUOTA_WAIT

    page = pages.open(owner, f"/jobs/{job.pk}/")
    page.get_by_label("Language").select_option("zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("main")).to_contain_text("等待配额：需要 1 张 V100 卡")
    expect(page.locator("main")).not_to_contain_text("Waiting for quota")
    screenshot(page, "reason-zh-job-page")
    page.goto(pages.url("/jobs/"))
    expect(page.locator("main")).to_contain_text("等待配额：需要 1 张 V100 卡")
    screenshot(page, "reason-zh-jobs-list")
