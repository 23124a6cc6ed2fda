"""MkDocs hooks for the report site.

- The generated literate-nav SUMMARY.md is navigation, not a page: exclude it late, after
  literate-nav has found it.
- Charts are drawn at build time into the cache folder, by workers while MkDocs lays the pages out
  (reportgen.render.drawing); a report page's "<page>.charts.json" (written by
  reportgen.render.site.write_page) names each drawn chart's file, and the hook waits for them and
  puts them into the page's final HTML here, so MkDocs never parses them; the sidecars are not published.
- A page whose inputs did not change is not rendered again (reportgen.render.html_cache): its HTML
  and search entries are kept in the cache folder, keyed by its Markdown, front matter, charts and
  the site around it (configuration, theme, navigation); the hook serves it with a template that
  renders nothing and hands MkDocs the kept HTML (its anchors kept beside it; no Markdown converter
  is made for its empty source). A page whose build logged a warning is not kept.
- Every page's whitespace runs with a line break become one line break (`html_cache.minify`: the
  theme indents every line of the navigation, which grows with every report).
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

import functools
import importlib.metadata
import json
import logging
import os
import re
from pathlib import Path

from jinja2 import ChoiceLoader, DictLoader
from mkdocs.plugins import event_priority
from mkdocs.structure.files import InclusionLevel
from mkdocs.structure.toc import get_toc

try:
    from reportgen.render import html_cache
    from reportgen.render.drawing import DRAWING
    from reportgen.render.site import CHARTS_SIDECAR, MIKE_VERSION_VAR, fill_charts, read_sidecar
    from reportgen.render.site_cache import code_digest
    from reportgen.store.layout import default_cache, resolve_runs_root
except ModuleNotFoundError:  # building from a checkout without installing reportgen
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from reportgen.render import html_cache
    from reportgen.render.drawing import DRAWING
    from reportgen.render.site import CHARTS_SIDECAR, MIKE_VERSION_VAR, fill_charts, read_sidecar
    from reportgen.render.site_cache import code_digest
    from reportgen.store.layout import default_cache, resolve_runs_root

LOG = logging.getLogger("mkdocs.plugins.reportgen")
PACKAGES = ("mkdocs", "mkdocs-material", "markdown", "pymdown-extensions", "mkdocs-literate-nav", "jinja2")


class _Build:
    """What one build learns about its pages (the hooks' state, reset by `on_config`)."""

    def __init__(self, config):
        self.cache = html_cache.HtmlCache(default_cache())
        self.base = html_cache.digest(
            *_config_files(Path(config.config_file_path)),
            *(f"{n}={_version(n)}" for n in PACKAGES),
            Path(__file__).read_bytes(),
            code_digest(),  # reportgen's code: what fills the charts and minifies the page
            os.environ.get(MIKE_VERSION_VAR, ""),
        )
        self.site = self.base  # with the hand-written pages, on_nav
        self.nav = None
        self.titles = {}  # page URL -> the full title of a report page, for the search index
        self.keys = {}  # page URL -> its key
        self.kept = set()  # page URLs served from the cache
        self.warned = set()  # page URLs whose build logged a warning: not kept
        self.order = []  # page URLs in build order (the search index's)
        self.rendered = []  # page URLs rendered (not kept) whose HTML went into the cache
        self.current = None


_STATE = {}


def _config_files(path: Path):
    """mkdocs.yml's bytes and those of every file it INHERITs from."""
    seen = []
    while path is not None and path.is_file() and path not in seen:
        seen.append(path)
        text = path.read_text(encoding="utf-8")
        m = re.search(r"^INHERIT:\s*(.+?)\s*$", text, re.M)
        path = (path.parent / m.group(1).strip("'\"")).resolve() if m else None
    return [p.read_bytes() for p in seen]


def _version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "none"


class _Warnings(logging.Handler):
    """Notes the page being built when MkDocs logs a warning (a broken link): it is not kept."""

    def emit(self, record):
        build = _STATE.get("build")
        if build is not None and build.current is not None and record.levelno >= logging.WARNING:
            build.warned.add(build.current)


_HANDLER = _Warnings()


def on_config(config):
    if not os.environ.get(MIKE_VERSION_VAR):
        config.extra.pop("version", None)
    _STATE["build"] = _Build(config)
    logger = logging.getLogger("mkdocs")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
    return config


def on_env(env, config, files):
    env.loader = ChoiceLoader([DictLoader({html_cache.CACHED_TEMPLATE: ""}), env.loader])
    return env


@event_priority(-100)
def on_files(files, config):
    f = files.get_file_from_path("SUMMARY.md")
    if f is not None:
        f.inclusion = InclusionLevel.EXCLUDED
    for f in files:
        if f.src_uri.endswith(CHARTS_SIDECAR):
            f.inclusion = InclusionLevel.EXCLUDED
    return files


def on_nav(nav, config, files):
    # The site around every page: the hand-written pages that exist (a link to one that is gone
    # must warn again); the generated ones come and go with the experiments, and a page shows of
    # them only what its navigation shows (`_shown_nav`).
    build = _STATE["build"]
    docs = Path(config.docs_dir).resolve()
    written = sorted(
        f.src_uri
        for f in files.documentation_pages()
        if f.abs_src_path and Path(f.abs_src_path).resolve().is_relative_to(docs)
    )
    build.site = html_cache.digest(build.base, tuple(written))
    build.nav = nav
    return nav


def _first_url(item):
    """The page a navigation item links to: its own, or a section's first page's."""
    while getattr(item, "children", None):
        item = item.children[0]
    return getattr(item, "url", None)


def _shown_nav(page, nav):
    """What of the navigation a page's HTML shows (Material with navigation.prune): the items of the
    top level and of every section on the page's path (title, link, whether they are sections),
    and its previous and next pages. Another experiment's pages elsewhere in the navigation are not
    shown, so adding one lays out again only the pages whose sidebar lists it."""
    path, section = [], page.parent
    while section is not None:
        path.append(section)
        section = section.parent
    levels = [nav.items, *(s.children for s in reversed(path))]
    shown = tuple(tuple((i.title, _first_url(i), bool(getattr(i, "children", None))) for i in lv) for lv in levels)
    near = tuple((p.title, p.url) if p is not None else None for p in (page.previous_page, page.next_page))
    return shown, near


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


def _sidecar(page):
    src = page.file.abs_src_path
    if not src or not src.endswith(".md"):
        return None
    path = Path(src[: -len(".md")] + CHARTS_SIDECAR)
    return path.read_text(encoding="utf-8") if path.is_file() else None


def on_page_markdown(markdown, page, config, files):
    build = _STATE["build"]
    build.current = page.url
    sidecar = _sidecar(page)
    site = html_cache.digest(build.site, _shown_nav(page, build.nav))
    key = html_cache.page_key(site, page.url, markdown, page.meta, sidecar or "")
    build.keys[page.url] = key
    if page.file.src_uri.startswith("reports/") and isinstance(page.meta.get("title"), str):
        build.titles[page.url] = page.meta["title"]
    # A provenance page (package lists, nvidia-smi -q, hashes) is not searched: it was a quarter of
    # the search index that every page downloads, and one more per experiment.
    parts = page.file.src_uri.split("/")
    if len(parts) == 4 and parts[0] == "reports" and parts[2] == "provenance" and parts[3] == "index.md":
        page.meta.setdefault("search", {})["exclude"] = True
    if build.cache.has(key):
        # Kept from an earlier build: nothing to convert, a template that renders nothing, and no
        # search entries of its own (on_post_build puts the kept ones back).
        build.kept.add(page.url)
        page.meta["template"] = html_cache.CACHED_TEMPLATE
        page.meta.setdefault("search", {})["exclude"] = True
        page.render = functools.partial(_render_empty, page)
        return ""
    return markdown


def _render_empty(page, config, files):
    """What MkDocs' `Page.render` leaves of an empty page, without making the Markdown converter
    and its extensions for it (a few milliseconds a page, on every kept page of every build)."""
    page.content = ""
    page.toc = get_toc([])
    page._title_from_render = None
    page.present_anchor_ids = set()
    page.links_to_anchors = {}


def on_page_content(html, page, config, files):
    build = _STATE["build"]
    if page.url in build.kept:  # its anchors, for the links of the pages that are rendered
        page.present_anchor_ids = build.cache.anchors(build.keys[page.url])
    return html


def on_page_context(context, page, config, nav):
    _STATE["build"].current = page.url
    return context


def on_post_page(output, page, config):
    build = _STATE["build"]
    build.order.append(page.url)
    key = build.keys.get(page.url)
    if page.url in build.kept:
        build.current = None
        return build.cache.html(key)
    output = _BUNDLE.sub(lambda m: LAZY_SEARCH + m.group(0), output, count=1)
    sidecar = _sidecar(page)
    if sidecar is not None:
        DRAWING.wait(json.loads(sidecar).values())  # the workers may still be drawing them
        output = fill_charts(output, read_sidecar(sidecar))
    output = html_cache.minify(output)
    if page.url not in build.warned and key is not None:
        build.cache.put_html(key, output)  # its search entries when the index is written (on_post_build)
        build.rendered.append(page.url)
    build.current = None
    return output


def on_post_build(config):
    DRAWING.finish()
    build = _STATE["build"]
    index = Path(config.site_dir) / "search" / "search_index.json"
    data = json.loads(index.read_text(encoding="utf-8")) if index.is_file() else None
    kept = {url: build.cache.search(build.keys[url]) for url in build.kept}
    docs, fresh = html_cache.merge_search(data.get("docs", []) if data else [], build.order, kept)
    for url in build.rendered:
        if url not in build.warned:
            build.cache.put_search(build.keys[url], fresh.get(url, []))
    if data is not None:
        data["docs"] = docs
        for entry in docs:
            if entry.get("location") in build.titles:
                entry["title"] = build.titles[entry["location"]]
        index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    build.cache.prune(build.keys.values())
    LOG.info(f"reportgen: {len(build.kept)} of {len(build.order)} pages kept from the last build, the others rendered")


def on_serve(server, config, builder):
    root = Path(config.config_file_path).resolve().parent
    runs = resolve_runs_root(base=root)
    if runs.is_dir():
        server.watch(str(runs))
    pkg = root / "reportgen"
    if pkg.is_dir():
        server.watch(str(pkg))
    return server
