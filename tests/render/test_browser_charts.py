"""Charts in Chromium, at a desktop's width (1440x900) and a phone's (390x844), on the experiment
page and a candidate page of the fixture's site (Debian's Chromium through Playwright, 127.0.0.1):
tooltips and legends inside the screen, no "null" in the page, one colour per arm on both pages,
chart text at 4.5:1 and marks at 3:1 in both schemes, nothing wider than its container, the tooltip
on a tap, and the step and quality charts' tooltips. Screenshots of both pages at both widths are
written to $REPORTGEN_SCREENSHOTS (default: the test's temporary folder) to be looked at."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.render.test_browser import BAND, SETTLE, TOOLTIP, Watch, _hover

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = {"experiment": "reports/grpo-offload/", "candidate": "reports/grpo-offload/A2/"}
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}

# Every drawn mark and chart text against the page's background. Text (labels, titles, legends in
# the SVG) must reach WCAG 2.1 AA, 4.5:1; a mark, non-text contrast, 3:1. Marks drawn faint on purpose
# are left out: the windows' shading, the raw lines under their rolling mean (opacity below 0.5), the
# hidden hit points and step bands, the grid.
CONTRAST = """() => {
  function rgb(c) {
    if (!c || c === 'none' || c.startsWith('url')) return null;
    const el = document.createElement('span');
    el.style.color = c; document.body.appendChild(el);
    const m = getComputedStyle(el).color.match(/[\\d.]+/g).map(Number); el.remove();
    return m.length >= 3 && (m.length < 4 || m[3] > 0) ? m.slice(0, 3) : null;
  }
  function lum([r, g, b]) {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  }
  function ratio(a, b) { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); }
  function opacity(el) {
    let o = 1;
    for (let e = el; e && e.tagName !== 'svg'; e = e.parentElement) {
      o *= parseFloat(getComputedStyle(e).opacity);
      const a = e.getAttribute('opacity'); if (a !== null) o *= parseFloat(a);
    }
    return o;
  }
  const bg = rgb(getComputedStyle(document.querySelector('.md-main')).backgroundColor)
    || rgb(getComputedStyle(document.body).backgroundColor);
  const out = [];
  document.querySelectorAll('.rg-svg svg').forEach(svg => {
    const chart = svg.closest('figure').id;
    svg.querySelectorAll('path, line, rect, text').forEach(el => {
      if (el.closest('.role-axis-grid') || el.closest('defs') || el.closest('clipPath')) return;
      if (el.classList.contains('background') || el.classList.contains('foreground')) return;
      if (el.classList.contains('rg-band') || opacity(el) < 0.5) return;
      const s = getComputedStyle(el);
      const paints = el.tagName === 'text' ? [s.fill] : [s.stroke, s.fill];
      for (const p of paints) {
        const c = rgb(p);
        if (!c) continue;
        const own = el.tagName === 'text' ? 1 : parseFloat(p === s.fill ? s.fillOpacity : s.strokeOpacity);
        if (own < 0.5) continue;
        out.push({chart, tag: el.tagName, color: p, ratio: ratio(c, bg), text: (el.textContent || '').slice(0, 20)});
      }
    });
  });
  return out;
}"""
# What runs off its box: the document sideways, or any element of the article (charts aside: a chart
# scrolls inside its own box) whose content is wider than it while it does not scroll (a table
# sticking out of a tab, a legend running off its figure).
OVERFLOW = """() => {
  const doc = document.documentElement, wide = [];
  document.querySelectorAll('article *').forEach(e => {
    if (e.closest('svg') || e.clientWidth === 0) return;
    if (getComputedStyle(e).overflowX === 'visible' && e.scrollWidth > e.clientWidth + 1)
      wide.push([e.tagName, String(e.className), e.scrollWidth, e.clientWidth]);
  });
  return {scroll: doc.scrollWidth, client: doc.clientWidth, wide: wide.slice(0, 5)};
}"""
LEGENDS = """() => Array.from(document.querySelectorAll('.rg-legend')).map(l => {
  const r = l.getBoundingClientRect();
  return {left: r.left, right: r.right, scroll: l.scrollWidth, client: l.clientWidth,
          figure: l.closest('figure').getBoundingClientRect().right};
})"""
ARM_COLOURS = """() => Object.fromEntries(Array.from(document.querySelectorAll('.rg-legend li')).map(li =>
  [li.textContent.trim(), getComputedStyle(li.querySelector('.rg-swatch')).backgroundColor]))"""
# The charts that have tooltips (every chart of these pages).
TIPPED_FIGURES = """() => Array.from(document.querySelectorAll('figure.rg-chart'))
  .filter(f => f.querySelector('[data-tip]')).map(f => '#' + f.id)"""
# A chart's visible mark nearest its right edge (where a tooltip would run off the screen), the chart
# scrolled into view first (SETTLE).
RIGHTMOST = """(fig) => {
  const f = document.querySelector(fig);
  const box = f.querySelector('.rg-svg'), vw = document.documentElement.clientWidth;
  const els = Array.from(f.querySelectorAll('[data-tip]')).map(e => [e, e.getBoundingClientRect()])
    .filter(([e, r]) => (r.width > 0 || r.height > 0) && r.x + r.width / 2 < Math.min(vw, box.getBoundingClientRect().right) - 2);
  els.sort((a, b) => (b[1].x + b[1].width / 2) - (a[1].x + a[1].width / 2));
  const r = els[0][1];
  return {x: r.x + r.width / 2, y: r.y + Math.min(r.height / 2, 20)};
}"""
TIP_BOX = """() => { const r = document.querySelector('.rg-tip').getBoundingClientRect();
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom,
          vw: document.documentElement.clientWidth, vh: document.documentElement.clientHeight}; }"""


def _context(browser, size: str, scheme: str = "light"):
    w, h = SIZES[size]
    phone = size == "phone"
    ctx = browser.new_context(viewport={"width": w, "height": h}, color_scheme=scheme, has_touch=phone, is_mobile=phone)
    index, name = (0, "default") if scheme == "light" else (1, "slate")
    ctx.add_init_script(
        f"localStorage.setItem('/.__palette', JSON.stringify({{index: {index}, color: {{media: '', scheme: '{name}',"
        " primary: 'indigo', accent: 'indigo'}}))"
    )
    return ctx


def _shots() -> Path | None:
    folder = os.environ.get("REPORTGEN_SCREENSHOTS")
    return Path(folder) if folder else None


@pytest.mark.parametrize("size", list(SIZES))
def test_charts_a_reader_can_use_at_desktop_and_phone_width(browser, served, size, tmp_path):
    """Issue 35 item 9 on both pages: every chart's tooltip inside the screen (tried on the mark
    nearest each chart's right edge, by mouse on a desktop and by a tap on a phone), every legend whole,
    no "null" or "NaN" in the page, nothing wider than its container, one colour per arm on both pages."""
    ctx = _context(browser, size)
    page = ctx.new_page()
    watch = Watch(page, served.url)
    colours: dict[str, dict[str, str]] = {}
    shots = _shots() or tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    for name, path in PAGES.items():
        page.goto(f"{served.url}/{path}")
        text = page.inner_text("article")
        missing = re.findall(r".{0,60}\b(?:null|NaN(?!/Inf)|undefined)\b.{0,20}", text)
        assert not missing, (size, name, missing)
        over = page.evaluate(OVERFLOW)
        assert over["scroll"] <= over["client"], (size, name, over)
        # On a phone Material bleeds code blocks and tab labels to the screen's edges on purpose (into
        # the page's margins, not past the screen): the element check is the desktop's.
        assert size == "phone" or not over["wide"], (size, name, over)
        for legend in page.evaluate(LEGENDS):
            assert legend["left"] >= 0 and legend["right"] <= SIZES[size][0], (size, name, legend)
            assert legend["scroll"] <= legend["client"] and legend["right"] <= legend["figure"] + 0.5, legend
        colours[name] = page.evaluate(ARM_COLOURS)
        figures = page.evaluate(TIPPED_FIGURES)
        assert len(figures) >= (8 if name == "experiment" else 3), figures
        for fig in figures:
            page.evaluate(SETTLE, fig)
            pt = page.evaluate(RIGHTMOST, fig)
            if size == "phone":
                page.touchscreen.tap(pt["x"], pt["y"])
            else:
                page.mouse.move(pt["x"], pt["y"])
            page.wait_for_selector(TOOLTIP, state="visible", timeout=5_000)
            box = page.evaluate(TIP_BOX)
            assert box["left"] >= 0 and box["top"] >= 0, (size, name, fig, box)
            assert box["right"] <= box["vw"] and box["bottom"] <= box["vh"], (size, name, fig, box)
            tip = page.inner_text(TOOLTIP)
            assert tip.strip() and "null" not in tip and "NaN" not in tip, (fig, tip)
        page.mouse.move(1, 1) if size == "desktop" else page.touchscreen.tap(200, 30)
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(shots / f"{name}-{size}.png"), full_page=False)
        page.evaluate("() => document.querySelector('#chart-primary').scrollIntoView({block: 'center'})")
        page.screenshot(path=str(shots / f"{name}-{size}-chart.png"), full_page=False)
    shared = set(colours["experiment"]) & set(colours["candidate"])
    assert {"baseline", "A2"} <= shared, colours
    assert all(colours["experiment"][a] == colours["candidate"][a] for a in shared), colours
    assert watch.errors == [] and watch.remote == []
    ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_chart_text_has_4_5_to_1_and_marks_3_to_1_contrast(browser, served, scheme):
    ctx = _context(browser, "desktop", scheme)
    page = ctx.new_page()
    seen = 0
    for path in PAGES.values():
        page.goto(f"{served.url}/{path}")
        found = page.evaluate(CONTRAST)
        seen += len(found)
        low = [f for f in found if f["ratio"] < (4.5 if f["tag"] == "text" else 3.0)]
        assert not low, (scheme, path, low[:10])
        assert any(f["tag"] == "text" and f["text"].startswith("W1") for f in found), path  # window labels
    assert seen > 200  # the check saw the charts' marks, not an empty page
    ctx.close()


def test_a_tap_on_a_phone_shows_the_tooltip(browser, served):
    ctx = _context(browser, "phone")
    page = ctx.new_page()
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.evaluate(SETTLE, "#chart-primary")
    pt = page.evaluate(BAND, "#chart-primary")
    page.touchscreen.tap(pt["x"], pt["y"])
    page.wait_for_selector(TOOLTIP, state="visible", timeout=5_000)
    text = page.inner_text(TOOLTIP)
    assert "step" in text and "baseline" in text, text
    page.wait_for_timeout(500)  # it stays until the next tap
    assert page.is_visible(TOOLTIP)
    page.touchscreen.tap(200, 30)  # a tap elsewhere (the header) hides it
    page.wait_for_selector(TOOLTIP, state="hidden", timeout=5_000)
    assert watch.errors == []
    ctx.close()


@pytest.fixture(scope="module")
def experiment_page(browser, served):
    """The experiment page at 1300x900, loaded once for the module's tests that only hover over it;
    each test gets it with the pointer off the charts and no tooltip shown."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(f"{served.url}/reports/grpo-offload/")
    yield page
    page.close()


