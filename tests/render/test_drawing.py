"""Charts drawn beside the build (render/drawing.py): handed to the workers without waiting, waited
for by path, on threads for a few reports and on processes for many."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from reportgen.render import chart_svg
from reportgen.render.drawing import PROCESSES_FROM, Drawing


def _spec(value: float) -> dict:
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "width": 100,
        "height": 50,
        "data": {"values": [{"x": 0, "y": value}, {"x": 1, "y": value + 1}]},
        "mark": "line",
        "encoding": {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}},
    }


@pytest.mark.parametrize("reports", [1, PROCESSES_FROM])
def test_charts_are_drawn_by_the_workers_and_waited_for_by_path(tmp_path: Path, reports: int) -> None:
    drawing = Drawing()
    drawing.start(tmp_path, reports)
    try:
        where, todo = chart_svg.plan([(i, f"c{i}", _spec(float(i))) for i in range(3)], tmp_path)
        assert len(todo) == 3 and not any(j.done() for j in todo)
        drawing.draw(todo)
        drawing.wait([where[0].inline])
        assert where[0].inline.read_text().startswith("<svg")
    finally:
        drawing.finish()
    assert all(d.inline.is_file() and d.svg.is_file() for d in where.values()) and drawing.pending == {}
    again, none = chart_svg.plan([(0, "c0", _spec(0.0))], tmp_path)
    assert none == [] and again[0] == where[0]  # drawn before: a look-up


def test_without_workers_charts_are_drawn_at_once(tmp_path: Path) -> None:
    where, todo = chart_svg.plan([("k", "one", _spec(3.0))], tmp_path)
    Drawing().draw(todo)
    assert where["k"].inline.is_file()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the build never starts worker processes")
def test_workers_started_before_the_count_is_known_become_processes_when_many_reports_need_them(tmp_path: Path) -> None:
    drawing = Drawing()
    drawing.start(tmp_path, 0)  # the scan knew every folder: threads
    try:
        assert isinstance(drawing.executor, ThreadPoolExecutor)
        drawing.ensure(tmp_path, 1)
        assert isinstance(drawing.executor, ThreadPoolExecutor)  # a few reports: kept as they are
        drawing.ensure(tmp_path, PROCESSES_FROM)
        processes = drawing.executor
        assert isinstance(processes, ProcessPoolExecutor)
        drawing.ensure(tmp_path, 1)
        assert drawing.executor is processes  # never back to threads once processes run
    finally:
        drawing.finish()
