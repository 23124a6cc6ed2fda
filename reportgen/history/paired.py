"""The paired history: each point a small paired campaign of a commit against an anchor commit on
one machine class, chained through bridging campaigns into one series per recipe, profile, machine
class, setup and metric, with its change points (pure; part of reportgen.history).

Why paired: the absolute figure of a run moves 13-19 % between runs on the CPU workload and 5-10 %
between runs and leases on one H200, so a 10 % step in a series of absolute figures is lost in the
noise of the machine. A commit measured beside an anchor in interleaved pairs on one machine
cancels what the machine did to both (docs/performance-history.md has the measured figures).

Chaining: a point measures ln(commit / anchor). The series' root is the anchor of its earliest
campaign. A bridging campaign (old anchor against new anchor) is an edge like any other, so a
point against the new anchor reads ln(commit / root) = ln(commit / new) + ln(new / old), with the
variances added. Every point after a bridge shares the bridge's error: a bridge should be measured
with more pairs than a point (docs/performance-history.md#anchors).

Change points: the detector of changepoints.py on the chained ratios, its thresholds chosen on A/A
series simulated with this project's pair-level noise (scripts/paired_history_eval.py).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument
from reportgen.analysis.inference import se_of_interval, t_interval, z_quantile
from reportgen.history.changepoints import DetectorConfig, Shift, detect
from reportgen.history.experiment import LoadedExperiment
from reportgen.history.figures import series_of
from reportgen.history.paired_model import PairedPoint
from reportgen.vocab import BASELINE, FORMAL, Status

METHOD = "run-level interval of analysis.json (paired t on the pairs' log ratios); se = ln(high/low) / (2 t)"


def arm_commits(exp: LoadedExperiment) -> dict[str, str]:
    """arm -> the one commit every formal run of it names (analysis.json's `runs[].commit`, from
    provenance/git.json), when clean; arms whose runs name several commits, none, or a dirty tree
    are left out."""
    seen: dict[str, set[str | None]] = {}
    for arm in exp.analysis.arms:
        for run in arm.runs:
            if run.role == FORMAL:
                seen.setdefault(arm.id, set()).add(run.commit if not run.dirty else None)
    return {arm: next(iter(c)) for arm, c in seen.items() if len(c) == 1 and None not in c}  # type: ignore[misc]


def standard_error(low: float, high: float, df: float, look_confidence: float) -> float:
    """The standard error of the mean log ratio behind a symmetric (on logs) t interval."""
    return se_of_interval(low, high, df, look_confidence)


def _anchor_value(doc: AnalysisDocument) -> float | None:
    base = next((a for a in doc.arms if a.id == BASELINE), None)
    if base is None:
        return None
    figs = [r.overall for r in base.runs if r.role == FORMAL and r.status == Status.COMPLETE and r.overall]
    figs = [f for f in figs if f is not None and f > 0]
    return math.exp(sum(math.log(f) for f in figs) / len(figs)) if figs else None


def points(exp: LoadedExperiment, shas: Mapping[str, str] | None = None) -> list[PairedPoint]:
    """The paired points of one experiment: one per candidate whose revision differs from the
    baseline's and that edits no flag, with a run-level interval of at least two pairs. `shas`
    (arm -> SHA) defaults to the revisions the arms ran at (analysis.json `arms[].revision`, else
    revisions.json), else the commits the arms' runs name."""
    doc = exp.analysis
    if shas is None:
        recorded = {a.id: a.revision for a in doc.arms if a.revision}
        shas = recorded or (exp.shas if exp.shas is not None else arm_commits(exp))
    anchor = shas.get(BASELINE)
    if anchor is None:
        return []
    primary = doc.settings.primary
    metric = vocab.metric(primary.key)
    started = min((r.started_utc for a in doc.arms for r in a.runs if r.started_utc), default=None)
    classes = [r.machine_class for a in doc.arms for r in a.runs if r.role == FORMAL and r.machine_class]
    series = series_of(exp, classes[0] if classes else None)
    out = []
    for comp in doc.comparisons:
        commit = shas.get(comp.candidate)
        iv = comp.run_level.interval
        if commit is None or commit == anchor or iv.estimate is None or iv.low is None or iv.high is None:
            continue
        if iv.df is None or iv.pairs is None or iv.pairs < 2:
            continue
        if comp.changed_flags:  # flag edits on top of the revision: not the commit's code alone
            continue
        se = standard_error(iv.low, iv.high, iv.df, iv.look_confidence or iv.confidence)
        if not math.isfinite(se):
            continue
        out.append(
            PairedPoint(
                **series.model_dump(),
                metric=primary.key,
                label=metric.title,
                better=primary.direction,
                experiment=exp.name,
                arm=comp.candidate,
                commit=commit,
                anchor=anchor,
                started_utc=started,
                log_ratio=math.log(iv.estimate),
                se=se,
                df=iv.df,
                pairs=iv.pairs,
                verdict=comp.verdict.status,
                anchor_value=_anchor_value(doc),
                unit=metric.unit,
                method=METHOD,
            )
        )
    return out


