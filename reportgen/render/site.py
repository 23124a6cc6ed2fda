"""Write the report pages into a MkDocs build (render stage; the one module that does I/O for pages).

`generate()` is called by docs/gen_pages.py (mkdocs-gen-files) on every build: it checks that
every experiment's analysis.json is current (and stops with one line naming `reportgen analyze`
when one is not: the site build only reads runs/, see docs/site.md), loads each experiment,
renders its pages, writes them with the given `open_file` (mkdocs_gen_files.open during a build),
draws every chart at build time as SVG (render/chart_svg.py: cached by content hash; the pages load
no chart library), and writes the literate-nav SUMMARY.md from what exists. Nothing here knows MkDocs beyond `open_file`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from reportgen.analysis.document import SCHEMA_VERSION
from reportgen.errors import UserError
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
from reportgen.render.load import PublishedExperiment, load_experiment
from reportgen.render.page import Page
from reportgen.render.paths import PathShortener
from reportgen.store import layout
from reportgen.store.freshness import stale_reason

# mike sets this while it builds a version; without it the site has no versions to select
# (docs/hooks/reportgen_hooks.py drops Material's version selector).
MIKE_VERSION_VAR = "MIKE_DOCS_VERSION"
OpenFile = Callable[..., IO]


@dataclass(frozen=True)
class SiteOptions:
    """Switches of the report part of the site (mkdocs.yml `extra.reportgen`, or env)."""

    svg_fallback: bool = True
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


def require_current(exp_dir: Path, runs_root: Path) -> None:
    """Stop the build when an experiment's analysis.json is missing, of another schema or older
    than its runs: the site renders what `reportgen analyze` wrote and never writes runs/ itself."""
    why = stale_reason(exp_dir, SCHEMA_VERSION)
    if why is not None:
        runs_opt = "" if Path(runs_root).resolve() == Path("runs").resolve() else f" --runs {runs_root}"
        raise UserError(
            f"{exp_dir / layout.ANALYSIS}: {why}; run `reportgen analyze {exp_dir.name}{runs_opt}`, then build again"
        )


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


def summary(
    pages_by_exp: Sequence[tuple[str, Sequence[Page]]],
    docs: Sequence[tuple[str, str]],
    history: Sequence[Page] = (),
) -> str:
    """The literate-nav SUMMARY.md: home, reports (from what exists), then the project docs.

    Built with mkdocs_gen_files.Nav (titles as a path, a section's own page as its link). Nav
    merges entries by title, so an experiment whose title another already has gets its folder
    name appended rather than being merged into the other's section.
    """
    from mkdocs_gen_files.nav import Nav

    nav = Nav()
    nav["Home"] = "index.md"
    nav["Reports"] = "reports/index.md"
    used: set[str] = set()
    for name, pages in pages_by_exp:
        main, *rest = pages
        title = _nav_text(main.nav)
        if title in used:
            title = f"{title} ({_nav_text(name)})"
        used.add(title)
        nav["Reports", title] = main.path
        for p in rest:
            nav["Reports", title, _nav_text(p.nav)] = p.path
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


def refuse_hidden_docs(pages: Sequence[Page], docs_dir: Path | None, *, extends: Sequence[str] = ()) -> None:
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


def mentions(docs_dir: Path | None, exclude: Sequence[str], experiment: str) -> list[tuple[str, str]]:
    """(path, title) of the documentation pages that write about `experiment` (name its folder
    `runs/<experiment>/`): the experiment page links them from its workload line."""
    if docs_dir is None:
        return []
    needle = f"runs/{experiment}/"
    out = []
    for path, title in project_docs(docs_dir, exclude):
        text = (Path(docs_dir) / path).read_text(encoding="utf-8", errors="replace")
        prose = _FENCED.sub("", text)  # a command in an example names the folder without being about it
        if needle in prose and not path.startswith("formats/"):
            out.append((path, title))
    return out


_FENCED = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.M | re.S)


CHARTS_SIDECAR = ".charts.json"  # "<page>.charts.json" next to "<page>.md": its charts' SVG, read by docs/hooks
CHART_SLOT = re.compile(r'(<div class="rg-svg" data-chart="([^"]*)"[^>]*>)</div>')


def fill_charts(html: str, svgs: dict[str, str]) -> str:
    """The page's HTML with each chart's placeholder (blocks.chart) holding its SVG.

    The SVG travels in a sidecar file and is put into the final HTML by the build hook
    (docs/hooks/reportgen_hooks.py, `on_post_page`): a chart is 20-300 KB of markup that
    Python-Markdown, Material's search indexer and Jinja would otherwise each walk.
    """
    return CHART_SLOT.sub(lambda m: m.group(1) + svgs.get(m.group(2), "") + "</div>", html)


def charts_sidecar(page_path: str) -> str:
    return page_path[: -len(".md")] + CHARTS_SIDECAR if page_path.endswith(".md") else page_path + CHARTS_SIDECAR


def render_svgs(pages: Sequence[Page], cache: Path | None) -> dict[tuple[str, str], str]:
    """Vega's SVG of every chart of `pages`, keyed by (page path, chart name)."""
    return chart_svg.render_all([((p.path, name), spec) for p in pages for name, spec in p.charts.items()], cache)


def write_page(
    page: Page, open_file: OpenFile, *, svg: bool, cache: Path | None, svgs: dict[tuple[str, str], str] | None = None
) -> None:
    """The page's Markdown, its charts' inline SVG (the sidecar), its files and, with `svg`, each
    chart as a standalone SVG file next to it."""
    folder = page.path.rsplit("/", 1)[0]
    with open_file(page.path, "w", encoding="utf-8") as fh:
        # The full title (it names the experiment) for the browser tab and search results; the
        # navigation shows the page's short nav title (SUMMARY.md).
        fh.write(f"---\ntitle: {json.dumps(page.title, ensure_ascii=False)}\n---\n\n{page.markdown}")
    drawn = {
        name: svgs[(page.path, name)] if svgs and (page.path, name) in svgs else chart_svg.render(spec, cache)
        for name, spec in page.charts.items()
    }
    if drawn:
        with open_file(charts_sidecar(page.path), "w", encoding="utf-8") as fh:
            inline = {name: chart_svg.inline_cached(text, name, cache) for name, text in drawn.items()}
            json.dump(inline, fh, ensure_ascii=False, separators=(",", ":"))
    for name, data in page.files.items():
        with open_file(f"{folder}/{name}", "wb") as fh:
            fh.write(data)
    if svg:
        for name, text in drawn.items():
            with open_file(f"{folder}/{name}.svg", "wb") as fh:
                fh.write(text.encode())


def generate(runs_root: Path, *, open_file: OpenFile, options: SiteOptions = SiteOptions()) -> list[Page]:
    """Render every experiment under `runs_root` into the site; returns the pages written."""
    runs_root = Path(runs_root)
    cache = options.cache_dir if options.cache_dir is not None else layout.default_cache()
    shorten = PathShortener.for_repo(options.repo_root, enabled=options.shorten_paths)
    chart_spec.set_template_store(cache / "templates")
    experiments: list[PublishedExperiment] = []
    for exp_dir in layout.iter_experiments(runs_root):
        require_current(exp_dir, runs_root)
        experiments.append(load_experiment(exp_dir, shorten=shorten))
    written: list[Page] = []
    per_exp: list[tuple[str, list[Page]]] = []
    # The history is computed here from what was loaded, never read from a file (docs/performance-history.md).
    series = history_page.history_of(experiments)
    paired = history_page.paired_of(experiments)
    vs_lines = history_page.vs_history_lines(paired, experiments)
    for exp in experiments:
        line = vs_lines.get(exp.name, "")
        about = mentions(options.docs_dir, options.exclude_docs, exp.name)
        pages = render_experiment(exp, svg=options.svg_fallback, history=line, docs=about)
        per_exp.append((exp.name, pages))
        written += pages
    history = history_page.render_all(
        series, known={e.name for e in experiments}, svg=options.svg_fallback, paired=paired
    ) + bisect_page.pages(runs_root)
    written += history
    home = home_page.render(experiments)
    written.insert(0, home)
    index = Path(options.docs_dir) / "index.md" if options.docs_dir is not None else None
    front = home_page.home(index.read_text(encoding="utf-8"), experiments) if index and index.is_file() else None
    if front is not None:
        written.insert(0, front)
    refuse_hidden_docs(written, options.docs_dir, extends=[front.path] if front is not None else [])
    svgs = render_svgs(written, cache)
    for page in written:
        write_page(page, open_file, svg=options.svg_fallback, cache=cache, svgs=svgs)
    with open_file("SUMMARY.md", "w", encoding="utf-8") as fh:
        fh.write(summary(per_exp, project_docs(options.docs_dir, options.exclude_docs), history))
    return written
