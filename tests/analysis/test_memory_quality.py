"""Memory against the cap a run declared, and what ran (training quality: test_quality.py):
from constructed runs/ trees analysed end to end, and the pure helpers on their own."""

from __future__ import annotations

import pandas as pd
import pytest
from builder import FakeArm, analyse, comparison, make_experiment

from reportgen.analysis import memory
from reportgen.analyze import analyze_experiment
from reportgen.render.load import load_analysis
from reportgen.store.run import LogEvent, Manifest, StoredRun

CAP = {"--gpu-memory-cap-gib": "5"}
# PyTorch's message with a per-process limit set (runs/showcase-1xh200-grpo-offload-r3/A2/1/stderr.log:62)
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
    "139.80 GiB of which 133.99 GiB is free. Including non-PyTorch memory, this process has 5.80 GiB memory in "
    "use. 5.00 GiB allowed; Of the allocated memory 4.94 GiB is allocated by PyTorch, with 2.00 MiB allocated "
    "in private pools (e.g., CUDA Graphs), and 46.55 MiB is reserved by PyTorch but unallocated."
)


def test_headroom_is_taken_on_what_the_cap_bounds_and_named_in_the_next_step(tmp_path):
    # nvidia-smi says 70000 MiB (the builder's GPU samples) against a 5 GiB cap: the cap bounds
    # PyTorch's allocator, whose own peak (4.4 GiB) is what the headroom is taken on.
    doc = analyse(
        tmp_path,
        {
            "baseline": FakeArm(argv=CAP, extra={"perf/max_memory_allocated_gib": 1.4}),
            "A1": FakeArm(speed=1.5, argv=CAP, extra={"perf/max_memory_allocated_gib": 4.4}),
        },
    )
    m = doc.arm("A1").memory
    assert m.limit == "cap" and m.cap_mib == 5120.0 and m.used_source == "allocator"
    assert m.used_mib == m.allocated_peak_mib and abs(m.used_mib - 4.4 * 1024) < 1e-6
    assert abs(m.headroom_mib - 0.6 * 1024) < 1e-6 and abs(m.headroom - 0.12) < 1e-9
    assert m.device_peak_mib == 70000.0 and m.device_before_mib == 70000.0 and m.device_peak_net_mib == 0.0
    # against the GPU's capacity, and what nvidia-smi's own peak holds beyond the allocator's (here less: the
    # builder's samples are flat)
    assert m.device_total_mib and m.device_share == pytest.approx(
        70000.0 / m.device_total_mib, rel=1e-8
    )  # stored to 9 digits
    assert m.beyond_allocated_mib == m.device_peak_net_mib - m.allocated_peak_mib
    c = comparison(doc, "A1")
    assert c.verdict.status == "accepted"
    # under 15 % left: the merge step names the memory it costs, with a link to the figures
    assert "Memory: A1 needs 4.40 of the 5.00 GiB cap (0.60 GiB, 12%, left)" in c.summary.next_step.text
    assert "memory" in [e.id for e in c.summary.evidence]
    assert c.summary.peak_memory.reference == 1.4 * 1024 and c.summary.peak_memory.candidate == 4.4 * 1024


def test_plenty_of_headroom_leaves_the_merge_step_alone(tmp_path):
    doc = analyse(
        tmp_path,
        {
            "baseline": FakeArm(argv=CAP, extra={"perf/max_memory_allocated_gib": 1.4}),
            "A1": FakeArm(speed=1.5, argv=CAP, extra={"perf/max_memory_allocated_gib": 2.0}),
        },
    )
    assert comparison(doc, "A1").summary.next_step.text == "Merge A1."


def test_without_a_cap_the_card_is_the_limit_and_the_device_peak_net_of_what_was_there(tmp_path):
    def run(used: list[float]) -> StoredRun:
        gpu = pd.DataFrame(
            {"t": range(len(used)), "index": 0, "mem_used_mib": used, "mem_total_mib": 81920.0, "util_gpu": 0.0}
        )
        return StoredRun("A1", 1, gpu=gpu)

    m = memory.use([run([615.0, 615.0, 9000.0, 60615.0, 3000.0])])
    assert m.limit == "device" and m.used_source == "device" and m.allocated_peak_mib is None
    assert m.device_before_mib == 615.0 and m.device_peak_net_mib == 60000.0
    assert m.limit_mib == 81920.0 - 615.0 and m.headroom_mib == 81920.0 - 60615.0


def test_an_oom_in_plain_words_from_what_pytorch_printed():
    event = LogEvent(kind="oom", step=1, message=OOM, details={"tried_to_allocate": "20.00 MiB"})
    assert memory.oom_sentence(event, 5120.0) == (
        "ran out of GPU memory at step 1: PyTorch already held 4.94 of the 5.00 GiB allowed "
        "(--gpu-memory-cap-gib 5) when it asked for 20.00 MiB more"
    )
    assert memory.oom_cause("OOM at step 1, tried to allocate 20.00 MiB", event, 5120.0) == (
        "OOM at step 1, tried to allocate 20.00 MiB: PyTorch already held 4.94 of the 5.00 GiB allowed "
        "(--gpu-memory-cap-gib 5)"
    )
    # a message without the allocator's state: no sentence is invented
    assert memory.oom_sentence(LogEvent(kind="oom", step=1, message="CUDA out of memory."), None) is None
    # the run that died mid-step held more than its logged peak: what PyTorch says it held counts against
    # the cap (4.94 GiB), not the 20 MiB request that failed on top of it
    metrics = pd.DataFrame(
        {"step": [0], "key": ["perf/max_memory_allocated_gib"], "value": [4.33], "source": "console"}
    )
    run = StoredRun("A2", 1, Manifest.create({"effective_argv": CAP}), metrics, events=(event,))
    m = memory.use([run])
    assert m.used_mib == m.allocated_peak_mib == 4.94 * 1024 and m.headroom is not None and m.headroom < 0.02