# ---------------------------------------------------------------- series


@dataclass(frozen=True)
class PairedKey:
    recipe: str
    profile: str
    machine_class: str
    class_id: str
    setup: str
    metric: str


@dataclass(frozen=True)
class ChainedPoint:
    """One commit of the series: ln(commit / root) through the edges from the root, with its
    variance (the measurement's plus every bridge's on the way)."""

    commit: str
    log_ratio: float
    se: float
    via: tuple[str, ...]  # the anchors on the way from the root, root first
    measured: tuple[PairedPoint, ...]  # the campaigns of this commit against its nearest anchor

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """The ratio's interval at `confidence`: normal on the log scale with the chain's standard
        error (the measurement's and every bridge's, added)."""
        half = z_quantile(confidence) * self.se
        return math.exp(self.log_ratio - half), math.exp(self.log_ratio + half)

    @property
    def experiment(self) -> str:
        return self.measured[-1].experiment


@dataclass(frozen=True)
class Alarm:
    """A change of level in the series: `before` is the last commit at the old level, `after` the
    first at the new; the culprit is in (before, after], which `reportgen bisect` searches."""

    index: int
    before: ChainedPoint
    after: ChainedPoint
    shift: Shift
    worse: bool
    method: str

    def bisect_command(self, spec: str = "") -> str:
        tail = f" {spec}" if spec else ""
        return f"reportgen bisect {self.before.commit} {self.after.commit}{tail}"


@dataclass(frozen=True)
class PairedSeries:
    key: PairedKey
    label: str
    unit: str
    better: str
    root: str  # the anchor every point is chained to
    points: tuple[ChainedPoint, ...]  # in commit order
    alarms: tuple[Alarm, ...]
    unreached: tuple[PairedPoint, ...]  # campaigns against an anchor no bridge links to the root


def _combine(edges: Sequence[PairedPoint]) -> tuple[float, float]:
    """Inverse-variance mean of several campaigns of one (anchor, commit) edge: (log ratio, se)."""
    w = [1.0 / (p.se**2) if p.se > 0 else 1e12 for p in edges]
    total = sum(w)
    return sum(wi * p.log_ratio for wi, p in zip(w, edges, strict=True)) / total, math.sqrt(1.0 / total)


def chain(pts: Sequence[PairedPoint], root: str) -> tuple[list[ChainedPoint], list[PairedPoint]]:
    """Every commit reachable from `root` through measured edges (fewest bridges first), as
    ln(commit / root); the points no path reaches."""
    edges: dict[tuple[str, str], list[PairedPoint]] = {}
    for p in pts:
        edges.setdefault((p.anchor, p.commit), []).append(p)
    fwd: dict[str, list[str]] = {}
    for a, c in edges:
        fwd.setdefault(a, []).append(c)
    value: dict[str, tuple[float, float, tuple[str, ...]]] = {root: (0.0, 0.0, ())}
    queue = deque([root])
    while queue:
        a = queue.popleft()
        v, var, via = value[a]
        for c in sorted(fwd.get(a, [])):
            if c in value:
                continue
            lr, se = _combine(edges[(a, c)])
            value[c] = (v + lr, var + se**2, (*via, a))
            queue.append(c)
    chained = [
        ChainedPoint(c, v, math.sqrt(var), via, tuple(edges[(via[-1], c)]))
        for c, (v, var, via) in value.items()
        if c != root
    ]
    unreached = [p for p in pts if p.anchor not in value]
    return chained, unreached


def _order(point: ChainedPoint, commit_order: Mapping[str, int] | None) -> tuple[int, str]:
    started = min((m.started_utc or "" for m in point.measured), default="")
    if commit_order is None:
        return (0, started)
    return (commit_order.get(point.commit, len(commit_order)), started)


