"""Browser tests: a live server, real workers, Chromium, console errors and screenshots.

Every page a test opens through ``pages`` fails the test if the browser logged an
error to its console (a script error, a failed request) or refused something under the
Content-Security-Policy; each test may save screenshots under
``test-artifacts/screenshots/`` (gitignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page

from tests.browser_support import signed_in_context
from tests.job_site import build_site

ROOT = Path(__file__).resolve().parent.parent.parent
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# The quota admin's limit field by its label ("limit:"), not its borrow limit's ("borrow limit:").
QUOTA_LIMIT = re.compile(r"^limit\b", re.IGNORECASE)
# The time zone every browser context reports; pages must show times in it.
BROWSER_TZ = "Asia/Shanghai"
# Chromium tells Playwright's console nothing of what the CSP refuses: each page reports its
# own refusals (an inline style or script, an eval) through a binding that outlives navigations.
REPORT_CSP_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.reportCspViolation(
    `${event.violatedDirective} refused ${event.blockedURI || "inline"}`
    + ` (${event.sample || "no sample"}) at ${event.sourceFile}:${event.lineNumber}`
  );
});
"""


@dataclass
class Pages:
    """Opens signed-in pages and collects what their consoles complain about."""

    browser: Browser
    live_server: object
    errors: list[str] = field(default_factory=list)
    # Every console message as (type, text), for tests that want warnings too.
    messages: list[tuple[str, str]] = field(default_factory=list)
    contexts: list[BrowserContext] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"{self.live_server.url}{path}"

    def open(self, user, path: str = "/", *, width: int = 1280, height: int = 900) -> Page:
        """A new page signed in as ``user`` (None: signed out) at ``path``."""
        options = {
            "viewport": {"width": width, "height": height},
            "timezone_id": BROWSER_TZ,
            "locale": "en-US",
        }
        if user is None:
            context = self.browser.new_context(**options)
        else:
            context = signed_in_context(self.browser, self.live_server, user, **options)
        context.set_default_timeout(15_000)
        context.expose_binding("reportCspViolation", self._csp_violation)
        context.add_init_script(REPORT_CSP_VIOLATIONS)
        self.contexts.append(context)
        page = context.new_page()
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        page.goto(self.url(path))
        return page

    def _console(self, message: ConsoleMessage) -> None:
        self.messages.append((message.type, message.text))
        if message.type == "error":
            self.errors.append(f"{message.text} at {message.location.get('url', '')}")

    def _csp_violation(self, source, text: str) -> None:
        self.errors.append(f"Content-Security-Policy: {text} on {source['page'].url}")


@pytest.fixture
def pages(browser, live_server) -> Iterator[Pages]:
    opened = Pages(browser, live_server)
    yield opened
    for context in opened.contexts:
        context.close()
    assert not opened.errors, "console errors:\n" + "\n".join(opened.errors)


def screenshot(page: Page, name: str, *, full_page: bool = True) -> Path:
    """Save what the page shows now as ``test-artifacts/screenshots/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{re.sub(r'[^a-z0-9_-]+', '-', name.lower())}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def settle(page: Page) -> None:
    """Wait until htmx has no request in flight (a change re-renders a section)."""
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def axe_violations(page: Page, *, impacts=("serious", "critical")) -> list[str]:
    """Run axe-core in the page; the violations of ``impacts`` as readable lines."""
    # Evaluated through the DevTools protocol: the page's CSP refuses an injected <script>.
    page.evaluate(AXE.read_text())
    result = page.evaluate("async () => await axe.run(document)")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — "
        + "; ".join(str(node["target"]) for node in v["nodes"][:5])
        for v in result["violations"]
        if v["impact"] in impacts
    ]


def horizontal_overflow(page: Page) -> int:
    """How many pixels the page is wider than the window (0 when the layout holds)."""
    return page.evaluate(
        "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        " - document.documentElement.clientWidth"
    )


@pytest.fixture
def site(transactional_db, project, owner):
    """The job form's site: GPU and CPU nodes, data of the ``vision`` project."""
    return build_site(project=project, billing_for=[owner])
