"""Each page's final HTML and search entries, kept between builds (render stage; the MkDocs hook in
docs/hooks/reportgen_hooks.py calls it, nothing here imports MkDocs).

MkDocs renders every page on every build: Markdown to HTML, the theme's template around it, the
search indexer over its text: about half a second of CPU per experiment, for pages that did not
change. A page's final HTML is a function of its Markdown (which names its drawn charts by their
content's hash), its front matter, its URL and the site around it: the configuration, the theme and
the navigation (every page's title and place, which the sidebar and the previous/next links show).
So the hook keys each page by those (`page_key`); a page whose key is in the cache folder (`html/`
of `store.layout.default_cache()`) is not rendered: the hook gives MkDocs an empty page to convert
and a template that renders nothing (CACHED_TEMPLATE), and hands back the HTML kept. Its search
entries are kept beside it and put back into the index in page order (`merge_search`). A page whose
build logged a warning is not kept, so a strict build keeps failing on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reportgen.store import atomic

CACHED_TEMPLATE = "reportgen-cached.html"  # renders nothing: the hook hands back the kept HTML
PRUNE_DAYS = 14


def digest(*parts: object) -> str:
    """A digest of `parts` (each by its repr, strings as they are)."""
    h = hashlib.sha256()
    for p in parts:
        h.update((p if isinstance(p, str) else repr(p)).encode() + b"\0")
    return h.hexdigest()


def page_key(site: str, url: str, markdown: str, meta: Mapping[str, Any], charts: str) -> str:
    """The key of a page's HTML: the site's digest (configuration, theme, navigation), the page's
    URL, Markdown and front matter, and where its drawn charts are (their files are named by content)."""
    return digest(site, url, markdown, json.dumps(meta, sort_keys=True, default=str), charts)


# Elements whose whitespace is their content.
_VERBATIM = re.compile(r"<(pre|textarea|script|style)\b.*?</\1\s*>", re.S | re.I)
_BLANK = re.compile(r"[ \t]*\n\s*")
# Pygments' whitespace token in a highlighted block: a span the theme gives no style.
_SPACE_TOKEN = re.compile(r'<span class="w">([ \t\n]*)</span>')


def minify(html: str) -> str:
    """The same page in fewer bytes: every run of whitespace that holds a line break becomes one
    line break, outside `<pre>`, `<textarea>`, `<script>` and `<style>`. A browser shows a run of
    whitespace as one space either way, so the page reads and lays out the same; the theme's
    templates indent every line of its navigation (a third of a report page, growing with every
    report in the site) and leave blank lines between them. In a code block, the whitespace
    Pygments wraps in a span of its own (class `w`, which Material styles not at all) is left bare:
    a report's commands were half such spans (26 KB a report)."""
    out, last = [], 0
    for m in _VERBATIM.finditer(html):
        block = m.group(0)
        if m.group(1).lower() == "pre":
            block = _SPACE_TOKEN.sub(r"\1", block)
        out += [_BLANK.sub("\n", html[last : m.start()]), block]
        last = m.end()
    out.append(_BLANK.sub("\n", html[last:]))
    return "".join(out)


_ID = re.compile(r"""\sid=["']?([^"'\s>]+)""")


def anchor_ids(html: str) -> set[str]:
    """The ids a kept page's HTML holds: MkDocs checks links to `page#anchor` against the anchors each
    page's rendering found, and a kept page is not rendered again, so without them every link into it
    would be reported as a missing anchor."""
    return set(_ID.findall(html))


def url_of(location: str) -> str:
    """The page a search entry's location belongs to ("reports/x/#answer" -> "reports/x/")."""
    return location.split("#", 1)[0]


class HtmlCache:
    """The pages of one cache folder (`html/`): `<key>.html`, `<key>.ids` (its anchors, one a line)
    and `<key>.search.json` each."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder) / "html"

    def _paths(self, key: str) -> tuple[Path, Path, Path]:
        base = self.folder / key[:2] / key
        return base.with_suffix(".html"), base.with_suffix(".ids"), base.with_suffix(".search.json")

    def has(self, key: str) -> bool:
        return all(p.is_file() for p in self._paths(key))

    def html(self, key: str) -> str:
        paths = self._paths(key)
        for p in paths:
            with contextlib.suppress(OSError):  # a read-only cache still serves
                os.utime(p)
        return paths[0].read_text(encoding="utf-8")

    def anchors(self, key: str) -> set[str]:
        """The anchors of a kept page (`anchor_ids` of its HTML, found when it was kept): read from
        their own small file, not by searching the page's HTML again on every build."""
        return set(self._paths(key)[1].read_text(encoding="utf-8").split())

    def search(self, key: str) -> list[dict[str, Any]]:
        entries = json.loads(self._paths(key)[2].read_text(encoding="utf-8"))
        return entries if isinstance(entries, list) else []

    def put_html(self, key: str, html: str) -> None:
        """A page's HTML and its anchors; kept (`has`) once its search entries are written too."""
        page, ids, _ = self._paths(key)
        atomic.write_text(page, html)
        atomic.write_text(ids, "".join(f"{a}\n" for a in sorted(anchor_ids(html))))

    def put_search(self, key: str, entries: Sequence[Mapping[str, Any]]) -> None:
        atomic.write_text(self._paths(key)[2], json.dumps(list(entries), ensure_ascii=False, separators=(",", ":")))

    def prune(self, keep: Iterable[str], older_than_days: float = PRUNE_DAYS) -> int:
        """Remove pages not in `keep` and unused for `older_than_days`; returns how many files."""
        return prune_unused(self.folder, "*/*", {p for k in keep for p in self._paths(k)}, older_than_days)


def prune_unused(folder: Path, pattern: str, kept: set[Path], older_than_days: float) -> int:
    """Remove the files of `folder` matching `pattern` that are not in `kept` and were not used
    (their modification time: a read touches them) for `older_than_days`; returns how many. The
    cache folders' one rule (html/, pages/, scans/): an entry another checkout still uses stays."""
    cutoff = time.time() - older_than_days * 86400
    removed = 0
    for path in folder.glob(pattern) if folder.is_dir() else ():
        if path not in kept and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def merge_search(
    fresh: Sequence[Mapping[str, Any]], order: Sequence[str], kept: Mapping[str, Sequence[Mapping[str, Any]]]
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The search index's entries in page order: a rendered page's from the index MkDocs' search
    wrote (`fresh`), a kept page's from `kept` (page URL -> its entries). Also returns the fresh
    entries by page URL, to keep."""
    by_url: dict[str, list[dict[str, Any]]] = {}
    for entry in fresh:
        by_url.setdefault(url_of(str(entry.get("location", ""))), []).append(dict(entry))
    docs: list[dict[str, Any]] = []
    for url in dict.fromkeys(order):
        docs += [dict(e) for e in kept[url]] if url in kept else by_url.get(url, [])
    docs += [e for url, entries in by_url.items() if url not in order for e in entries]  # none expected
    return docs, by_url
