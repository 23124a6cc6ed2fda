"""Arms at git revisions on the embedded GRPO workload (issue 34): real training runs.

1. A campaign of two revisions that rejects the slower one is checked on the bisection's own
   campaigns (tests/history/test_real_bisect.py: GOOD against the commit that sleeps in every step),
   made once for the session rather than once more here.
2. A fresh clone of reportgen's own repository runs `reportgen run --baseline-ref HEAD~1
   --candidate-ref HEAD` (one pair of 4-step runs: it works, it does not decide) and
   `reportgen pr-body` reports it with its code line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.analysis.document import parse
from reportgen.store.atomic import read_json
from tests.helpers import repo_clone

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]
REPO = Path(__file__).resolve().parents[2]
# The campaign's name, its own: PR mode writes its derived spec to <cache>/specs/<name>.toml, and the
# session's cache is shared with the other PR-mode tests (tests/e2e/test_quality_real.py's are "pr").
NAME = "pr-own-history"


def test_a_fresh_clone_runs_pr_mode_on_its_own_history(tmp_path, tmp_path_factory):
    if not (REPO / ".git").exists():
        pytest.skip("needs this repository's history (not a git checkout)")
    clone = repo_clone(tmp_path_factory, tmp_path / "clone")
    default = (clone / "scripts" / "recipes" / "default.toml").read_text()
    # The default experiment in short: 4 steps of the CPU-tiny model, one pair of runs.
    fast = default.split("[profiles.traces]")[0]
    for was, now in (
        ('NUM_ROLLOUT = "16"', 'NUM_ROLLOUT = "4"'),
        ("steps = 16", "steps = 4"),
        ('until = "decided"\nmin_pairs = 3\nmax_pairs = 5\nbudget_minutes = 3', "repeats = 1"),
        ("warmup_steps = 4", "warmup_steps = 1"),
        (
            '  { name = "W1", start = 4, end = 9 },\n  { name = "W2", start = 10, end = 15 },',
            '  { name = "W1", start = 1, end = 3 },',
        ),
    ):
        assert was in fast, f"scripts/recipes/default.toml changed: update this test's short version ({was!r})"
        fast = fast.replace(was, now)
    (clone / "scripts" / "recipes" / "fast.toml").write_text(fast)  # untracked: read from the working tree
    # The session's cache (tests/conftest.py): the warm start the end-to-end pipeline made is read here.
    env = {**os.environ, "REPORTGEN_ENV": "none"}
    env.pop("PYTHONPATH", None)
    env.pop("REPORTGEN_RUNS", None)
    cli = [sys.executable, "-m", "reportgen"]
    run = subprocess.run(
        [
            *cli,
            "run",
            "scripts/recipes/fast.toml",
            "--baseline-ref",
            "HEAD~1",
            "--candidate-ref",
            "HEAD",
            "--name",
            NAME,
        ],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    doc = parse(read_json(clone / "runs" / NAME / "analysis.json"), "analysis.json")
    comp = doc.comparison("candidate")
    head = subprocess.run(["git", "rev-parse", "HEAD", "HEAD~1"], cwd=clone, capture_output=True, text=True).stdout
    cand_sha, base_sha = head.split()
    assert comp is not None and comp.code_change is not None
    assert (comp.code_change.baseline_sha, comp.code_change.candidate_sha) == (base_sha, cand_sha)
    body = subprocess.run([*cli, "pr-body", NAME], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert body.returncode == 0, body.stderr[-2000:]
    assert f"`candidate` code: `{base_sha[:12]}` → `{cand_sha[:12]}`" in body.stdout
