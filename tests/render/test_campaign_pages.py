"""The pages of the committed one-H200 showcases say what their runs say (issue 46.2 and 46.4): a
campaign over two machines is two machines on the rollback and provenance pages, and the headline's
memory rows read with the answer and the 5 GiB cap of the title (browser checks of the same pages:
tests/render/test_browser_review.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.render import blocks, experiment_page, provenance_page, rollback_page
from reportgen.render.load import load_experiment

R3, R4 = "showcase-1xh200-grpo-offload-r3", "showcase-1xh200-grpo-offload-r4"


@pytest.fixture(scope="module")
def r4(committed_runs: Path):
    return load_experiment(committed_runs / R4)


def test_the_rollback_evidence_names_the_machines_the_pairs_came_from(r4, committed_runs: Path) -> None:
    # The risks of rolling back A1 (accepted on speed before its quality half; the rows are the same for
    # any candidate the page lists), read as the rollback page lays them out.
    md = "\n".join(" | ".join(row) for row in rollback_page.risks(r4, "A1"))
    assert (
        "2 machines of one class (block 1 on dcdf3ff6; blocks 2, 3 on 8fc00ca9), each pair's runs back to back "
        "on one machine" in md
    )
    assert "one machine, arms back to back" not in md and "on the measured machines" in md
    # a campaign of one machine still says so
    r3 = "\n".join(" | ".join(row) for row in rollback_page.risks(load_experiment(committed_runs / R3), "A1"))
    assert "one machine, arms back to back" in r3


def test_the_provenance_page_lists_every_machine_with_its_runs(r4) -> None:
    section = "\n".join(provenance_page.machine_section(r4))
    assert "machine 1: <code>dcdf3ff6</code>" in section and "machine 2: <code>8fc00ca9</code>" in section
    assert "4: baseline/1, A1/1, A2/1, A3/1" in section
    assert "6: baseline/2, baseline/3, A1/2, A1/3, A3/2, A3/3" in section
    assert "6.18.44-fc-v1147-gpu" in section and "6.18.44-fc-v973-gpu" in section
    smi = "\n".join(provenance_page.nvidia_smi_section(r4))
    commands = "\n".join(provenance_page.commands_section(r4))
    assert '??? note "A1/1 · machine dcdf3ff6"' in commands and '??? note "A3/3 · machine 8fc00ca9"' in commands
    # nvidia-smi: each machine's first run whole, every other run as what differs from it, same machine
    assert '??? note "baseline/1 · machine dcdf3ff6"\n' in smi and '??? note "baseline/2 · machine 8fc00ca9"\n' in smi
    assert '??? note "A1/1 · machine dcdf3ff6: the lines that differ from baseline/1\'s"' in smi
    assert '??? note "A3/3 · machine 8fc00ca9: the lines that differ from baseline/2\'s"' in smi
    for text in (smi, commands):
        assert text.count("??? note") == 10  # every formal run, each under its machine


def test_the_headline_memory_rows_are_the_answers_figures_and_add_up(r4) -> None:
    a1 = r4.analysis.comparison("A1")
    rows = {label: (b, c) for label, b, c, _ in blocks.headline_cells(r4.analysis, a1)}
    assert rows["peak memory allocated by PyTorch (what the 5.00 GiB cap bounds)"] == ("1.41 GiB", "4.41 GiB")
    assert rows["GPU memory used, nvidia-smi peak (with the CUDA context and cache, which no cap bounds)"] == (
        "2.95 GiB",
        "5.89 GiB",
    )
    assert r4.analysis.arm("A1").memory.used_mib == r4.analysis.arm("A1").memory.allocated_peak_mib  # the answer's
    md = experiment_page.render(r4, svg=False).markdown
    assert (
        "The 5.00 GiB cap bounds what PyTorch allocates, not what nvidia-smi shows: A1's nvidia-smi peak of 5.89 GiB "
        "is 0.60 GiB in use on the GPU before the run, 4.41 GiB allocated by PyTorch and 0.88 GiB of CUDA context "
        "and allocator cache ([memory](#memory))." in md
    )
    # A2 ran out of memory: its peak is what PyTorch said it held, without the 20 MiB it failed to get
    a2 = r4.analysis.arm("A2").memory
    assert a2.allocated_peak_mib == pytest.approx(4.94 * 1024) and "4.96 GiB" not in md and "5079 MiB" not in md
