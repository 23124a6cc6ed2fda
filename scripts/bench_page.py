"""Benchmark what a reader's browser pays for a page: weight and time to the first chart.

For one page of each type, headless Chromium (Debian's, through Playwright) loads the page from a
local server with an empty cache, several times. Reported per page:

- weight: every resource the page requested (HTML with its inline chart SVG, CSS, JS, images, the
  search index if it loaded), each gzipped at level 6 as a web server would send it, summed;
- first chart: milliseconds from navigation start until the first chart's SVG is in the page
  (pages with charts only), median of the loads; the charts are drawn at build time, so this is the
  time to parse the page down to its first chart;
- load: milliseconds until the load event, median.

Targets (issues 14 and 35): a report page's first chart within 0.8 s locally and its weight at most
250 KiB gzipped in all; a text-only page at most 150 KB gzipped in all. Usage:

    PYTHONPATH=. python scripts/bench_page.py [--site SITE_DIR] [--runs 5] [--experiment NAME]

Without --site, a site is built from the test fixture (tests/render/site_fixture.py) into a
temporary folder first; without --experiment, the first experiment of the site (by name) is measured.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.render import site_fixture  # noqa: E402
from tests.render.conftest import CHROMIUM, CHROMIUM_ARGS, Server, make_project, mkdocs_build  # noqa: E402

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Response

# Records, in the page, when the first chart's SVG appears (ms since navigation start). Sites built before
# the charts were drawn at build time (Vega in the browser, div.rg-vega) are measured too, for comparison.
FIRST_CHART = """
new MutationObserver((records, obs) => {
  if (document.querySelector('.rg-svg svg, div.rg-vega svg.marks')) {  // inline SVG; or Vega's, on a site built before
    window.__rgFirstChart = performance.now();
    obs.disconnect();
  }
}).observe(document, {childList: true, subtree: true});
"""


def page_types(site: Path, experiment: str | None = None) -> dict[str, str]:
    """One page of each type: name -> URL path."""
    reports = site / "reports"
    exps = sorted(p.name for p in reports.iterdir() if (p / "index.html").is_file())
    out = {"home": "", "reports list": "reports/", "docs page (text)": "site/"}
    if experiment is not None and experiment not in exps:
        raise SystemExit(f"{reports / experiment}: no such report; reports: {', '.join(exps)}")
    if exps:
        exp = experiment or exps[0]
        out["experiment"] = f"reports/{exp}/"
        cands = sorted(
            p.name
            for p in (reports / exp).iterdir()
            if (p / "index.html").is_file() and p.name not in ("rollback", "provenance")
        )
        if cands:
            out["candidate"] = f"reports/{exp}/{cands[0]}/"
        out["rollback (text)"] = f"reports/{exp}/rollback/"
        out["provenance (text)"] = f"reports/{exp}/provenance/"
    return out


@dataclass(frozen=True)
class PageCost:
    """What one page cost the browser: medians over the loads."""

    weight_kb: float  # every resource, gzipped
    first_chart_ms: float | None  # None on a page without charts
    load_ms: float
    by_type_kb: dict[str, float]  # the last load's weight by file extension ("html" for pages)


def measure(browser: Browser, url: str, runs: int) -> PageCost:
    weights: list[int] = []
    firsts: list[float] = []
    loads: list[float] = []
    by_type: dict[str, int] = {}
    for _ in range(runs):
        ctx = browser.new_context(viewport={"width": 1440, "height": 900})  # a fresh context: empty cache
        ctx.add_init_script(FIRST_CHART)
        page = ctx.new_page()
        sizes: dict[str, int] = {}

        def on_response(resp: Response, sizes: dict[str, int] = sizes) -> None:
            try:
                body = resp.body()
            except Exception:  # a redirect or an aborted request has no body
                return
            sizes[resp.url] = len(gzip.compress(body, 6))

        page.on("response", on_response)
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        if page.evaluate("() => document.querySelectorAll('figure.rg-chart').length > 0"):
            page.wait_for_function("() => window.__rgFirstChart !== undefined", timeout=20_000)
            firsts.append(float(page.evaluate("() => window.__rgFirstChart")))
        loads.append(float(page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")))
        weights.append(sum(sizes.values()))
        by_type = {}
        for u, size in sizes.items():
            name = u.split("?")[0].rsplit("/", 1)[-1]
            kind = name.rsplit(".", 1)[-1] if "." in name else "html"
            by_type[kind] = by_type.get(kind, 0) + size
        ctx.close()
    return PageCost(
        weight_kb=statistics.median(weights) / 1024,
        first_chart_ms=statistics.median(firsts) if firsts else None,
        load_ms=statistics.median(loads),
        by_type_kb={k: v / 1024 for k, v in by_type.items()},
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--site", type=Path, help="a built site (default: build the test fixture's)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--experiment", help="the report to measure (a folder of SITE/reports; default: the first)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            project = make_project(Path(tmp) / "project")
            site_fixture.build_experiment(project / "runs")
            mkdocs_build(project, Path(tmp) / "cache")
            site = project / "site"
        with Server(site) as srv, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            print(f"{'page':<20} {'gzipped KB, all resources':>26} {'first chart ms':>15} {'load ms':>8}  by type (KB)")
            for name, path in page_types(site, args.experiment).items():
                r = measure(browser, f"{srv.url}/{path}", args.runs)
                kinds = " ".join(f"{k}={v:.0f}" for k, v in sorted(r.by_type_kb.items(), key=lambda kv: -kv[1]))
                first = f"{r.first_chart_ms:.0f}" if r.first_chart_ms is not None else "-"
                print(f"{name:<20} {r.weight_kb:>26.1f} {first:>15} {r.load_ms:>8.0f}  {kinds}")
            browser.close()


if __name__ == "__main__":
    main()
