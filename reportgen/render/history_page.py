"""The history pages (render stage): one page per recipe with its series per machine class, the
change points marked, each point linking to its experiment page; and the one line "this baseline
vs history" on every experiment page.

Pipeline position: loaded experiments (analysis.json + stored tables) -> reportgen.history (points,
series, change points: pure) -> **render** -> history/<recipe>/index.md. The history is computed
in memory from what the site has already loaded, so the build never writes runs/ and never reads
a history.parquet that could be older than the runs (docs/performance-history.md says why). Charts are
Vega-Lite specs written here by hand (one layered, faceted shape), so no Altair is imported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from reportgen import vocab
from reportgen.history import model
from reportgen.history.figures import points as run_points
from reportgen.history.model import Point
from reportgen.history.paired import (
    DETECTOR,
    Alarm,
    ChainedPoint,
    PairedSeries,
    VsHistory,
    arm_commits,
    vs_history,
)
from reportgen.history.paired import build as build_paired
from reportgen.history.paired import points as paired_points
from reportgen.history.series import (
    CAMPAIGN_MEAN,
    RUN_MEAN,
    ChangePoint,
    HistoryConfig,
    Series,
    SeriesKey,
    build,
)
from reportgen.render import blocks, safe
from reportgen.render.chart_data import csv_text
from reportgen.render.format import fmt_change, fmt_change_interval, fmt_value
from reportgen.render.load import PublishedExperiment
from reportgen.render.page import Page
from reportgen.render.palette import arm_color

INDEX = "history/index.md"
# docs/performance-history.md: how the history is made and read. Not docs/history.md: with directory
# URLs that page and INDEX are both history/, and the generated one would hide it.
DOCS = "performance-history.md"


def recipe_slug(recipe: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", recipe) or "recipe"


def recipe_path(recipe: str) -> str:
    return f"history/{recipe_slug(recipe)}/index.md"


def history_of(experiments: Sequence[PublishedExperiment], config: HistoryConfig = HistoryConfig()) -> list[Series]:
    pts: list[Point] = []
    for exp in experiments:
        pts += run_points(exp)
    return build(pts, config)


# ---------------------------------------------------------------- the recipe page


def _short(commit: str | None) -> str:
    return commit[:7] if commit else "unknown"


def _group_key(key: SeriesKey) -> tuple[str, str, str, str]:
    return (key.profile, key.machine_class, key.class_id, key.setup)


def _exp_link(name: str, known: set[str]) -> str:
    if name in known:
        return f"[{safe.text(name)}](../../reports/{name}/index.md)"
    return safe.code(name)


def _campaign_order(group: Sequence[Series]) -> list[str]:
    """Every experiment of a class group, in the order of its longest series (all share the ordering rule)."""
    order: list[str] = []
    for s in sorted(group, key=lambda s: -len(s.points)):
        for c in s.points:
            if c.experiment not in order:
                # Place it after the last experiment that precedes it in this series.
                before = [p.experiment for p in s.points[: s.points.index(c)] if p.experiment in order]
                at = order.index(before[-1]) + 1 if before else 0
                order.insert(at, c.experiment)
    return order


def _change_rule(kind: str, title: str, xenc: dict) -> dict:
    """The layer that marks a change on a history chart (a change point of the absolute history, an
    alarm of the paired one), drawn the same on both: a red dashed rule at the rows of `kind`."""
    return {
        "transform": [{"filter": f"datum.kind === '{kind}'"}],
        "mark": {"type": "rule", "strokeDash": [5, 3], "color": "#d93025", "strokeWidth": 2},
        "encoding": {
            "x": xenc,
            "tooltip": [{"field": "change", "title": title}, {"field": "commit", "title": "commits"}],
        },
    }


def _interval_rule(points: dict, xenc: dict, color: dict | None = None) -> dict:
    """The layer that draws each point's interval (columns `low` to `high`) as a rule, on both history
    charts; `color` splits it by arm where the chart does."""
    encoding: dict = {"x": xenc, "y": {"field": "low", "type": "quantitative"}, "y2": {"field": "high"}}
    if color is not None:
        encoding["color"] = color
    return {"transform": [points], "mark": {"type": "rule", "strokeWidth": 2, "opacity": 0.6}, "encoding": encoding}


def _chart(group: Sequence[Series], arms: Sequence[str]) -> dict:
    order = _campaign_order(group)
    pos = {e: i for i, e in enumerate(order)}
    commits: dict[int, str] = {}
    metrics: list[str] = []
    cols: dict[str, list] = {
        k: []
        for k in (
            "kind",
            "metric",
            "arm",
            "x",
            "value",
            "low",
            "high",
            "commit",
            "experiment",
            "runs",
            "href",
            "change",
        )
    }

    def row(**kw: object) -> None:
        for k in cols:
            v = kw.get(k)
            cols[k].append(float("nan") if v is None and k in ("value", "low", "high") else ("" if v is None else v))

    for s in group:
        title = f"{s.label} ({s.unit})" if s.unit else s.label
        if title not in metrics:
            metrics.append(title)
        for c in s.points:
            x = pos[c.experiment]
            commits[x] = _short(c.commit)
            row(
                kind="point",
                metric=title,
                arm=s.key.arm,
                x=x,
                value=c.value,
                low=c.low,
                high=c.high,
                commit=_short(c.commit),
                experiment=c.experiment,
                runs=c.n_runs,
                href=f"../../reports/{c.experiment}/",
            )
        for ch in s.changes:
            row(
                kind="change",
                metric=title,
                arm=s.key.arm,
                x=(pos[ch.before.experiment] + pos[ch.after.experiment]) / 2,
                change=f"{s.key.arm}: {fmt_change(ch.change, digits=1)}",
                commit=f"{_short(ch.before.commit)}..{_short(ch.after.commit)}",
            )
    labels = json.dumps({str(i): c for i, c in commits.items()})
    color = {
        "field": "arm",
        "type": "nominal",
        "scale": {"domain": list(arms), "range": [arm_color(a, arms) for a in arms]},
        "legend": {"title": None, "orient": "top"},
    }
    xenc = {
        "field": "x",
        "type": "quantitative",
        "title": "campaigns in commit order (commit under each)",
        "scale": {"domain": [-0.5, max(len(order) - 0.5, 0.5)], "nice": False, "zero": False},
        "axis": {
            "values": list(range(len(order))),
            "labelExpr": f"({labels})[format(datum.value, 'd')] || ''",
            "grid": False,
        },
    }
    point_filter = {"filter": "datum.kind === 'point'"}
    tooltip = [
        {"field": "arm", "type": "nominal"},
        {"field": "experiment", "type": "nominal"},
        {"field": "commit", "type": "nominal"},
        {"field": "runs", "type": "quantitative"},
        {"field": "value", "type": "quantitative", "format": ".4~g"},
        {"field": "low", "type": "quantitative", "format": ".4~g", "title": "interval low"},
        {"field": "high", "type": "quantitative", "format": ".4~g", "title": "interval high"},
    ]
    parse = {"x": "number", "value": "number", "low": "number", "high": "number", "runs": "number"}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"name": "history", "format": {"type": "csv", "parse": parse}},
        "datasets": {"history": csv_text(cols)},
        "facet": {
            "row": {
                "field": "metric",
                "type": "nominal",
                "sort": metrics,
                "title": None,
                "header": {"labelAngle": 0, "labelOrient": "top", "labelAnchor": "start", "labelFontWeight": "bold"},
            }
        },
        "resolve": {"scale": {"y": "independent"}},
        "spec": {
            "width": 640,
            "height": 150,
            "layer": [
                _change_rule("change", "change point", xenc),
                _interval_rule(point_filter, xenc, color=color),
                {
                    "transform": [point_filter],
                    "mark": {"type": "line", "opacity": 0.4},
                    "encoding": {"x": xenc, "y": {"field": "value", "type": "quantitative"}, "color": color},
                },
                {
                    "transform": [point_filter],
                    "mark": {"type": "point", "filled": True, "size": 70, "cursor": "pointer", "opacity": 1},
                    "encoding": {
                        "x": xenc,
                        "y": {"field": "value", "type": "quantitative", "title": None, "scale": {"zero": False}},
                        "color": color,
                        "href": {"field": "href"},
                        "tooltip": tooltip,
                    },
                },
            ],
        },
        "config": {"view": {"stroke": None}, "font": "system-ui, sans-serif"},
    }


def _interval_value(c_value: float, low: float | None, high: float | None, unit: str) -> str:
    half = (high - low) / 2 if low is not None and high is not None else None
    text = fmt_value(c_value, unit=unit, halfwidth=half or None)
    if low is None or high is None or not half:  # no interval, or one of zero width (a maximum that never moved)
        return text
    return f"{text} ({fmt_value(low, halfwidth=half)} to {fmt_value(high, halfwidth=half)})"


def change_text(ch: ChangePoint, s: Series) -> str:
    """ "-10.2 % (95 % CI -13 % to -7 %), a regression, after 4773b89 up to 81f7f03" (plain text)."""
    size = fmt_change_interval(ch.change, ch.low, ch.high, confidence=ch.shift.confidence)
    kind = "a regression" if ch.worse else "an improvement"
    return f"{size}, {kind}, after {_short(ch.before.commit)} up to {_short(ch.after.commit)}"


def _changes_table(group: Sequence[Series], known: set[str]) -> str:
    rows = []
    for s in group:
        for ch in s.changes:
            rows.append(
                [
                    safe.text(s.label),
                    safe.text(s.key.arm),
                    f"{safe.code(_short(ch.before.commit))} → {safe.code(_short(ch.after.commit))}",
                    safe.text(fmt_change_interval(ch.change, ch.low, ch.high, confidence=ch.shift.confidence))
                    + (" ⚑ regression" if ch.worse else " improvement"),
                    f"{_exp_link(ch.before.experiment, known)} → {_exp_link(ch.after.experiment, known)}",
                    f"{ch.shift.n_before} / {ch.shift.n_after}, p = {ch.shift.p_value:.2g}",
                ]
            )
    if not rows:
        n = max((len(s.points) for s in group), default=0)
        return (
            f"No change point: {n} campaign{'s' if n != 1 else ''} in the longest series here"
            + (" (the detector needs at least 4)" if n < 4 else "")
            + ".\n"
        )
    return (
        blocks.table(
            ["metric", "arm", "between commits", "change", "experiments either side", "campaigns before / after"],
            rows,
            ["l", "l", "l", "r", "l", "r"],
        )
        + "\n"
    )


def _points_table(group: Sequence[Series], known: set[str]) -> str:
    by_metric: dict[tuple[str, str], Series] = {(s.key.arm, s.key.metric): s for s in group}
    primary = next((s for s in group if s.primary), None)
    metrics = [primary.key.metric] if primary else []
    metrics += [m for m in (vocab.STEP_TIME, vocab.PEAK_GPU_MEMORY) if m not in metrics]
    order = _campaign_order(group)
    arms = sorted({s.key.arm for s in group}, key=lambda a: (a != vocab.BASELINE, a))
    header = ["commit", "experiment", "arm", "runs"]
    for m in metrics:
        s = next((x for x in group if x.key.metric == m), None)
        if s is not None:
            header.append(safe.text(f"{s.label} ({s.unit})" if s.unit else s.label))
    rows = []
    for exp in order:
        for arm in arms:
            cells: list[str] = []
            head = None
            for m in metrics:
                s = by_metric.get((arm, m))
                if s is None:
                    if any(x.key.metric == m for x in group):
                        cells.append("")
                    continue
                c = next((c for c in s.points if c.experiment == exp), None)
                if c is None:
                    cells.append("")
                    continue
                head = head or c
                cells.append(safe.text(_interval_value(c.value, c.low, c.high, "")))
            if head is None:
                continue
            commit = safe.code(_short(head.commit)) + (" (dirty)" if head.dirty else "")
            rows.append([commit, _exp_link(exp, known), safe.text(arm), str(head.n_runs), *cells])
    return blocks.table(header, rows, ["l", "l", "l", "r"] + ["r"] * (len(header) - 4)) + "\n"


def _parquet(series: Sequence[Series]) -> bytes:
    return model.FORMAT.to_parquet([p for s in series for c in s.points for p in c.runs])


def render_recipe(
    recipe: str,
    series: Sequence[Series],
    *,
    known: set[str],
    svg: bool = True,
    paired: Sequence[PairedSeries] = (),
) -> Page:
    """The history page of one recipe: its paired series first (the alarms), then, per machine
    class, the runs' absolute figures as a health check of the machines."""
    mine = [s for s in series if s.key.recipe == recipe]
    mine_paired = [s for s in paired if s.key.recipe == recipe]
    groups: dict[tuple[str, str, str, str], list[Series]] = {}
    for s in mine:
        groups.setdefault(_group_key(s.key), []).append(s)
    experiments = {c.experiment for s in mine for c in s.points}
    n_changes = sum(len(s.changes) for s in mine)
    n_alarms = sum(len(s.alarms) for s in mine_paired)
    md = [
        f"# History: {safe.text(recipe)}\n",
        f"The **paired history** of the spec {safe.code(recipe)}: each commit measured against an anchor commit "
        f"in a small paired campaign on one machine class ({len(mine_paired)} series, {n_alarms} alarm"
        f"{'s' if n_alarms != 1 else ''}). How it is made and read: [how it works]({'../../' + DOCS}).\n",
    ]
    charts: dict[str, dict] = {}
    for i, ps in enumerate(mine_paired, start=1):
        text, chart = _paired_section(i, ps, known, svg)
        md.append(text)
        charts.update(chart)
    if not mine_paired:
        md.append(
            "No paired campaign yet: `reportgen run --baseline-ref ANCHOR --candidate-ref COMMIT` measures a commit "
            "against an anchor (docs: [how it works](" + "../../" + DOCS + ")).\n"
        )
    md.append(
        f"## Machine health: absolute figures\n\n"
        f"Every campaign of {safe.code(recipe)} under runs/ ({len(experiments)} experiment"
        f"{'s' if len(experiments) != 1 else ''}), one point per campaign and arm, per machine class. The absolute "
        f"figure moves between runs and leases by more than a commit usually changes it, so it is a health check "
        f"of the machines, never compared across them: a point is the {CAMPAIGN_MEAN} with a 95 % interval over "
        f"them, each run's figure the {RUN_MEAN} (peak memory: the maximum). Dashed red lines are shifts of the "
        f"level ({n_changes} found): look at the machine, not the code. The table behind this part: "
        "[history.parquet](history.parquet).\n"
    )
    for i, (gkey, group) in enumerate(sorted(groups.items()), start=1):
        profile, machine, cls, setup = gkey
        arms = sorted({s.key.arm for s in group}, key=lambda a: (a != vocab.BASELINE, a))
        name = f"history-{i}"
        charts[name] = _chart(group, arms)
        md += [
            f"### Health on {safe.text(machine)} {{#class-{i}}}\n",
            f"Profile {safe.code(profile or 'none')} · machine class {safe.code(cls[:8] or 'unknown')} · "
            f"{safe.text(setup)}\n",
            blocks.chart(name, charts[name], title=f"History on {machine}", svg=svg),
            "### Shifts of the absolute figure\n",
            _changes_table(group, known),
            "#### Campaigns\n",
            _points_table(group, known),
        ]
    return Page(
        path=recipe_path(recipe),
        title=f"History: {recipe}",
        markdown="\n".join(md),
        charts=charts,
        files={"history.parquet": _parquet(mine)},
    )


