"""Write the report pages into a MkDocs build (render stage; with render/site_cache.py the one place
that does I/O for pages).

`generate()` is called by docs/gen_pages.py (mkdocs-gen-files) on every build. It reads each
experiment folder once without decoding its tables (`site_cache.scan`: analysis.json must be
current, else the build stops with one line naming `reportgen analyze`; the site build only reads
runs/, see docs/site.md), takes the pages of every experiment whose inputs did not change from the
cache folder, and loads, renders and draws only the others (charts drawn at build time as SVG,
render/chart_svg.py; the pages load no chart library). The pages every experiment feeds (home,
reports list, history) are made each time from what analysis.json holds. Pages are written with the
given `open_file` (mkdocs_gen_files.open during a build), and the literate-nav SUMMARY.md from what
exists. Nothing here knows MkDocs beyond `open_file`; the hook (docs/hooks/reportgen_hooks.py) puts
the drawn charts into the final HTML and keeps each page's HTML for the next build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Protocol

from reportgen.errors import UserError
from reportgen.history.paired import PairedSeries
from reportgen.history.series import Series
from reportgen.render import (
    bisect_page,
    candidate_page,
    chart_spec,
    chart_svg,
    experiment_page,
    history_page,
    home_page,
    provenance_page,
    rollback_page,
)
from reportgen.render.common import report_kind
from reportgen.render.drawing import DRAWING
from reportgen.render.load import PublishedExperiment, load_experiment
from reportgen.render.page import Page
from reportgen.render.paths import PathShortener, RootsSeen, roots_answerable, roots_in
from reportgen.render.site_cache import CachedPage, Entry, PageCache, ScanMemo, Scanned, entry_key, light, scan
from reportgen.render.site_cache import require_current as require_current
from reportgen.store import layout
from reportgen.store.run_folder import RunsIndex

# mike sets this while it builds a version; without it the site has no versions to select
# (docs/hooks/reportgen_hooks.py drops Material's version selector).
MIKE_VERSION_VAR = "MIKE_DOCS_VERSION"
OpenFile = Callable[..., IO]


@dataclass(frozen=True)
class SiteOptions:
    """Switches of the report part of the site (mkdocs.yml `extra.reportgen`, or env)."""

    svg_fallback: bool = False
    shorten_paths: bool = False
    repo_root: Path | None = None
    cache_dir: Path | None = None
    docs_dir: Path | None = None  # project docs listed in the nav after the reports
    exclude_docs: tuple[str, ...] = field(default=("SUMMARY.md",))

    @classmethod
    def from_extra(cls, extra: dict | None, **kw: Any) -> SiteOptions:
        cfg = dict((extra or {}).get("reportgen") or {})
        env_short = os.environ.get("REPORTGEN_SHORTEN_PATHS")
        if env_short is not None:
            cfg["shorten_paths"] = env_short.lower() in ("1", "true", "yes", "on")
        env_svg = os.environ.get("REPORTGEN_SVG_FALLBACK")
        if env_svg is not None:
            cfg["svg_fallback"] = env_svg.lower() in ("1", "true", "yes", "on")
        known = {k: v for k, v in cfg.items() if k in ("svg_fallback", "shorten_paths")}
        unknown = sorted(set(cfg) - set(known))
        if unknown:
            raise UserError(
                f"mkdocs.yml extra.reportgen: unknown key(s) {', '.join(unknown)}; known: svg_fallback, shorten_paths"
            )
        return cls(**known, **kw)


def render_experiment(
    exp: PublishedExperiment, *, svg: bool = True, history: str = "", docs: Sequence[tuple[str, str]] = ()
) -> list[Page]:
    """All pages of one experiment: overview, one write-up per candidate, rollback, provenance.
    `history` is the experiment page's "vs history" line (history_page.vs_history_line, from the paired history);
    `docs`: (path, title) of the documentation pages that describe this experiment."""
    pages = [experiment_page.render(exp, svg=svg, history=history, docs=docs)]
    for c in exp.analysis.comparisons:
        pages.append(candidate_page.render(exp, c.candidate, svg=svg))
    pages += [rollback_page.render(exp), provenance_page.render(exp)]
    return pages


# More reports than this, and the navigation lists them by month: a report page's sidebar lists its
# section's reports (Material prunes the others), and a flat list of hundreds was most of every
# report page's bytes (issue 45).
NAV_FLAT = 30


def months(experiments: Sequence[PublishedExperiment]) -> dict[str, str]:
    """experiment -> its section of the navigation when the site holds more than NAV_FLAT reports:
    the month it was made ("2026-12", from analysis.json's `created_utc`), and a month of more than
    NAV_FLAT reports in parts of NAV_FLAT ("2026-12, 2 of 7", by name); {} for a smaller site."""
    if len(experiments) <= NAV_FLAT:
        return {}
    by_month: dict[str, list[str]] = {}
    for e in experiments:
        by_month.setdefault((e.analysis.experiment.created_utc or "")[:7] or "undated", []).append(e.name)
    out = {}
    for month, names in by_month.items():
        parts = -(-len(names) // NAV_FLAT)
        for i, name in enumerate(sorted(names)):
            out[name] = month if parts == 1 else f"{month}, {i // NAV_FLAT + 1} of {parts}"
    return out


def summary(
    pages_by_exp: Sequence[tuple[str, Sequence[NavPage]]],
    docs: Sequence[tuple[str, str]],
    history: Sequence[NavPage] = (),
    groups: Mapping[str, str] | None = None,
) -> str:
    """The literate-nav SUMMARY.md: home, reports (from what exists; under their `groups` section,
    newest first, when given), then the project docs.

    Built with mkdocs_gen_files.Nav (titles as a path, a section's own page as its link). Nav
    merges entries by title, so an experiment whose title another already has gets its folder
    name appended rather than being merged into the other's section.
    """
    from mkdocs_gen_files.nav import Nav

    nav = Nav()
    nav["Home"] = "index.md"
    nav["Reports"] = "reports/index.md"
    used: set[str] = set()
    groups = groups or {}
    # newest month first, a month's parts in order, undated last
    order = {
        g: (g != "undated", g[:7], -int(g.split(", ")[1].split(" of ")[0]) if ", " in g else 0)
        for g in set(groups.values())
    }
    for name, pages in sorted(
        pages_by_exp, key=lambda np: order.get(groups.get(np[0], ""), (True, "", 0)), reverse=True
    ):
        main, *rest = pages
        title = _nav_text(main.nav)
        if title in used:
            title = f"{title} ({_nav_text(name)})"
        used.add(title)
        where = ("Reports", _nav_text(groups[name])) if name in groups else ("Reports",)
        nav[(*where, title)] = main.path
        for p in rest:
            nav[(*where, title, _nav_text(p.nav))] = p.path
    for p in history:  # the index first, then one page per recipe
        keys = ("History",) if p.path == history_page.INDEX else ("History", _nav_text(p.nav))
        nav[keys] = p.path
    # Top-level pages first, then each folder's (as a sub-section).
    for path, title in sorted(docs, key=lambda d: ("/" in d[0], d[0])):
        if path == "index.md":
            continue
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        keys = ("Documentation", _nav_text(folder.replace("/", " / ").capitalize())) if folder else ("Documentation",)
        nav[(*keys, _nav_text(title))] = path
    return "".join(nav.build_literate_nav())


def page_url(path: str) -> str:
    """The URL MkDocs gives a Markdown page with directory URLs: `a.md`, `a/index.md` and
    `a/README.md` are all `a/` (the home page is "")."""
    stem = path.removesuffix(".md")
    for tail in ("index", "README"):
        if stem == tail:
            return ""
        if stem.endswith("/" + tail):
            return stem[: -len(tail)]
    return stem + "/"


def refuse_hidden_docs(pages: Sequence[NavPage], docs_dir: Path | None, *, extends: Sequence[str] = ()) -> None:
    """Stop the build when a generated page would take the URL of a hand-written one under docs/.

    mkdocs-gen-files replaces a docs file of the same path without a word, and MkDocs' own check of
    two pages with one URL (`history.md` and `history/index.md`) runs before the generator adds its
    files, so such a page vanished from the site in silence (docs/history.md did, under the History
    index). `extends`: pages made from the docs page they replace (the home page from docs/index.md)."""
    if docs_dir is None or not Path(docs_dir).is_dir():
        return
    docs = {page_url(p.relative_to(docs_dir).as_posix()): p for p in sorted(Path(docs_dir).rglob("*.md"))}
    for page in pages:
        hidden = docs.get(page_url(page.path))
        if hidden is not None and page.path not in extends:
            raise UserError(
                f"{hidden}: the generated page {page.path} would replace it (both are /{page_url(page.path)}); "
                "rename one of them"
            )


def _nav_text(s: str) -> str:
    return re.sub(r"[\[\]<>&`*_\\|]", " ", " ".join(str(s).split())).strip() or "page"


def project_docs(docs_dir: Path | None, exclude: Sequence[str]) -> list[tuple[str, str]]:
    """(path, title) of every hand-written Markdown page under docs/, sorted, title from its `# `."""
    if docs_dir is None or not Path(docs_dir).is_dir():
        return []
    out = []
    for p in sorted(Path(docs_dir).rglob("*.md")):
        rel = p.relative_to(docs_dir).as_posix()
        if rel in exclude or rel.startswith("reports/") or any(part.startswith(".") for part in p.parts):
            continue
        title = next(
            (
                ln[2:].strip()
                for ln in p.read_text(encoding="utf-8", errors="replace").splitlines()
                if ln.startswith("# ")
            ),
            p.stem,
        )
        out.append((rel, re.sub(r"`", "", title)))
    return out


class DocsIndex:
    """The hand-written pages under docs/ (path and title, `project_docs`) and their prose, read once
    a build: each experiment page links the pages that write about it (`mentions`)."""

    def __init__(self, docs_dir: Path | None, exclude: Sequence[str]) -> None:
        self.pages = project_docs(docs_dir, exclude)
        self._prose = {
            path: _FENCED.sub("", (Path(docs_dir) / path).read_text(encoding="utf-8", errors="replace"))
            for path, _ in self.pages
            if docs_dir is not None and not path.startswith("formats/")
        }

    def mentions(self, experiment: str) -> list[tuple[str, str]]:
        """(path, title) of the documentation pages that write about `experiment` (name its folder
        `runs/<experiment>/` outside a fenced command: an example's command names a folder without
        being about it); the experiment page links them from its workload line."""
        needle = f"runs/{experiment}/"
        return [(path, title) for path, title in self.pages if needle in self._prose.get(path, "")]


def mentions(docs_dir: Path | None, exclude: Sequence[str], experiment: str) -> list[tuple[str, str]]:
    """`DocsIndex.mentions` for one experiment (reads the docs: for one experiment's pages)."""
    return DocsIndex(docs_dir, exclude).mentions(experiment) if docs_dir is not None else []


_FENCED = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.M | re.S)


CHARTS_SIDECAR = ".charts.json"  # "<page>.charts.json" next to "<page>.md": where its drawn charts are (docs/hooks)
CHART_SLOT = re.compile(r'(<div class="rg-svg" data-chart="([^"]*)"[^>]*>)</div>')


class NavPage(Protocol):
    """What the navigation and the checks of a written page read (a `Page`, a `CachedPage`)."""

    @property
    def path(self) -> str: ...
    @property
    def nav(self) -> str: ...


def fill_charts(html: str, svgs: dict[str, str]) -> str:
    """The page's HTML with each chart's placeholder (blocks.chart) holding its SVG.

    The SVG is put into the final HTML by the build hook (docs/hooks/reportgen_hooks.py,
    `on_post_page`), read from the file the sidecar names: a chart is 20-300 KB of markup that
    Python-Markdown, Material's search indexer and Jinja would otherwise each walk.
    """
    return CHART_SLOT.sub(lambda m: m.group(1) + svgs.get(m.group(2), "") + "</div>", html)


def read_sidecar(text: str) -> dict[str, str]:
    """A page's drawn charts, name -> SVG for the page, from its sidecar (name -> the drawn file)."""
    return {name: Path(path).read_text(encoding="utf-8") for name, path in json.loads(text).items()}


def charts_sidecar(page_path: str) -> str:
    return page_path[: -len(".md")] + CHARTS_SIDECAR if page_path.endswith(".md") else page_path + CHARTS_SIDECAR


def drawn(pages: Sequence[Page], cache: Path) -> list[CachedPage]:
    """Each page as the cache keeps it, its charts named by the files they are drawn into
    (render/chart_svg.plan: a chart drawn before costs a look-up); the others are handed to the
    build's workers (render/drawing.DRAWING: drawn meanwhile, or at once without workers)."""
    where, todo = chart_svg.plan([((p.path, n), n, spec) for p in pages for n, spec in p.charts.items()], cache)
    DRAWING.draw(todo)
    return _cached(pages, where)


def drawn_now(pages: Sequence[Page], cache: Path) -> list[CachedPage]:
    """As `drawn`, the charts drawn before it returns, by this process (render/chart_svg.draw_all):
    for the pages MkDocs lays out first, which must not wait behind the reports' charts."""
    where = chart_svg.draw_all([((p.path, n), n, spec) for p in pages for n, spec in p.charts.items()], cache)
    return _cached(pages, where)


def _cached(
    pages: Sequence[Page], where: Mapping[tuple[str, str], chart_svg.Drawn], runs_root: Path | None = None
) -> list[CachedPage]:
    """The pages as the cache keeps them; the run files copied next to a page are named relative to
    `runs_root` (`_kept_copy`), so that the same runs in another clone read the same entry."""
    return [
        CachedPage(
            path=p.path,
            title=p.title,
            nav_title=p.nav_title,
            markdown=p.markdown,
            charts={n: (str(where[(p.path, n)].inline), str(where[(p.path, n)].svg)) for n in p.charts},
            files=dict(p.files),
            copies={name: _kept_copy(path, runs_root) for name, path in p.copies.items()},
        )
        for p in pages
    ]


def _kept_copy(path: Path, runs_root: Path | None) -> str:
    """A copied file's source as a cache entry keeps it: relative to the runs folder where it lies in
    it (read from the runs folder of the build that writes the page, `write_page`), else absolute."""
    if runs_root is not None:
        try:
            return Path(path).resolve().relative_to(runs_root).as_posix()
        except ValueError:
            pass
    return str(path)


def write_page(page: CachedPage, open_file: OpenFile, *, svg: bool, runs_root: Path | None = None) -> None:
    """The page's Markdown, the sidecar naming its drawn charts, its files and copies (a relative
    source: under `runs_root`) and, with `svg`, each chart as a standalone SVG file next to it."""
    folder = page.path.rsplit("/", 1)[0]
    with open_file(page.path, "w", encoding="utf-8") as fh:
        # The full title (it names the experiment) for the browser tab and search results; the
        # navigation shows the page's short nav title (SUMMARY.md).
        fh.write(f"---\ntitle: {json.dumps(page.title, ensure_ascii=False)}\n---\n\n{page.markdown}")
    if page.charts:
        with open_file(charts_sidecar(page.path), "w", encoding="utf-8") as fh:
            json.dump({name: inline for name, (inline, _) in page.charts.items()}, fh, separators=(",", ":"))
    for name, data in page.files.items():
        with open_file(f"{folder}/{name}", "wb") as fh:
            fh.write(data)
    for name, source in page.copies.items():
        source_path = Path(source) if runs_root is None else Path(runs_root) / source
        with open_file(f"{folder}/{name}", "wb") as fh, open(source_path, "rb") as src:
            shutil.copyfileobj(src, fh)
    if svg:
        DRAWING.wait(inline for inline, _ in page.charts.values())
        for name, (_, raw) in page.charts.items():
            with open_file(f"{folder}/{name}.svg", "wb") as fh:
                fh.write(Path(raw).read_bytes())


@dataclass(frozen=True)
class _Options:
    """The site's options an experiment's pages depend on, and where the runs folder is.

    The cache key holds no path (`__repr__`): the pages show none of the runs folder's or the
    repository's except where `shorten_paths` replaced one in the experiment's strings. An entry
    keeps every absolute path its strings held and the shortener's roots found in them
    (`Entry.paths`, `Entry.roots`); a build that finds other roots of its own in those paths (runs
    recorded inside its checkout, first built from a copy elsewhere) renders it again (`_valid`).
    The files copied next to a page are kept relative to the runs folder (`_kept_copy`), and a kept
    experiment is given its folder here. So another clone or a copy of the same runs, built with
    the same cache folder, reads the pages the first one rendered (a CI workspace at another path,
    a second checkout, the test suite's fresh clones). A root that the kept paths cannot answer for
    (a blank or a quote in it, `roots_in`) puts the roots back into the key."""

    svg_fallback: bool
    shorten: PathShortener
    runs_root: Path = field(compare=False)

    def __repr__(self) -> str:  # the key part
        answerable = not self.shorten.enabled or roots_answerable(self.shorten)
        roots = "" if answerable else f", roots={self.shorten.roots!r}"
        return f"_Options(svg_fallback={self.svg_fallback!r}, shorten_paths={self.shorten.enabled!r}{roots})"


def generate(
    runs_root: Path, *, open_file: OpenFile, options: SiteOptions = SiteOptions(), wait: bool = True
) -> list[NavPage]:
    """Render every experiment under `runs_root` into the site; returns the pages written. With
    `wait=False` charts may still be drawing when it returns (render/drawing.py: the build's hook
    waits for each page's, `DRAWING.wait`, and for the rest at the end, `DRAWING.finish`)."""
    runs_root = Path(runs_root)
    cache = options.cache_dir if options.cache_dir is not None else layout.default_cache()
    shorten = PathShortener.for_repo(options.repo_root, enabled=options.shorten_paths)
    opts = _Options(options.svg_fallback, shorten, runs_root.resolve())
    chart_spec.set_template_store(cache / chart_spec.TEMPLATE_FOLDER)
    index = RunsIndex(runs_root)
    folders = layout.iter_experiments(runs_root)
    memo = ScanMemo(cache, folders, index)
    # A cache folder that holds no pages (a first build): every report is to render, and the workers
    # start now, beside the scan, rather than after it. Otherwise the scan decides (`_generate`):
    # folders the memo does not know (another clone, a copy) may well be kept pages all the same.
    if PageCache(cache).empty():
        DRAWING.start(cache, len(folders))
    try:
        return _generate(runs_root, folders, index, memo, opts, options, open_file, cache, wait)
    except BaseException:
        DRAWING.finish()
        raise


def _generate(
    runs_root: Path,
    folders: list[Path],
    index: RunsIndex,
    memo: ScanMemo,
    opts: _Options,
    options: SiteOptions,
    open_file: OpenFile,
    cache: Path,
    wait: bool,
) -> list[NavPage]:
    """`generate`'s work once its workers are started (it stops them should this raise)."""
    store = PageCache(cache)
    scanned = [scan(exp_dir, runs_root, index, memo) for exp_dir in folders]
    docs = DocsIndex(options.docs_dir, options.exclude_docs)
    abouts = [docs.mentions(s.name) for s in scanned]
    # Every experiment as the pages of several read it (no runs, `light_keys`) and its own pages
    # (`keys`): from the cache, else made on the workers. Its pages are made without the "vs
    # history" line (a slot filled when they are written, `_with_history`): the line depends on
    # every experiment, and the pages can then be rendered while the light entries are not all
    # there; one read of a changed experiment gives both (a cold build read each one twice).
    light_keys = [_key(s, opts, "experiment") for s in scanned]
    keys = [_key(s, opts, "pages", about) for s, about in zip(scanned, abouts, strict=True)]
    found = [_valid(store.get(k), s.path, opts) for k, s in zip(light_keys, scanned, strict=True)]
    entries = [_valid(store.get(k), s.path, opts) for k, s in zip(keys, scanned, strict=True)]
    todo = [i for i, e in enumerate(entries) if e is None]
    light_only = [i for i, e in enumerate(found) if e is None and entries[i] is not None]
    DRAWING.ensure(cache, len(todo) + len(light_only))
    rendered = DRAWING.map(
        _render_entry,
        [scanned[i].path for i in todo],
        [opts] * len(todo),
        [abouts[i] for i in todo],
        [cache] * len(todo),
        [keys[i] for i in todo],
        [light_keys[i] for i in todo],
    )
    for i, (pages, jobs, light_entry) in zip(todo, rendered, strict=True):
        DRAWING.draw(jobs)
        entries[i] = Entry(tuple(pages), None)
        found[i] = light_entry
    made = DRAWING.map(
        _light_entry,
        [scanned[i].path for i in light_only],
        [opts] * len(light_only),
        [cache] * len(light_only),
        [light_keys[i] for i in light_only],
    )
    for i, entry in zip(light_only, made, strict=True):
        found[i] = entry
    experiments = [_experiment(e) for e in found]
    # The history: its series and change points from what analysis.json stores
    # (docs/performance-history.md), kept while no experiment changed.
    history_keys = [f"{k}\0{e.roots!r}" for k, e in zip(light_keys, found, strict=True) if e is not None]
    series, paired = store.history(history_keys, lambda: _history(experiments))
    vs_lines = history_page.vs_history_lines(paired, experiments)
    # The pages made across experiments are drawn here and now, beside the workers drawing the
    # reports' charts: MkDocs lays out the home page first, and queued behind every report's
    # charts it kept the build waiting, then left MkDocs to lay out all the pages alone.
    shared = history_page.render_all(
        series, known={e.name for e in experiments}, svg=options.svg_fallback, paired=paired
    ) + bisect_page.pages(runs_root)
    history = drawn_now(shared, cache)
    home = [home_page.render(experiments)]
    index_md = Path(options.docs_dir) / "index.md" if options.docs_dir is not None else None
    front = (
        home_page.home(index_md.read_text(encoding="utf-8"), experiments) if index_md and index_md.is_file() else None
    )
    if front is not None:
        home.insert(0, front)
    home_pages = drawn_now(home, cache)
    written: list[CachedPage] = []
    per_exp: list[tuple[str, list[CachedPage]]] = []
    for s, entry in zip(scanned, entries, strict=True):
        line = vs_lines.get(s.name, "")
        pages = [_with_history(p, line) for p in entry.pages] if entry is not None else []
        per_exp.append((s.name, pages))
        written += pages
    written += history
    written[:0] = home_pages
    refuse_hidden_docs(written, options.docs_dir, extends=[front.path] if front is not None else [])
    for page in written:
        write_page(page, open_file, svg=options.svg_fallback, runs_root=opts.runs_root)
    with open_file("SUMMARY.md", "w", encoding="utf-8") as fh:
        fh.write(summary(per_exp, docs.pages, history, months(experiments)))
    store.prune([*keys, *light_keys])
    memo.prune(folders)
    if wait:
        DRAWING.finish()
    return list(written)


def _key(s: Scanned, opts: _Options, what: str, *outside: object) -> str:
    return entry_key(s, outside=(what, *outside), options=opts)


def _history(experiments: Sequence[PublishedExperiment]) -> tuple[list[Series], list[PairedSeries]]:
    return history_page.history_of(experiments), history_page.paired_of(experiments)


def _valid(entry: Entry | None, folder: Path, opts: _Options) -> Entry | None:
    """A kept entry as this build may use it: None when this build's shortener finds other roots
    in the paths its experiment's strings held than the build that made it (a path of this
    checkout recorded in the runs: shortened here, not there); else with its experiment's folder
    where this build reads it (the key holds no path, `_Options`)."""
    if entry is None:
        return None
    found = roots_in(opts.shorten, entry.paths)
    if found is not None and found != frozenset(entry.roots):
        return None
    if entry.experiment is None or entry.experiment.path == folder:
        return entry
    return replace(entry, experiment=replace(entry.experiment, path=folder))


def _experiment(entry: Entry | None) -> PublishedExperiment:
    if entry is None or entry.experiment is None:
        raise ValueError("a page entry where an experiment entry belongs")
    return entry.experiment


def _light_entry(path: Path, opts: _Options, cache: Path, key: str) -> Entry:
    """The experiment as the home page, the reports list and the history read it (no runs), read
    without its tables and kept in the cache (on a worker)."""
    shorten = RootsSeen.of(opts.shorten)
    exp = load_experiment(path, shorten=shorten, tables=False)
    entry = Entry((), light(exp, report_kind(exp)), *_where(shorten))
    PageCache(cache).put(key, entry)
    return entry


def _where(shorten: RootsSeen) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """What an entry keeps of where it was made (`Entry.roots`, `Entry.paths`): the roots the
    shortener found in the experiment's strings, and every absolute path in them."""
    paths = tuple(sorted(shorten.paths))
    return tuple(sorted(roots_in(shorten, paths) or ())), paths


def _render_entry(
    path: Path, opts: _Options, about: list[tuple[str, str]], cache: Path, key: str, light_key: str
) -> tuple[list[CachedPage], list[chart_svg.DrawJob], Entry]:
    """One experiment's pages (with the "vs history" slot, `HISTORY_SLOT`) and the experiment as
    the other pages read it, from one read, both kept in the cache (on a worker), and its charts
    still to draw: the caller hands them to the workers and does not wait."""
    shorten = RootsSeen.of(opts.shorten)
    exp = load_experiment(path, shorten=shorten)
    pages = render_experiment(exp, svg=opts.svg_fallback, history=HISTORY_SLOT, docs=about)
    where, todo = chart_svg.plan([((p.path, n), n, spec) for p in pages for n, spec in p.charts.items()], cache)
    cached = _cached(pages, where, opts.runs_root)
    where_from = _where(shorten)
    store = PageCache(cache)
    store.put(key, Entry(tuple(cached), None, *where_from))
    entry = Entry((), light(exp, report_kind(exp)), *where_from)
    store.put(light_key, entry)
    return cached, todo, entry


# Where the experiment page's "vs history" line goes: its pages are kept without it (it changes with
# every other experiment of the recipe) and it is filled in as they are written (`_with_history`).
HISTORY_SLOT = "<!-- reportgen: the vs-history line -->"


def _with_history(page: CachedPage, line: str) -> CachedPage:
    """The page with its "vs history" slot filled: the line (Markdown, one paragraph) or nothing,
    the page's Markdown then byte for byte what rendering it with that line gives."""
    if HISTORY_SLOT not in page.markdown:
        return page
    text = page.markdown.replace(HISTORY_SLOT, line) if line else page.markdown.replace(HISTORY_SLOT + "\n", "")
    return replace(page, markdown=text)
