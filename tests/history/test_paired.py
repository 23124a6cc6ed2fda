"""The paired history: points read from a campaign's run-level interval, chained through bridges,
alarms with the bisect command, the table's model and schema, and the recipe page's section."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reportgen.errors import UserError
from reportgen.history import paired, store
from reportgen.history.paired_model import PairedPoint
from reportgen.render.history_page import alarm_text, render_recipe, vs_history_sentence


def _pt(i: int, value: float, *, anchor: str = "root", commit: str | None = None, se: float = 0.02) -> PairedPoint:
    return PairedPoint(
        recipe="r",
        machine_class="CPU: x, 2 cores",
        class_id="c" * 64,
        setup="10 steps; windows 2-5, 6-9",
        metric="perf/step_resp_token_per_s",
        label="response tokens/s",
        better="higher",
        experiment=f"e{i:02d}",
        arm="candidate",
        commit=commit or f"{i:040x}",
        anchor=anchor,
        started_utc=f"2026-12-01T00:{i:02d}:00",
        log_ratio=value,
        se=se,
        df=3.0,
        pairs=4,
        verdict="no_change",
        anchor_value=100.0,
        unit="tok/s",
    )


def _stepped(n: int = 12, at: int = 6, step: float = 0.10, noise: float = 0.02, seed: int = 3) -> list[PairedPoint]:
    z = np.random.default_rng(seed).standard_normal(n)
    return [_pt(i, (math.log(1 - step) if i >= at else 0.0) + noise * z[i]) for i in range(n)]


def test_a_point_is_the_campaigns_run_level_interval(committed_runs: Path) -> None:
    read = store.read_experiment(committed_runs / "aa-1xh200-grpo", committed_runs)
    shas = {"baseline": "a" * 40, "AA1": "b" * 40, "AA2": "c" * 40}
    # Its candidates rename the TensorBoard folder: a flag edit, so no point of the commit's code alone...
    assert paired.points(read, shas) == []
    # ...read as if they ran at two other commits without it:
    doc = read.analysis.model_copy(
        update={"comparisons": [c.model_copy(update={"changed_flags": []}) for c in read.analysis.comparisons]}
    )
    exp = dataclasses.replace(read, analysis=doc)
    pts = paired.points(exp, shas)
    assert [(p.arm, p.commit[0], p.anchor[0], p.pairs) for p in pts] == [("AA1", "b", "a", 4), ("AA2", "c", "a", 4)]
    doc = exp.analysis
    for p in pts:
        iv = next(c for c in doc.comparisons if c.candidate == p.arm).run_level.interval
        assert p.log_ratio == pytest.approx(math.log(iv.estimate))
        # the interval back from the stored standard error
        from scipy import stats

        t = stats.t.ppf(1 - (1 - iv.look_confidence) / 2, iv.df)
        assert math.exp(p.log_ratio + t * p.se) == pytest.approx(iv.high, rel=1e-6)
        assert 0.02 < p.se < 0.06 and p.anchor_value is not None and 1600 < p.anchor_value < 1800
    # One commit for every arm (the committed campaigns): no paired point.
    assert paired.points(exp) == []


def test_a_step_is_an_alarm_at_its_commit_with_the_bisect_command() -> None:
    (s,) = paired.build(_stepped())
    assert [a.index for a in s.alarms] == [6]
    a = s.alarms[0]
    assert a.worse and a.before.commit == f"{5:040x}" and a.after.commit == f"{6:040x}"
    assert a.bisect_command("spec.toml") == f"reportgen bisect {5:040x} {6:040x} spec.toml"
    assert 0.85 < a.shift.ratio < 0.95 and "a regression, after 0000000 up to 0000000" in alarm_text(a, s)


def test_an_aa_series_has_no_alarm() -> None:
    (s,) = paired.build(_stepped(step=0.0))
    assert s.alarms == () and len(s.points) == 12 and s.root == "root"


def test_a_bridge_chains_a_new_anchor_with_its_variance() -> None:
    pts = [_pt(0, 0.01), _pt(1, -0.02)]
    bridge = _pt(2, 0.05, commit="new", se=0.01)  # the new anchor, measured against the old
    after = [_pt(3, 0.01, anchor="new", se=0.02)]
    (s,) = paired.build([*pts, bridge, *after])
    last = s.points[-1]
    assert last.via == ("root", "new")
    assert last.log_ratio == pytest.approx(0.06) and last.se == pytest.approx(math.sqrt(0.02**2 + 0.01**2))
    # A campaign against an anchor no bridge reaches is named, not chained.
    (t,) = paired.build([*pts, _pt(3, 0.01, anchor="elsewhere")])
    assert [u.anchor for u in t.unreached] == ["elsewhere"] and len(t.points) == 2


def test_a_shift_that_the_bridges_error_explains_is_no_alarm() -> None:
    # Twelve quiet points, the last six against a new anchor whose bridge came out 8 % off with a
    # standard error of 4 %: the series' scatter alone would call it, the bridge's variance does not.
    z = np.random.default_rng(5).standard_normal(13) * 0.01
    pts = [_pt(i, z[i]) for i in range(6)]
    pts.append(_pt(6, -0.08, commit="new", se=0.04))
    pts += [_pt(i, z[i], anchor="new") for i in range(7, 13)]
    (s,) = paired.build(pts)
    assert s.alarms == ()
    # The same shift with a precise bridge is an alarm.
    pts[6] = _pt(6, -0.08, commit="new", se=0.002)
    (s,) = paired.build(pts)
    assert len(s.alarms) == 1


def test_vs_history_of_a_campaign_and_of_an_unmeasured_commit() -> None:
    series = paired.build(_stepped())
    v = paired.vs_history(series, "e06", None)
    assert v.own and v.point is not None
    text = vs_history_sentence(v)
    assert text.startswith("vs history (paired history of r on CPU: x, 2 cores, 12 commits): this campaign measured")
    assert "an alarm at this commit" in text
    none = vs_history_sentence(paired.vs_history(series, "other", "f" * 40))
    assert "has no paired history point" in none and "--candidate-ref fffffff" in none


def test_the_table_round_trips_and_refuses_another_schema(tmp_path: Path) -> None:
    pts = _stepped()
    path = store.write_paired(tmp_path / "paired-history.parquet", pts)
    assert store.read_paired(path) == pts
    table = pq.read_table(path)
    old = table.replace_schema_metadata(
        {b"reportgen.paired_history": b'{"kind": "reportgen.paired_history", "schema_version": 0}'}
    )
    pq.write_table(old, tmp_path / "old.parquet")
    with pytest.raises(UserError, match="has schema 0, this reportgen reads 1; run `reportgen history`"):
        store.read_paired(tmp_path / "old.parquet")
    pq.write_table(pa.Table.from_pandas(pd.DataFrame({"a": [1]})), tmp_path / "other.parquet")
    with pytest.raises(UserError, match="not a reportgen paired history table"):
        store.read_paired(tmp_path / "other.parquet")


def test_the_recipe_page_shows_the_paired_series_first() -> None:
    series = paired.build(_stepped())
    page = render_recipe("r", [], known={"e00"}, svg=False, paired=series)
    md = page.markdown
    assert md.index("## Paired history: CPU: x, 2 cores") < md.index("## Machine health")
    assert f"`reportgen bisect {5:040x} {6:040x}`" in md and "[e00](../../reports/e00/index.md)" in md
    spec = page.charts["paired-1"]
    assert "alarm" in spec["datasets"]["paired"] and "href" in spec["layer"][-1]["encoding"]


def test_the_format_page_lists_every_column_with_the_models_meaning() -> None:
    from reportgen.history.paired_model import FORMAT

    text = (Path(__file__).resolve().parents[2] / "docs" / "formats" / "paired-history.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == list(FORMAT.columns)
    for r in rows:
        name = r.split("`")[1]
        assert r.rstrip(" |").endswith(PairedPoint.model_fields[name].description or ""), name
