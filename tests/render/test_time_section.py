"""The "Where the time went" section, from stored summaries only (traces may be absent)."""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
from pathlib import Path

from reportgen.render import time_section
from reportgen.render.load import PublishedExperiment, load_experiment
from reportgen.traces import model, stats, store
from tests.helpers import write_run_folder
from tests.render import site_fixture
from tests.traces.synth import offload_trace
from tests.traces.test_snapshot import snap


def _run(exp: Path, arm: str, *, offload: bool, oom: bool = False) -> None:
    run = exp / f"profile-{arm}" / "1"
    trace = run / "traces" / "e" / "train_trace" / "train_actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz"
    offload_trace(trace, offload=offload)
    if oom:
        mem = run / "traces" / "e" / "memory_snapshot" / "memory_snapshot_time1_rank0_dp0_tp0_pp0_snapshot.pickle"
        mem.parent.mkdir(parents=True)
        mem.write_bytes(pickle.dumps(snap(oom=True)))
    store.summarize_run(run)
    artifacts = [
        {"path": str(p.relative_to(run)), "bytes": p.stat().st_size, "sha256": "ab" * 32}
        for p in sorted((run / "traces").rglob("*"))
        if p.is_file()
    ]
    manifest = {"experiment": "e", "arm": f"profile-{arm}", "repeat": 1, "role": "profile", "status": "complete"}
    write_run_folder(run, {**manifest, "artifacts": artifacts})


def _load(exp: Path) -> PublishedExperiment:
    """The experiment as the pages read it, its figures from the summaries (analysis.json's `traces`)."""
    site_fixture.restat_traces(exp)
    return load_experiment(exp)


def _exp(tmp_path: Path, *, oom: bool = False) -> PublishedExperiment:
    """The render tests' experiment (baseline, A1-A3) with GPU-style profiler runs of baseline and A1."""
    exp = site_fixture.build_experiment(tmp_path, name="e", with_profile=False)
    _run(exp, "baseline", offload=True)
    _run(exp, "A1", offload=False, oom=oom)
    return _load(exp)


def test_candidate_section_shows_the_offload_difference(tmp_path):
    exp = _exp(tmp_path)
    sec = time_section.candidate_section(exp, "A1", svg=True)
    md = sec.markdown
    assert md.startswith("## Where the time went")
    assert set(sec.charts) == {"time-steps", "time-diff"}
    assert "GPU view" in md
    # the rows that must read at a glance: copies, host-side Adam and data movement shrink in A1
    cells = {}
    for line in md.splitlines():
        found = re.findall(r"<td[^>]*>(.*?)</td>", line)
        if found:
            cells[found[0]] = found[1:]
    assert cells["D2H"] == ["0.80", "0.00", "-0.80"] and cells["H2D"] == ["0.80", "0.00", "-0.80"]
    assert cells["host: optimizer step"] == ["3.00", "0.30", "-2.70"]
    assert cells["host: data movement"] == ["1.90", "0.00", "-1.90"]
    assert cells["GPU idle"][0] == "4.70"
    assert "D2H copied (MiB)" in md and "64.0" in md
    assert "Memcpy DtoH (Device -&gt; Pinned)" in md or "Memcpy DtoH (Device -> Pinned)" in md
    assert "../traces/profile-A1-1-train_actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz" in md
    bars = json.dumps(sec.charts["time-steps"], ensure_ascii=False)
    assert "baseline · rank 0 · step 3" in bars and "A1 · rank 0 · step 4" in bars
    assert sec.copies == {}  # the copies belong to the experiment page


def test_experiment_section_offers_the_traces(tmp_path):
    exp = _exp(tmp_path)
    sec = time_section.experiment_section(exp, svg=False)
    names = sorted(sec.copies)
    assert names == [
        "traces/profile-A1-1-train_actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz",
        "traces/profile-baseline-1-train_actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz",
    ]
    src = exp.path / "profile-A1" / "1" / "traces" / "e" / "train_trace"
    assert sec.copies[names[0]].read_bytes() == next(src.iterdir()).read_bytes()
    assert "Perfetto" in sec.markdown and "TensorBoard" in sec.markdown
    assert "time-steps" in sec.charts


def test_summaries_without_traces_still_render(tmp_path):
    exp = _exp(tmp_path)
    for p in list(exp.path.rglob("*.json.gz")):
        p.unlink()
    sec = time_section.experiment_section(exp, svg=False)
    assert sec.copies == {}
    assert "not in this copy of the runs" in sec.markdown
    assert "copy it from the machine that ran the campaign to the same path" in sec.markdown  # how to get it
    assert "time-steps" in sec.charts


def test_failed_candidate_shows_memory_at_failure(tmp_path):
    exp = _exp(tmp_path, oom=True)
    md = time_section.candidate_section(exp, "A1", svg=True, failed=True).markdown
    assert "### Memory at the failure" in md
    assert "8.0 MiB requested with 1.0 MiB free" in md
    assert "optim.py:88 step" in md


def test_arm_without_profile_says_how_to_get_one(tmp_path):
    exp = _exp(tmp_path)
    sec = time_section.candidate_section(exp, "A2", svg=True)
    assert "No profiler run of" in sec.markdown and "[profiler] arms" in sec.markdown
    assert sec.charts == {}


