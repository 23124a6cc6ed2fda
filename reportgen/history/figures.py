"""Each run's history points: its figures of the primary metric, step time and peak memory, read
from analysis.json (pure; part of reportgen.history).

Input is an experiment as read (`history.experiment.LoadedExperiment`, by the history's store or
the site's loader); only its typed analysis document is read: each complete formal run's figures,
commit and machine class are computed once, by `reportgen analyze` (analysis/run_figures.py, in
`arms[].runs[]`), and the history never opens a run's tables. Never logs.
"""

from __future__ import annotations

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument
from reportgen.history.experiment import LoadedExperiment
from reportgen.history.model import Point, SeriesBase
from reportgen.vocab import LOWER, STEP_TIME


def setup(doc: AnalysisDocument) -> str:
    """The steps and windows a run-level figure is over, in words."""
    s = doc.settings
    windows = ", ".join(f"{w.start}-{w.end}" for w in s.windows)
    steps = f"{s.steps_expected} steps; " if s.steps_expected else ""
    return f"{steps}windows {windows}"


def series_of(exp: LoadedExperiment, machine_id: str | None) -> SeriesBase:
    """The series part of every history row of `exp` (history.parquet's points and the paired
    points alike): its recipe, profile, machine class and setup, with `machine_id` as its class_id."""
    doc = exp.analysis
    return SeriesBase(
        recipe=exp.recipe,
        profile=doc.experiment.profile,
        machine_class=doc.machine.class_name(),
        class_id=machine_id,
        setup=setup(doc),
    )


def points(exp: LoadedExperiment) -> list[Point]:
    """Every complete formal run's points: the primary metric, step time and peak memory, each the
    figure analysis.json stores for the run (`runs[].figures`), with its within-run interval.
    Failed, interrupted and profiler runs have none: their figures measure something else."""
    doc = exp.analysis
    if not doc.settings.windows:
        return []
    series = series_of(exp, None)
    primary = doc.settings.primary
    kinds = {
        STEP_TIME: (vocab.metric(STEP_TIME), LOWER, False),
        vocab.PEAK_GPU_MEMORY: (
            vocab.metric(vocab.PEAK_GPU_MEMORY),
            vocab.metric(vocab.PEAK_GPU_MEMORY).direction,
            False,
        ),
        primary.key: (vocab.metric(primary.key), primary.direction, True),
    }
    runs = sorted(
        ((arm.id, run) for arm in doc.arms for run in arm.runs),
        key=lambda ar: (ar[0] != vocab.BASELINE, ar[0], ar[1].repeat),  # store.layout.iter_runs' order
    )
    out: list[Point] = []
    for arm_id, run in runs:
        if run.role != vocab.FORMAL or run.status != vocab.Status.COMPLETE:
            continue
        head = {
            **series.model_dump(),
            "class_id": run.machine_class,
            "experiment": exp.name,
            "arm": arm_id,
            "run": run.path,
            "commit": run.commit,
            "dirty": run.dirty,
            "started_utc": run.started_utc,
        }
        for fig in run.figures:
            if fig.metric not in kinds:
                continue
            metric, better, is_primary = kinds[fig.metric]
            row = {"metric": fig.metric, "primary": is_primary, "label": metric.title, "unit": metric.unit}
            row |= {"better": better, "value": fig.value, "low": fig.low, "high": fig.high}
            row |= {"confidence": fig.confidence, "method": fig.method, "n": fig.n}
            out.append(Point.model_validate({**head, **row}))
    return out