def render_index(series: Sequence[Series], paired: Sequence[PairedSeries] = ()) -> Page:
    recipes: dict[str, list[Series]] = {}
    for s in series:
        recipes.setdefault(s.key.recipe, []).append(s)
    for ps in paired:
        recipes.setdefault(ps.key.recipe, [])
    md = [
        "# History\n",
        "Per recipe: the paired history (commits against an anchor, with alarms) and the machines' health "
        f"(absolute figures) ([how it works](../{DOCS})).\n",
    ]
    if not recipes:
        md.append("No experiment yet.\n")
    for recipe, ss in sorted(recipes.items()):
        classes = sorted({f"{s.key.machine_class} (class {s.key.class_id[:8] or 'unknown'})" for s in ss})
        camps = len({c.experiment for s in ss for c in s.points})
        mine = [p for p in paired if p.key.recipe == recipe]
        commits = sum(len(p.points) for p in mine)
        alarms = sum(len(p.alarms) for p in mine)
        md.append(
            f"- [{safe.text(recipe)}]({recipe_slug(recipe)}/index.md): paired history of {commits} commit"
            f"{'s' if commits != 1 else ''}, {alarms} alarm{'s' if alarms != 1 else ''}; {camps} campaign"
            f"{'s' if camps != 1 else ''} on {len(classes)} machine class{'es' if len(classes) != 1 else ''} "
            f"({'; '.join(safe.text(c) for c in classes)})"
        )
    return Page(path=INDEX, title="History", markdown="\n".join(md) + "\n")


