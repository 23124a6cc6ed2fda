"""Charts in Chromium: colour contrast in both schemes, tooltips on a tap, tooltips that carry the
unit and the raw value, the quality chart's tooltip (Debian's Chromium through Playwright, against
the fixture's site on 127.0.0.1)."""

from __future__ import annotations

import pytest

from tests.render.test_browser import DRAWN, POINT_ON_LINE, TOOLTIP, Watch

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = ["reports/grpo-offload/", "reports/grpo-offload/A2/"]

# Every drawn mark and chart text against the page's background: WCAG 2.1 non-text contrast (3:1)
# for marks, and 3:1 for chart text (large-scale in a figure; axis labels read at that size). Marks
# drawn faint on purpose are left out and say so: the windows' shading, the raw lines under their
# rolling mean (opacity below 0.5), the hidden crosshair and hit points, the grid.
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
      const s = getComputedStyle(e);
      o *= parseFloat(s.opacity);
      const a = e.getAttribute('opacity'); if (a !== null) o *= parseFloat(a);
    }
    return o;
  }
  const bg = rgb(getComputedStyle(document.querySelector('.md-main')).backgroundColor)
    || rgb(getComputedStyle(document.body).backgroundColor);
  const out = [];
  document.querySelectorAll('div.rg-vega svg').forEach(svg => {
    const chart = svg.closest('figure').id;
    svg.querySelectorAll('path, line, rect, text').forEach(el => {
      if (el.closest('.role-axis-grid') || el.closest('defs') || el.closest('clipPath')) return;
      if (el.classList.contains('background') || el.classList.contains('foreground')) return;
      if (opacity(el) < 0.5) return;
      const s = getComputedStyle(el);
      const paints = el.tagName === 'text' ? [s.fill] : [s.stroke, s.fill];
      for (const p of paints) {
        const c = rgb(p);
        if (!c) continue;
        const own = el.tagName === 'text' ? 1 : parseFloat(el.tagName === 'text' ? 1 : (p === s.fill ? s.fillOpacity : s.strokeOpacity));
        if (own < 0.5) continue;
        out.push({chart, tag: el.tagName, color: p, ratio: ratio(c, bg), text: (el.textContent || '').slice(0, 20)});
      }
    });
  });
  return out;
}"""


def _scheme(browser, served, scheme: str, width: int = 1300):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    index, name = (0, "default") if scheme == "light" else (1, "slate")
    ctx.add_init_script(
        f"localStorage.setItem('/.__palette', JSON.stringify({{index: {index}, color: {{media: '', scheme: '{name}',"
        " primary: 'indigo', accent: 'indigo'}}))"
    )
    return ctx


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_chart_marks_and_labels_have_3_to_1_contrast(browser, served, scheme):
    ctx = _scheme(browser, served, scheme)
    page = ctx.new_page()
    watch = Watch(page, served.url)
    seen = 0
    for path in PAGES:
        page.goto(f"{served.url}/{path}")
        page.wait_for_function(DRAWN, timeout=30_000)
        page.wait_for_timeout(300)
        found = page.evaluate(CONTRAST)
        seen += len(found)
        low = [f for f in found if f["ratio"] < 3.0]
        assert not low, (scheme, path, low[:10])
    assert seen > 200  # the check saw the charts' marks, not an empty page
    assert watch.errors == []
    ctx.close()


def test_a_tap_on_a_phone_shows_the_tooltip(browser, served):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.wait_for_function(DRAWN, timeout=30_000)
    page.evaluate("() => document.querySelector('#chart-primary').scrollIntoView({block: 'center'})")
    page.wait_for_timeout(100)
    pt = page.evaluate(POINT_ON_LINE, "#chart-primary")
    page.touchscreen.tap(pt["x"], pt["y"])
    page.wait_for_selector(TOOLTIP, timeout=5_000)
    text = page.inner_text(TOOLTIP)
    assert "step" in text and "baseline" in text, text
    page.wait_for_timeout(500)  # the tap's own pointerout does not hide it
    assert page.is_visible(TOOLTIP)
    assert watch.errors == []
    ctx.close()


def test_step_tooltips_carry_the_unit_and_the_raw_value(browser, served):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.wait_for_function(DRAWN, timeout=30_000)
    page.evaluate("() => document.querySelector('#chart-primary').scrollIntoView({block: 'center'})")
    page.wait_for_timeout(100)
    pt = page.evaluate(POINT_ON_LINE, "#chart-primary")
    page.mouse.move(pt["x"], pt["y"])
    page.wait_for_selector(TOOLTIP, timeout=5_000)
    text = page.inner_text(TOOLTIP)
    assert "A1, mean of 10 (tok/s)" in text and "A1, raw (tok/s)" in text, text
    page.close()


POINT_IN_QUALITY = """() => {
  const pts = Array.from(document.querySelectorAll('#chart-quality g.mark-symbol path'));
  const p = pts[Math.floor(pts.length / 3)], r = p.getBoundingClientRect();
  return {x: r.x + r.width / 2, y: r.y + r.height / 2};
}"""


def test_the_quality_chart_has_a_tooltip(browser, served):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(f"{served.url}/reports/grpo-offload/")
    page.wait_for_function(DRAWN, timeout=30_000)
    page.evaluate("() => document.querySelector('#chart-quality').scrollIntoView({block: 'center'})")
    page.wait_for_timeout(200)
    pt = page.evaluate(POINT_IN_QUALITY)
    page.mouse.move(pt["x"], pt["y"])
    page.wait_for_selector(TOOLTIP, timeout=5_000)
    text = page.inner_text(TOOLTIP)
    assert "metric" in text and "value (as logged)" in text and "run" in text, text
    page.close()
