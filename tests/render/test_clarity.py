"""What a reviewer must be able to tell apart on a report page: a check that could not be made
from a failed one, a neutral verdict from a good one, the machine by its hardware, the cause of
a failure and the memory limit it hit."""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path

import pytest

from reportgen.analysis.document import AnalysisDocument, GuardrailResult, Machine
from reportgen.render import blocks, candidate_page, experiment_page, home_page, machine, provenance_page
from reportgen.render.load import load_experiment
from reportgen.store.models import Fingerprint
from tests.render import site_fixture

CSS = Path(__file__).resolve().parents[2] / "docs" / "assets" / "report.css"
NA_GUARD = {
    "id": "same_inputs",
    "title": "Identical model manifest and data hashes",
    "status": "not_applicable",
    "passed": None,
    "reason": "not checkable: no hashes recorded",
    "evidence": None,
}


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    site_fixture.build_experiment(root)
    return load_experiment(root / "grpo-offload")


def _with(exp, edit):
    """A copy of the experiment whose analysis.json was changed by `edit`."""
    analysis = copy.deepcopy(exp.analysis.to_json())
    edit(analysis)
    return dataclasses.replace(exp, analysis=AnalysisDocument.model_validate(analysis))


def test_not_checkable_guardrail_is_neutral_not_a_failure(exp):
    changed = _with(exp, lambda a: [c["guardrails"].append(dict(NA_GUARD)) for c in a["comparisons"]])
    row = next(line for line in experiment_page.guardrail_table(changed).splitlines() if "Identical model" in line)
    assert "rg-fail" not in row and "✗" not in row and "rg-pass" not in row
    assert row.count('<span class="rg-na" title="not checkable">– n/a</span> not checkable: no hashes recorded') == 3
    md = candidate_page.render(changed, "A1").markdown
    line = next(x for x in md.splitlines() if "Identical model" in x)
    assert "rg-na" in line and "✗" not in line

    # the failures stay failures, the passes stay passes
    def guard(status: str) -> GuardrailResult:
        return GuardrailResult(id="g", title="g", status=status)  # type: ignore[arg-type]

    assert blocks.guardrail_mark(guard("fail")).count("✗") == 1
    assert "✓" in blocks.guardrail_mark(guard("pass"))
    assert "n/a" in blocks.guardrail_mark(guard("not_applicable"))
    assert ".rg-na" in CSS.read_text()


def test_verdict_colours(exp):
    green = {"success", "tip", "question"}  # Material's green-ish admonition types
    assert blocks.VERDICT_ADMONITION["accepted"] == "success"
    assert blocks.VERDICT_ADMONITION["failed"] in {"failure", "danger"}
    assert blocks.VERDICT_ADMONITION["rejected"] == "warning"
    for status in ("inconclusive", "no_change", "invalid"):
        kind = blocks.VERDICT_ADMONITION[status]
        assert kind not in green and kind not in {"failure", "danger", "warning"}
        assert f".rg-{kind.removeprefix('rg-')} > .admonition-title::before" in CSS.read_text()

    def inconclusive(a):
        a["comparisons"][0]["verdict"].update(status="inconclusive")
        a["comparisons"][0]["summary"].update(verdict="inconclusive")

    changed = _with(exp, inconclusive)
    assert '!!! rg-inconclusive "A1 inconclusive' in candidate_page.render(changed, "A1").markdown
    assert '<span class="rg-badge rg-inconclusive">inconclusive</span>' in experiment_page.answer(changed)


def test_interval_warnings_are_footnotes(exp):
    def edit(a):
        a["comparisons"][2]["run_level"]["interval"]["warnings"] = [
            "only one repeat per arm",
            "a very long warning " * 8,
        ]

    tbl = experiment_page.verdict_table(_with(exp, edit))
    header = tbl.splitlines()[0]
    assert "warnings" not in header and "method" not in header
    rows = [line for line in tbl.splitlines() if line.startswith("| [A")]
    assert all("a very long warning" not in r for r in rows)
    one = '<sup class="rg-fnref">[<a href="#note-1">1</a>]</sup>'
    assert rows[0].endswith(f"{one} | 1 | yes |")  # one pair of runs
    # two notes read as "[1, 2]", never as a superscript "12"
    assert '[<a href="#note-1">1</a>, <a href="#note-2">2</a>]' in rows[2] and "<sup" not in rows[1]
    notes = re.findall(r'<li id="note-\d">(.*?)</li>', tbl)
    assert notes[0] == "only one repeat per arm (A1, A3)" and notes[1].endswith("(A3)") and len(notes) == 2


