"""Browser tests: Debian's Chromium (driven by Playwright) against the built site on 127.0.0.1."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHART_PAGES = {
    "reports/grpo-offload/": 10,
    "reports/grpo-offload/A1/": 1,
    "reports/grpo-offload/A2/": 3,
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


# A point on a chart's thickest drawn line (the rolling mean on step charts), in page coordinates.
POINT_ON_LINE = """(fig) => {
  const paths = Array.from(document.querySelectorAll(fig + ' g.mark-line path')).filter(p => p.getTotalLength() > 100);
  paths.sort((a, b) => parseFloat(getComputedStyle(b).strokeWidth) - parseFloat(getComputedStyle(a).strokeWidth));
  const p = paths[0], q = p.getPointAtLength(p.getTotalLength() * 0.6), m = p.getScreenCTM();
  return {x: q.x * m.a + q.y * m.c + m.e, y: q.x * m.b + q.y * m.d + m.f};
}"""
CROSSHAIR = """(fig) => Array.from(document.querySelectorAll(fig + ' g.mark-rule line'))
  .filter(l => l.getAttribute('stroke') === '#80868b' && l.getAttribute('opacity') !== '0').length"""
LINES_OF = """([fig, colour]) => Array.from(document.querySelectorAll(fig + ' g.mark-line path'))
  .filter(p => p.getAttribute('stroke') === colour && p.getAttribute('opacity') !== '0').length"""
TOOLTIP = "#vg-tooltip-element.visible"


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
    page.wait_for_function(
        f"() => document.querySelectorAll('div.rg-vega').length === {CHART_PAGES['reports/grpo-offload/A2/']}"
    )
    page.wait_for_function(DRAWN, timeout=20_000)
    assert all(page.evaluate(MARKS))
    page.click("text=back to the experiment")
    page.wait_for_url("**/reports/grpo-offload/")
    page.wait_for_function(
        f"() => document.querySelectorAll('div.rg-vega').length === {CHART_PAGES['reports/grpo-offload/']}"
    )
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


def _hover_line(page, fig: str) -> str:
    # in the middle of the window: at its top, Material's header and back-to-top button cover the chart
    page.evaluate("(fig) => document.querySelector(fig).scrollIntoView({block: 'center'})", fig)
    page.wait_for_timeout(100)
    pt = page.evaluate(POINT_ON_LINE, fig)
    page.mouse.move(pt["x"], pt["y"])
    page.wait_for_selector(TOOLTIP, timeout=5_000)
    return page.inner_text(TOOLTIP)


def test_tooltip_and_crosshair_when_the_pointer_is_on_a_drawn_line(browser, served):
    """On the thick rolling-mean line (not only the 1-px raw one): a tooltip with every arm's value
    at that step, and a vertical rule; on a GPU chart's line, the sample's arm and value."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.wait_for_function(DRAWN, timeout=20_000)
    assert page.evaluate(CROSSHAIR, "#chart-primary") == 0
    text = _hover_line(page, "#chart-primary")
    assert "step" in text and all(arm in text for arm in ("baseline", "A1", "A3")), text
    assert "NaN" not in text and "A2" not in text, text  # A2 failed at step 9: no row, not "NaN"
    assert page.evaluate(CROSSHAIR, "#chart-primary") == 1
    page.mouse.move(5, 5)  # off the chart: tooltip and rule go
    page.wait_for_selector(TOOLTIP, state="detached", timeout=5_000)
    assert page.evaluate(CROSSHAIR, "#chart-primary") == 0
    text = _hover_line(page, "#chart-gpu-memory")
    assert "arm" in text and "seconds" in text and "MiB" in text, text
    assert page.evaluate(CROSSHAIR, "#chart-gpu-memory") >= 1
    assert watch.errors == []
    page.close()


def test_clicking_an_arm_in_the_legend_hides_it(browser, served):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.wait_for_function(DRAWN, timeout=20_000)
    a1 = "#1a73e8"  # A1's colour on every chart (charts.ARM_COLORS, second arm)
    assert page.evaluate(LINES_OF, ["#chart-primary", a1]) == 2  # raw and rolling mean
    legend = page.locator("#chart-primary g.role-legend-label text", has_text="A1")
    legend.click()
    page.wait_for_function(f"() => ({LINES_OF})(['#chart-primary', '{a1}']) === 0", timeout=5_000)
    assert page.evaluate(LINES_OF, ["#chart-primary", "#80868b"]) == 2  # the baseline stays
    legend.click()
    page.wait_for_function(f"() => ({LINES_OF})(['#chart-primary', '{a1}']) === 2", timeout=5_000)
    page.close()


PHONE_PAGES = [p for p in CHART_PAGES if p] + ["", "site/"]


