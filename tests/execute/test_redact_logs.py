"""Secrets that leak into a log are found even across read chunks, and the rewrite streams."""

from __future__ import annotations

from pathlib import Path

from reportgen.execute.runner import _contains_any, _redact_logs


def test_a_secret_straddling_two_chunks_is_found(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    log.write_bytes(b"x" * 10 + b"hf_secret123" + b"y" * 10)
    assert _contains_any(log, [b"hf_secret123"], chunk=15)  # the secret spans bytes 10-21
    assert not _contains_any(log, [b"other_secret"], chunk=15)


def test_redaction_rewrites_only_leaking_logs(tmp_path: Path) -> None:
    (tmp_path / "stdout.log").write_text("step 1\n+ export HF_TOKEN=hf_secret123\nstep 2\n")
    (tmp_path / "stderr.log").write_text("clean\n")
    before = (tmp_path / "stderr.log").stat().st_mtime_ns
    _redact_logs(tmp_path, ["hf_secret123"])
    assert (tmp_path / "stdout.log").read_text() == "step 1\n+ export HF_TOKEN=<redacted>\nstep 2\n"
    assert (tmp_path / "stderr.log").stat().st_mtime_ns == before
    assert not list(tmp_path.glob(".*.tmp"))