def render_all(
    series: Sequence[Series], *, known: set[str], svg: bool = True, paired: Sequence[PairedSeries] = ()
) -> list[Page]:
    """The history index and one page per recipe."""
    recipes = sorted({s.key.recipe for s in series} | {p.key.recipe for p in paired})
    return [
        render_index(series, paired),
        *(render_recipe(r, series, known=known, svg=svg, paired=paired) for r in recipes),
    ]


# ---------------------------------------------------------------- the paired history


def paired_of(experiments: Sequence[PublishedExperiment]) -> list[PairedSeries]:
    """The paired series of the loaded experiments (each campaign of one commit against an anchor)."""
    pts = []
    for exp in experiments:
        pts += paired_points(exp)
    return build_paired(pts)


def alarm_text(a: Alarm, s: PairedSeries) -> str:
    """ "-9.8 % (95 % CI -13 % to -7 %), a regression, after 4773b89 up to 81f7f03" (plain text)."""
    sh = a.shift
    size = fmt_change_interval(sh.ratio - 1, sh.low - 1, sh.high - 1, confidence=sh.confidence)
    kind = "a regression" if a.worse else "an improvement"
    return f"{size}, {kind}, after {_short(a.before.commit)} up to {_short(a.after.commit)}"


def _point_text(c: ChainedPoint, root: str) -> str:
    low, high = c.interval(0.95)
    return (
        f"{fmt_change(c.ratio - 1, digits=1)} against anchor {_short(root)} "
        f"(95 % CI {fmt_change(low - 1, digits=1)} to {fmt_change(high - 1, digits=1)}, "
        f"{sum(m.pairs for m in c.measured)} pairs"
        + (f", through {len(c.via) - 1} bridge{'s' if len(c.via) > 2 else ''}" if len(c.via) > 1 else "")
        + ")"
    )