def _bridges(chained: Sequence[ChainedPoint], anchors: set[str]) -> dict[str, float]:
    """Every bridge of the series (an anchor other than the root, measured as a point) and the
    variance of its measurement: the error every point chained through it shares."""
    return {c.commit: _combine(c.measured)[1] ** 2 for c in chained if c.commit in anchors}


def _through(point: ChainedPoint, bridge: str) -> bool:
    return bridge == point.commit or bridge in point.via


def _across_bridge(
    s: Shift, chained: Sequence[ChainedPoint], anchors: set[str], config: DetectorConfig
) -> Shift | None:
    """A change whose segments hold different shares of points chained through a bridge is tested
    again with that bridge's variance added: a bridge's error moves every point after it alike,
    which the segments' scatter cannot see. For the difference of the segments' means it adds
    (share after - share before)^2 x the bridge's variance, summed over the bridges.
    (scripts/paired_history_eval.py --bridge-at measures the false alarms left.) None: the change
    is within what the bridges explain."""
    before = chained[s.index - s.n_before : s.index]
    after = chained[s.index : s.index + s.n_after]
    extra = 0.0
    for bridge, var in _bridges(chained, anchors).items():
        f_before = sum(_through(c, bridge) for c in before) / len(before)
        f_after = sum(_through(c, bridge) for c in after) / len(after)
        extra += (f_after - f_before) ** 2 * var
    if extra <= 0:
        return s
    df = s.n_before + s.n_after - 2
    d = math.log(s.ratio)
    measured = se_of_interval(s.low, s.high, df, s.confidence)
    se = math.sqrt((measured if math.isfinite(measured) else 0.0) ** 2 + extra)
    wider = t_interval(d, se, df, s.confidence)
    if wider.p >= config.alpha:
        return None
    return Shift(
        s.index, s.ratio, math.exp(wider.low), math.exp(wider.high), s.confidence, wider.p, s.n_before, s.n_after
    )


DETECTOR = DetectorConfig()
"""The paired series' detector: changepoints.py's, at the thresholds whose false-alarm rate and
detection scripts/paired_history_eval.py measured on A/A series of real pair-level noise."""


def build(
    pts: Sequence[PairedPoint],
    *,
    commit_order: Mapping[str, int] | None = None,
    config: DetectorConfig = DETECTOR,
) -> list[PairedSeries]:
    """Every paired series in `pts`: chained to the anchor of its earliest campaign, in commit order
    (given `commit_order`, e.g. from `git rev-list --topo-order`) or by when each was measured."""
    groups: dict[PairedKey, list[PairedPoint]] = {}
    for p in pts:
        key = PairedKey(p.recipe, p.profile or "", p.machine_class, p.class_id or "", p.setup, p.metric)
        groups.setdefault(key, []).append(p)
    out = []
    for key in sorted(groups, key=lambda k: (k.recipe, k.profile, k.machine_class, k.class_id, k.setup, k.metric)):
        group = groups[key]
        first = min(group, key=lambda p: p.started_utc or "")
        chained, unreached = chain(group, first.anchor)
        chained.sort(key=lambda c: _order(c, commit_order))
        alarms = []
        ratios = [c.ratio for c in chained]
        for found in detect(ratios, config):
            s = _across_bridge(found, chained, {p.anchor for p in group}, config)
            if s is None:
                continue
            worse = (s.ratio < 1.0) == (first.better == vocab.HIGHER)
            alarms.append(Alarm(s.index, chained[s.index - 1], chained[s.index], s, worse, config.method()))
        out.append(
            PairedSeries(
                key,
                first.label,
                first.unit,
                first.better,
                first.anchor,
                tuple(chained),
                tuple(alarms),
                tuple(unreached),
            )
        )
    return out


@dataclass(frozen=True)
class VsHistory:
    """An experiment's place in the paired history: its own point (a paired campaign), or the
    point of its baseline's commit, or none (with the command that would add one)."""

    series: PairedSeries | None
    point: ChainedPoint | None
    commit: str | None  # the commit looked up
    own: bool  # the experiment is itself a campaign of the series


def vs_history(series: Sequence[PairedSeries], experiment: str, baseline_commit: str | None) -> VsHistory:
    for s in series:
        for c in s.points:
            if any(m.experiment == experiment for m in c.measured):
                return VsHistory(s, c, c.commit, True)
    for s in series:
        for c in s.points:
            if baseline_commit and c.commit == baseline_commit:
                return VsHistory(s, c, c.commit, False)
        if baseline_commit and baseline_commit == s.root:
            return VsHistory(s, None, baseline_commit, False)
    return VsHistory(None, None, baseline_commit, False)
