"""The runner's progress display, driven with an injected console and clock."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from reportgen.execute.progress import ProgressDisplay
from reportgen.execute.runner import _Tail


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_plain_lines_show_step_metric_and_eta() -> None:
    out, clock = io.StringIO(), Clock()
    display = ProgressDisplay(Console(file=out, width=200), live=False, clock=clock)
    with display:
        display.start_run("A1 1/1", total_steps=10, metric_name="tok/s")
        for step in range(3):
            clock.t += 2.0
            display.step(step, 100.0 + step)
        display.finish_run("complete", "3 steps")
    lines = out.getvalue().splitlines()
    assert lines[0] == "[A1 1/1] started, 10 steps"
    assert lines[3] == "[A1 1/1] step 3/10 tok/s=102 elapsed 0:06 eta 0:14"
    assert lines[-1] == "[A1 1/1] complete after 0:06: 3 steps"


def test_tail_reads_the_actor_perf_line_of_relax_double_perf(tmp_path: Path) -> None:
    (tmp_path / "stdout.log").write_text(
        "[t] data.py:1 - perf 0: {'perf/rollout_time': 1.0}\n"
        "[t] actor.py:2 - perf 0: {'perf/step_time': 2.0, 'perf/step_resp_token_per_s': 512.0}\n"
        "[t] data.py:1 - perf 1: {'perf/rollout_time': 1.0}\n"
    )
    out = io.StringIO()
    display = ProgressDisplay(Console(file=out, width=200), live=False, clock=Clock())
    with display:
        display.start_run("baseline 1/1", total_steps=4, metric_name="step_resp_token_per_s")
        _Tail(tmp_path, "perf/step_resp_token_per_s", display).pump()
    text = out.getvalue()
    assert "step 1/4 step_resp_token_per_s=512" in text
    assert "step 2/4" not in text  # step 1 has only its rollout half so far
