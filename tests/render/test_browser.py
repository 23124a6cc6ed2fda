"""Browser tests: Debian's Chromium (driven by Playwright) against the built site on 127.0.0.1."""

from __future__ import annotations

import pytest

from tests.render.conftest import Server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHART_PAGES = {
    "reports/grpo-offload/": 8,
    "reports/grpo-offload/A1/": 1,
    "reports/grpo-offload/A2/": 2,
    "reports/grpo-offload/A3/": 1,
    "reports/grpo-offload/rollback/": 0,
    "reports/grpo-offload/provenance/": 0,
    "reports/": 0,
    "": 0,
}
DRAWN = (
    "() => Array.from(document.querySelectorAll('div.rg-vega')).every(e => ['yes','error'].includes(e.dataset.drawn))"
)
MARKS = """() => Array.from(document.querySelectorAll('div.rg-vega')).map(e =>
  e.dataset.drawn === 'yes' && e.querySelectorAll('svg.marks path, svg.marks rect, svg.marks line').length > 3)"""


class Watch:
    def __init__(self, page, base: str):
        self.errors: list[str] = []
        self.remote: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on(
            "request",
            lambda r: (
                r.url.startswith(base)
                or r.url.startswith("data:")
                or r.url.startswith("blob:")
                or self.remote.append(r.url)
            ),
        )
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))


@pytest.fixture(scope="module")
def served(built_site):
    with Server(built_site) as srv:
        yield srv


def test_every_chart_draws_without_errors_or_remote_requests(browser, served):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    for path, n in CHART_PAGES.items():
        page.goto(f"{served.url}/{path}")
        page.wait_for_function(DRAWN, timeout=20_000)
        marks = page.evaluate(MARKS)
        assert len(marks) == n and all(marks), (path, marks)
    assert watch.errors == [] and watch.remote == [] and watch.dialogs == []
    page.close()


def test_instant_navigation_keeps_charts_working(browser, served):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.wait_for_function(DRAWN, timeout=20_000)
    page.locator("article a[href$='A2/']").first.click()  # Material's instant navigation (no full reload)
    page.wait_for_url("**/A2/")
    page.wait_for_function("() => document.querySelectorAll('div.rg-vega').length === 2")
    page.wait_for_function(DRAWN, timeout=20_000)
    assert all(page.evaluate(MARKS))
    page.click("text=back to the experiment")
    page.wait_for_url("**/reports/grpo-offload/")
    page.wait_for_function("() => document.querySelectorAll('div.rg-vega').length === 8")
    page.wait_for_function(DRAWN, timeout=20_000)
    assert all(page.evaluate(MARKS))
    assert page.evaluate("() => typeof document$ !== 'undefined'"), "Material's instant navigation is off"
    assert watch.errors == [] and watch.remote == []
    page.close()


def test_planted_script_renders_as_text(browser, served):
    page = browser.new_page()
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/A2/")
    page.wait_for_function(DRAWN, timeout=20_000)
    text = page.inner_text("article")
    assert "<script>alert(1)</script>" in text
    assert "[link](javascript:alert(2))" in text
    assert watch.dialogs == []
    page.close()


def test_screenshots_of_every_page_type(browser, served, tmp_path):
    """Not a visual diff: makes sure each page type renders to a non-trivial image (kept for review)."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    for name, path in {
        "home": "reports/",
        "experiment": "reports/grpo-offload/",
        "failed": "reports/grpo-offload/A2/",
        "rollback": "reports/grpo-offload/rollback/",
        "provenance": "reports/grpo-offload/provenance/",
    }.items():
        page.goto(f"{served.url}/{path}")
        page.wait_for_function(DRAWN, timeout=20_000)
        out = tmp_path / f"{name}.png"
        page.screenshot(path=str(out), full_page=True)
        assert out.stat().st_size > 20_000, name
    page.close()