@pytest.fixture
def experiment(experiment_page):
    experiment_page.mouse.move(1, 1)
    experiment_page.wait_for_selector(TOOLTIP, state="hidden", timeout=5_000)
    return experiment_page


def test_step_tooltips_carry_the_unit_and_the_raw_value(experiment):
    text = _hover(experiment, "#chart-primary")
    assert "A1, mean of 10 (tok/s)" in text and "A1, raw (tok/s)" in text, text


def test_the_quality_chart_has_a_step_tooltip_in_each_panel(experiment):
    """Each panel of the training-quality chart is cut into step bands, as a step chart is: the band under
    the pointer is shaded and its tooltip lists every run's value at that step; two panels, two metrics'
    values (each panel its own bands, not the first panel's repeated)."""
    panels = experiment.evaluate(
        """() => Array.from(document.querySelectorAll('#chart-quality [class$="_voronoi"]')).map(g =>
          Array.from(g.querySelectorAll('.rg-band[data-tip]')).map(b => b.getAttribute('data-tip')).join(';'))"""
    )
    assert len(panels) >= 2 and all(panels), panels
    assert len(set(panels)) == len(panels), "panels share their tooltips"
    text = _hover(experiment, "#chart-quality")
    assert "step" in text and "baseline" in text and "A1" in text, text
    assert "NaN" not in text and "null" not in text, text
    assert experiment.locator("#chart-quality .rg-band.rg-on").count() == 1
