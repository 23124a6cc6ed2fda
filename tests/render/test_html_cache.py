"""Each page's HTML and search entries kept between builds (render/html_cache.py): the key, the
store, the search index put back in page order, and the whitespace a page loses."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from reportgen.render import html_cache


def test_a_page_is_kept_by_its_markdown_front_matter_charts_and_site() -> None:
    key = html_cache.page_key("site", "reports/x/", "# X\n", {"title": "X"}, '{"a":"/c/a.svg"}')
    assert key == html_cache.page_key("site", "reports/x/", "# X\n", {"title": "X"}, '{"a":"/c/a.svg"}')
    for other in (
        html_cache.page_key("site2", "reports/x/", "# X\n", {"title": "X"}, '{"a":"/c/a.svg"}'),  # nav, config
        html_cache.page_key("site", "reports/y/", "# X\n", {"title": "X"}, '{"a":"/c/a.svg"}'),
        html_cache.page_key("site", "reports/x/", "# Y\n", {"title": "X"}, '{"a":"/c/a.svg"}'),
        html_cache.page_key("site", "reports/x/", "# X\n", {"title": "Y"}, '{"a":"/c/a.svg"}'),
        html_cache.page_key("site", "reports/x/", "# X\n", {"title": "X"}, '{"a":"/c/b.svg"}'),  # another chart
    ):
        assert other != key


def test_a_page_counts_as_kept_once_its_html_and_search_entries_are(tmp_path: Path) -> None:
    cache = html_cache.HtmlCache(tmp_path)
    page = '<html><h2 id="answer">x</h2><a id=top></a></html>'
    cache.put_html("k1", page)
    assert not cache.has("k1")  # a build that stopped before the index was written keeps nothing
    cache.put_search("k1", [{"location": "x/", "text": "x"}])
    assert cache.has("k1") and cache.html("k1") == page and cache.search("k1") == [{"location": "x/", "text": "x"}]
    assert cache.anchors("k1") == html_cache.anchor_ids(page) == {"answer", "top"}  # kept, not searched again
    cache.put_html("old", "<html>o</html>")
    cache.put_search("old", [])
    past = time.time() - 30 * 86400
    for p in (tmp_path / "html").rglob("old*"):
        os.utime(p, (past, past))
    assert cache.prune(["k1"]) == 3 and cache.has("k1") and not cache.has("old")


def test_the_search_index_is_put_back_in_page_order() -> None:
    fresh = [{"location": "a/", "text": "A"}, {"location": "a/#s", "text": "A s"}, {"location": "c/", "text": "C"}]
    kept = {"b/": [{"location": "b/", "text": "B"}], "": [{"location": "", "text": "home"}]}
    docs, by_url = html_cache.merge_search(fresh, ["", "a/", "b/", "c/"], kept)
    assert [d["text"] for d in docs] == ["home", "A", "A s", "B", "C"]
    assert by_url == {"a/": fresh[:2], "c/": fresh[2:]}


def test_whitespace_runs_with_a_line_break_become_one_outside_verbatim_elements() -> None:
    page = '<nav>\n      <ul>\n\n        <li><a href="x">X</a>\n        </li>\n</ul></nav>\n<pre><code>a\n\n    b</code></pre>\n\n<script>var s = "a\n\n  b";</script>'
    out = html_cache.minify(page)
    assert (
        out
        == '<nav>\n<ul>\n<li><a href="x">X</a>\n</li>\n</ul></nav>\n<pre><code>a\n\n    b</code></pre>\n<script>var s = "a\n\n  b";</script>'
    )
    assert html_cache.minify("<p>a  b</p>") == "<p>a  b</p>"  # spaces on a line are the page's own


def test_a_code_blocks_whitespace_tokens_lose_their_span_and_keep_their_text() -> None:
    block = '<pre><span></span><code>python3<span class="w"> </span>-m<span class="w"> </span>x<span class="w"> </span><span class="se">\\</span>\n<span class="w">  </span>--n<span class="w"> </span><span class="m">1</span></code></pre>'
    out = html_cache.minify(block)
    assert (
        out
        == '<pre><span></span><code>python3 -m x <span class="se">\\</span>\n  --n <span class="m">1</span></code></pre>'
    )
    assert re.sub(r"<[^>]+>", "", out) == re.sub(r"<[^>]+>", "", block)  # the same text, copied the same
    assert html_cache.minify('<p><span class="w"> </span></p>') == '<p><span class="w"> </span></p>'  # only in code
