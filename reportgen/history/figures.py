"""Each run's history points: its figures of the primary metric, step time and peak memory, with
within-run intervals (pure; part of reportgen.history).

Input is an experiment as read (`history.experiment.LoadedExperiment`, by the history's store or
the site's loader): the typed analysis document and, per run, its stored metrics (long form, as metrics.parquet holds them), GPU samples,
manifest and git record. Never logs.

The within-run interval of a run's figure (the mean of its window means) uses the steps' own
noise, autocorrelation included: per window, the flat-top long-run variance of Politis & White
(the analysis' `dependence`, the same estimator that sizes its bootstrap blocks), so var(mean of
window w) = long-run variance / n_w, and the figure's variance is their sum over W^2. It says how
precisely one run measured itself; it leaves out run-to-run and lease-to-lease variation, which
the change-point detector reads from the scatter of the series instead (docs/performance-history.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument, Machine
from reportgen.analysis.gpu import window_span
from reportgen.analysis.interval import dependence
from reportgen.capture.fingerprint import class_id
from reportgen.history.experiment import LoadedExperiment
from reportgen.history.model import Point, SeriesBase
from reportgen.store.models import GitProvenance
from reportgen.store.run import StoredRun
from reportgen.vocab import LOWER, PEAK_GPU_MEMORY, STEP_TIME

Z95 = 1.959963984540054
WITHIN_METHOD = "mean of window means; 95 % interval from each window's flat-top long-run variance (within the run)"
PEAK_METHOD = "max of the 1 Hz GPU samples in the windows' time span, over the GPUs (no interval: a maximum)"


@dataclass(frozen=True)
class Figure:
    value: float
    low: float | None
    high: float | None
    n: int


def machine_class(machine: Machine) -> str:
    """What makes two machines interchangeable for speed: GPU model and count and the driver;
    without GPUs, the CPU model and its cores. Hostnames and GPU serials are left out: two
    leases of one kind of machine are one class (their differences are what the history shows)."""
    gpus = machine.gpus or []
    if gpus:
        names: dict[str, int] = {}
        for g in gpus:
            name = str(g.get("name") or "unknown GPU")
            names[name] = names.get(name, 0) + 1
        text = " + ".join(f"{n} x {name}" for name, n in names.items())
        return f"{text}, driver {machine.driver}" if machine.driver else text
    cpu = machine.cpu_model or "unknown CPU"
    return f"CPU: {cpu}, {machine.cpu_count} cores" if machine.cpu_count else f"CPU: {cpu}"


def setup(doc: AnalysisDocument) -> str:
    """The steps and windows a run-level figure is over, in words."""
    s = doc.settings
    windows = ", ".join(f"{w.start}-{w.end}" for w in s.windows)
    steps = f"{s.steps_expected} steps; " if s.steps_expected else ""
    return f"{steps}windows {windows}"


def within_run(segments: Sequence[np.ndarray]) -> Figure | None:
    """The mean of the window means and its within-run 95 % interval; None when a window is empty."""
    means, variances, n = [], [], 0
    for seg in segments:
        x = np.asarray(seg, dtype=float)
        x = x[np.isfinite(x)]
        if x.size == 0:
            return None
        means.append(float(x.mean()))
        n += int(x.size)
        if x.size < 2:
            variances.append(math.nan)
            continue
        lrv = dependence([x]).spec0 if x.size >= 4 else 0.0
        # The flat-top estimate can come out non-positive on short or anti-correlated windows;
        # then the plain variance of the mean (independent steps) is the honest fallback.
        lrv = lrv if lrv > 0 else float(x.var(ddof=1))
        variances.append(lrv / x.size)
    value = float(np.mean(means))
    if any(math.isnan(v) for v in variances):
        return Figure(value, None, None, n)
    half = Z95 * math.sqrt(sum(variances)) / len(means)
    return Figure(value, value - half, value + half, n)


def _with_keys(run: StoredRun, keys: Sequence[str]) -> StoredRun:
    """The run with only the metrics `keys` (pivoting every key a run logged cost most of the
    history's time: 60 ms a run against 4 for two keys)."""
    m = run.metrics
    return dataclasses.replace(run, metrics=m[m["key"].isin(list(keys))]) if "key" in m else run


def peak_memory(run: StoredRun, first: int, last: int, steps: StoredRun | None = None) -> Figure | None:
    """The run's peak GPU memory (MiB) in the windows' time span, over its GPUs (`steps`: the run
    with its step times, when the caller has it already)."""
    g = run.gpu
    if g.empty or "mem_used_mib" not in g:
        return None
    span = window_span(steps or _with_keys(run, (vocab.STEP_TIME,)), first, last)
    if span is not None:
        g = g[(g["t"] >= span[0]) & (g["t"] <= span[1])]
    values = g["mem_used_mib"].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    return Figure(float(values.max()), None, None, int(values.size))


def series_of(exp: LoadedExperiment, machine_id: str | None) -> SeriesBase:
    """The series part of every history row of `exp` (history.parquet's points and the paired
    points alike): its recipe, profile, machine class and setup, with `machine_id` as its class_id."""
    doc = exp.analysis
    return SeriesBase(
        recipe=exp.recipe,
        profile=doc.experiment.profile,
        machine_class=machine_class(doc.machine),
        class_id=machine_id,
        setup=setup(doc),
    )


def _commit(git: GitProvenance | None) -> tuple[str | None, bool | None]:
    return (git.commit_id, git.dirty) if git is not None else (None, None)


def points(exp: LoadedExperiment) -> list[Point]:
    """Every complete formal run's points: the primary metric, step time and peak memory.

    The primary figure is the one analysis.json stores for the run (`runs[].overall`); its
    interval and the other figures come from the run's stored tables over the same windows.
    Failed, interrupted and profiler runs give no point: their figures measure something else."""
    doc = exp.analysis
    windows = [(w.name, w.start, w.end) for w in doc.settings.windows]
    if not windows:
        return []
    first, last = windows[0][1], windows[-1][2]
    stored = {(a.id, r.repeat): r for a in doc.arms for r in a.runs}
    series = series_of(exp, None)
    primary = doc.settings.primary
    pm, st, peak = (vocab.metric(k) for k in (primary.key, STEP_TIME, PEAK_GPU_MEMORY))
    timed = [(primary.key, pm.title, pm.unit, primary.direction, True)]
    if primary.key != STEP_TIME:
        timed.append((STEP_TIME, st.title, st.unit, LOWER, False))
    out: list[Point] = []
    for run in exp.measured_runs():
        summary = stored.get((run.arm, run.repeat))
        if summary is None or summary.role != vocab.FORMAL or summary.status != vocab.Status.COMPLETE:
            continue
        commit, dirty = _commit(run.git)
        head: dict[str, object] = {
            **series.model_dump(),
            "class_id": class_id(run.manifest.fingerprint.to_dict()) if run.manifest.fingerprint else None,
            "experiment": exp.name,
            "arm": run.arm,
            "run": run.rel,
            "commit": commit,
            "dirty": dirty,
            "started_utc": summary.started_utc,
        }
        steps = _with_keys(run, (primary.key, STEP_TIME))
        for key, label, unit, better, is_primary in timed:
            fig = within_run([np.asarray(steps.series(key, s, e)) for _, s, e in windows])
            if fig is None:
                continue
            value = summary.overall if is_primary and summary.overall is not None else fig.value
            out.append(
                Point.model_validate(
                    {
                        **head,
                        "metric": key,
                        "primary": is_primary,
                        "label": label,
                        "unit": unit,
                        "better": better,
                        "value": value,
                        "low": fig.low,
                        "high": fig.high,
                        "confidence": 0.95 if fig.low is not None else None,
                        "method": WITHIN_METHOD,
                        "n": fig.n,
                    }
                )
            )
        mem = peak_memory(run, first, last, steps)
        if mem is not None:
            out.append(
                Point.model_validate(
                    {
                        **head,
                        "metric": peak.key,
                        "primary": False,
                        "label": peak.title,
                        "unit": peak.unit,
                        "better": peak.direction,
                        "value": mem.value,
                        "method": PEAK_METHOD,
                        "n": mem.n,
                    }
                )
            )
    return out
