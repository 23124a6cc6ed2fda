"""Browser tests: Debian's Chromium (driven by Playwright) against the built site on 127.0.0.1."""

from __future__ import annotations

import contextlib
from pathlib import Path

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
# Charts are SVG drawn at build time (render/chart_svg.py): in the page as soon as its HTML is.
MARKS = """() => Array.from(document.querySelectorAll('figure.rg-chart')).map(f =>
  f.querySelectorAll('.rg-svg svg path, .rg-svg svg rect, .rg-svg svg line').length > 3)"""
# The centre of a chart's step band 60 % of the way along (a step charts' Voronoi cell), or of the
# `n`-th mark with a tooltip, in window coordinates.
BAND = """(fig) => {
  const bands = Array.from(document.querySelectorAll(fig + ' .rg-band[data-tip]'));
  const b = bands[Math.floor(bands.length * 0.6)].getBoundingClientRect();
  return {x: b.x + b.width / 2, y: b.y + b.height / 2};
}"""
TIPPED = """([fig, n]) => {
  const els = Array.from(document.querySelectorAll(fig + ' [data-tip]')).filter(e => !e.classList.contains('rg-band'));
  const b = els[Math.min(n, els.length - 1)].getBoundingClientRect();
  return {x: b.x + b.width / 2, y: b.y + b.height / 2};
}"""
TOOLTIP = ".rg-tip"
# A search result titled with a report's kind (the hook's full titles): "GPU run: ...", "CPU demo: ...".
REPORT_KINDS = ("GPU run:", "GPU showcase:", "CPU demo:")
_REPORT_RESULT = (
    "[...document.querySelectorAll('.md-search-result__item h1')]"
    f".some(e => {list(REPORT_KINDS)!r}.some(k => e.textContent.trim().startsWith(k)))"
)
# Scrolls `sel` to the middle of the window and resolves once the scroll has settled: the page's
# scroll event (which hides a tooltip, docs/assets/charts.js) is dispatched in the frame after the
# scroll, so a pointer moved before it shows a tooltip that the event then hides (a CI flake under
# load). Resolves after the scroll position held for two frames; scroll events fire before a frame's
# animation callbacks.
SETTLE = """(sel) => new Promise(done => {
  document.querySelector(sel).scrollIntoView({block: 'center', behavior: 'instant'});
  let last = NaN, same = 0;
  const tick = () => {
    same = window.scrollY === last ? same + 1 : 0; last = window.scrollY;
    if (same >= 2) done(); else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})"""


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


SCREENSHOTS = {
    "home": "reports/",
    "experiment": "reports/grpo-offload/",
    "failed": "reports/grpo-offload/A2/",
    "rollback": "reports/grpo-offload/rollback/",
    "provenance": "reports/grpo-offload/provenance/",
}


class Tour:
    """What one desktop (1300x900) visit of every CHART_PAGES page saw, for the tests that only read
    those pages: each page's charts with marks as soon as it loaded, whether Vega was defined and how
    many version selectors there were once the network was idle, its article's text, every request,
    every response of 400 or more, and a full-page screenshot of each SCREENSHOTS page."""

    def __init__(self, browser, base: str, shots: Path):
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.watch = Watch(page, base)
        self.requested: list[str] = []
        page.on("request", lambda r: self.requested.append(r.url))
        self.missing: list[str] = []
        page.on("response", lambda r: r.status >= 400 and self.missing.append(r.url))
        self.marks: dict[str, list[bool]] = {}
        self.vega: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.text: dict[str, str] = {}
        self.shots: dict[str, Path] = {}
        names = {path: name for name, path in SCREENSHOTS.items()}
        for path in CHART_PAGES:
            page.goto(f"{base}/{path}")
            self.marks[path] = page.evaluate(MARKS)  # at load: charts are in the HTML
            page.wait_for_load_state("networkidle")
            self.vega[path] = page.evaluate("() => typeof vegaEmbed")
            self.versions[path] = page.locator(".md-version").count()
            self.text[path] = page.inner_text("article")
            if path in names:
                out = shots / f"{names[path]}.png"
                page.screenshot(path=str(out), full_page=True)
                self.shots[names[path]] = out
        page.close()


@pytest.fixture(scope="module")
def tour(browser, served, tmp_path_factory) -> Tour:
    return Tour(browser, served.url, tmp_path_factory.mktemp("screenshots"))


def test_every_chart_draws_without_errors_or_remote_requests(tour):
    for path, n in CHART_PAGES.items():
        marks = tour.marks[path]
        assert len(marks) == n and all(marks), (path, marks)
    assert tour.watch.errors == [] and tour.watch.remote == [] and tour.watch.dialogs == []


def test_instant_navigation_keeps_charts_working(browser, served):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.locator("article a[href$='A2/']").first.click()  # Material's instant navigation (no full reload)
    page.wait_for_url("**/A2/")
    page.wait_for_function(
        f"() => document.querySelectorAll('figure.rg-chart').length === {CHART_PAGES['reports/grpo-offload/A2/']}"
    )
    assert all(page.evaluate(MARKS))
    page.click("text=back to the experiment")
    page.wait_for_url("**/reports/grpo-offload/")
    page.wait_for_function(
        f"() => document.querySelectorAll('figure.rg-chart').length === {CHART_PAGES['reports/grpo-offload/']}"
    )
    assert all(page.evaluate(MARKS))
    assert "step" in _hover(page, "#chart-primary")  # the tooltip works on a page instant navigation brought
    assert page.evaluate("() => typeof document$ !== 'undefined'"), "Material's instant navigation is off"
    assert watch.errors == [] and watch.remote == []
    page.close()


