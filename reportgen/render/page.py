"""The render stage's output unit: one page's Markdown plus the files that sit next to it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

RESERVED_PAGES = ("rollback", "provenance")


@dataclass(frozen=True)
class Page:
    """`path` is relative to the docs root, e.g. "reports/grpo-offload/A2/index.md".

    `charts` maps a chart name to its Vega-Lite spec (drawn as SVG at build time and put inline
    in the page, render/chart_svg.py; with the site's `svg_fallback`, also `<name>.svg` next to it); `files` are extra files next to the page,
    `copies` files of runs/ copied next to it as they are (profiler traces: megabytes, never held in memory). The
    navigation shows `nav_title` (a few words); search results and the browser tab show `title`,
    which names the experiment, so three experiments' "A1" pages are told apart.
    """

    path: str
    title: str
    markdown: str
    charts: dict[str, dict] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    copies: dict[str, Path] = field(default_factory=dict)
    nav_title: str | None = None  # a short title for the navigation; `title` (full) is searched

    @property
    def nav(self) -> str:
        return self.nav_title or self.title


def candidate_slug(candidate: str) -> str:
    """Folder of a candidate's write-up; ids that collide with fixed pages get a prefix."""
    return f"candidate-{candidate}" if candidate in RESERVED_PAGES or candidate == "charts" else candidate


def experiment_base(experiment: str) -> str:
    return f"reports/{experiment}"
