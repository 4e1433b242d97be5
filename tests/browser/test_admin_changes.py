"""An admin's changes in the admin site, seen on the user's form and free panel."""

from playwright.sync_api import Page, expect

from jobs.models import Job
from resources.models import Node, Quota, SiteSettings, Spec
from tests.browser.conftest import QUOTA_LIMIT, screenshot, settle


def check_feasibility(page: Page) -> None:
    page.get_by_role("button", name="Check feasibility").click()
    settle(page)


def test_admin_enables_specs_and_the_user_submits_a_job_from_one(pages, site, owner, admin_user):
    settings_page = f"/admin/resources/sitesettings/{SiteSettings.load().pk}/change/"
    admin = pages.open(admin_user, settings_page)
    admin.get_by_label("Spec management enabled").check()
    admin.get_by_role("button", name="Save", exact=True).click()
    expect(admin.locator(".messagelist")).to_be_visible()

    admin.goto(pages.url("/admin/resources/spec/add/"))
    admin.get_by_label("Name").fill("two-v100")
    admin.get_by_label("Kind").select_option("gpu")
    admin.get_by_label("GPU model").select_option(label="V100")
    admin.get_by_label("GPU count").fill("2")
    admin.get_by_label("CPU (cores)").fill("16")
    admin.get_by_label("Memory (GiB)").fill("64")
    admin.get_by_role("button", name="Save", exact=True).click()
    expect(admin.locator(".messagelist")).to_be_visible()
    assert Spec.objects.get(name="two-v100").gpu_count == 2

    page = pages.open(owner, "/jobs/new/")
    page.get_by_role("radio", name="Spec", exact=True).check()
    settle(page)
    expect(page.get_by_label("GPU model")).to_be_hidden()
    page.get_by_role("combobox", name="Spec").select_option("two-v100")
    settle(page)
    check_feasibility(page)
    expect(page.locator("#feasibility-panel")).to_contain_text("Feasible")
    page.get_by_label("Name", exact=True).fill("from-spec")
    page.get_by_label("Startup command").fill("python train.py")
    screenshot(page, "job-form-spec")
    page.get_by_role("button", name="Submit job").click()
    expect(page.locator("h1")).to_contain_text("from-spec")
    job = Job.objects.get(name="from-spec")
    assert (job.config_mode, job.gpu_count, job.cpu_milli, job.memory_mib) == (
        "spec",
        2,
        16_000,
        65_536,
    )


def test_admin_sets_a_quota_and_the_user_sees_it_on_the_panel_and_the_form(
    pages, site, owner, admin_user
):
    page = pages.open(owner, "/jobs/new/")
    v100_row = page.locator("#free-panel tr").filter(
        has=page.get_by_role("rowheader", name="V100", exact=True)
    )
    expect(v100_row).to_contain_text("no limit")

    admin = pages.open(admin_user, "/admin/resources/quota/add/")
    admin.locator(".field-user .select2-selection").click()
    admin.locator(".select2-search__field").fill("owner")
    admin.locator(".select2-results__option", has_text="owner").click()
    admin.get_by_label("Resource").select_option(Quota.Resource.GPU)
    admin.get_by_label("GPU model").select_option(label="V100")
    admin.get_by_label(QUOTA_LIMIT).fill("2")
    admin.get_by_role("button", name="Save", exact=True).click()
    expect(admin.locator(".messagelist")).to_be_visible()

    page.locator("#free-panel").get_by_role("button", name="Refresh").click()
    settle(page)
    expect(v100_row).to_contain_text("2 / 2")

    page.get_by_label("GPU model").select_option("V100")
    settle(page)
    page.get_by_label("GPU count").fill("3")
    page.get_by_label("GPU count").press("Tab")
    settle(page)
    check_feasibility(page)
    expect(page.locator("#feasibility-panel")).to_contain_text("quota")
    expect(page.locator("#feasibility-panel")).not_to_contain_text("Feasible:")
    expect(page.get_by_label("GPU count")).to_have_value("3")


def test_admin_drains_a_node_and_the_users_panel_shows_fewer_free_cards(
    pages, site, owner, admin_user
):
    user_page = pages.open(owner, "/jobs/new/")
    free_panel = user_page.locator("#free-panel")
    p4_row = free_panel.locator("tr", has_text="P4").first
    expect(p4_row).to_contain_text("1 / 1")

    admin = pages.open(admin_user, "/admin/resources/node/")
    admin.get_by_role("checkbox", name="Select this object for an action - p4-a").check()
    admin.locator("select[name=action]").select_option(value="drain")
    admin.get_by_role("button", name="Go").click()
    expect(admin.locator(".messagelist")).to_be_visible()
    assert Node.objects.get(name="p4-a").state == Node.State.DRAINING

    free_panel.get_by_role("button", name="Refresh").click()
    settle(user_page)
    # A draining node takes no new jobs: its card leaves the free and the total counts.
    expect(p4_row).to_contain_text("0 / 0")
