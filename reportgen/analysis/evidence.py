"""Gather the evidence of one experiment's comparisons from its runs (pure).

Part of reportgen.analysis, between the runs' data (inputs.StoredRun) and the decision
(decision.py): which runs count (finished, complete), which are pending, the windows, each run's
figure (runlevel.RunFigure), the first failure, guardrails and same-work findings, and every
metric's run-level change. report.py assembles the document from what this module returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reportgen import vocab
from reportgen.analysis import document as doc
from reportgen.analysis import guardrails as gr
from reportgen.analysis import runlevel, same_work
from reportgen.analysis.decision import Failure
from reportgen.analysis.inputs import argv_value
from reportgen.analysis.interval import arm_statistic, ratio_interval
from reportgen.analysis.stats import change
from reportgen.specfile.model import Spec
from reportgen.store.run import StoredRun
from reportgen.vocab import FORMAL, LOWER, METRICS, Status

Windows = list[tuple[str, int, int]]
UNFINISHED = (Status.INTERRUPTED, Status.RUNNING)
STILL_RUNNING = "still marked running"  # how a pending run left `running` is named
PHASE_SUFFIX = "_time"
NOT_PER_STEP = (vocab.INIT_ACTOR_TIME,)  # logged once, at start-up


def windows_of(spec: Spec, expected: int | None, runs: Sequence[StoredRun]) -> Windows:
    """The spec's windows; without them one window from the end of warm-up to the last step."""
    a = spec.analysis
    if a.windows:
        return [(w.name, w.start, w.end) for w in a.windows]
    last = (
        (expected - 1)
        if expected
        else max((int(r.steps.index.max()) for r in runs if not r.steps.empty), default=a.warmup_steps)
    )
    return [("W1", a.warmup_steps, max(a.warmup_steps, last))]


def expected_steps(spec: Spec, runs: Sequence[StoredRun]) -> int | None:
    if spec.workload.steps:
        return int(spec.workload.steps)
    for r in runs:
        v = argv_value(r.argv, spec.workload.steps_flag)
        if v is not None:
            try:
                return int(float(v))
            except ValueError:
                pass
    return None


def pending_text(runs: Sequence[StoredRun], expected: int | None) -> str:
    """ "A1/2 interrupted at step 12/48, baseline/2 still marked running": what resuming will redo."""

    def one(r: StoredRun) -> str:
        where = f" at step {r.steps_completed}/{expected}" if expected and r.steps_completed else ""
        state = "interrupted" if r.status == Status.INTERRUPTED else STILL_RUNNING
        return f"{r.rel} {state}{where}"

    return ", ".join(one(r) for r in runs)


def split_finished(runs: Sequence[StoredRun]) -> tuple[list[StoredRun], list[StoredRun]]:
    """(finished, unfinished) formal runs: a resumed campaign redoes the unfinished ones."""
    return [r for r in runs if r.status not in UNFINISHED], [r for r in runs if r.status in UNFINISHED]


def stats_runs(runs: Sequence[StoredRun]) -> list[StoredRun]:
    """Complete formal runs; if none completed, the finished ones (a failed run's partial data,
    shown as such). Unfinished runs never: resuming redoes them, their figures are not the arm's."""
    done = [r for r in runs if r.status == Status.COMPLETE]
    return done or [r for r in runs if r.status not in UNFINISHED]


def segments(runs: Sequence[StoredRun], key: str, windows: Windows) -> list[list[np.ndarray]]:
    return [[np.asarray(r.series(key, s, e), dtype=float) for _, s, e in windows] for r in runs]


def run_figure(r: StoredRun, key: str, windows: Windows) -> runlevel.RunFigure | None:
    """A complete run's figure of `key` (mean of its window means); None when a window has no
    finite value or the figure is not positive (no log ratio exists)."""
    means = r.window_means(key, windows)
    if means is None:
        return None
    value = float(np.mean(means))
    if not np.isfinite(value) or value <= 0:
        return None
    fp = r.manifest.fingerprint_id
    return runlevel.RunFigure(
        r.arm, r.repeat, r.rel, value, means, r.manifest.started_utc, machine=fp[:12] if fp else None
    )


def figures(runs: Sequence[StoredRun], key: str, windows: Windows) -> dict[int, runlevel.RunFigure]:
    """repeat -> figure of every complete run that has one."""
    out = {}
    for r in runs:
        if r.status == Status.COMPLETE and (f := run_figure(r, key, windows)) is not None:
            out[r.repeat] = f
    return out


def first_failure(candidate: str, c_runs: Sequence[StoredRun], b_runs: Sequence[StoredRun]) -> Failure | None:
    """The first failure named, the arm it happened in and whether it was an OOM: the next step
    fixes and re-runs that arm (a baseline's OOM is not the candidate's to fix)."""
    for arm, label, runs in ((candidate, "", c_runs), (vocab.BASELINE, "baseline: ", b_runs)):
        failed = next(((r, w) for r in runs if (w := gr.describe_failure(r))), None)
        if failed:
            run, why = failed
            event = gr.failure_event(run)
            return Failure(f"{label}{why}", arm, event is not None and event.kind == vocab.OOM)
    return None