def test_machine_is_its_hardware_and_the_hostname_stays_on_provenance(exp):
    md = experiment_page.render(exp).markdown
    meta = md.splitlines()[2]
    assert "2 x NVIDIA A100-SXM4-80GB" in meta and "gpu-node-7" not in meta
    assert "gpu-node-7" in provenance_page.render(exp).markdown
    assert "gpu-node-7" not in home_page.render([exp]).markdown
    fp = Fingerprint(cpu_model="Intel(R) Xeon(R) Processor", cpu_count=16)
    assert machine.summary(Machine(hostname="vm", gpus=[]), fp) == "Intel(R) Xeon(R) Processor, 16 cores"
    assert machine.summary(Machine(gpus=[{"name": "H200"}, {"name": "H200"}, {"name": "L4"}])) == "2 x H200 + 1 x L4"
    assert machine.summary(Machine(hostname="vm")) == "machine unknown"


def test_failed_candidate_shows_the_memory_cap(tmp_path):
    # The cap bounds PyTorch's allocator: it is drawn on the chart of what the framework allocated,
    # and not on nvidia-smi's figure (which also counts the CUDA context and what was there before).
    exp_dir = site_fixture.build_experiment(tmp_path, cap_gib=80)
    page = candidate_page.render(load_experiment(exp_dir), "A2")
    md = page.markdown
    assert (
        md.index('!!! failure "A2 failed; changes the maths')
        < md.index("## What happened")
        < md.index("### Memory up to the failure")
    )
    assert "At its peak the framework held 67.24 GiB of the 80.00 GiB emulated cap (12.76 GiB left)" in md
    # nvidia-smi's peak, explained in numbers that add up to it
    assert "A2's nvidia-smi peak, 80999 MiB, stands above the 81920 MiB cap" not in md  # it does not: 80999 < 81920
    assert "A2's nvidia-smi peak, 80999 MiB, is more than the framework's 68850 MiB: 615 MiB in use" in md
    assert "and 11534 MiB beyond that, the CUDA context" in md
    allocated = page.charts["memory-allocated"]
    limits = [layer for layer in allocated["layer"] if layer.get("mark", {}).get("type") == "rule"]
    assert [r["encoding"]["y"]["field"] for r in limits] == ["y"]
    assert allocated["datasets"]["limit"].splitlines()[1].startswith("8.192e+04,cap 80.00 GiB")
    assert all(
        layer["encoding"]["y"]["field"] != "cap"
        for layer in page.charts["memory"]["spec"]["layer"]
        if "y" in layer.get("encoding", {})
    )
    # no cap flag: no cap rule on the allocator's chart and no cap in words
    plain = candidate_page.render(load_experiment(site_fixture.build_experiment(tmp_path / "b")), "A2")
    assert "limit" not in plain.charts["memory-allocated"]["datasets"]
    assert "GiB cap" not in plain.markdown


def test_a_small_workload_zooms_the_memory_chart(tmp_path):
    """A small workload on an 80 GiB card: the axis is scaled to the data, the total (far above)
    is not drawn."""
    exp_dir = site_fixture.build_experiment(tmp_path, cap_gib=5, memory_scale=1 / 16)
    exp = load_experiment(exp_dir)
    peak = max(float(r.gpu["mem_used_mib"].max()) for r in exp.formal_runs("A2"))
    assert 4 * peak < 81920  # the fixture's A2 peak, or this test checks nothing
    page = candidate_page.render(exp, "A2")
    layers = page.charts["memory"]["spec"]["layer"]
    ruled = {
        layer["encoding"]["y"]["field"]
        for layer in layers
        if "y" in layer["encoding"] and layer["mark"]["type"] == "rule"
    }
    assert ruled == set()  # the device total is not drawn, and no cap on nvidia-smi's figure