def vs_history_sentence(v: VsHistory) -> str:
    """Where an experiment stands in the paired history, in plain words (one line of the CLI)."""
    if v.series is None:
        commit = f"its baseline's commit {_short(v.commit)}" if v.commit else "its baseline (no clean commit)"
        return (
            f"vs history: {commit} has no paired history point; `reportgen run --baseline-ref ANCHOR "
            f"--candidate-ref {_short(v.commit) if v.commit else 'COMMIT'}` measures one"
        )
    s = v.series
    where = f"paired history of {s.key.recipe} on {s.key.machine_class}, {len(s.points)} commits"
    if v.point is None:
        return f"vs history ({where}): its baseline's commit {_short(v.commit)} is the series' anchor"
    who = "this campaign measured" if v.own else "its baseline's commit"
    text = f"vs history ({where}): {who} {_short(v.point.commit)} at {_point_text(v.point, s.root)}"
    later = [a for a in s.alarms if a.index > s.points.index(v.point)]
    here = [a for a in s.alarms if a.after.commit == v.point.commit]
    if here:
        text += f"; an alarm at this commit: {alarm_text(here[0], s)}"
    elif s.alarms:
        text += f"; {len(s.alarms)} alarm{'s' if len(s.alarms) > 1 else ''} in the series ({len(later)} after it)"
    else:
        text += "; no alarm in the series"
    return text


