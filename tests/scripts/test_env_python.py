"""scripts/_env.sh's `pick_python`: the interpreter a new venv is made from. PYTHON_BOOTSTRAP when set;
else the fastest Python 3.11+ of those given (the first unless another is 10 % faster), timed on a
short loop: a real interpreter slowed by a trace function stands in for a slower build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _pick(*args: str) -> subprocess.CompletedProcess[str]:
    script = 'source "$1/scripts/_env.sh"; shift; pick_python "$@"'
    return subprocess.run(["bash", "-c", script, "pick", str(REPO), *args], capture_output=True, text=True, check=True)


def _slowed(tmp_path: Path) -> Path:
    """This interpreter behind a wrapper whose sitecustomize traces every line: a much slower build."""
    site = tmp_path / "slow-site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\ndef _t(frame, event, arg):\n    return _t\nsys.settrace(_t)\n", encoding="utf-8"
    )
    wrapper = tmp_path / "slow-python3"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def test_the_faster_of_two_builds_makes_the_venv_and_says_so(tmp_path: Path) -> None:
    slow = _slowed(tmp_path)
    res = _pick("", str(slow), sys.executable)
    assert res.stdout.strip() == sys.executable
    assert f"using {sys.executable} for the venv" in res.stderr and "PYTHON_BOOTSTRAP" in res.stderr


def test_the_first_stays_when_none_is_faster(tmp_path: Path) -> None:
    slow = _slowed(tmp_path)
    res = _pick("", sys.executable, str(slow))
    assert res.stdout.strip() == sys.executable and res.stderr == ""


def test_python_bootstrap_is_taken_as_given(tmp_path: Path) -> None:
    assert _pick("/opt/some/python3.12", sys.executable).stdout.strip() == "/opt/some/python3.12"


def test_what_cannot_make_a_venv_is_passed_over(tmp_path: Path) -> None:
    old = tmp_path / "python3.10"
    old.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "import sys; sys.exit(1)"\n', encoding="utf-8")
    old.chmod(0o755)  # answers every question with exit 1: as a Python below 3.11 answers the version check
    res = _pick("", str(old), str(tmp_path / "missing"), sys.executable)
    assert res.stdout.strip() == sys.executable
    assert _pick("", str(tmp_path / "missing")).stdout.strip() == "python3"  # nothing found: PATH's, as before


def test_one_that_cannot_run_the_loop_is_not_kept_first(tmp_path: Path) -> None:
    broken = tmp_path / "broken-python3"  # passes the version check, fails every other command
    broken.write_text(
        f'#!/bin/sh\ncase "$*" in *ensurepip*) exec "{sys.executable}" "$@";; esac\nexit 1\n', encoding="utf-8"
    )
    broken.chmod(0o755)
    res = _pick("", str(broken), sys.executable)
    assert res.stdout.strip() == sys.executable and res.stderr == ""
