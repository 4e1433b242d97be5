"""A free account sees, on New job and the Resources page, which models it may not use and why.

Issue 18, point 2: V100 was offered to a free account as if usable, and the
free panel listed it like P4; submit then refused it.
"""

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, settle
from tests.browser_support import host_cookie, signed_in_context
from tests.job_site import build_site


@pytest.fixture
def free_site(transactional_db, project, owner):
    return build_site(project=project)  # no billing: P4 only


@pytest.mark.parametrize(
    ("language", "needs_billing", "reason"),
    [
        ("en", "Needs billing", "may use only the free-tier GPU models (P4), not V100"),
        ("zh-hans", "需开通付费", "只能使用免费型号的 GPU（P4），不能使用 V100"),
    ],
)
def test_a_free_account_sees_which_models_it_may_not_use_and_why(
    browser, live_server, free_site, owner, language, needs_billing, reason
):
    context = signed_in_context(
        browser, live_server, owner, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    context.add_cookies([host_cookie(live_server.url, settings.LANGUAGE_COOKIE_NAME, language)])
    page = context.new_page()
    page.goto(f"{live_server.url}/jobs/new/")
    model = page.locator("#id_gpu_model")
    expect(model).to_have_value("P4")
    group = model.locator("optgroup")
    assert needs_billing in group.get_attribute("label")
    assert group.locator("option").evaluate_all("(os) => os.map((o) => o.value)") == [
        "*V100",
        "V100",
        "V100-32G",
    ]
    panel_row = page.locator("#free-panel tr", has=page.locator("th", has_text="V100"))
    expect(panel_row.first).to_contain_text(needs_billing)

    model.select_option("V100")
    settle(page)
    expect(page.locator("#field-gpu_model")).to_contain_text(reason)
    expect(page.locator("#resources-summary")).to_contain_text(reason)
    screenshot(page, f"job-form-models-a-free-account-may-not-use-{language}")

    page.goto(f"{live_server.url}/resources/")
    v100 = page.locator("#free-panel tr", has=page.locator("th", has_text="V100"))
    expect(v100.first).to_contain_text(needs_billing)
    p4 = page.locator("#free-panel tr", has=page.locator("th", has_text="P4"))
    expect(p4).not_to_contain_text(needs_billing)
    screenshot(page, f"resources-models-a-free-account-may-not-use-{language}")
