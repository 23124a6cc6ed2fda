"""Browser test of the experiment page's answer block (Chromium via Playwright, shell's fixtures):
what a reviewer sees first names the pull request's candidate first, with its verdict, its interval
and a next step, and its evidence links land on the page."""

from __future__ import annotations

import pytest

from tests.render.conftest import Server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ANSWER_ROWS = """() => {
  const h = document.getElementById('answer');
  let el = h.nextElementSibling;
  while (el && el.tagName !== 'TABLE' && !el.querySelector('table')) el = el.nextElementSibling;
  const table = el.tagName === 'TABLE' ? el : el.querySelector('table');
  return Array.from(table.querySelectorAll('tbody tr')).map(tr => tr.innerText);
}"""


@pytest.fixture(scope="module")
def served(built_site):
    with Server(built_site) as srv:
        yield srv


@pytest.fixture(scope="module")
def desktop_page(browser):
    """One 1440x900 page for the module's desktop tests (each loads the experiment page on it)."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    yield page
    page.close()


def _experiment(page, served):
    """`page` on the experiment page scrolled to its top: loaded unless it is there already (the module's
    desktop page, which an earlier test may have loaded or navigated away from)."""
    url = f"{served.url}/reports/grpo-offload/"
    if page.url != url:
        page.goto(url)
    page.evaluate("() => window.scrollTo(0, 0)")
    return page


@pytest.mark.parametrize("width", [1440, 390])
def test_answer_names_the_pr_candidate_first(browser, served, desktop_page, width):
    if width == 1440:
        page = _experiment(desktop_page, served)
    else:
        page = _experiment(browser.new_page(viewport={"width": width, "height": 844}), served)
    rows = page.evaluate(ANSWER_ROWS)
    assert [r.split()[0] for r in rows] == ["A1", "A2", "A3"], rows
    assert "PR candidate" in rows[0] and all("PR candidate" not in r for r in rows[1:])
    assert "accepted" in rows[0] and "95% CI" in rows[0]
    # the answer is the first thing under the title: above the fold on a laptop screen
    top = page.evaluate("() => document.getElementById('answer').getBoundingClientRect().top")
    assert top < (900 if width > 400 else 844), top
    # the next steps follow, the PR candidate's first
    steps = page.locator(".rg-next li").all_inner_texts()
    assert steps[0].startswith("A1 (PR candidate, accepted): next: Merge A1"), steps
    assert any(s.startswith("A2 (failed)") and "OOM at step 9" in s for s in steps)
    if page is not desktop_page:
        page.close()


def test_evidence_links_land_on_the_page(served, desktop_page):
    page = _experiment(desktop_page, served)
    hrefs = page.locator(".rg-next a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert hrefs, "no evidence link"
    for href in hrefs:
        if href.startswith("#"):
            assert page.locator(href).count() == 1, href
    page.locator(".rg-next a[href$='#chart-memory']").first.click()  # MkDocs resolved A2/index.md#chart-memory
    page.wait_for_url("**/A2/#chart-memory")
    assert page.locator("#chart-memory").count() == 1


FIRST_LINES = """() => Array.from(document.querySelectorAll('.rg-first li')).map(li => {
  const r = li.getBoundingClientRect();
  return {text: li.innerText, bottom: r.bottom + window.scrollY};
})"""


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_every_candidates_answer_with_both_halves_is_on_the_first_screen(browser, served, width, height, tmp_path):
    """Issue 46.3 and 42.3: the answer of every candidate, both halves and the pairs it rests on, is on the
    first screen of a laptop and of a 390 px phone (before, the title and "What ran" filled a phone's)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        page.goto(f"{served.url}/reports/grpo-offload/")
        lines = page.evaluate(FIRST_LINES)
        page.screenshot(path=str(tmp_path / f"answer-{width}.png"))  # kept with the test's files to look at
        assert [x["text"].split(" ")[0].rstrip(":") for x in lines] == ["A1", "A2", "A3"], lines
        assert all(x["bottom"] <= height for x in lines), (lines, height)
        a1, a2, a3 = (x["text"] for x in lines)
        assert "accepted" in a1 and "faster: response tokens/s" in a1 and "trains as well: reward" in a1
        assert "1 pair" in a1 and "95% CI" in a1
        assert "failed" in a2 and "OOM at step 9" in a2
        assert "slower: response tokens/s" in a3 and "trains as well: reward" in a3
        # "What ran" follows the first lines, not before them
        ran = page.evaluate("() => document.querySelector('.rg-workload').getBoundingClientRect().top + window.scrollY")
        assert ran > lines[-1]["bottom"]
    finally:
        page.close()
