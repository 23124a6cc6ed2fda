"""`mkdocs build --strict` on a runs/ tree: stable URLs, escaped content, nothing remote."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.analysis.document import SCHEMA_VERSION
from reportgen.store.atomic import write_json
from tests.render import site_fixture
from tests.render.conftest import build_env, make_project, tree_digests, tree_snapshot

pytestmark = pytest.mark.slow

PAGES = [
    "index.html",
    "reports/index.html",
    "reports/grpo-offload/index.html",
    "reports/grpo-offload/A1/index.html",
    "reports/grpo-offload/A2/index.html",
    "reports/grpo-offload/A3/index.html",
    "reports/grpo-offload/rollback/index.html",
    "reports/grpo-offload/provenance/index.html",
]


def test_pages_at_stable_urls(built_site):
    for page in PAGES:
        assert (built_site / page).is_file(), page
    assert (built_site / "reports/grpo-offload/rollback/rollback-A1.patch").is_file()
    # Charts are inline only: a standalone copy of each (mkdocs.yml `svg_fallback`) is as many bytes again.
    assert not list((built_site / "reports/grpo-offload").rglob("*.svg"))
    assert not (built_site / "SUMMARY").exists() and not (built_site / "SUMMARY.md").exists()


def test_build_machinery_is_not_published(built_site):
    """docs/gen_pages.py and docs/hooks/ run the build; they are not pages (mkdocs.yml exclude_docs)."""
    assert not (built_site / "gen_pages.py").exists() and not (built_site / "hooks").exists()
    assert not list(built_site.rglob("*.py"))
    assert not list(built_site.rglob("*.charts.json"))


def test_charts_are_inline_svg_and_no_page_loads_a_chart_library(built_site):
    """Every chart is drawn at build time into its page (render/chart_svg.py): no Vega bundle, no spec,
    no placeholder left empty; a chart page carries its arms' legend and tooltips without "null"."""
    assert not (built_site / "assets/vendor").exists()
    for page in PAGES:
        html = (built_site / page).read_text()
        assert "vega" not in html.lower().replace("vega-lite", ""), page
        assert "data-spec" not in html and '"></div></figure>' not in html, page
        tips = re.findall(r'data-tip="([^"]*)"', html)
        assert not [t for t in tips if re.search(r": (null|NaN|undefined)(&#10;|$)", t)], page
    html = (built_site / "reports/grpo-offload/index.html").read_text()
    charts = re.findall(r'<div class="rg-svg" data-chart="([^"]+)" role="img" aria-label="[^"]+"><svg', html)
    assert len(charts) >= 8, charts
    assert html.count('class="rg-legend"') >= 8 and html.count("data-tip=") > 100
    assert (built_site / "assets/charts.js").stat().st_size < 4000  # the tooltip, not a chart app


def test_plain_build_has_no_version_selector(built_site):
    """Material's selector (extra.version) is dropped unless mike builds; no versions.json is invented."""
    assert not (built_site / "versions.json").exists()
    for page in PAGES:
        assert (
            '"version": null' in (built_site / page).read_text() or '"version":null' in (built_site / page).read_text()
        )


def test_planted_script_stays_text(built_site):
    html = (built_site / "reports/grpo-offload/A2/index.html").read_text()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="javascript:' not in html


def test_nothing_is_fetched_from_the_web(built_site):
    for page in PAGES:
        html = (built_site / page).read_text()
        for tag, _attr, url in re.findall(r"<(script|link|img|iframe)\b[^>]*?\b(src|href)=\"([^\"]+)\"", html):
            assert not re.match(r"^(https?:)?//", url), (page, tag, url)
        assert "fonts.googleapis" not in html and "cdn.jsdelivr" not in html


def test_published_pages_have_no_home_paths(built_site):
    for page in PAGES:
        assert "/home/alice" not in (built_site / page).read_text(), page
    assert "/home/alice" not in (built_site / "reports/grpo-offload/analysis.json").read_text()


