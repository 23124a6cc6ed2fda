"""Memory in words (reportgen.render.memory_words) on a committed showcase: the peak against the GPU's
capacity, the 5 GiB cap named as an emulated cap, and nvidia-smi's 6032 MiB above it explained with
numbers that add up."""

from __future__ import annotations

from pathlib import Path

from reportgen.render import memory_words
from reportgen.render.load import load_analysis

R2 = Path(__file__).resolve().parents[2] / "runs" / "showcase-1xh200-grpo-offload-r2"


def test_nvidia_smis_peak_above_the_emulated_cap_is_explained() -> None:
    m = load_analysis(R2).arm("A1").memory  # type: ignore[union-attr]
    assert m.cap_mib == 5120.0 and m.device_total_mib == 143771.0  # an H200's capacity, not the cap
    assert m.device_peak_mib is not None and m.device_before_mib is not None and m.allocated_peak_mib is not None
    # the three parts add up to nvidia-smi's peak (to the nine significant digits analysis.json keeps)
    assert abs(m.device_before_mib + m.allocated_peak_mib + (m.beyond_allocated_mib or 0) - m.device_peak_mib) < 1e-4
    assert memory_words.limit_text(m) == "5.00 GiB cap (emulated)"
    assert memory_words.gpu_share(m) == "4% of 140.40 GiB"
    assert memory_words.gap_sentence("A1", m) == (
        "A1's nvidia-smi peak, 6032 MiB, stands above the 5120 MiB (5.00 GiB) cap without breaking it: 615 MiB in use on "
        "the GPU before the run, the 4515 MiB the framework allocated at its peak, and 902 MiB beyond that, the "
        "CUDA context and libraries and what PyTorch's caching allocator reserved but had not handed out; the cap "
        "bounds PyTorch's allocator alone (what it allocates and reserves), not the CUDA context nor what was in "
        "use before"
    )


def test_no_sentence_when_the_framework_figure_is_the_larger() -> None:
    # allocated and nvidia-smi peaks are each the maximum over an arm's runs, maybe of two runs
    m = load_analysis(R2).arm("A1").memory  # type: ignore[union-attr]
    assert memory_words.gap_sentence("A1", m.model_copy(update={"beyond_allocated_mib": -10.0})) == ""
    assert memory_words.gap_sentence("A1", m.model_copy(update={"allocated_peak_mib": None})) == ""
