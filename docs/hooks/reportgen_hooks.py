"""MkDocs hooks for the report site.

- The generated literate-nav SUMMARY.md is navigation, not a page: exclude it late, after
  literate-nav has found it.
- Charts are drawn at build time: their inline SVG travels next to each report page as
  "<page>.charts.json" (written by reportgen.render.site.write_page) so MkDocs never parses it,
  and is put into the page's final HTML here; the sidecars are not published.
- Provenance pages are left out of the search index (their dumps would dominate it), and the
  index is fetched when the reader reaches for search, not with every page (LAZY_SEARCH).
- A report page's search result is titled with its full title (front matter `title`, which names
  the experiment: three experiments' "A1" pages are told apart); Material titles it by its H1.
- Material's version selector (`extra.version`) is kept only when mike builds the site (mike sets
  MIKE_DOCS_VERSION): a plain build has no versions.json worth listing, and an entry there
  would link to a version folder that does not exist.
- `mkdocs serve` rebuilds when runs/ (or $REPORTGEN_RUNS) changes; a hook instead of `watch:`
  so a checkout without runs/ still builds.
"""

import json
import os
import re
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import InclusionLevel

try:
    from reportgen.render.site import CHARTS_SIDECAR, MIKE_VERSION_VAR, fill_charts
    from reportgen.store.layout import resolve_runs_root
except ModuleNotFoundError:  # building from a checkout without installing reportgen
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from reportgen.render.site import CHARTS_SIDECAR, MIKE_VERSION_VAR, fill_charts
    from reportgen.store.layout import resolve_runs_root


def on_config(config):
    if not os.environ.get(MIKE_VERSION_VAR):
        config.extra.pop("version", None)
    return config


@event_priority(-100)
def on_files(files, config):
    f = files.get_file_from_path("SUMMARY.md")
    if f is not None:
        f.inclusion = InclusionLevel.EXCLUDED
    for f in files:
        if f.src_uri.endswith(CHARTS_SIDECAR):
            f.inclusion = InclusionLevel.EXCLUDED
    return files


# Material's search fetches the whole site's search index (70-80 KB gzipped here, growing with each
# experiment) on every page load. This script, put before Material's bundle on every page, holds
# that one request back until the reader reaches for search (focus in the search box, or a key
# that opens it), so a page costs what it shows. Material requests the index with XMLHttpRequest.
LAZY_SEARCH = """<script>(function () {
  var go, ready = false, wanted = new Promise(function (r) { go = function () { ready = true; r(); }; });
  var open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function (method, url) {
    this.__rgIndex = /\\/search\\/search_index\\.json$/.test(String(url));
    return open.apply(this, arguments);
  };
  XMLHttpRequest.prototype.send = function () {
    var xhr = this, args = arguments;
    if (xhr.__rgIndex && !ready) { wanted.then(function () { send.apply(xhr, args); }); return; }
    return send.apply(xhr, args);
  };
  document.addEventListener("focusin", function (e) {
    if (e.target.closest && e.target.closest(".md-search")) go();
  }, true);
  document.addEventListener("keydown", function (e) {
    if (["/", "s", "S", "f", "F"].indexOf(e.key) >= 0) go();
  }, true);
})();</script>
"""
_BUNDLE = re.compile(r'<script src="[^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js"></script>')


_TITLES: dict[str, str] = {}  # page URL -> the full title of a report page, for the search index


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri.startswith("reports/") and isinstance(page.meta.get("title"), str):
        _TITLES[page.url] = page.meta["title"]
    # A provenance page (package lists, nvidia-smi -q, hashes) is not searched: it was a quarter of
    # the search index that every page downloads, and one more per experiment.
    parts = page.file.src_uri.split("/")
    if len(parts) == 4 and parts[0] == "reports" and parts[2] == "provenance" and parts[3] == "index.md":
        page.meta.setdefault("search", {})["exclude"] = True
    return markdown


def on_post_page(output, page, config):
    output = _BUNDLE.sub(lambda m: LAZY_SEARCH + m.group(0), output, count=1)
    src = page.file.abs_src_path
    if not src or not src.endswith(".md"):
        return output
    sidecar = Path(src[: -len(".md")] + CHARTS_SIDECAR)
    if not sidecar.is_file():
        return output
    return fill_charts(output, json.loads(sidecar.read_text(encoding="utf-8")))


def on_post_build(config):
    index = Path(config.site_dir) / "search" / "search_index.json"
    if not _TITLES or not index.is_file():
        return
    data = json.loads(index.read_text(encoding="utf-8"))
    for entry in data.get("docs", []):
        if entry.get("location") in _TITLES:
            entry["title"] = _TITLES[entry["location"]]
    index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def on_serve(server, config, builder):
    root = Path(config.config_file_path).resolve().parent
    runs = resolve_runs_root(base=root)
    if runs.is_dir():
        server.watch(str(runs))
    pkg = root / "reportgen"
    if pkg.is_dir():
        server.watch(str(pkg))
    return server
