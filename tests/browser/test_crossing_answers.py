"""New job's resources section when its answers cross (a slow or busy server).

A change sends two requests: the section's own re-render (on ``change``) and, 400 ms
later, the checks of what is typed (on ``input``; its messages and summary only, out of
band). Under load their answers come back in either order; in both, the section must
show the latest choices and stay whole.
"""

from playwright.sync_api import Page, Request, Route, expect

from tests.browser.conftest import settle


def is_panel(request: Request, panel: str) -> bool:
    return f"_panel={panel}" in (request.post_data or "").split("&")


def hold(page: Page, panel: str) -> list[Route]:
    """Hold New job's requests for ``panel`` until the test lets each go; others pass."""
    held: list[Route] = []

    def route(request_route: Route) -> None:
        if is_panel(request_route.request, panel):
            held.append(request_route)
        else:
            request_route.fallback()

    page.route("**/jobs/new/", route)
    return held


def wait_until_held(page: Page, held: list[Route], count: int = 1) -> None:
    for _ in range(100):
        if len(held) >= count:
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"{count} request(s) expected to be held, {len(held)} were")


def test_the_sections_answer_lands_after_a_later_sent_check_has(pages, site, owner):
    page = pages.open(owner, "/jobs/new/")
    memory = page.get_by_label("Memory (GiB)")
    assert memory.input_value() != "56"
    held = hold(page, "resources")
    # The checks, sent 400 ms after the section's request, answer first.
    with page.expect_response(lambda response: is_panel(response.request, "resource-checks")):
        page.get_by_label("GPU model").select_option("V100")
    page.wait_for_timeout(300)
    wait_until_held(page, held)
    held[0].continue_()
    settle(page)
    expect(memory).to_have_value("56")


def test_a_check_answering_after_the_section_was_replaced_leaves_it_whole(pages, site, owner):
    page = pages.open(owner, "/jobs/new/")
    section = hold(page, "resources")
    checks = hold(page, "resource-checks")
    page.get_by_label("GPU model").select_option("V100")
    wait_until_held(page, section)
    wait_until_held(page, checks)
    section[0].continue_()
    expect(page.get_by_label("Memory (GiB)")).to_have_value("56")
    # The checks answer for the section their request left from, which is gone now.
    checks[0].continue_()
    settle(page)
    page.wait_for_timeout(300)
    expect(page.locator("#resources-section")).to_have_count(1)
    expect(page.get_by_label("Memory (GiB)")).to_have_value("56")
    expect(page.locator("input[name=kind]:checked")).to_have_count(1)
    expect(page.locator("#resources-summary")).to_contain_text("Each replica:")


def test_a_selected_fields_value_is_replaced_by_what_is_typed_across_the_sections_re_render(
    pages, site, owner
):
    # One types over a field's value by selecting it (Tab, a double click, Ctrl+A); the
    # section's re-render for the field just left lands in between (a slow answer) and
    # must neither move the caret nor drop the selection: "10" and a typed "7" are "7".
    page = pages.open(owner, "/jobs/new/")
    page.locator("#job-form [name=kind][value=cpu]").check()
    settle(page)
    held = hold(page, "resources")
    cores = page.locator("#job-form [name=cpu_cores]")
    cores.fill("3")
    cores.press("Tab")
    wait_until_held(page, held)
    storage = page.locator("#job-form [name=storage_gib]")
    assert storage.input_value() == "10"
    section = page.locator("#resources-section")
    section.evaluate("element => element.classList.add('before-the-answer')")
    storage.focus()
    page.keyboard.press("ControlOrMeta+a")
    held[0].continue_()
    settle(page)
    expect(section).not_to_have_class("before-the-answer")  # it did re-render
    page.keyboard.type("7")
    expect(storage).to_have_value("7")