def label_of(key: str) -> tuple[str, str, doc.Direction | None]:
    """Title, unit and better direction of a metric key, from the vocabulary when it is there."""
    if key in same_work.DERIVED:
        return same_work.DERIVED[key]  # type: ignore[return-value]
    m = METRICS.get(key)
    if m is not None:
        return m.title, m.unit, m.direction
    name = key.split("/", 1)[-1].replace("_", " ")
    return (name, "s", LOWER) if key.endswith(PHASE_SUFFIX) else (name, "", None)


def metric_change_of(
    key: str,
    *,
    better: doc.Direction | None,
    against: str,
    reference: float | None = None,
    candidate: float | None = None,
    interval: doc.Interval | None = None,
) -> doc.MetricChange:
    """The document's change of `key`: its label and unit from the vocabulary (label_of), the
    change computed from the two unrounded values, so no caller states one that disagrees with them.
    `better` is the caller's: the primary metric's is the spec's `direction`, which may override the vocabulary."""
    label, unit, _ = label_of(key)
    return doc.MetricChange(
        metric=key,
        label=label,
        unit=unit,
        better=better,
        against=against,
        reference=reference,
        candidate=candidate,
        change=change(reference, candidate),
        interval=interval,
    )


def phase_keys(runs: Sequence[StoredRun]) -> list[str]:
    """Per-step phase timers logged by every one of `runs` (perf/*_time), step time first."""
    if not runs:
        return []
    common = set.intersection(*(set(map(str, r.steps.columns)) for r in runs))
    keys = sorted(
        k for k in common if k.startswith(vocab.PERF_PREFIX) and k.endswith(PHASE_SUFFIX) and k not in NOT_PER_STEP
    )
    first = [k for k in (vocab.STEP_TIME, vocab.ACTOR_TRAIN_TIME) if k in keys]
    return first + [k for k in keys if k not in first]


@dataclass(frozen=True)
class Campaign:
    """What every comparison of one experiment shares."""

    spec: Spec
    windows: Windows
    design: doc.Design
    formal: Mapping[str, Sequence[StoredRun]]  # arm -> formal runs

    def complete(self, arm: str) -> list[StoredRun]:
        return [r for r in self.formal.get(arm, []) if r.status == Status.COMPLETE]

    def pool(self, key: str) -> dict[str, dict[int, runlevel.RunFigure]]:
        """Every formal arm's complete runs' figures of `key`: the runs the variance is borrowed from."""
        return {arm: figures(runs, key, self.windows) for arm, runs in self.formal.items()}

    def compare(
        self, key: str, reference: str, ref: Sequence[StoredRun], cand: Sequence[StoredRun], *, higher: bool
    ) -> doc.RunLevel:
        """`key` of `cand` against `ref` at the run level, pair by pair."""
        return runlevel.compare(
            figures(ref, key, self.windows),
            figures(cand, key, self.windows),
            reference=reference,
            candidate=cand[0].arm if cand else "",
            metric=key,
            design=self.design,
            higher=higher,
            n_windows=len(self.windows),
            pool=self.pool(key),
        )

    def within_run(self, key: str, ref: Sequence[StoredRun], cand: Sequence[StoredRun]) -> doc.Interval:
        """The diagnostic interval from the steps' own noise (the spec's `method`)."""
        a = self.spec.analysis
        iv = ratio_interval(
            segments(ref, key, self.windows),
            segments(cand, key, self.windows),
            method=a.method,
            confidence=a.confidence,
            seed=a.seed,
        )
        return iv.model_copy(
            update={
                "method": f"{iv.method}, within runs",
                "warnings": [*iv.warnings, "from the steps' own noise: run-to-run variation is not in it (diagnostic)"],
            }
        )

    def metric_change(
        self, key: str, reference: str, ref: Sequence[StoredRun], cand: Sequence[StoredRun]
    ) -> doc.MetricChange | None:
        """`key` of the candidate against a reference arm: means of window means, their change, and
        the run-level interval (the within-run one, marked so, when fewer than two pairs exist);
        None when neither arm has a value of it inside the windows."""
        rv = arm_statistic(segments(ref, key, self.windows))
        cv = arm_statistic(segments(cand, key, self.windows))
        if rv is None and cv is None:
            return None
        better = label_of(key)[2]
        rl = self.compare(key, reference, ref, cand, higher=better != LOWER)
        iv = rl.interval if len(rl.pairs) >= 2 and rl.interval.low is not None else self.within_run(key, ref, cand)
        return metric_change_of(key, better=better, against=reference, reference=rv, candidate=cv, interval=iv)

    def changes(
        self, keys: Sequence[str], reference: str, ref: Sequence[StoredRun], cand: Sequence[StoredRun]
    ) -> list[doc.MetricChange]:
        out = [self.metric_change(k, reference, ref, cand) for k in keys]
        return [m for m in out if m is not None]


def role_formal(runs: Sequence[StoredRun]) -> dict[str, list[StoredRun]]:
    formal: dict[str, list[StoredRun]] = {}
    for r in runs:
        if r.role == FORMAL:
            formal.setdefault(r.arm, []).append(r)
    return formal
