"""The answer a reviewer reads first, from constructed runs/ trees analysed end to end: the
same-work guardrail, the next step and its cause, the PR candidate, a derived candidate against
its base, effective flag values, secondary intervals, baseline drift and the OOM's memory cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builder import FakeArm, analyse, comparison, make_experiment

from reportgen.analysis import document as doc
from reportgen.analysis import next_step
from reportgen.analysis.next_step import Rerun
from reportgen.analyze import analyze_experiment
from reportgen.errors import UserError
from reportgen.render.load import load_analysis
from reportgen.render.prbody import render_pr_body


def test_shorter_responses_invalidate_a_throughput_verdict(tmp_path):
    # The H200 case: from step 10 the candidate's policy answers in a third of the tokens, so its
    # steps are shorter but its response tokens/s falls; without the guardrail it reads "rejected".
    doc = analyse(
        tmp_path,
        {
            "baseline": FakeArm(extra={"perf/optimizer_time": 0.5}),
            "A1": FakeArm(speed=1.5, resp_len_from=(10, 170.0), extra={"perf/optimizer_time": 0.02}),
        },
    )
    c = comparison(doc, "A1")
    assert c.interval.high is not None and c.interval.high < 1  # tokens/s fell: the interval alone rejects
    assert c.same_work.applies and c.same_work.status == "fail"
    assert c.verdict.status == "invalid" and c.summary.verdict == "invalid"
    assert c.verdict.cause and "generated shorter responses: 170.0 vs 512.0 tokens" in c.verdict.cause
    assert "beyond the 5% tolerance (3 of 3 windows)" in c.verdict.cause
    assert all(w.within is False for w in c.same_work.windows)
    assert next(g for g in c.guardrails if g.id == "same_work").status == "fail"
    # what did change, independent of the work: time per generated token and the phases per step
    keys = [m.metric for m in c.same_work.work_independent]
    assert keys[0] == "reportgen/ms_per_response_token" and "perf/optimizer_time" in keys
    assert all(m.interval is not None for m in c.same_work.work_independent)
    step = c.summary.step_time
    assert step.metric == "perf/step_time" and step.change is not None and step.change < -0.5
    # next step and its evidence
    assert c.summary.next_step.action == "equalize_work"
    # a new campaign into a new folder: works on any machine, the runs made so far stay
    assert c.summary.next_step.command == "reportgen run runs/exp/experiment.toml --name exp-2"
    assert c.summary.cause == c.same_work.reason
    assert [e.id for e in c.summary.evidence] == ["same_work", "quality"]
    body = render_pr_body(doc)
    assert "| `A1` (PR) | ⛔ invalid comparison |" in body
    assert f"Why invalid comparison: {c.summary.cause.rstrip('.')}." in body
    assert f"```bash\n{c.summary.next_step.command}\n```" in body


def test_tolerance_is_declared_in_the_spec(tmp_path):
    arms = {"baseline": FakeArm(), "A1": FakeArm(speed=1.2, resp_len=497.0)}  # about 3 % shorter
    loose = comparison(analyse(tmp_path / "a", arms), "A1")
    assert loose.same_work.status == "pass" and loose.same_work.tolerance == 0.05
    assert loose.verdict.status == "accepted" and loose.summary.next_step.action == "merge"
    tight = comparison(analyse(tmp_path / "b", arms, analysis={"same_work_tolerance": 0.02}), "A1")
    assert tight.same_work.status == "fail" and tight.verdict.status == "invalid"
    assert "beyond the 2% tolerance" in (tight.verdict.cause or "")


def test_same_work_is_checked_per_window(tmp_path):
    # Lengths match until step 45 (inside W3 of 6-19, 20-32, 33-59): only W3 fails, and the check fails.
    c = comparison(
        analyse(tmp_path, {"baseline": FakeArm(), "A1": FakeArm(speed=1.2, resp_len_from=(45, 400.0))}), "A1"
    )
    assert [w.within for w in c.same_work.windows] == [True, True, False]
    assert c.same_work.status == "fail" and "in W3" in c.same_work.reason and "(1 of 3 windows)" in c.same_work.reason


def test_without_response_lengths_tokens_per_step_decide(tmp_path):
    # No response lengths logged: equal tokens per step still show equal work (before, the whole
    # check was not_applicable, which also hid a known difference; see the window_work test).
    drop = ("rollout/response_lengths",)
    c = comparison(
        analyse(tmp_path, {"baseline": FakeArm(drop_keys=drop), "A1": FakeArm(speed=1.2, drop_keys=drop)}), "A1"
    )
    assert c.same_work.status == "pass" and c.verdict.status == "accepted"
    assert all(w.response_length_change is None and w.tokens_per_step_change is not None for w in c.same_work.windows)


def test_inconclusive_says_which_window_disagreed_and_how_to_repeat(tmp_path):
    # Faster in W1 and W2, slower in W3 (the candidate's throughput falls over the run).
    doc = analyse(tmp_path, {"baseline": FakeArm(), "A1": FakeArm(speed=1.5, trend=-0.5, cv=0.01)})
    c = comparison(doc, "A1")
    assert c.verdict.status == "inconclusive", c.verdict
    assert c.summary.cause and "1 of 3 windows went the other way: W3" in c.summary.cause
    assert [e.id for e in c.summary.evidence] == ["windows"]
    assert c.verdict.basis == "windows"
    step = c.summary.next_step
    # the fixed design took its one look (3 pairs): more pairs take a new campaign, the same one would
    # decide falsely more often than 5 % (docs/calibration.md, resized campaigns)
    assert step.action == "repeat" and 'until = "decided"' in step.text and "--new-campaign" in step.text
    assert "the spec's [run]" in step.text and step.text.startswith("Do not merge A1 yet: its windows disagree.")
    assert step.command == (
        "# on the machine that ran the campaign (a campaign's runs stay on one machine):\n"
        '# in runs/exp/experiment.toml, set until = "decided" in [run]; then:\n'
        "reportgen run runs/exp/experiment.toml --name exp --new-campaign"
    )


def test_oom_names_the_memory_cap_and_the_fix(tmp_path):
    doc = analyse(tmp_path, {"baseline": FakeArm(), "A2": FakeArm(fail_at=9, argv={"--gpu-memory-cap-gib": "5"})})
    c = comparison(doc, "A2")
    assert (
        c.verdict.cause
        == "OOM at step 9, tried to allocate 2.46 GiB, under a 5 GiB memory cap (--gpu-memory-cap-gib 5)"
    )
    assert c.summary.next_step.action == "fix_oom"
    # re-running A2 unchanged would fail the same way (and `--rerun` is refused on another machine):
    # the step says what to change and runs the experiment into a new folder
    assert c.summary.next_step.command == (
        "# first, in runs/exp/experiment.toml,\n"
        "# give A2 less memory per step: a smaller --max-tokens-per-gpu\n"
        "# in its [[candidates]] set table, or a larger --gpu-memory-cap-gib\n"
        "reportgen run runs/exp/experiment.toml --name exp-A2-fix"
    )
    assert [(e.id, e.arm) for e in c.summary.evidence] == [("candidate_page", "A2"), ("memory_chart", "A2")]
    assert c.summary.peak_memory.unit == "MiB" and c.summary.peak_memory.candidate is not None
    # Run with a profile that restates the candidates and fixes the memory cap (the GPU showcases): the
    # step names the profile's section, and never asks for a larger cap, a flag of the fixed workload.
    gpu = Rerun(
        "runs/exp/experiment.toml",
        "gpu",
        candidates_section="[[profiles.gpu.candidates]]",
        fixed_flags=("--seed", "--gpu-memory-cap-gib"),
    )
    step, _, _ = next_step.derive(c, metric_label="response tokens/s", rerun=gpu, design=doc.settings.design)
    assert "[[profiles.gpu.candidates]]" in step.text and "[[candidates]]" not in step.text
    assert "a larger --gpu-memory-cap-gib" not in step.text and "part of the fixed workload" in step.text
    assert step.command is not None and "a larger --gpu-memory-cap-gib" not in step.command
    assert "# in its [[profiles.gpu.candidates]] set table (the fixed --gpu-memory-cap-gib stays)" in step.command


def test_derived_candidate_against_its_base_with_effective_values(tmp_path):
    arms = {
        "baseline": FakeArm(argv={"--max-tokens-per-gpu": "896"}),
        "A1": FakeArm(speed=1.3, argv={"--max-tokens-per-gpu": "896"}),
        "A3": FakeArm(
            speed=1.6, base="A1", edit={"set": {"--max-tokens-per-gpu": 640}}, argv={"--max-tokens-per-gpu": "640"}
        ),
    }
    doc = analyse(tmp_path, arms, analysis={"pr_candidate": "A3"})
    assert doc.settings.pr_candidate == "A3"
    a1, a3 = comparison(doc, "A1"), comparison(doc, "A3")
    assert a3.summary.is_pr and not a1.summary.is_pr
    assert a3.base == "A1" and a3.depends_on == ["A1"] and a1.base is None and a1.depends_on == []
    assert [m.metric for m in a3.vs_base][:2] == ["perf/step_resp_token_per_s", "perf/step_time"]
    gain = a3.vs_base[0]
    assert gain.change is not None and 0.15 < gain.change < 0.3 and gain.interval is not None
    assert a1.vs_base == []
    flag = next(f for f in a3.changed_flags if f.flag == "--max-tokens-per-gpu")
    assert (flag.baseline, flag.base, flag.candidate) == ("896", "896", "640")
    # better than its base too: accepted, and the verdict says it was decided against A1
    assert a3.verdict.status == "accepted" and a3.verdict.against == "A1" and a1.verdict.against == "baseline"
    assert "against its base A1: response tokens/s +" in a3.verdict.summary
    assert "together with A1" in a3.summary.next_step.text
    body = render_pr_body(doc)
    assert "| `A3` (PR) on `A1` | ✅ accepted against `A1` |" in body
    assert "- `A3` (PR) on `A1`: Merge A3 together with A1" in body


@pytest.mark.parametrize(
    ("a3_speed", "status", "cause_part"),
    [
        # faster than the baseline only through A1's gain: the plan's A3 (-5.75 % against A1, rejected)
        (1.1, "rejected", "what it adds to A1 makes response tokens/s worse: -1"),
        # adds nothing measurable to A1
        (1.3, "no_change", "what it adds to A1 moves response tokens/s by less than the 5% minimum effect"),
    ],
)
def test_a_derived_candidate_is_decided_against_its_base(tmp_path, a3_speed, status, cause_part):
    arms = {
        "baseline": FakeArm(cv=0.02),
        "A1": FakeArm(speed=1.3, cv=0.02),
        "A3": FakeArm(speed=a3_speed, base="A1", cv=0.02),
    }
    doc = analyse(tmp_path, arms)
    a3 = comparison(doc, "A3")
    assert a3.interval.low is not None and a3.interval.low > 1.0  # better than the baseline alone
    assert a3.verdict.status == status and a3.verdict.against == "A1" and a3.summary.verdict == status
    assert a3.verdict.cause and cause_part in a3.verdict.cause and a3.summary.cause == a3.verdict.cause
    step = a3.summary.next_step
    assert (
        step.action == "reject"
        and step.text == "Do not merge A3: its gain over the baseline is A1's, not its own; keep A1's flags."
    )
    assert [(e.id, e.arm) for e in a3.summary.evidence] == [("against_base", "A3")]


def test_a_derived_candidate_whose_base_failed_stays_judged_against_the_baseline(tmp_path):
    # No interval against a base without completed runs: the candidate is what there is to merge.
    arms = {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, fail_at=5), "A3": FakeArm(speed=1.3, base="A1")}
    doc = analyse(tmp_path, arms)
    a3 = comparison(doc, "A3")
    assert comparison(doc, "A1").verdict.status == "failed"
    assert a3.verdict.status == "accepted" and a3.verdict.against == "baseline"


def test_secondary_metrics_have_intervals(tmp_path):
    doc = analyse(
        tmp_path,
        {
            "baseline": FakeArm(extra={"perf/optimizer_time": 0.5}),
            "A1": FakeArm(speed=1.2, extra={"perf/optimizer_time": 0.02}),
        },
    )
    c = comparison(doc, "A1")
    by = {m.metric: m for m in c.secondary}
    assert list(by)[:2] == ["perf/step_time", "perf/actor_train_time"]
    opt = by["perf/optimizer_time"]
    assert opt.label == "optimizer time" and opt.unit == "s" and opt.better == "lower"
    assert opt.change == pytest.approx(0.02 / 0.5 - 1)
    assert opt.interval is not None and opt.interval.estimate == pytest.approx(0.04)
    st = by["perf/step_time"].interval
    assert st is not None and st.low is not None and st.high is not None and st.high < 1


def test_baseline_drift_is_flagged(tmp_path):
    doc = analyse(tmp_path, {"baseline": FakeArm(trend=-0.2, cv=0.01), "A1": FakeArm(speed=1.2)})
    d = doc.baseline_drift
    assert d is not None and d.flagged and d.change is not None and d.change < -0.1
    assert (d.first_window, d.last_window) == ("W1", "W3")
    assert doc.warnings and "drifted" in doc.warnings[0] and "from W1 to W3" in doc.warnings[0]
    # interleaving is advised (in the run table that ran) only to a campaign that did not interleave
    remedy = "interleaved blocks spread it" if doc.settings.design.interleaved else 'order = "interleaved" in [run]'
    assert remedy in doc.warnings[0]
    steady = analyse(tmp_path / "b", {"baseline": FakeArm(cv=0.01), "A1": FakeArm(speed=1.2)})
    assert steady.baseline_drift is not None and not steady.baseline_drift.flagged and not steady.warnings


def test_pr_candidate_must_be_a_candidate(tmp_path):
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm()}, analysis={"pr_candidate": "A9"})
    with pytest.raises(UserError, match="pr_candidate"):
        analyze_experiment(exp)
    doc = analyse(tmp_path / "b", {"baseline": FakeArm(), "A1": FakeArm(), "A2": FakeArm()})
    assert doc.settings.pr_candidate == "A1" and comparison(doc, "A1").summary.is_pr


def test_pr_body_says_a_candidate_without_completed_runs_has_no_run_level_change():
    # The committed one-GPU showcase: A2 ran out of memory in both of its repeats.
    from reportgen.render.load import load_analysis

    showcase = Path(__file__).resolve().parents[2] / "runs" / "showcase-1xh200-grpo-offload-r2"
    body = render_pr_body(load_analysis(showcase))
    line = next(ln for ln in body.splitlines() if ln.startswith("**`A2`**"))
    assert "pairs of runs: 0;" in line  # no completed run: no pair, no run-level change
    assert "pairs of runs: 0 (" not in body


def test_same_work_judges_each_window_on_the_figures_it_has():
    from reportgen.analysis.same_work import window_work

    # Only lengths logged (no tokens/s): a 50 % shorter response is still a difference.
    assert window_work("W1", (48.0, 24.0), (None, None), 0.05).within is False
    assert window_work("W1", (48.0, 48.0), (None, None), 0.05).within is True
    assert window_work("W1", (None, None), (None, None), 0.05).within is None


def test_a_baseline_oom_is_the_baselines_to_fix(tmp_path):
    # Only the baseline ran out of memory: the candidate has nothing to fix or re-run.
    doc = analyse(tmp_path, {"baseline": FakeArm(fail_at=9), "A1": FakeArm(speed=1.2)})
    c = comparison(doc, "A1")
    assert c.verdict.status == "failed" and c.summary.cause and c.summary.cause.startswith("baseline: OOM")
    step = c.summary.next_step
    assert step.action == "fix_oom" and "failure of baseline" in step.text and "in the recipe" in step.text
    assert step.command and step.command.endswith("--name exp-baseline-fix") and "A1" not in step.command
    assert c.summary.evidence[0].id == "runs"


def test_an_interrupted_run_makes_the_comparison_incomplete_not_failed(tmp_path):
    # Ctrl-C during A1's second repeat, then `reportgen analyze` before resuming.
    arms = {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, interrupt_at=12, interrupt_repeat=2)}
    doc = analyse(tmp_path, arms, repeats=2, order="interleaved")
    c = comparison(doc, "A1")
    assert c.verdict.status == "incomplete" and c.summary.verdict == "incomplete"
    assert c.verdict.cause == "A1/2 interrupted at step 12/60"
    assert c.verdict.summary.startswith("Incomplete: A1/2 interrupted at step 12/60; resume the campaign")
    step = c.summary.next_step
    assert step.action == "resume" and step.command and "reportgen run" in step.command
    assert "--rerun" not in step.command and "--new-campaign" not in step.command
    assert [e.id for e in c.summary.evidence] == ["runs"]
    # the finished runs are judged, the interrupted one is not counted against the candidate
    g = {x.id: x for x in c.guardrails}
    assert g["steps_completed"].status == "pass" and "not counted yet: A1/2 interrupted" in g["steps_completed"].reason
    assert g["no_failures"].status == "pass"
    assert c.interval.estimate is not None and c.interval.estimate > 1.2  # provisional, from A1/1
    body = render_pr_body(doc)
    assert "| `A1` (PR) | ⏸️ incomplete |" in body
    assert "- `A1` (PR): Resume" in body and "Why incomplete: A1/2 interrupted at step 12/60." in body
    full = render_pr_body(doc, full=True)
    assert "| completed steps | 60 steps | 60 steps | same |" in full  # A1/1's, not the interrupted run's 12


def test_a_candidate_with_only_an_interrupted_run_is_not_judged_yet(tmp_path):
    doc = analyse(tmp_path, {"baseline": FakeArm(), "A1": FakeArm(interrupt_at=3)}, repeats=1)
    c = comparison(doc, "A1")
    assert c.verdict.status == "incomplete" and c.verdict.cause == "A1/1 interrupted at step 3/60"
    assert {g.status for g in c.guardrails} == {"not_applicable"}
    assert all(g.reason == "not judged yet: A1/1 interrupted at step 3/60" for g in c.guardrails)


def test_a_real_failure_outweighs_an_interrupted_run(tmp_path):
    # An OOM in a finished run stays a failure: resuming would not change it.
    arms = {"baseline": FakeArm(), "A1": FakeArm(fail_at=9, interrupt_at=5, interrupt_repeat=2)}
    doc = analyse(tmp_path, arms, repeats=2)
    c = comparison(doc, "A1")
    assert c.verdict.status == "failed" and c.verdict.cause and c.verdict.cause.startswith("OOM at step 9")


def test_a_verdict_against_an_unfinished_base_is_incomplete(tmp_path):
    arms = {
        "baseline": FakeArm(),
        "A1": FakeArm(speed=1.3, interrupt_at=12, interrupt_repeat=2),
        "A3": FakeArm(speed=1.1, base="A1"),
    }
    doc = analyse(tmp_path, arms, repeats=2, order="interleaved")
    a3 = comparison(doc, "A3")
    assert a3.verdict.status == "incomplete" and a3.verdict.cause == "A1/2 interrupted at step 12/60"
    assert a3.summary.next_step.action == "resume"


@pytest.mark.parametrize("interrupt_at", [3, 40])
def test_a_candidate_on_an_unfinished_base_is_incomplete_whatever_the_base_reached(tmp_path, interrupt_at):
    # The base's only run stopped early (no interval against it at all at step 3): still incomplete.
    arms = {
        "baseline": FakeArm(),
        "A1": FakeArm(speed=1.3, interrupt_at=interrupt_at),
        "A3": FakeArm(speed=1.35, base="A1"),
    }
    doc = analyse(tmp_path, arms, repeats=1)
    a3 = comparison(doc, "A3")
    assert a3.verdict.status == "incomplete" and a3.verdict.cause == f"A1/1 interrupted at step {interrupt_at}/60"
    assert a3.summary.next_step.action == "resume"


@pytest.mark.parametrize("fail_at", [40, 59])
def test_a_base_that_failed_late_is_not_compared_with(tmp_path, fail_at):
    # The base's partial data must not decide by where it stopped: no complete base run, no interval.
    arms = {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, fail_at=fail_at), "A3": FakeArm(speed=1.3, base="A1")}
    doc = analyse(tmp_path, arms)
    a3 = comparison(doc, "A3")
    assert all(m.interval is None or m.interval.estimate is None for m in a3.vs_base)
    assert a3.verdict.status == "accepted" and a3.verdict.against == "baseline"


def test_an_interrupted_baseline_lends_no_figures(tmp_path):
    # Only an interrupted baseline run: its partial windows are not shown as the baseline's.
    doc = analyse(tmp_path, {"baseline": FakeArm(interrupt_at=30), "A1": FakeArm(speed=1.3)}, repeats=1)
    c = comparison(doc, "A1")
    assert c.verdict.status == "incomplete" and c.verdict.cause == "baseline/1 interrupted at step 30/60"
    assert all(w.baseline is None and w.change is None for w in c.windows)


def test_incomplete_says_which_candidate_has_no_run_yet(tmp_path):
    # Stopped during the baseline's first run: A1 has not run at all.
    import shutil

    exp = make_experiment(
        tmp_path / "runs", {"baseline": FakeArm(interrupt_at=30), "A1": FakeArm(speed=1.3)}, repeats=1
    )
    shutil.rmtree(exp / "A1")
    analyze_experiment(exp)
    c = comparison(load_analysis(exp), "A1")
    assert c.verdict.status == "incomplete"
    assert c.verdict.cause == "baseline/1 interrupted at step 30/60; no run of A1 yet"


def test_a_run_still_marked_running_is_not_resumed_blindly(tmp_path):
    exp = make_experiment(
        tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, interrupt_at=12)}, repeats=1
    )
    import json

    m = exp / "A1" / "1" / "manifest.json"
    data = json.loads(m.read_text())
    data.update(status="running", signal=None, status_reason=None)
    m.write_text(json.dumps(data))
    analyze_experiment(exp)
    c = comparison(load_analysis(exp), "A1")
    assert c.verdict.status == "incomplete" and c.verdict.cause == "A1/1 still marked running at step 12/60"
    assert c.summary.next_step.text.startswith("If no reportgen run of this campaign is still under way, resume it")


def test_same_work_is_checked_against_the_base_too(tmp_path):
    # Each arm is within 5 % of the baseline's response length, but A3 is 7.5 % shorter than A1, the
    # base it is decided against: against A1 its throughput compares different work.
    arms = {
        "baseline": FakeArm(cv=0.02),
        "A1": FakeArm(speed=1.3, cv=0.02, resp_len=530.0),
        "A3": FakeArm(speed=1.3, cv=0.02, resp_len=490.0, base="A1"),
    }
    a3 = comparison(analyse(tmp_path, arms), "A3")
    assert a3.same_work.status == "pass"  # against the baseline
    assert (a3.verdict.status, a3.verdict.basis, a3.verdict.against) == ("invalid", "same_work", "A1")
    assert a3.verdict.cause and "490.0 vs 530.0 tokens" in a3.verdict.cause
    step = a3.summary.next_step
    assert step.action == "equalize_work" and "Make A3 and A1 generate the same work" in step.text


def test_identical_evidence_gives_identical_advice():
    """The next step is a function of the evidence: the committed A/A candidates (both change nothing
    that runs) renamed, or marked the PR candidate, get the same step in other names; and on either side
    of the futility bound (AA1 open at +5.5 %, AA2 stopped at +4.1 %) both say first not to merge."""
    path = Path(__file__).parents[2] / "runs" / "aa-1xh200-grpo" / "analysis.json"
    analysis = doc.parse(json.loads(path.read_text()), str(path))
    rerun = Rerun("runs/aa-1xh200-grpo/experiment.toml", "gpu", run_section="[profiles.gpu.run]")

    def step(c: doc.Comparison) -> doc.NextStep:
        return next_step.derive(c, metric_label="response tokens/s", rerun=rerun, design=analysis.settings.design)[0]

    for c in analysis.comparisons:
        renamed = c.model_copy(
            update={"candidate": "ZZ", "summary": c.summary.model_copy(update={"is_pr": not c.summary.is_pr})}
        )
        assert step(renamed).text == step(c).text.replace(c.candidate, "ZZ")
        assert step(c).text.startswith(f"Do not merge {c.candidate} ")
