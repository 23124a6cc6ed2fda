"""The rendered Markdown and chart specs of every page type, from a realistic runs/ tree."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.render import candidate_page, experiment_page, home_page, provenance_page, rollback_page
from reportgen.render.format import change_decimals, fmt_change, fmt_change_supported, fmt_value
from reportgen.render.load import load_experiment
from reportgen.render.page import Page
from reportgen.render.paths import PathShortener
from reportgen.render.site import SiteOptions, generate, render_experiment, summary
from tests.render import site_fixture

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    site_fixture.build_experiment(root)
    return load_experiment(root / "grpo-offload")


def test_experiment_page_matches_golden(exp):
    got = experiment_page.render(exp).markdown
    golden = GOLDEN / "experiment.md"
    if os.environ.get("REPORTGEN_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(got)
    want = golden.read_text()
    if got != want:
        golden.with_suffix(".md.got").write_text(got)
        pytest.fail(f"rendered page differs from {golden}; see {golden}.got (REPORTGEN_UPDATE_GOLDEN=1 to accept)")


def test_experiment_page_answers_first(exp):
    md = experiment_page.render(exp).markdown
    answer = md.index("## Answer")
    assert answer < md.index("## Headline") < md.index("## Windows") < md.index("## Curves")
    head = md[answer : md.index("## Hypothesis")]
    a1 = exp.comparison("A1")
    iv = a1.interval
    assert iv.estimate is not None and iv.low is not None and iv.high is not None
    # one row per candidate, the PR's (the first candidate by default) first and named as such
    rows = [line for line in head.splitlines() if line.startswith("| ") and "](" in line]
    assert [re.search(r"\[(A\d)\]", r).group(1) for r in rows] == ["A1", "A2", "A3"]  # type: ignore[union-attr]
    assert "PR candidate" in rows[0] and "PR candidate" not in rows[1] + rows[2]
    d = change_decimals(iv.low - 1, iv.high - 1)
    assert fmt_change(iv.estimate - 1, digits=d) in rows[0] and "95% CI" in rows[0]
    assert "rg-accepted" in rows[0] and "rg-failed" in rows[1] and "rg-rejected" in rows[2]
    assert "<strong>A1</strong> (PR candidate, accepted): <strong>next:</strong> Merge A1" in head
    assert "Why failed: OOM at step 9, tried to allocate 2.46 GiB" in head
    assert "(../../analysis.md#verdicts)" in head
    # unrounded in analysis.json, rounded on the page to what the interval supports
    row = next(r for r in a1.headline if r.metric == "perf/step_resp_token_per_s")
    assert isinstance(row.baseline, float) and isinstance(row.candidate, float) and row.change is not None
    shown = re.search(r"\| response tokens/s \| ([\d.]+) tok/s \| ([\d.]+) tok/s \| ([+-][\d.]+)% \|", md)
    assert shown is not None, "headline row of the primary metric"
    half = (iv.high - iv.low) / 2
    assert abs(float(shown.group(1)) - row.baseline) <= half * row.baseline / 10  # rounded, not wrong
    assert f"{row.baseline:.3f}" not in shown.group(0)  # no false precision
    assert shown.group(3) == fmt_change(row.change, digits=d).rstrip("%")
    # planted markup from the hypothesis stays text
    assert "<b>not bold</b>" not in md and "&lt;b&gt;not bold&lt;/b&gt;" in md


def test_window_tables_have_every_statistic(exp):
    md = experiment_page.render(exp).markdown
    base = exp.arm("baseline").windows["perf/step_resp_token_per_s"]
    for w in base[:3]:
        assert w.mean is not None and w.std is not None
        se = w.std / w.n**0.5  # a window mean is shown to its standard error
        stats = " | ".join(fmt_value(x) for x in (w.std, w.median, w.p95))
        assert f"| {w.window} | {w.start}-{w.end} | {w.n} | {fmt_value(w.mean, halfwidth=se)} | {stats} |" in md
    assert "| mean (tok/s) |" in md


def test_not_significant_shows_tilde(exp):
    from reportgen.analysis.document import Interval
    from reportgen.render.blocks import interval_text

    assert interval_text(Interval(estimate=1.01, low=0.99, high=1.03, significant=False, confidence=0.95)).startswith(
        "~ no significant change"
    )


def test_every_chart_has_data_and_marks(exp):
    page = experiment_page.render(exp)
    assert set(page.charts) == {
        "primary",
        "step-time",
        "actor-train-time",
        "rollout-time",
        "breakdown",
        "gpu-util",
        "gpu-memory",
        "memory-allocated",
        "quality",
        "looks",
    }
    for name, spec in page.charts.items():
        # the interval after each pair: one row per candidate and pair (one pair each in this fixture)
        assert spec["datasets"]["main"].count("\n") > (2 if name == "looks" else 3), name
        text = str(spec)
        assert "http" not in text.replace("https://vega.github.io/schema", ""), name
    quality = page.charts["quality"]["datasets"]["main"]
    for key in ("train/loss", "rollout/raw_reward", "train/ppo_kl", "train/pg_clipfrac", "train/grad_norm"):
        assert key in quality


def test_failed_candidate_leads_with_cause_and_excerpt(exp):
    page = candidate_page.render(exp, "A2")
    md = page.markdown
    assert md.index("## What happened") < md.index("## What changed")
    # a plain sentence first, then one row per run, the log excerpt once, no parser dump
    assert '!!! failure "A2 failed; changes the maths' in md
    assert "**A2 failed: OOM at step 9, tried to allocate 2.46 GiB. It completed 9 of 40 steps (A2/1).**" in md
    assert (
        "<td>A2/1</td>" in md
        and '<a href="#log-A2-1-stderr-812"><code class="rg-flag">A2/1/stderr.log:812</code></a>' in md
    )
    assert md.count('id="log-A2-1-stderr-812"') == 1
    assert "tried_to_allocate_gib" not in md and "traceback_line" not in md  # no details dump
    assert md.count("Tried to allocate 2.46 GiB. GPU 0 has a total capacity") == 1  # the raw message once
    # the excerpt is quoted verbatim inside a fence longer than its backtick runs
    assert "\n````text\n" in md and "<script>alert(1)</script> ``` ``" in md
    assert "memory" in page.charts
    mem = page.charts["memory"]["datasets"]["main"]
    assert "A2/1" in mem and "baseline" not in mem
    # ticks on the checks it passed before failing are folded, not listed beside the failure
    assert '??? note "' in md and "more checks, on the steps it made before it failed" in md


def test_rejected_candidate_shows_regression(exp):
    md = candidate_page.render(exp, "A3").markdown
    row = next(r for r in exp.comparison("A3").headline if r.metric == "perf/step_resp_token_per_s")
    iv = exp.comparison("A3").interval
    assert iv.low is not None and iv.high is not None and row.change is not None and row.change < 0
    assert fmt_change_supported(row.change, iv.low - 1, iv.high - 1) in md  # rounded to its interval
    assert "--max-tokens-per-gpu 8192" in md


def test_rollback_has_reverse_patch_commands_and_risks(exp):
    page = rollback_page.render(exp)
    md = page.markdown
    assert "## Undo A1" in md
    assert "+   --optimizer-cpu-offload" in md  # the reverse patch adds the offload flags back
    assert "git apply rollback-A1.patch" in md
    assert b"+   --optimizer-cpu-offload" in page.files["rollback-A1.patch"]
    assert "OOM on GPUs with less memory" in md and "A2 (failed)" in md and "A3 (rejected)" in md


def test_provenance_lists_versions_hashes_and_artifacts(exp):
    md = provenance_page.render(exp).markdown
    assert "No difference between the 4 runs" in md
    assert "580.95.05" in md and "torch" in md and "d52cd0aca9b3" in md
    assert "Perfetto" in md and "memory viz" in md
    art = exp.analysis.profiler_runs[0].artifacts[0]
    assert art.sha256 and art.sha256 in md


SMI = """==============NVSMI LOG==============
Timestamp                 : Thu Dec  3 11:38:56 2026
Driver Version            : 580.159.04
GPU 00000000:00:06.0
    Product Name          : NVIDIA H200
    Temperature
        GPU Current Temp  : 35 C
        Memory Temp       : 39 C
    Clocks
        SM                : 345 MHz
