"""A trace recorded by torch.profiler itself (CPU), in the way the embedded workload records
one: the reader and the CPU view on the real format."""

from __future__ import annotations

import pytest

from reportgen.traces import store
from reportgen.traces.model import read

torch = pytest.importorskip("torch")


def test_torch_profiler_cpu_trace(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.SiLU(), torch.nn.Linear(64, 8))
    opt = torch.optim.AdamW(model.parameters())
    x = torch.randn(32, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for step in (1, 2):
            with torch.profiler.record_function(f"ProfilerStep#{step}"):
                loss = model(x).square().mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
    out = tmp_path / "run" / "traces" / "exp" / "train_trace"
    out.mkdir(parents=True)
    prof.export_chrome_trace(str(out / "train_actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz"))
    store.summarize_run(tmp_path / "run")
    rows = read(tmp_path / "run" / "traces.parquet")
    assert {r.view for r in rows} == {"cpu"}
    assert {r.step for r in rows} == {1, 2}
    by = {(r.step, r.kind, r.category): r.time_us for r in rows if not r.name}
    for step in (1, 2):
        assert by[(step, "compute", "GEMM")] > 0
        assert by[(step, "compute", "optimizer")] > 0
        assert by[(step, "cpu_span", "optimizer_step")] > 0
        parts = sum(v for (s, k, _), v in by.items() if s == step and k == "compute")
        assert 0 < parts <= by[(step, "wall", "step")] * 1.01
    assert any(r.kind == "top_op" and r.name == "aten::addmm" and r.category == "GEMM" for r in rows)
