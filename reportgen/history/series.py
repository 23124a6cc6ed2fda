"""The machine's health: series of the runs' absolute figures and their shifts (pure; part of
reportgen.history). The absolute figure is not compared across machines or leases any more (the
paired history, paired.py, is what alarms and what "vs history" reads); it shows whether a machine
class measures as it used to.

A series is one arm's figure of one metric for one recipe, profile, machine class and setup
(steps and windows), over commits. Points of different machine classes never share a series:
a two-GPU baseline is not a one-GPU baseline that got faster. The class is the fingerprint's
(`capture.fingerprint.class_id`, the one the Ray executor uses to accept another node), so
a series holds only campaigns on interchangeable hardware.

Two means, each named where it is shown (`RUN_MEAN`, `CAMPAIGN_MEAN`): a run's
figure is the arithmetic mean of its window means (peak memory: the maximum); a campaign's is the
geometric mean of its runs' figures.

The unit a series is made of is the **campaign** (one experiment folder), not the run: runs of
one campaign share a lease, and leases of one kind of machine differ by more than runs of one
lease do (the one-H200 baseline measured 1882, 2091 and 1668 response tokens/s on three leases;
repeats within a lease 5-10 % apart). A campaign point is the geometric mean of its runs' figures, with
a t interval over their logs (or, with one run, that run's within-run interval).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from reportgen import vocab
from reportgen.analysis.inference import mean_interval
from reportgen.history.changepoints import DetectorConfig, Shift, detect
from reportgen.history.model import Point
from reportgen.vocab import gain

RUN_MEAN = "arithmetic mean of the run's window means"
CAMPAIGN_MEAN = "geometric mean of the campaign's runs"


@dataclass(frozen=True)
class HistoryConfig:
    """Thresholds of the history, in one place (docs/performance-history.md)."""

    detector: DetectorConfig = field(default_factory=DetectorConfig)
    confidence: float = 0.95  # of campaign intervals


@dataclass(frozen=True, order=True)
class SeriesKey:
    recipe: str
    profile: str
    machine_class: str
    class_id: str  # capture.fingerprint.class_id; "" when the runs recorded no fingerprint
    setup: str
    arm: str
    metric: str


@dataclass(frozen=True)
class CampaignPoint:
    """One experiment's figure in a series: the geometric mean of its runs' figures."""

    experiment: str
    commit: str | None
    dirty: bool | None
    started_utc: str | None
    runs: tuple[Point, ...]
    value: float
    low: float | None
    high: float | None
    method: str

    @property
    def n_runs(self) -> int:
        return len(self.runs)


@dataclass(frozen=True)
class ChangePoint:
    """A change of level between two consecutive points of a series, blamed on the commits
    after `before.commit` up to and including `after.commit`."""

    index: int  # position of `after` in the series
    before: CampaignPoint
    after: CampaignPoint
    shift: Shift  # the detector's finding: ratio after / before with its interval, p-value, segment sizes
    worse: bool  # a regression for this metric's direction
    method: str

    @property
    def change(self) -> float:
        """Level after / level before - 1, over the neighbouring segments."""
        return self.shift.ratio - 1.0

    @property
    def low(self) -> float:
        return self.shift.low - 1.0

    @property
    def high(self) -> float:
        return self.shift.high - 1.0


@dataclass(frozen=True)
class Series:
    key: SeriesKey
    label: str
    unit: str
    better: str
    primary: bool
    points: tuple[CampaignPoint, ...]
    changes: tuple[ChangePoint, ...]


def _campaign(runs: Sequence[Point], confidence: float) -> CampaignPoint:
    logs = np.log(np.array([p.value for p in runs], dtype=float))
    first = min(runs, key=lambda p: p.started_utc or "")
    value = float(np.exp(logs.mean()))
    low: float | None
    high: float | None
    if logs.size >= 2:
        # On logs, as the analysis treats run figures: the interval of a positive figure stays positive.
        iv = mean_interval(logs, confidence)
        low, high = float(np.exp(iv.low)), float(np.exp(iv.high))
        method = f"geometric mean of {logs.size} runs' figures, t interval over the runs (on logs)"
    else:
        low, high = runs[0].low, runs[0].high
        method = "one run: its within-run interval"
    commits = {p.commit for p in runs}
    commit = first.commit if len(commits) == 1 else None
    dirty = any(p.dirty for p in runs) if any(p.dirty is not None for p in runs) else None
    return CampaignPoint(first.experiment, commit, dirty, first.started_utc, tuple(runs), value, low, high, method)


def _order_key(point: CampaignPoint, commit_order: Mapping[str, int] | None) -> tuple[int, str]:
    if commit_order is None:
        return (0, point.started_utc or "")
    pos = commit_order.get(point.commit or "", len(commit_order))
    return (pos, point.started_utc or "")


def build(
    points: Sequence[Point], config: HistoryConfig = HistoryConfig(), *, commit_order: Mapping[str, int] | None = None
) -> list[Series]:
    """Every series in `points`, its campaigns in order and its change points.

    Order: by when each campaign started, or, given `commit_order` (commit -> position in the
    repository's history, e.g. from `git rev-list --topo-order`), by commit first, so that a
    commit measured late (a backfill) still sits where it was merged."""
    groups: dict[SeriesKey, dict[str, list[Point]]] = {}
    for p in points:
        key = SeriesKey(p.recipe, p.profile or "", p.machine_class, p.class_id or "", p.setup, p.arm, p.metric)
        groups.setdefault(key, {}).setdefault(p.experiment, []).append(p)
    out = []
    for key in sorted(groups, key=_series_sort):
        camps = [_campaign(runs, config.confidence) for runs in groups[key].values()]
        camps.sort(key=lambda c: _order_key(c, commit_order))
        sample = camps[0].runs[0]
        out.append(
            Series(
                key=key,
                label=sample.label,
                unit=sample.unit,
                better=sample.better,
                primary=sample.primary,
                points=tuple(camps),
                changes=tuple(_changes(camps, sample.better, config.detector)),
            )
        )
    return out


def _series_sort(key: SeriesKey) -> tuple:
    # Baseline first, then the other arms; within one, the primary metric, step time, memory.
    metric_rank = 2 if key.metric.startswith("gpu/") else 1 if key.metric == vocab.STEP_TIME else 0
    return (
        key.recipe,
        key.profile,
        key.machine_class,
        key.class_id,
        key.setup,
        key.arm != vocab.BASELINE,
        key.arm,
        metric_rank,
    )


def _changes(camps: Sequence[CampaignPoint], better: str, config: DetectorConfig) -> list[ChangePoint]:
    values = [c.value for c in camps]
    if any(v <= 0 or not math.isfinite(v) for v in values):
        return []
    # No change can be blamed between two campaigns of one commit (or of unknown commits).
    allowed = [
        i > 0 and camps[i].commit is not None and camps[i].commit != camps[i - 1].commit for i in range(len(camps))
    ]
    out = []
    for s in detect(values, config, allowed=allowed):
        out.append(
            ChangePoint(
                index=s.index,
                before=camps[s.index - 1],
                after=camps[s.index],
                shift=s,
                worse=gain(s.ratio, better) < 1.0,
                method=config.method(),
            )
        )
    return out
