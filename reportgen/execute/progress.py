"""The runner's one progress display: arm, repeat, step n of N, latest primary metric, elapsed, ETA.

State (`RunProgress`) is kept apart from rendering. On a terminal it is a Rich progress bar with
log lines printed above it; otherwise (CI, pipes) it prints one plain line per new step. The
console and the clock are injected so tests can drive it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


@dataclass
class RunProgress:
    """What is known about the run in progress."""

    label: str
    total_steps: int | None
    metric_name: str
    started: float
    step: int | None = None  # last step index seen (0-based)
    metric: float | None = None
    history: list[tuple[float, int]] = field(default_factory=list)

    @property
    def done_steps(self) -> int:
        return 0 if self.step is None else self.step + 1

    def eta_s(self, now: float) -> float | None:
        """Remaining seconds from the pace of steps after the first (step 0 carries start-up)."""
        if self.total_steps is None or len(self.history) < 2:
            return None
        (t0, s0), (t1, s1) = self.history[0], self.history[-1]
        if s1 <= s0 or t1 <= t0:
            return None
        per_step = (t1 - t0) / (s1 - s0)
        remaining = max(self.total_steps - self.done_steps, 0)
        return remaining * per_step


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = round(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def format_metric(value: float | None) -> str:
    if value is None:
        return "-"
    if value != value:  # NaN
        return "nan"
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


class ProgressDisplay:
    """Renders `RunProgress`; `live=None` picks a bar on a terminal and plain lines elsewhere."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        live: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal if live is None else live
        self.clock = clock
        self.state: RunProgress | None = None
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> ProgressDisplay:
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]{task.fields[label]}"),
                BarColumn(),
                TextColumn("{task.fields[steps]}"),
                TextColumn("{task.fields[metric]}"),
                TimeElapsedColumn(),
                TextColumn("ETA {task.fields[eta]}"),
                console=self.console,
                transient=False,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    # -- events ------------------------------------------------------------------------------
    def log(self, message: str) -> None:
        self.console.print(message, markup=False, highlight=False)

    def start_run(self, label: str, *, total_steps: int | None, metric_name: str) -> None:
        self.state = RunProgress(label=label, total_steps=total_steps, metric_name=metric_name, started=self.clock())
        if self._progress is not None:
            self._task = self._progress.add_task(
                label, total=total_steps, label=label, steps=self._steps_text(), metric="", eta="?"
            )
        else:
            self.log(f"[{label}] started" + (f", {total_steps} steps" if total_steps else ""))

    def step(self, step: int, metric: float | None) -> None:
        st = self.state
        if st is None or (st.step is not None and step <= st.step):
            return
        now = self.clock()
        st.step = step
        if metric is not None:
            st.metric = metric
        st.history.append((now, step))
        eta = format_duration(st.eta_s(now))
        metric_text = f"{st.metric_name}={format_metric(st.metric)}"
        if self._progress is not None and self._task is not None:
            self._progress.update(
                self._task, completed=st.done_steps, steps=self._steps_text(), metric=metric_text, eta=eta
            )
        else:
            self.log(
                f"[{st.label}] step {self._steps_text()} {metric_text} "
                f"elapsed {format_duration(now - st.started)} eta {eta}"
            )

    def finish_run(self, status: str, detail: str = "") -> None:
        st = self.state
        if st is None:
            return
        elapsed = format_duration(self.clock() - st.started)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, eta="-", steps=f"{self._steps_text()} {status}")
            self._progress.stop_task(self._task)
        self.log(f"[{st.label}] {status} after {elapsed}" + (f": {detail}" if detail else ""))
        self.state = None

    def _steps_text(self) -> str:
        st = self.state
        if st is None:
            return ""
        total = "?" if st.total_steps is None else str(st.total_steps)
        return f"{st.done_steps}/{total}"
