"""The browser console stays clean: a whole New job session and the main pages log no error,
no warning, and nothing the Content-Security-Policy refuses (``pages`` collects them)."""

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from tests.browser.conftest import settle
from tests.browser_support import host_cookie
from tests.factories import JobFactory

# What a person types in each kind of resources, a wrong value first, the way one types and
# tabs on without waiting for the form to re-render.
TYPING = {
    "gpu": [("gpu_count", ["3", "1"]), ("storage_gib", ["-5", "20"])],
    "vgpu": [
        ("gpu_count", ["2"]),
        ("vgpu_compute_percent", ["150", "50"]),
        ("vgpu_memory_gib", ["4"]),
        ("storage_gib", ["20"]),
    ],
    "cpu": [("cpu_cores", ["-2", "4"]), ("memory_gib", ["16"]), ("storage_gib", ["20"])],
}


def type_on(page: Page, name: str, values: list[str], typed: dict | None = None) -> None:
    """Type each value into the field and tab away (each a change), if it takes typing now;
    ``typed`` remembers the last value of each field typed into."""
    field = page.locator(f"#job-form [name={name}]")
    if not (field.is_visible() and field.is_editable()):
        return
    for value in values:
        field.fill("")
        field.press_sequentially(value, delay=20)
        field.press("Tab")
    if typed is not None:
        typed[name] = values[-1]


def problems(pages) -> list[str]:
    warnings = [f"{kind}: {text}" for kind, text in pages.messages if kind in ("error", "warning")]
    return [*pages.errors, *warnings]


def test_the_console_collector_sees_what_the_csp_refuses(pages, site, owner):
    page = pages.open(owner, "/jobs/")
    page.evaluate("document.head.insertAdjacentHTML('beforeend', '<style>p {}</style>')")
    page.wait_for_function("() => true")  # the binding's call lands before the next step
    page.goto(pages.url("/resources/"))
    assert any("style-src" in error for error in pages.errors), pages.errors
    pages.errors.clear()


def test_a_whole_new_job_session_logs_nothing(pages, site, owner):
    page = pages.open(owner, "/jobs/new/")
    page.locator("#job-form [name=name]").fill("quiet")
    for mode in ("single", "distributed"):
        page.locator(f"#job-form [name=task_mode][value={mode}]").check()
        settle(page)
        type_on(page, "replicas", ["9", "2"])
        for kind, fields in TYPING.items():
            page.locator(f"#job-form [name=kind][value={kind}]").check()
            settle(page)
            typed: dict[str, str] = {}
            for name, values in fields:
                type_on(page, name, values, typed)
            settle(page)
            # Each change re-rendered the section; none put back a value typed over since.
            shown = {name: page.locator(f"#job-form [name={name}]").input_value() for name in typed}
            assert shown == typed, (mode, kind)
        settle(page)
        page.get_by_role("button", name="Check feasibility").click()
        expect(page.locator("#feasibility-panel .result")).to_be_visible()

    # Back to one V100 card on one node, and submit.
    page.locator("#job-form [name=task_mode][value=single]").check()
    settle(page)
    page.locator("#job-form [name=kind][value=gpu]").check()
    settle(page)
    page.locator("#job-form [name=gpu_model]").select_option("V100")
    settle(page)
    type_on(page, "gpu_count", ["1"])
    page.locator("#job-form [name=command]").fill("python train.py")
    settle(page)
    page.get_by_role("button", name="Check feasibility").click()
    expect(page.locator("#feasibility-panel")).to_contain_text("Feasible")
    page.get_by_role("button", name="View environment variables").click()
    expect(page.locator("#environment-panel")).to_contain_text("CUDA_VISIBLE_DEVICES")
    # A last change, and Submit before its re-render is back.
    type_on(page, "storage_gib", ["30"])
    page.get_by_role("button", name="Submit job").click()
    expect(page.locator("h1")).to_contain_text("quiet")
    page.wait_for_timeout(2500)  # the job page's live parts refresh at least once

    assert problems(pages) == []


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_main_pages_log_nothing(pages, site, owner, admin_user, language):
    job = JobFactory(owner=owner, project=site.project, gpu_model=site.v100, command="echo hi")
    for user, paths in (
        (owner, ["/jobs/", "/jobs/new/", f"/jobs/{job.pk}/", "/resources/", "/billing/"]),
        (admin_user, ["/jobs/", f"/jobs/{job.pk}/", "/billing/overview/", "/notifications/"]),
    ):
        page = pages.open(user, "/profile/")
        page.context.add_cookies(
            [host_cookie(pages.url("/"), settings.LANGUAGE_COOKIE_NAME, language)]
        )
        for path in paths:
            response = page.goto(pages.url(path))
            assert response.status == 200, path
            page.wait_for_load_state("networkidle")
    assert problems(pages) == []
