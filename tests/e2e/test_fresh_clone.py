"""The main job changes no committed file (issue 35): in a fresh clone of HEAD, what scripts/demo
does after its campaign (scripts/site: analyse what is stale, build the site), twice, leaves
`git status` clean, so the next campaign's runs record a clean tree and no report carries an
"uncommitted changes" badge.

The campaign itself (3 minutes of training) is left out: it writes only runs/<default>/, which
.gitignore covers, and analyses only the experiment it ran (tests/execute cover the runner). A
clean tree after the site step is what keeps the next run's git.json `dirty: false`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import shared_root
from tests.helpers import repo_clone
from tests.render.conftest import committed_site, svg_cache  # noqa: F401 (fixtures, built once per session)

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
BADGE = ">uncommitted changes</span>"  # the experiment page's badge (render/experiment_page.py)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.mark.usefixtures("committed_site")  # the session's chart cache filled first (the module's docstring)
def test_the_site_step_twice_leaves_a_fresh_clone_clean(tmp_path, tmp_path_factory):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and this repository's history (not a git checkout)")
    clone = repo_clone(tmp_path_factory, tmp_path / "repo")
    env = {
        **os.environ,
        "REPORTGEN_ENV": "none",  # the python and mkdocs running this test, no .venv set-up
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        # The session's chart cache (outside the clone, as ~/.cache is): the committed charts, drawn once.
        "REPORTGEN_CACHE": str(shared_root(tmp_path_factory) / "svg-cache"),
    }
    env.pop("REPORTGEN_RUNS", None)
    env.pop("PYTHONPATH", None)  # the clone's own code (scripts/_env.sh puts it first)
    for attempt in (1, 2):
        res = subprocess.run(
            [str(clone / "scripts" / "site"), "-q"], cwd=clone, env=env, capture_output=True, text=True, timeout=600
        )
        assert res.returncode == 0, f"scripts/site, run {attempt}:\n{res.stderr[-3000:]}"
        assert _git(clone, "status", "--porcelain") == "", f"run {attempt} changed the clone"
    reports = list((clone / "site" / "reports").rglob("*.html"))
    assert reports and not [p for p in reports if BADGE in p.read_text(encoding="utf-8")]