def test_phone_page_body_never_scrolls_sideways(browser, served):
    """390x844: the page never scrolls sideways (a wide table scrolls inside its own box), charts are
    drawn at the width they have (not drawn wide and scaled down), and the headline's change
    column is on screen."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    watch = Watch(page, served.url)
    for path in PHONE_PAGES:
        page.goto(f"{served.url}/{path}")
        page.wait_for_function(DRAWN, timeout=20_000)
        wide = page.evaluate(
            "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth, document.body.scrollWidth]"
        )
        assert wide[0] <= wide[1] and wide[2] <= wide[1], (path, wide)
        for table in page.locator("article table").all():
            if not table.is_visible():
                continue
            box = table.evaluate(
                "t => { const w = t.closest('.md-typeset__scrollwrap'); return w ? getComputedStyle(w).overflowX : 'none' }"
            )
            assert box in ("auto", "scroll"), (path, "table outside a scrolling box")
        sizes = page.evaluate(
            """() => Array.from(document.querySelectorAll('div.rg-vega svg.marks')).map(s =>
                [+s.getAttribute('width'), s.closest('figure').clientWidth])"""
        )
        assert all(w <= fig for w, fig in sizes), (path, sizes)
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.wait_for_function(DRAWN, timeout=20_000)
    right = page.evaluate(
        """() => { const h = Array.from(document.querySelectorAll('article table th'))
            .find(th => th.offsetParent && th.textContent.trim().startsWith('change'));
            return h ? h.getBoundingClientRect().right : null }"""
    )
    assert right is not None and right <= 390, right
    # the answer (the page's first table): every column on screen, no sideways scrolling needed
    answer = page.evaluate(
        """() => Array.from(document.querySelector('article table').querySelectorAll('th'))
            .map(th => [th.textContent.trim(), th.getBoundingClientRect().right])"""
    )
    assert answer and all(r <= 390 for _, r in answer), answer
    assert watch.errors == [] and watch.remote == []
    page.close()


def test_text_only_pages_load_no_vega(browser, served):
    """The Vega bundle (about 300 KB gzipped) loads only where a chart is; instant navigation from
    a text page to a chart page still draws the charts."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    for path in ("", "reports/", "site/", "reports/grpo-offload/rollback/"):
        page.goto(f"{served.url}/{path}")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("() => typeof vegaEmbed") == "undefined", path
    assert not [u for u in requested if "vega" in u], requested
    page.goto(f"{served.url}/reports/")
    page.locator("article a[href$='grpo-offload/']").first.click()  # instant navigation
    page.wait_for_url("**/reports/grpo-offload/")
    page.wait_for_function(
        f"() => document.querySelectorAll('div.rg-vega').length === {CHART_PAGES['reports/grpo-offload/']}"
    )
    page.wait_for_function(DRAWN, timeout=20_000)
    assert all(page.evaluate(MARKS))
    assert [u for u in requested if u.endswith("vega-bundle.js")]
    assert watch.errors == [] and watch.remote == []
    page.close()


def test_no_version_selector_without_mike(browser, served):
    """A plain `mkdocs build` has no versions: no selector, so no entry that links to a missing page
    (tests/render/test_mike.py checks the selector of a site deployed with mike)."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    missing: list[str] = []
    page.on("response", lambda r: r.status >= 400 and missing.append(r.url))
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.wait_for_load_state("networkidle")
    assert page.locator(".md-version").count() == 0
    assert missing == [] and watch.errors == []
    page.close()


def test_search_index_loads_when_the_reader_searches(browser, served):
    """No page downloads the site's search index until the reader reaches for search (the hook's
    LAZY_SEARCH); then search works, and a report is found under a title that names its kind."""
    for width in (1300, 390):
        page = browser.new_page(viewport={"width": width, "height": 900})
        watch = Watch(page, served.url)
        requested: list[str] = []
        page.on("request", lambda r, requested=requested: requested.append(r.url))
        page.goto(f"{served.url}/site/")
        page.wait_for_load_state("networkidle")
        assert not [u for u in requested if "search_index" in u]
        if width < 600:
            page.click("label[for=__search]")  # the phone's search icon
        else:
            page.click(".md-search__input")
        page.keyboard.type("grpo-offload")
        page.wait_for_selector(".md-search-result__item", timeout=10_000)
        assert [u for u in requested if u.endswith("search/search_index.json")]
        titles = page.eval_on_selector_all(".md-search-result__item h1", "els => els.map(e => e.textContent.trim())")
        assert any(t.startswith(("GPU run:", "GPU showcase:", "CPU demo:")) for t in titles), titles
        assert watch.errors == [] and watch.remote == []
        page.close()


def test_charts_follow_the_dark_scheme(browser, served):
    """Switching Material's palette to dark draws the charts again with light text on the page's
    background (not a white card), without errors."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/A2/")
    page.wait_for_function(DRAWN, timeout=20_000)
    label = "() => getComputedStyle(document.querySelector('#chart-memory g.role-axis-label text')).fill"
    light = page.evaluate(label)
    page.locator("form[data-md-component=palette] label:visible").first.click()
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")
    page.wait_for_function(
        f"() => ({DRAWN})() && getComputedStyle(document.querySelector('#chart-memory g.role-axis-label text')).fill !== '{light}'",
        timeout=20_000,
    )
    assert page.evaluate(label) == "rgb(189, 193, 198)"  # charts.js DARK.axis.labelColor
    assert all(page.evaluate(MARKS)) and watch.errors == []
    page.close()