def test_no_page_publishes_a_variable_outside_the_allow_list(built_site):
    # The fixture's runs hold the machine's whole environment (recorded before the allow-list); the
    # build applies today's rule to them: nothing outside it anywhere in the site, search index included.
    for path in built_site.rglob("*"):
        if path.suffix in (".html", ".json", ".md", ".txt"):
            text = path.read_text(errors="replace")
            assert "OLDPWD" not in text and "NV_LIBCUBLAS_VERSION=" not in text and "brand=tesla" not in text, path
    page = (built_site / "reports/grpo-offload/provenance/index.html").read_text()
    assert "RAY_ADDRESS=http://127.0.0.1:8265" in page and "WANDB_API_KEY" not in page  # a framework's kept


def test_the_history_and_its_how_it_works_page_are_both_published(built_site):
    how = (built_site / "performance-history/index.html").read_text()
    assert "Performance history across commits" in how
    index = (built_site / "history/index.html").read_text()
    assert 'href="../performance-history/"' in index and "Performance history across commits" not in index


def test_nav_lists_reports(built_site):
    html = (built_site / "reports/grpo-offload/index.html").read_text()
    for target in ("A1/", "A2/", "A3/", "rollback/", "provenance/"):
        assert f'href="{target}"' in html or f'href="./{target}"' in html, target


def test_short_nav_titles_and_full_search_titles(built_site):
    html = (built_site / "reports/grpo-offload/A1/index.html").read_text()
    nav = html[html.index("md-nav--primary") :]
    labels = [" ".join(t.split()) for t in re.findall(r'<span class="md-ellipsis">\s*([^<]+?)\s*</span>', nav)]
    assert "GPU run: grpo-offload" in labels and "A1: accepted" in labels and "Rollback" in labels
    assert "<title>A1: Keep the optimizer on the GPU (GPU run, grpo-offload) - reportgen</title>" in html
    index = json.loads((built_site / "search/search_index.json").read_text())
    titles = {d["location"]: d["title"] for d in index["docs"]}
    # three experiments' "A1" pages are told apart in search: the title names the experiment
    assert titles["reports/grpo-offload/A1/"] == "A1: Keep the optimizer on the GPU (GPU run, grpo-offload)"


def test_the_home_page_lists_the_results(built_site):
    html = (built_site / "index.html").read_text()
    assert 'href="reports/grpo-offload/"' in html and "A1 accepted, response tokens/s +21.4%" in html


def test_site_build_leaves_runs_byte_identical(built_project):
    project, before = built_project
    assert tree_digests(project / "runs") == before


@pytest.mark.parametrize("change", ["missing", "stale", "old-schema"])
def test_build_refuses_an_analysis_that_is_not_current(tmp_path, svg_cache, change):
    """The build reads runs/ only: it stops with one line naming `reportgen analyze`, writes nothing."""
    project = make_project(tmp_path / "project")
    exp = site_fixture.build_experiment(project / "runs")
    analysis = exp / "analysis.json"
    if change == "missing":
        analysis.unlink()
        why = "missing"
    elif change == "stale":
        patch = exp / "A1" / "1" / "recipe.patch"
        patch.write_text(patch.read_text() + "\n")
        why = "its runs changed since it was written"
    else:
        doc = json.loads(analysis.read_text())
        write_json(analysis, {**doc, "schema_version": 1})
        why = f"schema 1, this reportgen reads {SCHEMA_VERSION}"
    before = tree_snapshot(project / "runs")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=project,
        env=build_env(svg_cache),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, proc.stderr[-2000:]
    assert f"{analysis}: {why}; run `reportgen analyze grpo-offload`" in errors[0]
    assert "Traceback" not in proc.stderr
    assert tree_snapshot(project / "runs") == before


def test_the_home_page_links_every_documentation_page():
    docs = Path(__file__).resolve().parents[2] / "docs"
    home = (docs / "index.md").read_text()
    pages = [p.relative_to(docs).as_posix() for p in docs.rglob("*.md") if p.name != "index.md"]
    missing = [p for p in pages if f"({p})" not in home]
    assert not missing, f"docs/index.md does not link {missing}"
