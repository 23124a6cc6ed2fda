"""The job-log protocol between reportgen.execute.ray_node and ray_log, without a cluster."""

from __future__ import annotations

import json
from pathlib import Path

from reportgen.execute.ray_log import LogDemux, extract_into, unpack_result
from reportgen.execute.ray_node import RESULT_FILE, result_lines


def test_demux_restores_streams_and_result_block(tmp_path: Path) -> None:
    node = tmp_path / "node"
    (node / "provenance").mkdir(parents=True)
    (node / "provenance" / "git.json").write_text('{"head": "abc"}')
    (node / RESULT_FILE).write_text(json.dumps({"exit_code": 3, "signal": None}))
    log = (
        "Runtime env is setting up.\nO|perf 0: {}\nE|+ set -x line\nO|last\n"
        + "\n".join(result_lines(node))
        + "\no|no newline\n"
    )
    demux = LogDemux(tmp_path / "stdout.log", tmp_path / "stderr.log")
    for i in range(0, len(log), 7):  # arrives in arbitrary chunks
        demux.feed(log[i : i + 7])
    demux.close()
    assert (tmp_path / "stdout.log").read_text() == "perf 0: {}\nlast\nno newline"
    assert (tmp_path / "stderr.log").read_text() == "Runtime env is setting up.\n+ set -x line\n"
    result, blob = unpack_result(demux.result)
    assert result == {"exit_code": 3, "signal": None}
    run = tmp_path / "run"
    run.mkdir()
    extract_into(blob, run)
    assert (run / "provenance" / "git.json").read_text() == '{"head": "abc"}' and not (run / RESULT_FILE).exists()


def test_a_damaged_result_block_is_refused(tmp_path: Path) -> None:
    (tmp_path / RESULT_FILE).write_text("{}")
    lines = [line[2:] for line in result_lines(tmp_path)]
    assert unpack_result(lines) is not None
    damaged = lines[:1] + [lines[1][:-4] + "AAAA"] + lines[2:]
    assert unpack_result(damaged) is None
    assert unpack_result(lines[:-1]) is None  # cut off before END