def test_sglang_engines_and_a_formal_runs_oom_snapshot(tmp_path):
    exp = site_fixture.build_experiment(tmp_path, name="e", with_profile=False)
    _run(exp, "baseline", offload=True)
    _run(exp, "A1", offload=False)
    # an SGLang engine trace in A1's profiler run, summarised with the rest
    prun = exp / "profile-A1" / "1"
    offload_trace(
        prun / "traces" / "e" / "sglang_trace" / "rollout_0" / "engine1-1700-TP-0.trace.json.gz", offload=False
    )
    store.summarize_run(prun)
    # the OOM snapshot of A1's failed formal run (not of its profiler run)
    formal = exp / "A1" / "1"
    mem = formal / "traces" / "e" / "memory_snapshot" / "memory_snapshot_time9_rank0_dp0_tp0_pp0_snapshot.pickle"
    mem.parent.mkdir(parents=True)
    mem.write_bytes(pickle.dumps(snap(oom=True)))
    store.summarize_run(formal)
    md = time_section.candidate_section(_load(exp), "A1", svg=False, failed=True).markdown
    assert "Rollout (SGLang) engines" in md and "1 / TP 0" in md
    assert "### Memory at the failure" in md and "8.0 MiB requested" in md
    assert "From the profiler runs <code>profile-baseline/1</code>, <code>profile-A1/1</code>" in md


def test_unreadable_summary_is_named(tmp_path):
    exp = site_fixture.build_experiment(tmp_path, name="e", with_profile=False)
    _run(exp, "baseline", offload=True)
    _run(exp, "A1", offload=False)
    (exp / "profile-A1" / "1" / "traces.parquet").write_bytes(b"not parquet")
    md = time_section.experiment_section(_load(exp), svg=False).markdown
    assert "summary not read: <code>profile-A1/1/traces.parquet" in md
    assert "<th>baseline</th>" in md.replace(' style="text-align: right;"', "")


def test_headline_names_the_offload_changes(tmp_path):
    md = time_section.candidate_section(_exp(tmp_path), "A1", svg=False).markdown
    line = next(x for x in md.splitlines() if x.startswith("**A1 against the baseline"))
    assert "host: optimizer step -2.70 ms" in line and "-96.0 MiB copied" in line
    assert md.index(line) < md.index("<figure")


def test_operator_label_names_the_kernel_and_its_functor_not_the_signature_head():
    from reportgen.render.time_section import operator_label

    mul = (
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<"
        "c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >("
        "at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
        "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, ...)"
    )
    assert operator_label(mul) == "elementwise_kernel<MulFunctor>"
    mean = (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, "
        "float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, "
        "float, float, float>, unsigned int, float, 4, 4>)"
    )
    assert operator_label(mean) == "reduce_kernel<MeanOps>"
    cat = (
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::"
        "OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, int)"
    )
    assert operator_label(cat) == "CatArrayBatchedCopy"
    # Names without a signature stay whole: cuBLAS/cuDNN kernels, aten ops, copies.
    for plain in ("nvjet_sm90_tst_64x8_64x16_2x4_h_bz_TNT", "aten::addmm", "Memcpy HtoD (Pageable -> Device)"):
        assert operator_label(plain) == plain


def test_the_section_says_why_not_only_what(tmp_path):
    exp = _exp(tmp_path)
    sec = time_section.candidate_section(exp, "A1", svg=False)
    md = sec.markdown
    # a conclusion first; the synthetic steps last 10 ms in both arms, so: the same time
    first = md.split("\n\n")[1]
    assert (
        first == "**Where the time went:** A1's profiled step takes the same time as the baseline's (10.0 and 10.0 ms)."
    )
    # with a baseline step 5 ms longer: the host-side causes, the kernels unchanged, GPU idle as the symptom
    rows = model.read(exp.path / "profile-baseline" / "1" / model.FILENAME)
    longer = [dataclasses.replace(r, time_us=r.time_us + 5_000) if r.kind in ("wall", "idle") else r for r in rows]
    slower = stats.arm_stats("baseline", [stats.RunSummary("profile-baseline/1", longer)])
    said = time_section.conclusion(stats.diff_stats(slower, time_section.load(exp)["A1"]))
    assert said.startswith("**Where the time went:** A1's profiled step is 5.00 ms shorter because of the host side")
    assert "(optimizer step -2.70 ms, data movement -1.90 ms" in said
    assert "the GPU's kernels take the same time" in said and "it waits on the host" in said
    # the difference chart has the host's categories beside the GPU's, largest change first
    parts = sec.charts["time-diff"]["datasets"]["main"].splitlines()[1:]
    assert any(p.startswith("host: optimizer step,") for p in parts)
    assert abs(float(parts[0].split(",")[1])) >= max(abs(float(p.split(",")[1])) for p in parts)
    # profiled steps are not measured ones: said, with both figures
    assert "**Profiled is not measured:**" in md and "a measured one" in md


def test_a_copy_from_pageable_memory_is_pointed_out(tmp_path):
    exp_dir = site_fixture.build_experiment(tmp_path, name="e", with_profile=False)
    _run(exp_dir, "baseline", offload=True)
    _run(exp_dir, "A1", offload=False)
    run = exp_dir / "profile-baseline" / "1"
    pageable = "Memcpy HtoD (Pageable -> Device)"
    rows = [
        dataclasses.replace(r, name=pageable) if r.name == "Memcpy HtoD (Pinned -> Device)" else r
        for r in model.read(run / model.FILENAME)
    ]
    model.write(run, rows)
    md = time_section.experiment_section(_load(exp_dir), svg=False).markdown
    assert "**Copies from pageable host memory**" in md
    assert "baseline: 32.0 MiB a step <code>Memcpy HtoD (Pageable -&gt; Device)</code>" in md and "GB/s" in md