"""


def test_nvidia_smi_of_a_machines_other_runs_is_what_differs():
    later = SMI.replace("11:38:56", "11:48:25").replace("35 C", "39 C")
    # each changed line under its headings; the rest is the first run's
    assert provenance_page.changed_lines(later, SMI) == (
        "Timestamp                 : Thu Dec  3 11:48:25 2026\n"
        "GPU 00000000:00:06.0\n"
        "    Temperature\n"
        "        GPU Current Temp  : 39 C"
    )
    assert provenance_page.changed_lines(SMI, SMI) == ""
    # laid out otherwise (a field more, another GPU): shown whole
    assert provenance_page.changed_lines(SMI + "    Fan Speed : N/A\n", SMI) is None
    assert provenance_page.changed_lines(SMI.replace("Memory Temp", "HBM Temp"), SMI) is None


def test_provenance_shows_one_nvidia_smi_whole_per_machine(tmp_path):
    site_fixture.build_experiment(tmp_path)
    runs = sorted((tmp_path / "grpo-offload").glob("*/*/provenance/nvidia-smi.txt"))
    for i, path in enumerate(runs):
        path.write_text(SMI.replace("35 C", f"{35 + i} C"))
    md = "\n".join(provenance_page.nvidia_smi_section(load_experiment(tmp_path / "grpo-offload")))
    first = load_experiment(tmp_path / "grpo-offload").formal_runs()[0].rel
    assert md.count("Product Name") == 1 and md.count("??? note") == len(
        load_experiment(tmp_path / "grpo-offload").formal_runs()
    )
    assert f"the lines that differ from {first}'s" in md and "GPU Current Temp  : 36 C" in md


def test_provenance_flags_package_differences(tmp_path):
    site_fixture.build_experiment(tmp_path)
    freeze = tmp_path / "grpo-offload" / "A1" / "1" / "provenance" / "pip-freeze.txt"
    freeze.write_text(freeze.read_text().replace("torch==2.11.0+cu129", "torch==2.12.0"))
    md = provenance_page.render(load_experiment(tmp_path / "grpo-offload")).markdown
    assert "1 package(s) differ between runs" in md and "2.12.0" in md


def test_home_lists_every_experiment(tmp_path):
    site_fixture.build_experiment(tmp_path, "exp-one")
    site_fixture.build_experiment(tmp_path, "exp-two", seed=1)
    exps = [load_experiment(tmp_path / n) for n in ("exp-one", "exp-two")]
    md = home_page.render(exps).markdown
    assert "(exp-one/index.md)" in md and "(exp-two/index.md)" in md
    assert md.count("rg-accepted") == 2 and "2025-11-29" in md and "d52cd0aca9b3" in md


def test_shortened_paths_leave_no_home_dir(tmp_path):
    site_fixture.build_experiment(tmp_path)
    exp = load_experiment(tmp_path / "grpo-offload", shorten=PathShortener.for_repo(tmp_path))
    pages = [experiment_page.render(exp), provenance_page.render(exp), candidate_page.render(exp, "A2")]
    assert all("/home/alice" not in p.markdown for p in pages)
    assert "cd ~/relax" in pages[1].markdown


@pytest.mark.slow
def test_generate_writes_pages_nav_and_assets(tmp_path):
    site_fixture.build_experiment(tmp_path / "runs")
    written: dict[str, object] = {}

    class Sink(io.StringIO):
        def __init__(self, name, binary):
            super().__init__()
            self.name, self.binary = name, binary

        def close(self):
            written[self.name] = self.getvalue()
            super().close()

    class BSink(io.BytesIO):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def close(self):
            written[self.name] = self.getvalue()
            super().close()

    def open_file(name, mode, encoding=None):
        return BSink(name) if "b" in mode else Sink(name, False)

    docs = tmp_path / "docs"
    (docs / "formats").mkdir(parents=True)
    (docs / "formats" / "runs.md").write_text("# The runs/ store\n")
    generate(
        tmp_path / "runs",
        open_file=open_file,
        options=SiteOptions(cache_dir=tmp_path / "cache", docs_dir=docs, svg_fallback=True),
    )
    for path in (
        "reports/index.md",
        "reports/grpo-offload/index.md",
        "reports/grpo-offload/A2/index.md",
        "reports/grpo-offload/rollback/index.md",
        "reports/grpo-offload/provenance/index.md",
        "reports/grpo-offload/primary.svg",
        "reports/grpo-offload/A2/memory.svg",
        "SUMMARY.md",
    ):
        assert path in written, path
    assert "versions.json" not in written  # mike writes the real one; a plain build has no versions
    assert written["reports/grpo-offload/primary.svg"].startswith(b"<svg")
    nav = written["SUMMARY.md"]
    assert "[The runs/ store](formats/runs.md)" in nav and "(reports/grpo-offload/A2/index.md)" in nav


def test_missing_analysis_is_a_clear_error(tmp_path):
    exp = site_fixture.build_experiment(tmp_path)
    (exp / "analysis.json").unlink()
    with pytest.raises(UserError, match=r"analysis\.json: missing"):
        load_experiment(exp)


def test_nav_summary_from_what_exists():
    nav = summary([], [("formats/b.md", "B [x]"), ("a.md", "A")])
    assert "* [A](a.md)" in nav and "(formats/b.md)" in nav and "[x]" not in nav
    assert nav.index("(a.md)") < nav.index("(formats/b.md)")  # top-level pages before folders


def test_nav_keeps_experiments_with_the_same_title_apart():
    """mkdocs_gen_files.Nav merges entries by title: a second experiment of the same title keeps
    its own section (its folder name appended), with its own candidate pages."""
    pages = [
        (name, [Page(f"reports/{name}/index.md", "Same title", ""), Page(f"reports/{name}/A1/index.md", "A1", "")])
        for name in ("exp-one", "exp-two")
    ]
    nav = summary(pages, [])
    assert "(reports/exp-one/index.md)" in nav and "(reports/exp-two/index.md)" in nav
    assert "(reports/exp-one/A1/index.md)" in nav and "(reports/exp-two/A1/index.md)" in nav
    assert "Same title (exp-two)" in nav


def test_step_breakdown_splits_out_the_optimizer_and_log_probs(tmp_path):
    """With the workload's perf/optimizer_time and perf/log_probs_time, a step's bar shows the
    optimizer (the phase optimizer offload changes) apart from the actor's forward/backward, and
    the parts still add up to the step (wait + train); without them the actor bar is whole."""
    import dataclasses

    import pandas as pd

    from reportgen.analysis.tables import step_parts
    from reportgen.render import chart_data

    exp_dir = site_fixture.build_experiment(tmp_path)
    plain = chart_data.breakdown_frame(load_experiment(exp_dir))
    assert set(plain.loc[plain["part"] == "optimizer", "seconds"]) == {0.0}
    for path in exp_dir.glob("*/*/metrics.parquet"):
        m = pd.read_parquet(path)
        actor = m[m["key"] == "perf/actor_train_time"]
        extra = [
            actor.assign(key="perf/optimizer_time", value=actor["value"] * 0.4),
            actor.assign(key="perf/log_probs_time", value=0.01),
        ]
        pd.concat([m, *extra], ignore_index=True).to_parquet(path)
    exp = load_experiment(exp_dir)
    # What `reportgen analyze` stores (arms[].step_parts) for the runs as they now are.
    windows = [(w.name, w.start, w.end) for w in exp.analysis.settings.windows]
    arms = [a.model_copy(update={"step_parts": step_parts(exp.formal_runs(a.id), windows)}) for a in exp.analysis.arms]
    exp = dataclasses.replace(exp, analysis=exp.analysis.model_copy(update={"arms": arms}))
    frame = chart_data.breakdown_frame(exp).pivot(index="arm", columns="part", values="seconds")
    assert list(chart_data.PARTS) == [
        "rollout",
        "wait (other)",
        "log-probs",
        "actor fwd/bwd",
        "optimizer",
        "train (other)",
    ]
    steps = chart_data.metric_frame(exp, ["perf/step_time", "perf/actor_train_time"])
    windows = exp.analysis.settings.windows
    inside = steps[steps["step"].between(windows[0].start, windows[-1].end)]
    means = inside.groupby(["arm", "key"])["value"].mean().unstack("key")
    for arm, row in frame.iterrows():
        actor = means.loc[arm, "perf/actor_train_time"]
        assert row["optimizer"] == pytest.approx(0.4 * actor, rel=1e-6)
        assert row["actor fwd/bwd"] == pytest.approx(0.6 * actor, rel=1e-6)
        assert row["log-probs"] == pytest.approx(0.01) or row["log-probs"] == 0.0
        assert row.sum() == pytest.approx(means.loc[arm, "perf/step_time"], rel=0.02)


def test_reports_list_names_each_kind_and_machine(tmp_path):
    """A CPU demo and a GPU showcase of the same spec and day: each block's title and badge say
    which it is and on what machine, and the GPU evidence comes first."""
    import json

    site_fixture.build_experiment(tmp_path, "grpo-demo")
    site_fixture.build_experiment(tmp_path, "showcase-a100-grpo", seed=1)
    doc_path = tmp_path / "grpo-demo" / "analysis.json"
    doc = json.loads(doc_path.read_text())
    doc["machine"]["gpus"] = []
    doc_path.write_text(json.dumps(doc))
    for fp in (tmp_path / "grpo-demo").rglob("fingerprint.json"):
        fp.write_text(json.dumps({**json.loads(fp.read_text()), "gpus": []}))
    exps = [load_experiment(tmp_path / n) for n in ("grpo-demo", "showcase-a100-grpo")]
    md = home_page.render(exps).markdown
    showcase, demo = md.index("## [GPU showcase:"), md.index("## [CPU demo:")
    assert showcase < demo
    assert "GPU showcase · 2 x NVIDIA A100-SXM4-80GB" in md and "rg-kind-demo" in md
    assert "<table>" not in md and "| experiment |" not in md  # blocks, not a five-column table


def test_home_and_pages_name_one_kind_when_only_the_run_recorded_the_gpus(tmp_path):
    """analysis.json's machine without GPUs (a campaign.json without a fingerprint): the reports home
    and the experiment's own pages both take the GPUs from the run's fingerprint, so both say GPU run
    (the pages said CPU demo while the home said GPU run)."""
    import json

    site_fixture.build_experiment(tmp_path, "mine")
    doc_path = tmp_path / "mine" / "analysis.json"
    doc = json.loads(doc_path.read_text())
    doc["machine"]["gpus"] = None
    doc_path.write_text(json.dumps(doc))
    gpus = [{"index": 0, "name": "NVIDIA H100 80GB HBM3"}]
    for prov in (tmp_path / "mine").glob("*/*/provenance"):
        (prov / "fingerprint.json").write_text(json.dumps({"gpus": gpus}))
    exp = load_experiment(tmp_path / "mine")
    home = home_page.render([exp]).markdown
    assert "## [GPU run:" in home and "GPU run · 1 x NVIDIA H100 80GB HBM3" in home
    for page in (experiment_page.render(exp), candidate_page.render(exp, "A1"), provenance_page.render(exp)):
        assert "GPU run" in page.title and "rg-kind-demo" not in page.markdown


def test_every_experiment_page_says_what_ran(exp):
    md = experiment_page.render(exp, docs=[("showcase-h200.md", "Showcase: one H200")]).markdown
    line = next(ln for ln in md.splitlines() if ln.startswith('<p class="rg-workload"'))
    assert "**What ran:** <code>relax.entrypoints.train</code>; model files hashed (manifest" in line
    assert "40 steps, 16 samples a step" in line and "[Showcase: one H200](../../showcase-h200.md)" in line


def test_the_home_page_lists_results_in_words(exp):
    front = home_page.home("# reportgen\n\n<!-- reportgen:results -->\n", [exp])
    assert front is not None and front.path == "index.md"
    assert "- [Drop optimizer CPU offload](reports/grpo-offload/index.md) (GPU run, 2 x NVIDIA A100" in front.markdown
    assert (
        "<code>grpo-offload</code>): A1 accepted, response tokens/s +21.4% (changes the maths); A2 failed (changes the "
        "maths); A3 rejected"
    ) in front.markdown
    assert home_page.home("# no mark\n", [exp]) is None
    listing = home_page.render([exp]).markdown
    assert "1 experiment: GPU reports before CPU demos" in listing and "experiment(s)" not in listing


def test_nav_titles_are_short_and_search_titles_name_the_experiment(exp):
    pages = render_experiment(exp, svg=False)
    assert [p.nav for p in pages] == [
        "GPU run: grpo-offload",
        "A1: accepted",
        "A2: failed",
        "A3: rejected",
        "Rollback",
        "Provenance",
    ]
    assert all(len(p.nav.split()) <= 4 for p in pages)
    assert pages[1].title == "A1: Keep the optimizer on the GPU (GPU run, grpo-offload)"


def test_provenance_publishes_only_the_allowed_environment(tmp_path):
    # a run recorded before the allow-list kept the machine's whole environment: the page cuts it
    exp_dir = site_fixture.build_experiment(tmp_path)
    command = exp_dir / "A1" / "1" / "command.json"
    doc = json.loads(command.read_text())
    doc["env"] = {
        "OLDPWD": "/home/alice/lent-machine",
        "PYTHONPATH": "/home/alice/reportgen",
        "NCCL_DEBUG": "WARN",
        "MAX_TOKENS_PER_GPU": "896",  # not in this recipe's text: not the recipe's own here
        "TOKENIZERS_PARALLELISM": "false",
    }
    command.write_text(json.dumps(doc))
    md = provenance_page.render(load_experiment(exp_dir)).markdown
    assert "NCCL_DEBUG=WARN" in md and "TOKENIZERS_PARALLELISM=false" in md
    assert "OLDPWD" not in md and "PYTHONPATH" not in md and "lent-machine" not in md
    assert "3 others of the machine's environment are not published" in md
