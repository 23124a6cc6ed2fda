"""Per-step breakdown of a GPU-style trace (synthetic, Kineto's fields) and of CPU views."""

from __future__ import annotations

import pytest

from reportgen.traces.breakdown import summarize_trace
from reportgen.traces.model import WHOLE_TRACE

from .synth import PID, TID, GpuTraceBuilder, offload_trace


def _pick(rows, step, kind, category=None, name=None):
    out = [r for r in rows if r.step == step and r.kind == kind]
    if category is not None:
        out = [r for r in out if r.category == category]
    if name is not None:
        out = [r for r in out if r.name == name]
    assert len(out) == 1, (step, kind, category, out)
    return out[0]


def test_offloaded_step_shows_copies_host_adam_and_idle(tmp_path):
    rows = summarize_trace(offload_trace(tmp_path / "b.json.gz", offload=True), source="train", file="b", rank=0)
    assert {r.view for r in rows} == {"gpu"}
    assert sorted({r.step for r in rows}) == [3, 4]
    t = lambda kind, cat: _pick(rows, 3, kind, cat).time_us  # noqa: E731
    assert t("wall", "step") == 10_000
    assert (t("compute", "GEMM"), t("compute", "attention"), t("compute", "elementwise/norm")) == (2000, 1000, 500)
    assert (t("compute", "communication"), t("compute", "optimizer"), t("compute", "other")) == (200, 0, 0)
    d2h, h2d = _pick(rows, 3, "memcpy", "D2H"), _pick(rows, 3, "memcpy", "H2D")
    assert (d2h.time_us, d2h.bytes, d2h.count) == (800, 64 << 20, 1)
    assert (h2d.time_us, h2d.bytes) == (800, 32 << 20)
    assert _pick(rows, 3, "memcpy", "D2D").bytes == 0
    assert t("idle", "gpu_idle") == 10_000 - 5_300
    assert t("cpu_span", "optimizer_step") == 3_000
    assert t("cpu_span", "data_movement") == 1_000 + 900
    assert t("cpu_span", "python_overhead") == 10_000 - (100 + 50 + 20 + 1_000 + 2_500 + 900)
    top = [r for r in rows if r.step == 3 and r.kind == "top_op"]
    assert top[0].category == "GEMM" and top[0].time_us == 2000 and top[0].name.startswith("sm90_xmma_gemm")
    assert {r.name: r.category for r in top}["Memcpy DtoH (Device -> Pinned)"] == "D2H"


def test_device_resident_step_kernels_follow_their_launch(tmp_path):
    rows = summarize_trace(offload_trace(tmp_path / "a.json.gz", offload=False), source="train", file="a", rank=1)
    assert {r.rank for r in rows} == {1}
    # the Adam kernel ran inside the optimizer span -> optimizer; the fill kernel launched at the
    # end of step 3 and ran past its CPU span still belongs to step 3
    assert _pick(rows, 3, "compute", "optimizer").time_us == 400
    assert _pick(rows, 3, "compute", "elementwise/norm").time_us == 510
    assert _pick(rows, 3, "compute", "elementwise/norm").count == 2
    assert _pick(rows, 3, "idle", "gpu_idle").time_us == pytest.approx(10_000 - (2000 + 1000 + 500 + 200 + 400 + 5))
    assert _pick(rows, 3, "memcpy", "D2H").time_us == 0
    assert _pick(rows, 3, "cpu_span", "optimizer_step").time_us == 300
    assert _pick(rows, 3, "cpu_span", "data_movement").time_us == 0


def test_cpu_only_trace_uses_operator_self_time(tmp_path):
    b = GpuTraceBuilder()
    b.step(7, 0.0, 1_000.0)
    b.span("cpu_op", "aten::linear", 100, 300)  # parent: 300 - 250 = 50 self
    b.span("cpu_op", "aten::addmm", 110, 250)  # GEMM, 250 - 40 = 210 self
    b.span("cpu_op", "aten::copy_", 120, 40)  # nested copy: data movement, self 40
    b.span("cpu_op", "aten::silu", 500, 100)  # elementwise
    b.span("user_annotation", "Optimizer.step#AdamW.step", 700, 200)
    b.span("cpu_op", "aten::mul_", 710, 50)  # inside the optimizer span -> optimizer
    b.span("cpu_op", "aten::mm", 300, 80, tid=TID + 1)  # another thread: counted, not Python overhead
    rows = summarize_trace(b.write(tmp_path / "cpu.json.gz"), source="train", file="cpu", rank=0)
    assert {r.view for r in rows} == {"cpu"}
    assert not [r for r in rows if r.kind in ("memcpy", "idle")]
    t = lambda kind, cat: _pick(rows, 7, kind, cat).time_us  # noqa: E731
    assert t("compute", "GEMM") == 210 + 80
    assert t("compute", "elementwise/norm") == 100
    assert t("compute", "optimizer") == 50
    assert t("compute", "other") == 50 + 40  # aten::linear's own time, aten::copy_
    assert t("cpu_span", "data_movement") == 40
    assert t("cpu_span", "optimizer_step") == 200
    assert t("cpu_span", "python_overhead") == 1_000 - (300 + 100 + 50)


def test_trace_without_step_spans_is_one_whole_trace_step(tmp_path):
    b = GpuTraceBuilder()
    b.span("cpu_op", "aten::mm", 10, 90)
    b.launch(20, 30, 50, "ampere_sgemm_128x64_tn")
    rows = summarize_trace(b.write(tmp_path / "nostep.json.gz"), source="sglang", file="s", rank=0, engine=2)
    assert {r.step for r in rows} == {WHOLE_TRACE}
    assert {(r.source, r.engine) for r in rows} == {("sglang", 2)}
    assert _pick(rows, WHOLE_TRACE, "compute", "GEMM").time_us == 50
    assert _pick(rows, WHOLE_TRACE, "wall", "step").time_us == 90


def test_event_fields_as_kineto_writes_them(tmp_path):
    """String pids/tids (the profiler's own span rows) and 'N/A' bandwidths decode."""
    b = GpuTraceBuilder()
    b.step(1, 0, 100)
    b.launch(1, 2, 0.0, "Memcpy DtoD (Device -> Device)", memcpy=4096)
    b.events.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
                     "tid": "PyTorch Profiler", "ts": 0, "dur": 100, "args": {"Op count": 0}})  # fmt: skip
    b.events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": TID,
                     "ts": 5, "args": {"Total Reserved": 0, "Bytes": 64, "Device Type": 0}})  # fmt: skip
    rows = summarize_trace(b.write(tmp_path / "f.json.gz"), source="train", file="f", rank=0)
    assert _pick(rows, 1, "memcpy", "D2D").bytes == 4096


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "GEMM"),
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "GEMM"),
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x3_nn_align4>(Params)", "GEMM"),
        ("void fbgemm_gpu::permute_2D_data_kernel<false, int, int>(int, int const*)", "other"),
        ("void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel", "optimizer"),
        ("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>", "attention"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>", "optimizer"),
        ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>", "elementwise/norm"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "elementwise/norm"),
        ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1>", "other"),
    ],
)
def test_kernel_categories(name, category):
    from reportgen.traces.categories import kernel_category

    assert kernel_category(name) == category
