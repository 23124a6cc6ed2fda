"""`mkdocs build --strict` on a runs/ tree: stable URLs, escaped content, nothing remote."""

from __future__ import annotations

import re

import pytest

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
    assert (built_site / "assets/vendor/vega-bundle.js").stat().st_size > 500_000
    assert (built_site / "reports/grpo-offload/rollback/rollback-A1.patch").is_file()
    assert (built_site / "reports/grpo-offload/primary.svg").read_text().startswith("<svg")
    assert not (built_site / "SUMMARY").exists() and not (built_site / "SUMMARY.md").exists()


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


def test_nav_lists_reports(built_site):
    html = (built_site / "reports/grpo-offload/index.html").read_text()
    for target in ("A1/", "A2/", "A3/", "rollback/", "provenance/"):
        assert f'href="{target}"' in html or f'href="./{target}"' in html, target
