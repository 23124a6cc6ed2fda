"""Where the workload's metrics go: console lines in Relax's plain logger style, and TensorBoard.

Line shape (Relax without colorlog): `[2026-08-05 10:11:12] data.py:123 - perf 7: {...}`, the
dict as Python's repr so `nan`/`inf` appear bare, exactly what reportgen's ingest parses.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path

_FORMAT = "[%(asctime)s] %(filename)s:%(lineno)d - %(message)s"


def get_logger() -> logging.Logger:
    log = logging.getLogger("reportgen.workloads.grpo")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter(_FORMAT, datefmt="%Y-%m-%d %H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


def metric_line(kind: str, step: int, values: dict[str, float]) -> str:
    """`perf 3: {...}`: the message part of one metric line (floats as Python floats)."""
    clean = {k: (float(v) if not isinstance(v, int) else v) for k, v in values.items()}
    return f"{kind} {step}: {clean!r}"


def tensorboard_dir(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Path:
    """$TENSORBOARD_DIR, else {--save}/tensorboard_log, else tensorboard_log/{project}/{experiment}."""
    env = os.environ if env is None else env
    if env.get("TENSORBOARD_DIR"):
        return Path(env["TENSORBOARD_DIR"])
    if args.save:
        return Path(args.save) / "tensorboard_log"
    return Path("tensorboard_log") / args.tb_project_name / args.tb_experiment_name


class MetricSink:
    """Console always; TensorBoard scalars too with --use-tensorboard."""

    def __init__(self, args: argparse.Namespace, log: logging.Logger, *, tensorboard: bool = True) -> None:
        self.log = log
        self.writer = None
        if args.use_tensorboard and tensorboard:  # data parallel: rank 0 alone writes scalars
            from torch.utils.tensorboard import SummaryWriter

            path = tensorboard_dir(args)
            path.mkdir(parents=True, exist_ok=True)
            self.writer = SummaryWriter(log_dir=str(path))
            log.info(f"tensorboard: writing scalars to {path}")

    def emit(self, kind: str, step: int, values: dict[str, float], *, tb_step: int | None = None) -> None:
        self.log.info(metric_line(kind, step, values), stacklevel=2)
        if self.writer is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)) and not math.isnan(float(value)):
                    self.writer.add_scalar(key, float(value), step if tb_step is None else tb_step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.flush()
            self.writer.close()