def vs_history_line(v: VsHistory, *, recipe: str | None = None, page_depth: int = 2) -> str:
    """The experiment page's "vs history" paragraph (Markdown) from the paired history, linking the
    recipe's history page (the series' recipe, else `recipe`)."""
    name = v.series.key.recipe if v.series is not None else recipe
    link = f" ([history]({'../' * page_depth}{recipe_path(name)}))" if name else ""
    rest = vs_history_sentence(v).removeprefix("vs history")
    return f"**vs history**{safe.with_code(rest)}{link}.\n"


def vs_history_lines(paired: Sequence[PairedSeries], experiments: Sequence[PublishedExperiment]) -> dict[str, str]:
    """Every experiment's "vs history" line."""
    out = {}
    for exp in experiments:
        commit = arm_commits(exp).get(vocab.BASELINE)
        out[exp.name] = vs_history_line(vs_history(paired, exp.name, commit), recipe=exp.recipe)
    return out


def _paired_chart(s: PairedSeries) -> dict:
    cols: dict[str, list] = {
        k: [] for k in ("kind", "x", "value", "low", "high", "commit", "experiment", "href", "change")
    }
    for i, c in enumerate(s.points):
        low, high = c.interval(0.95)
        for k, v in (
            ("kind", "point"),
            ("x", i),
            ("value", (c.ratio - 1) * 100),
            ("low", (low - 1) * 100),
            ("high", (high - 1) * 100),
            ("commit", _short(c.commit)),
            ("experiment", c.experiment),
            ("href", f"../../reports/{c.experiment}/"),
            ("change", ""),
        ):
            cols[k].append(v)
    for a in s.alarms:
        for k, v in (
            ("kind", "alarm"),
            ("x", a.index - 0.5),
            ("value", float("nan")),
            ("low", float("nan")),
            ("high", float("nan")),
            ("commit", f"{_short(a.before.commit)}..{_short(a.after.commit)}"),
            ("experiment", ""),
            ("href", ""),
            ("change", fmt_change(a.shift.ratio - 1, digits=1)),
        ):
            cols[k].append(v)
    labels = json.dumps({str(i): _short(c.commit) for i, c in enumerate(s.points)})
    xenc = {
        "field": "x",
        "type": "quantitative",
        "title": f"commits in order (against anchor {_short(s.root)})",
        "scale": {"domain": [-0.5, max(len(s.points) - 0.5, 0.5)], "nice": False, "zero": False},
        "axis": {
            "values": list(range(len(s.points))),
            "labelExpr": f"({labels})[format(datum.value, 'd')] || ''",
            "grid": False,
        },
    }
    point = {"filter": "datum.kind === 'point'"}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {
            "name": "paired",
            "format": {"type": "csv", "parse": {"x": "number", "value": "number", "low": "number", "high": "number"}},
        },
        "datasets": {"paired": csv_text(cols)},
        "width": 640,
        "height": 180,
        "layer": [
            _change_rule("alarm", "alarm", xenc),
            _interval_rule(point, xenc),
            {
                "transform": [point],
                "mark": {"type": "point", "filled": True, "size": 70, "cursor": "pointer"},
                "encoding": {
                    "x": xenc,
                    "y": {"field": "value", "type": "quantitative", "title": f"% vs anchor {_short(s.root)}"},
                    "href": {"field": "href"},
                    "tooltip": [
                        {"field": "commit", "type": "nominal"},
                        {"field": "experiment", "type": "nominal"},
                        {"field": "value", "type": "quantitative", "format": ".1f", "title": "% vs anchor"},
                    ],
                },
            },
        ],
        "config": {"view": {"stroke": None}, "font": "system-ui, sans-serif"},
    }


