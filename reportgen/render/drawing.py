"""Pages rendered and charts drawn beside the MkDocs build (render stage; render/site.py drives it).

Most of a cold build is drawing charts (vl_convert: a tenth of a second and more each, a dozen and
more a report) and rendering the reports that changed; MkDocs' own work (Markdown, the theme, the
search index) is one process' work, page after page. So the site renders each changed experiment
in a worker process, and hands the charts to draw to the workers too without waiting for them:
MkDocs converts and lays out the pages meanwhile, and the hook (docs/hooks/reportgen_hooks.py)
waits for a page's charts only when it puts them into its HTML (`wait`); `finish` waits for the
rest when the build ends. With one or two reports to render (a rebuild after a change), threads of
the build's own process draw, in the same way.

The workers are started fresh (spawn), never forked: the build's process may already hold
vl_convert's renderer, whose native threads a fork would copy mid-work (a worker then hangs); what
they return (pages, drawing jobs) is plain data.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reportgen.render import chart_spec
from reportgen.render.chart_svg import DrawJob

PROCESSES_FROM = 4  # reports to render, from which worker processes pay their start-up


def _cores() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


def _init(cache: Path) -> None:
    chart_spec.set_template_store(cache / chart_spec.TEMPLATE_FOLDER)


def _make(jobs: Sequence[DrawJob]) -> None:
    for job in jobs:
        job.make()


class Drawing:
    """The build's workers and the charts they are drawing (by the path of the page's copy)."""

    def __init__(self) -> None:
        self.executor: Executor | None = None
        self.pending: dict[Path, Future[None]] = {}

    def start(self, cache: Path, reports: int) -> Executor:
        """Workers for `reports` reports to render: processes when there are many, else threads."""
        self.finish()
        workers = _cores()
        if reports >= PROCESSES_FROM and workers > 1:
            ctx = multiprocessing.get_context("spawn")
            self.executor = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(cache,))
        else:
            self.executor = ThreadPoolExecutor(max(2, workers))
        return self.executor

    def ensure(self, cache: Path, reports: int) -> None:
        """As `start`, unless workers of the kind `reports` calls for are already running: the
        build starts them before it knows how many reports it renders (while it reads the runs
        folder, their start-up is paid beside it) and asks again once it knows."""
        processes = isinstance(self.executor, ProcessPoolExecutor)
        if self.executor is None or (not processes and reports >= PROCESSES_FROM and _cores() > 1):
            self.start(cache, reports)

    def map(self, fn: Callable[..., Any], *args: Iterable[Any]) -> Iterable[Any]:
        """`fn` over `args` on the workers, results in order (rendering: what the pages need now)."""
        if self.executor is None:
            return map(fn, *args)
        return self.executor.map(fn, *args)

    def draw(self, jobs: Sequence[DrawJob]) -> None:
        """Draw `jobs` on the workers without waiting (one task for all of them: one report's)."""
        jobs = [j for j in jobs if j.drawn.inline not in self.pending]
        if not jobs:
            return
        if self.executor is None:
            _make(jobs)
            return
        future = self.executor.submit(_make, jobs)
        for job in jobs:
            self.pending[job.drawn.inline] = future

    def wait(self, paths: Iterable[Path | str]) -> None:
        """Until the charts at `paths` are drawn (a worker's error raised here)."""
        for path in paths:
            future = self.pending.get(Path(path))
            if future is not None:
                future.result()

    def finish(self) -> None:
        """Until every chart is drawn; the workers stop."""
        try:
            for future in list(self.pending.values()):
                future.result()
        finally:
            self.pending.clear()
            if self.executor is not None:
                self.executor.shutdown(wait=True)
                self.executor = None


DRAWING = Drawing()  # the build's (one build at a time in a process: `mkdocs build`, each `mkdocs serve` rebuild)