def test_planted_script_renders_as_text(tour):
    text = tour.text["reports/grpo-offload/A2/"]  # the candidate page, loaded whole on the module's tour
    assert "<script>alert(1)</script>" in text
    assert "[link](javascript:alert(2))" in text
    assert tour.watch.dialogs == []


def test_screenshots_of_every_page_type(tour):
    """Not a visual diff: makes sure each page type renders to a non-trivial image (kept for review)."""
    assert set(tour.shots) == set(SCREENSHOTS)
    for name, out in tour.shots.items():
        assert out.stat().st_size > 20_000, name


def _hover(page, fig: str, n: int | None = None) -> str:
    """Moves the mouse onto a step band of `fig` (or onto its `n`-th mark with a tooltip); the tooltip's text."""
    # in the middle of the window: at its top, Material's header and back-to-top button cover the chart
    page.evaluate(SETTLE, fig)
    pt = page.evaluate(BAND, fig) if n is None else page.evaluate(TIPPED, [fig, n])
    page.mouse.move(pt["x"], pt["y"])
    page.wait_for_selector(TOOLTIP, state="visible", timeout=5_000)
    return page.inner_text(TOOLTIP)


def test_tooltip_and_band_when_the_pointer_is_on_a_step_chart(browser, served):
    """Anywhere over a step chart: a tooltip with every arm's value at the step nearest the pointer, and
    that step's band shaded; on a GPU chart's sample, the sample's arm and value."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/")
    text = _hover(page, "#chart-primary")
    assert "step" in text and all(arm in text for arm in ("baseline", "A1", "A3")), text
    assert "NaN" not in text and "null" not in text and "A2" not in text, text  # A2 failed at step 9: no row
    assert page.locator("#chart-primary .rg-band.rg-on").count() == 1
    page.mouse.move(5, 5)  # off the chart: the tooltip goes
    page.wait_for_selector(TOOLTIP, state="hidden", timeout=5_000)
    assert page.locator("#chart-primary .rg-on").count() == 0
    text = _hover(page, "#chart-gpu-memory", 40)
    assert "arm" in text and "seconds" in text and "MiB" in text, text
    assert watch.errors == []
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
        # a chart is no wider than its figure (a chart drawn wider scrolls inside its own box)
        sizes = page.evaluate(
            """() => Array.from(document.querySelectorAll('.rg-svg')).map(s =>
                [s.getBoundingClientRect().width, s.closest('figure').clientWidth, getComputedStyle(s).overflowX])"""
        )
        assert all(w <= fig + 0.5 and o == "auto" for w, fig, o in sizes), (path, sizes)
        if path == "reports/grpo-offload/":
            _experiment_columns_on_a_phone(page)
    assert watch.errors == [] and watch.remote == []
    page.close()


def _experiment_columns_on_a_phone(page) -> None:
    """The experiment page at 390 px (checked on the phone test's one load of it): the headline's change
    column on screen, and every column of the answer (the page's first table)."""
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


def test_no_page_loads_a_chart_library(browser, served, tour):
    """Charts are in the HTML: no page requests Vega (about 300 KB gzipped) or any chart spec, text pages
    and chart pages alike, and instant navigation from a text page shows a chart page's charts."""
    for path in CHART_PAGES:  # each page loaded whole (network idle) on the module's tour
        assert tour.vega[path] == "undefined", path
    assert not [u for u in tour.requested if "vega" in u or u.endswith(".json")], tour.requested
    assert tour.watch.errors == [] and tour.watch.remote == []
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"{served.url}/reports/")
    page.locator("article a[href$='grpo-offload/']").first.click()  # instant navigation
    page.wait_for_url("**/reports/grpo-offload/")
    page.wait_for_function(
        f"() => document.querySelectorAll('figure.rg-chart').length === {CHART_PAGES['reports/grpo-offload/']}"
    )
    assert all(page.evaluate(MARKS))
    assert not [u for u in requested if "vega" in u], requested
    assert watch.errors == [] and watch.remote == []
    page.close()


def test_no_version_selector_without_mike(tour):
    """A plain `mkdocs build` has no versions: no selector, so no entry that links to a missing page
    (tests/render/test_mike.py checks the selector of a site deployed with mike). Read on the module's
    tour: every CHART_PAGES page (the experiment page among them) loaded whole, network idle."""
    assert tour.versions["reports/grpo-offload/"] == 0
    assert all(n == 0 for n in tour.versions.values()), tour.versions
    assert tour.missing == [] and tour.watch.errors == []


def test_search_index_loads_when_the_reader_searches(browser, served):
    """No page downloads the site's search index until the reader reaches for search (the hook's
    LAZY_SEARCH); then search works, and a report is found under a title that names its kind."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

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
        # Search runs on every key: on a busy machine the first results shown can be a prefix's ("grpo"
        # finds the workload's docs page first). Wait for the whole query's, then read them.
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(f"() => {_REPORT_RESULT}", timeout=10_000)
        titles = page.eval_on_selector_all(".md-search-result__item h1", "els => els.map(e => e.textContent.trim())")
        assert any(t.startswith(REPORT_KINDS) for t in titles), titles
        assert watch.errors == [] and watch.remote == []
        page.close()


def test_charts_follow_the_dark_scheme(browser, served):
    """Switching Material's palette to dark turns the charts' text light (report.css), at once."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/A2/")
    label = "() => getComputedStyle(document.querySelector('#chart-memory g.role-axis-label text')).fill"
    assert page.evaluate(label) == "rgb(95, 99, 104)"  # palette.CHART_TEXT["light"]
    page.locator("form[data-md-component=palette] label:visible").first.click()
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")
    assert page.evaluate(label) == "rgb(189, 193, 198)"  # palette.CHART_TEXT["dark"]
    assert all(page.evaluate(MARKS)) and watch.errors == []
    page.close()
