"""scripts/warm_bytecode.py writes, before the suite's workers start, the bytecode they would each have
made: pytest then reads a test module's rewritten asserts from it (its failures still explain
themselves) and writes nothing again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _pycs(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns for p in root.rglob("*.pyc")}


def test_pytest_reads_the_warmed_bytecode_and_writes_none(tmp_path: Path) -> None:
    (tmp_path / "reportgen").mkdir()
    (tmp_path / "reportgen" / "__init__.py").write_text("VALUE = 2\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("import reportgen\n")
    (tmp_path / "tests" / "helper.py").write_text("def three():\n    return 3\n")
    (tmp_path / "tests" / "test_it.py").write_text(
        "from reportgen import VALUE\nfrom helper import three\n\n\ndef test_it():\n    assert VALUE + 1 == three() + 1\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{tmp_path / 'tests'}"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    warm = subprocess.run([sys.executable, REPO / "scripts" / "warm_bytecode.py", tmp_path], env=env)
    assert warm.returncode == 0
    warmed = _pycs(tmp_path)
    names = {Path(p).name.split(".")[0] for p in warmed}
    assert names == {"__init__", "conftest", "helper", "test_it"}, warmed
    assert any(p.startswith("tests/__pycache__/test_it.") and "-pytest-" in p for p in warmed), warmed

    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", tmp_path, tmp_path / "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    # the rewritten assert of the warmed bytecode explains the failure: 2 + 1 against three() + 1
    assert proc.returncode == 1 and "assert (2 + 1) == (3 + 1)" in proc.stdout, proc.stdout
    assert _pycs(tmp_path) == warmed  # read, not made again
