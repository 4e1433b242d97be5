"""Switching the language on New job keeps what is typed (issue 18, point 10).

The language select posted to Django's ``set_language`` and came back to an
empty form: everything typed was lost. On New job the switch now carries the
form: the page comes back in the other language with every value kept.
"""

from playwright.sync_api import Page, expect

from tests.browser.conftest import screenshot, settle


def typed(page: Page) -> dict:
    """What the form holds now, by field name."""
    return {
        "name": page.locator("#id_name").input_value(),
        "kind": page.locator("input[name=kind]:checked").get_attribute("value"),
        "gpu_model": page.locator("#id_gpu_model").input_value(),
        "gpu_count": page.locator("#id_gpu_count").input_value(),
        "cpu_cores": page.locator("#id_cpu_cores").input_value(),
        "command": page.locator("#id_command").input_value(),
        "ports": page.locator("#id_ports").input_value(),
        "max_runtime": page.locator("#id_max_runtime").input_value(),
        "max_runtime_unit": page.locator("#id_max_runtime_unit").input_value(),
        "datasets": sorted(
            page.locator("input[name=datasets]:checked").evaluate_all(
                "(boxes) => boxes.map((box) => box.value)"
            )
        ),
    }


def test_switching_the_language_keeps_what_is_typed_on_new_job(pages, site, owner):
    page = pages.open(owner, "/jobs/new/")
    page.get_by_label("Name", exact=True).fill("resnet-long-name")
    page.get_by_label("GPU model").select_option("V100")
    settle(page)
    page.get_by_label("GPU count").fill("2")
    page.get_by_label("GPU count").press("Tab")
    settle(page)
    page.get_by_label("Startup command").fill("python train.py --epochs 3\necho done")
    page.get_by_label("Open ports").fill("8080, 6006")
    page.get_by_label("Max run time").fill("90")
    page.get_by_label("Unit").select_option("minutes")
    page.get_by_label("dogs").uncheck()
    page.wait_for_load_state("networkidle")
    before = typed(page)
    assert before["gpu_count"] == "2" and before["datasets"] == ["cats"]

    page.get_by_label("Language").select_option("zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("h1")).to_have_text("新建任务")
    assert typed(page) == before
    screenshot(page, "job-form-language-kept-zh")

    page.get_by_label("语言").select_option("en")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("h1")).to_have_text("New job")
    assert typed(page) == before