def test_every_failed_repeat_is_named(tmp_path):
    doc = analyse(tmp_path, {"baseline": FakeArm(), "A2": FakeArm(fail_at=9)})
    g = {x.id: x for x in comparison(doc, "A2").guardrails}
    assert g["no_failures"].reason == "A2/1, A2/2, A2/3: OOM at step 9, tried to allocate 2.46 GiB"
    assert g["steps_completed"].reason == "A2/1, A2/2, A2/3: 9/60 steps"


def test_the_workload_says_what_ran(tmp_path):
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(argv={"--preset": "gpu-small"}), "A1": FakeArm()})
    spec = exp / "experiment.toml"
    spec.write_text(
        spec.read_text().replace(
            'script = "recipe.sh"', 'script = "recipe.sh"\nentrypoint = "reportgen.workloads.grpo"'
        )
    )
    analyze_experiment(exp)
    w = load_analysis(exp).workload
    assert w.entrypoint == "reportgen.workloads.grpo" and w.doc == "workload.md"
    assert w.parameters == 201_395_200 and w.model and w.model.startswith("Qwen3 architecture, 16 layers")
    assert "random init" in w.model and w.steps == 60 and w.samples_per_step == 16.0
    assert w.max_response_tokens == 1024 and not w.fixed_length


def _oom_campaign(tmp_path, a3_gib: float):
    """The showcase's shape: A1 near the 5 GiB cap, A2 (on A1) out of memory at step 3 holding 4.9
    GiB, A3 (on A1) A1 with a smaller token budget, whose peak is `a3_gib`."""
    budget = {**CAP, "--max-tokens-per-gpu": "896"}
    mem = "perf/max_memory_allocated_gib"
    return analyse(
        tmp_path,
        {
            "baseline": FakeArm(argv=budget, extra={mem: 1.4}),
            "A1": FakeArm(speed=1.5, argv=budget, extra={mem: 4.4}),
            "A2": FakeArm(speed=1.5, argv=budget, extra={mem: 4.9}, fail_at=3, base="A1"),
            "A3": FakeArm(
                speed=1.0,
                argv={**budget, "--max-tokens-per-gpu": "640"},
                extra={mem: a3_gib},
                base="A1",
                edit={"set": {"--max-tokens-per-gpu": 640}},
            ),
        },
    )


def test_an_ooms_next_step_does_not_offer_a_token_budget_the_experiment_showed_too_weak(tmp_path):
    # A3 lowered the budget 896 -> 640 and saved 0.01 GiB; A2 holds 0.5 GiB more than A1: the step must
    # not send the user to a smaller budget, and says why with the page's own figures (issue 46.5).
    c = comparison(_oom_campaign(tmp_path, 4.39), "A2")
    step = c.summary.next_step
    assert step.action == "fix_oom"
    assert step.text.startswith(
        "Do not merge A2 for cards of this size: it does not fit under the 5.00 GiB cap, and a smaller "
        "--max-tokens-per-gpu would not make it fit: in this experiment A3 lowered --max-tokens-per-gpu from 896 to "
        "640 and its peak fell by 0.01 GiB (4.40 GiB to 4.39 GiB), with response tokens/s -"
    )
    assert "against A1; A2 already held 4.90 GiB when it failed at step 3, 0.50 GiB more than A1's peak" in step.text
    assert "Keep A1's flags" in step.text
    assert step.command is not None and "make A2's change smaller" in step.command
    assert "saved 0.01 GiB: not the way here" in step.command


def test_an_ooms_next_step_offers_the_token_budget_where_it_saved_enough(tmp_path):
    c = comparison(_oom_campaign(tmp_path, 3.0), "A2")
    step = c.summary.next_step
    assert step.text.startswith(
        "Fix the out-of-memory failure of A2: a smaller --max-tokens-per-gpu in its [[candidates]] entry of the "
        "spec, then run the experiment again into a new folder: in this experiment A3 lowered --max-tokens-per-gpu "
        "from 896 to 640 and its peak fell by 1.40 GiB (4.40 GiB to 3.00 GiB)"
    )
    assert step.command is not None and "give A2 a smaller --max-tokens-per-gpu (as A3 did)" in step.command


def test_without_a_measured_token_budget_the_oom_step_stays_the_general_one(tmp_path):
    doc = analyse(
        tmp_path,
        {
            "baseline": FakeArm(argv=CAP, extra={"perf/max_memory_allocated_gib": 1.4}),
            "A2": FakeArm(argv=CAP, extra={"perf/max_memory_allocated_gib": 4.9}, fail_at=3),
        },
    )
    step = comparison(doc, "A2").summary.next_step
    assert step.text.startswith("Fix the out-of-memory failure of A2: give it less memory per step (a smaller")
