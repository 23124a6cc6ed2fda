"""The I/O edge and the commands: real runs/ trees in tmp_path, real Parquet, the real CLI."""

import json
import os
import time
from pathlib import Path

import pandas as pd
import pytest
import typer
from builder import FakeArm, make_experiment
from typer.testing import CliRunner

from reportgen import rounding
from reportgen.analysis.document import SCHEMA_VERSION
from reportgen.analyze import analyze_all, analyze_experiment, is_stale
from reportgen.commands import analyze_cmd
from reportgen.errors import UserError
from reportgen.render.format import fmt_change

GOLDEN = Path(__file__).parent / "golden" / "pr_body.md"


def test_end_to_end_document_with_interleaved_repeats(tmp_path):
    # Stands in for the embedded workload's real runs until the lead wires that test in: a tree
    # with the workload's metric keys, gpu.parquet, events.json and manifests.
    exp = make_experiment(
        tmp_path / "runs",
        # quality drawn per block (a seed per block on a deterministic CPU): the reward is identical in
        # each pair, so the two pairs decide on speed alone
        {"baseline": FakeArm(quality_by_block=True), "A1": FakeArm(speed=1.2, quality_by_block=True)},
        repeats=2,
        order="interleaved",
    )
    doc = json.loads(analyze_experiment(exp).read_text())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["kind"] == "reportgen.analysis"
    base = doc["arms"][0]
    assert base["id"] == "baseline" and len(base["runs"]) == 2
    rows = base["windows"]["perf/step_resp_token_per_s"]
    assert [r["window"] for r in rows] == ["W1", "W2", "W3", "all"]
    # Window statistics recomputed independently from the Parquet files.
    frames = [pd.read_parquet(exp / "baseline" / str(i) / "metrics.parquet") for i in (1, 2)]
    m = pd.concat(frames)
    v = m[(m.key == "perf/step_resp_token_per_s") & m.step.between(rows[0]["start"], rows[0]["end"])]["value"]
    assert rows[0]["n"] == len(v) == 2 * (rows[0]["end"] - rows[0]["start"] + 1)
    assert rows[0]["mean"] == pytest.approx(v.mean()) and rows[0]["std"] == pytest.approx(v.std())
    assert rows[0]["p95"] == pytest.approx(v.quantile(0.95))
    assert base["overall"]["perf/step_resp_token_per_s"] == pytest.approx(sum(r["mean"] for r in rows[:3]) / 3)
    comp = doc["comparisons"][0]
    head = {h["metric"]: h for h in comp["headline"]}
    assert head["perf/step_resp_token_per_s"]["change"] == pytest.approx(
        head["perf/step_resp_token_per_s"]["candidate"] / head["perf/step_resp_token_per_s"]["baseline"] - 1
    )
    assert head["gpu/util_mean"]["baseline"] == pytest.approx(50.5)  # GPUs 0 and 1 at 50 and 51 %
    assert head["gpu/1/mem_peak_mib"]["baseline"] == 70010.0
    assert head["workload/limits"]["text"] == "unchanged"
    rl = comp["run_level"]
    assert [p["repeat"] for p in rl["pairs"]] == [1, 2] and [lk["pairs"] for lk in rl["looks"]] == [1, 2]
    # each pair's ratio is the two runs' own figures (the mean of their window means)
    runs = {(a["id"], r["repeat"]): r["overall"] for a in doc["arms"] for r in a["runs"]}
    assert rl["pairs"][1]["ratio"] == pytest.approx(runs[("A1", 2)] / runs[("baseline", 2)])
    assert comp["interval"] == rl["interval"] and "pairs of runs" in comp["interval"]["method"]
    assert "within runs" in comp["within_run"]["method"]
    # two pairs that agree to about 1 % decide a +20 % (issue 43: the first look is at two pairs, its t has
    # one degree of freedom, so only pairs that agree this well decide there)
    v = comp["verdict"]
    assert (v["status"], v["basis"], v["pairs"]) == ("accepted", "interval", 2) and comp["interval"]["df"] == 1
    assert doc["fixed_workload"] == [
        {"flag": "--global-batch-size", "value": "16"},
        {"flag": "--rollout-max-response-len", "value": "1024"},
    ]


def test_staleness(tmp_path):
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.1)})
    assert is_stale(exp)
    path = analyze_experiment(exp)
    assert not is_stale(exp)
    later = time.time() + 10
    os.utime(exp / "A1" / "1" / "events.json", (later, later))
    assert not is_stale(exp)  # a newer mtime alone (a fresh git clone) changes nothing
    events = exp / "A1" / "1" / "events.json"
    events.write_text(events.read_text().replace('"events": [', '"events": [ ', 1) + " ")
    assert is_stale(exp)  # other content: analyze again
    analyze_experiment(exp)
    assert not is_stale(exp)
    doc = json.loads(path.read_text())
    doc["schema_version"] = 0
    path.write_text(json.dumps(doc))
    os.utime(path, (later + 10, later + 10))
    assert is_stale(exp)


