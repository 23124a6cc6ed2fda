"""The generator refuses a page that would hide a hand-written one (reportgen.render.site)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.render import history_page
from reportgen.render.page import Page
from reportgen.render.site import page_url, refuse_hidden_docs

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("index.md", ""),
        ("history.md", "history/"),
        ("history/index.md", "history/"),
        ("history/README.md", "history/"),
        ("history/r/index.md", "history/r/"),
        ("formats/runs.md", "formats/runs/"),
    ],
)
def test_page_url_as_mkdocs_makes_it(path: str, url: str) -> None:
    assert page_url(path) == url


@pytest.mark.parametrize("doc", ["history.md", "history/index.md", "history/README.md"])
def test_a_generated_page_that_would_hide_a_docs_page_stops_the_build(tmp_path: Path, doc: str) -> None:
    # docs/history.md vanished under the generated history/index.md, the strict build silent
    (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / doc).write_text("# How the history works\n")
    with pytest.raises(UserError, match=f"{doc}: the generated page history/index.md would replace it"):
        refuse_hidden_docs([Page("history/index.md", "History", "")], tmp_path)


def test_the_home_page_may_extend_docs_index(tmp_path: Path) -> None:
    (tmp_path / "index.md").write_text("# reportgen\n")
    refuse_hidden_docs([Page("index.md", "reportgen", "")], tmp_path, extends=["index.md"])
    with pytest.raises(UserError):
        refuse_hidden_docs([Page("index.md", "reportgen", "")], tmp_path)


def test_the_history_pages_hide_no_page_of_the_real_docs() -> None:
    pages = history_page.render_all([], known=set())
    refuse_hidden_docs(pages, DOCS)
    assert (DOCS / history_page.DOCS).is_file()
    # the index's "how it works" link reaches the docs page, not itself
    index = next(p for p in pages if p.path == history_page.INDEX)
    assert f"](../{history_page.DOCS})" in index.markdown
