"""The history page in a real browser: a site built by MkDocs from the committed GPU runs, the
recipe's page drawn in Debian's Chromium, its points linking to the experiment pages. It sits
beside the other browser tests to share their one Playwright of the session."""

from __future__ import annotations

import pytest

from tests.render.conftest import Server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGE = "history/grpo-offload-default/"
CHARTS = "() => document.querySelectorAll('.rg-svg svg').length"
# Centres of the drawn points (symbols: circles, chart_svg.lean_items) of the first chart, in the viewport's
# coordinates.
POINTS = """() => Array.from(document.querySelectorAll('#chart-history-1 g.mark-symbol :is(circle, path)')).map(p => {
  const b = p.getBoundingClientRect(); return {x: b.x + b.width / 2, y: b.y + b.height / 2};
}).filter(q => q.x > 0 && q.y > 0)"""


@pytest.fixture
def served(committed_site):
    with Server(committed_site) as server:
        yield server, committed_site


def test_the_history_page_draws_both_machine_classes_and_links_its_points(browser, served) -> None:
    server, site = served
    assert (site / PAGE / "index.html").is_file() and (site / PAGE / "history.parquet").is_file()
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    remote: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on(
        "request",
        lambda r: r.url.startswith(server.url) or r.url.startswith(("data:", "blob:")) or remote.append(r.url),
    )
    page.goto(f"{server.url}/{PAGE}")
    assert page.evaluate(CHARTS) == 3  # drawn at build time, in the page: a chart per machine class
    text = page.inner_text("article")
    assert "1 x NVIDIA H200, driver 580.159.04" in text and "2 x NVIDIA H200, driver 580.159.04" in text
    assert "1 x NVIDIA H100 80GB HBM3, driver 580.159.04" in text
    assert "showcase-1xh200-grpo-offload-r2" in text and "showcase-2xh200-grpo-offload" in text
    # the chart into view first: the points are clicked where the viewport shows them
    page.locator("#chart-history-1").scroll_into_view_if_needed()
    points = page.evaluate(POINTS)
    assert len(points) >= 6  # baseline, A1, A3 at two commits, over three metrics
    page.mouse.click(points[0]["x"], points[0]["y"])
    page.wait_for_url("**/reports/showcase-1x*/", timeout=15_000)
    assert errors == [] and remote == []
    page.close()


def test_the_experiment_page_says_where_it_stands_in_the_paired_history(browser, served) -> None:
    server, _ = served
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{server.url}/reports/showcase-1xh200-grpo-offload-r3/")
    line = page.locator("p", has_text="vs history").inner_text()
    assert "has no paired history point" in line and "below the last baseline" not in line
    page.locator("p", has_text="vs history").get_by_role("link", name="history").click()
    page.wait_for_url(f"**/{PAGE}", timeout=15_000)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390  # the page body never scrolls sideways on a phone
    page.close()


@pytest.mark.parametrize("name", ["showcase-1xh200-grpo-offload-r4", "showcase-1xh100-grpo-learning"])
def test_the_committed_showcases_answer_is_on_a_phones_first_screen(browser, served, name) -> None:
    """Issue 46.3 on the committed one-GPU showcases (r4, and the learning workload's): each candidate's
    answer line, with both halves of its verdict, ends above the fold of a 390 x 844 phone."""
    server, _ = served
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(f"{server.url}/reports/{name}/")
        lines = page.evaluate(
            """() => Array.from(document.querySelectorAll('.rg-first li')).map(li =>
                 ({text: li.innerText, bottom: li.getBoundingClientRect().bottom + window.scrollY}))"""
        )
        assert [x["text"].split(" ")[0].rstrip(":") for x in lines] == ["A1", "A2", "A3"], lines
        assert all(x["bottom"] <= 844 for x in lines), lines
        a1 = lines[0]["text"]
        assert "pairs" in a1 and "95% CI" in a1
        if name.endswith("learning"):  # both halves decided: faster, and the reward within the margin
            assert "faster" in a1 and "trains as well" in a1 and "reward" in a1, a1
        else:  # the v1 workload's reward is flat at 0: its quality half is named as not testable
            assert "training quality" in a1, a1
        # the windows are declared after A3's warm-up (issue 43), so its answer names none inside one
        assert "inside" not in lines[2]["text"] or "warm-up" not in lines[2]["text"]
    finally:
        page.close()