def test_a_current_analysis_is_left_as_it_is(tmp_path):
    # Re-analysing committed runs (scripts/site, `reportgen analyze` over runs/) must not rewrite
    # their analysis.json with a new time stamp; changed runs, another schema or --force do.
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.1)})
    path = analyze_experiment(exp)
    first = path.read_bytes()
    os.utime(path, (1, 1))
    assert analyze_experiment(exp) == path and path.read_bytes() == first and path.stat().st_mtime == 1
    res = _cli(["analyze", "--runs", str(tmp_path / "runs"), "--force"])
    assert res.exit_code == 0 and path.stat().st_mtime > 1  # (changed runs: test_staleness)


def test_stored_floats_keep_nine_significant_digits(tmp_path):
    # The last bits of a float differ between machines (a root finder's boundary, a BLAS sum):
    # analysis.json keeps nine significant digits, so the same inputs give the same file anywhere.
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.1)})
    doc = json.loads(analyze_experiment(exp).read_text())
    floats: list[float] = []

    def walk(x: object) -> None:
        if isinstance(x, float):
            floats.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    assert floats and all(float(f"{x:.9g}") == x for x in floats)
    jittered = rounding.stored({"a": [2.4851052672718983, 2.485105267272401], "n": 3, "s": "x"})
    assert jittered == {"a": [2.48510527, 2.48510527], "n": 3, "s": "x"}


def test_partial_and_broken_runs_never_raise(tmp_path):
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.1), "A2": FakeArm()})
    (exp / "A1" / "1" / "metrics.parquet").unlink()  # not ingested yet
    (exp / "A2" / "1" / "gpu.parquet").write_bytes(b"not parquet")
    (exp / "A2" / "1" / "manifest.json").write_text("{truncated")
    doc = json.loads(analyze_experiment(exp).read_text())
    by = {c["candidate"]: c for c in doc["comparisons"]}
    assert by["A1"]["verdict"]["status"] == "failed" and "0/60" in by["A1"]["verdict"]["cause"]
    assert by["A2"]["verdict"]["status"] == "failed"
    assert by["A2"]["verdict"]["cause"] == "manifest.json missing or unreadable"
    a2 = next(a for a in doc["arms"] if a["id"] == "A2")
    assert any("unreadable" in n for n in a2["runs"][0]["notes"])


def test_not_an_experiment_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not an experiment folder"):
        analyze_experiment(tmp_path)
    with pytest.raises(UserError, match="no runs folder"):
        analyze_all(tmp_path / "nowhere")


def _cli(args):
    # The commands as reportgen.cli registers them (cli.main adds only the UserError -> exit 2 edge).
    app = typer.Typer()
    analyze_cmd.register(app)
    app.command("noop", hidden=True)(lambda: None)  # keeps Typer in multi-command mode
    return CliRunner().invoke(app, args)


def test_cli_analyze_all_and_pr_body_golden(tmp_path):
    runs = tmp_path / "runs"
    make_experiment(
        runs,
        {"baseline": FakeArm(), "A1": FakeArm(speed=1.2), "A2": FakeArm(fail_at=9), "A3": FakeArm(speed=0.94)},
        name="grpo",
    )
    make_experiment(runs, {"baseline": FakeArm(), "B1": FakeArm()}, name="other", seed=2, t0=1_765_000_000.0)
    res = _cli(["analyze", "--runs", str(runs)])
    assert res.exit_code == 0, res.output
    out = res.stdout.split()
    assert out == [str(runs / "grpo" / "analysis.json"), str(runs / "other" / "analysis.json")]
    res = _cli(["pr-body", "grpo", "--runs", str(runs)])
    assert res.exit_code == 0, res.output
    body = res.stdout.replace(str(runs), "runs")
    if os.environ.get("REPORTGEN_UPDATE_GOLDEN"):
        GOLDEN.write_text(body)
    got = tmp_path / "pr_body.md.got"
    got.write_text(body)
    assert body == GOLDEN.read_text(), f"PR body differs from {GOLDEN}; see {got}"
    res = _cli(["pr-body", "nope", "--runs", str(runs)])
    assert isinstance(res.exception, UserError) and "no such experiment" in str(res.exception)


def test_pr_body_site_url_option(tmp_path):
    runs = tmp_path / "runs"
    make_experiment(runs, {"baseline": FakeArm(), "A1": FakeArm(speed=1.2)}, name="e")
    res = _cli(["pr-body", "e", "--runs", str(runs), "--site-url", "https://x.test/site/"])
    assert res.exit_code == 0, res.output
    # the report's address, first: the site's reports/<experiment>/ page
    assert res.stdout.startswith("**[Full report: Offload test](https://x.test/site/reports/e/)**")


def test_fmt_change():
    assert fmt_change(0.20682) == "+20.68%"
    assert fmt_change(-0.18913) == "-18.91%"
    assert fmt_change(0.01, significant=False) == "~"
    assert fmt_change(None) == "n/a"
