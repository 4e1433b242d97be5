"""The admin's forms as an admin sees them: cores and GiB, and refusals in sentences."""

from playwright.sync_api import expect

from resources.models import Node, Quota
from tests.browser.conftest import QUOTA_LIMIT, screenshot


def test_the_node_form_shows_cores_and_gib_and_saves_them_unchanged(pages, site, admin_user):
    node = Node.objects.get(name="v100-a")
    before = (node.cpu_milli, node.memory_mib)
    page = pages.open(admin_user, f"/admin/resources/node/{node.pk}/change/")

    expect(page.get_by_label("CPU (cores)")).to_have_value("96")
    expect(page.get_by_label("Memory (GiB)")).to_have_value("448")
    expect(page.locator("#content")).not_to_contain_text("millicores")
    screenshot(page, "admin-node-units")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_be_visible()
    node.refresh_from_db()
    assert (node.cpu_milli, node.memory_mib) == before


def test_a_second_default_quota_is_refused_in_a_sentence(pages, site, admin_user):
    Quota.objects.create(user=None, resource=Quota.Resource.CPU, limit=64_000)
    page = pages.open(admin_user, "/admin/resources/quota/add/")
    page.get_by_label("Resource").select_option(Quota.Resource.CPU)
    page.get_by_label(QUOTA_LIMIT).fill("32")
    page.get_by_role("button", name="Save", exact=True).click()

    errors = page.locator(".errornote, .errorlist")
    expect(errors.last).to_contain_text(
        "A default quota (no user) for this resource already exists"
    )
    expect(page.locator("#content")).not_to_contain_text("quota_unique_default_resource")
    expect(page.get_by_label(QUOTA_LIMIT)).to_have_value("32")
    screenshot(page, "admin-quota-refused")
