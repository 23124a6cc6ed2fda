"""Diagnostic outputs: torch.profiler Chrome traces and memory snapshots, in Relax's file layout.

    traces/<tb-experiment-name>/train_trace/{target}_rank0_dp0_tp0_pp0.{ts}.pt.trace.json.gz
    traces/<tb-experiment-name>/memory_snapshot/memory_snapshot_time{t}_rank0_dp0_tp0_pp0_snapshot.pickle

The traces root is $REPORTGEN_RUN_DIR/traces when the runner sets it, else ./traces.
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import resource
import time
from collections.abc import Mapping
from pathlib import Path

import torch

RANK_TAG = "rank0_dp0_tp0_pp0"


def rank_tag(rank: int = 0) -> str:
    """Relax's file tag of one rank; data-parallel ranks differ in the global and DP index."""
    return f"rank{rank}_dp{rank}_tp0_pp0"


def traces_root(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = Path(env["REPORTGEN_RUN_DIR"]) / "traces" if env.get("REPORTGEN_RUN_DIR") else Path("traces")
    return base / args.tb_experiment_name


class StepProfiler:
    """Profiles steps S..E inclusive and writes one Chrome trace when step E ends."""

    def __init__(self, args: argparse.Namespace, device: torch.device, log: logging.Logger, rank: int = 0) -> None:
        self.args, self.log, self.tag = args, log, rank_tag(rank)
        self.enabled = bool(args.use_pytorch_profiler)
        self.prof: torch.profiler.profile | None = None
        self.step_span: torch.profiler.record_function | None = None
        self.activities = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            self.activities.append(torch.profiler.ProfilerActivity.CUDA)

    def before_step(self, step: int) -> None:
        if self.enabled and step == self.args.profile_step_start and self.prof is None:
            self.prof = torch.profiler.profile(
                activities=self.activities, record_shapes=True, profile_memory=True, with_stack=False
            )
            self.prof.__enter__()
            self.log.info(f"profiler: recording steps {self.args.profile_step_start}-{self.args.profile_step_end}")
        if self.prof is not None:
            # The span torch.profiler's schedule records per step (Relax profiles with one), so
            # reportgen.traces splits this trace by step as it splits Relax's.
            self.step_span = torch.profiler.record_function(f"ProfilerStep#{step}")
            self.step_span.__enter__()

    def _end_step_span(self) -> None:
        if self.step_span is not None:
            self.step_span.__exit__(None, None, None)
            self.step_span = None

    def after_step(self, step: int) -> Path | None:
        self._end_step_span()
        if self.prof is None or step != self.args.profile_step_end:
            return None
        self.prof.__exit__(None, None, None)
        out = traces_root(self.args) / "train_trace"
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{self.args.profile_target}_{self.tag}.{int(time.time() * 1000)}.pt.trace.json.gz"
        self.prof.export_chrome_trace(str(path))
        self.prof = None
        self.log.info(f"profiler: wrote {path}")
        return path


class MemoryHistory:
    """`--record-memory-history`: CUDA allocator history, dumped as a snapshot pickle.

    Without CUDA there is no caching allocator to record; the pickle then holds the process's
    peak resident memory and says so, and the log says so too.
    """

    def __init__(self, args: argparse.Namespace, device: torch.device, log: logging.Logger, rank: int = 0) -> None:
        self.args, self.log, self.device, self.tag = args, log, device, rank_tag(rank)
        self.enabled = bool(args.record_memory_history)
        self.dump_after = max(1, args.memory_snapshot_num_steps or 1) - 1
        if self.enabled:
            if device.type == "cuda":
                torch.cuda.memory._record_memory_history(max_entries=100000)
                log.info("record-memory-history: recording CUDA allocator history")
            else:
                log.info("record-memory-history: no accelerator; the snapshot will hold CPU peak RSS only")

    def path(self) -> Path:
        out = traces_root(self.args) / "memory_snapshot"
        out.mkdir(parents=True, exist_ok=True)
        return out / f"memory_snapshot_time{int(time.time())}_{self.tag}_snapshot.pickle"

    def dump(self, path: Path | None = None) -> Path:
        path = path or self.path()
        if self.device.type == "cuda":
            torch.cuda.memory._dump_snapshot(str(path))
        else:
            snap = {
                "device": "cpu",
                "segments": [],
                "device_traces": [],
                "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "note": "no CUDA caching allocator on this machine",
            }
            with open(path, "wb") as fh:
                pickle.dump(snap, fh)
        self.log.info(f"record-memory-history: wrote {path}")
        return path

    def after_step(self, step: int) -> None:
        if self.enabled and step == self.dump_after:
            self.dump()

    def on_oom(self) -> None:
        if self.enabled:
            path = self.path()
            self.log.info(f"Observe OOM, will dump snapshot to {path}.")
            self.dump(path)