def _paired_section(i: int, s: PairedSeries, known: set[str], svg: bool) -> tuple[str, dict]:
    name = f"paired-{i}"
    chart = _paired_chart(s)
    rows = []
    for c in s.points:
        m = c.measured[-1]
        health = fmt_value(m.anchor_value, unit=m.unit) if m.anchor_value is not None else ""
        rows.append(
            [
                safe.code(_short(c.commit)),
                _exp_link(c.experiment, known),
                safe.text(_point_text(c, s.root)),
                safe.code(_short(m.anchor)),
                safe.text(m.verdict),
                safe.text(health),
            ]
        )
    table = blocks.table(
        [
            "commit",
            "campaign",
            f"{s.label} vs the series' anchor",
            "measured against",
            "verdict",
            "anchor's figure (health)",
        ],
        rows,
        ["l", "l", "r", "l", "l", "r"],
    )
    alarms = [f"- ⚑ {safe.text(alarm_text(a, s))}: find the commit with `{a.bisect_command()}`" for a in s.alarms] or [
        f"No alarm in {len(s.points)} commits (the detector needs at least {DETECTOR.min_points})."
    ]
    unreached = [
        f"- {safe.code(u.experiment)} measured {safe.code(_short(u.commit))} against {safe.code(_short(u.anchor))}, "
        f"which no bridge links to the anchor: `reportgen run --baseline-ref {_short(s.root)} --candidate-ref "
        f"{_short(u.anchor)}` adds the bridge"
        for u in s.unreached
    ]
    md = "\n".join(
        [
            f"## Paired history: {safe.text(s.key.machine_class)} {{#paired-{i}}}\n",
            f"Profile {safe.code(s.key.profile or 'none')} · machine class {safe.code(s.key.class_id[:8] or 'unknown')} · "
            f"{safe.text(s.key.setup)}. Each point is a paired campaign of its commit against an anchor on one "
            f"machine, chained to the anchor {safe.code(_short(s.root))} through bridging campaigns; the bar is its "
            f"95 % interval. Dashed red lines are alarms.\n",
            blocks.chart(name, chart, title=f"Paired history on {s.key.machine_class}", svg=svg),
            "### Alarms\n",
            "\n".join(alarms) + "\n",
            *(["### Campaigns against another anchor\n", "\n".join(unreached) + "\n"] if unreached else []),
            "### Commits\n",
            table + "\n",
        ]
    )
    return md, {name: chart}
