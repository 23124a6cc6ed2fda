"""Every command a report publishes works when pasted: each is run in a fresh clone of this
repository, in a temporary folder, as a reader would run it.

For every committed experiment under runs/ (analysed with this code, rendered with this code):

- Reproduce (the experiment page): from a clone at HEAD; the block checks out the recorded commit
  itself, so what runs there is that commit's reportgen, then returns to HEAD, whose `reportgen
  analyze` and `mkdocs build` make the site with the experiment's page;
- each next step's command (the answer block): from a clone at HEAD; one that adds to a campaign
  says it runs on the machine that ran the campaign, so the clone's campaign.json is made this
  machine's first (as it would be there);
- each rollback (the rollback page): its patch saved at the clone's root, with the candidate's
  change applied to the recipe first (the merged pull request the rollback undoes).

The clone is made once per session and copied for each experiment (tests.helpers.repo_clone); a
command an experiment publishes more than once (one next step for several candidates) runs once.
`reportgen` is the clone's own (`python -m reportgen`, as `pip install -e .` makes it), and
`reportgen run` is given `--dry-run`: a GPU experiment cannot run here, and a dry run checks what
the run would refuse (another machine's campaign, a changed spec) before it plans.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.analysis.next_step import SAME_MACHINE
from reportgen.analyze import analyze_experiment
from reportgen.capture.fingerprint import fingerprint_id, machine_fingerprint
from reportgen.render import rollback_page
from reportgen.render.common import recipe_dir_where_it_ran
from reportgen.render.load import load_experiment
from reportgen.render.patch import under
from reportgen.render.site import render_experiment
from reportgen.store import layout
from tests.helpers import committed_experiments, repo_clone

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```+bash(?P<title>[^\n]*)\n(?P<body>.*?)\n```+$", re.S | re.M)
SHIM = """#!/bin/sh
# reportgen as `pip install -e .` makes it from the clone; `run` checks and plans, it trains nothing here
if [ "$1" = run ]; then exec "{python}" -m reportgen "$@" --dry-run; fi
exec "{python}" -m reportgen "$@"
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


# One test per committed experiment: they run side by side on the suite's workers.
EXPERIMENTS = [p.name for p in committed_experiments() if (p / layout.ANALYSIS).is_file()]


@pytest.fixture
def clone(tmp_path, tmp_path_factory) -> Path:
    """A fresh clone of this repository at HEAD (the session's one clone, copied: tests.helpers.repo_clone)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and this repository's history")
    return repo_clone(tmp_path_factory, tmp_path / "repo")


def published(clone: Path, name: str) -> list[tuple[str, str, str]]:
    """(experiment, what, block) of every command published for experiment `name`, rendered by this
    code from the clone's committed runs (analysed again first, as `reportgen analyze` leaves them)."""
    out: list[tuple[str, str, str]] = []
    exp_dir = clone / "runs" / name
    analyze_experiment(exp_dir)
    exp = load_experiment(exp_dir)
    for page in render_experiment(exp, svg=False):
        for m in FENCE.finditer(page.markdown):
            title = m.group("title")
            if "next step for" in title:
                who = title.split("for", 1)[1].strip(' "')
                out.append((exp.name, f"next step ({who})", m.group("body")))
        if page.path.endswith(f"{exp.name}/index.md"):
            fence = FENCE.search(page.markdown.split("## Reproduce", 1)[1])
            assert fence is not None, exp.name
            out.append((exp.name, "reproduce", fence.group("body")))
    roll = rollback_page.render(exp)
    for file_name, data in roll.files.items():
        cand = file_name.removeprefix("rollback-").removesuffix(".patch")
        block = roll.markdown.split(f"## Undo {cand}:", 1)[1].split("### How to apply it", 1)[1]
        forward = under(exp.arm(cand).diff, recipe_dir_where_it_ran(exp))
        out.append(
            (
                exp.name,
                f"rollback {cand}",
                json.dumps([file_name, data.decode(), forward, FENCE.search(block).group("body")]),
            )
        )  # type: ignore[union-attr]
    _git(clone, "checkout", "-q", "--", ".")
    _git(clone, "clean", "-fdxq", "-e", "__pycache__")  # bytecode of unchanged files stays valid
    return out


def _run(clone: Path, tmp: Path, block: str, cache: Path) -> subprocess.CompletedProcess:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "reportgen"
    shim.write_text(SHIM.format(python=sys.executable))
    shim.chmod(0o755)
    env = {
        "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
        "PYTHONPATH": str(clone),
        "HOME": str(tmp),
        "TMPDIR": str(tmp),
        "NO_MKDOCS_2_WARNING": "1",
        "DISABLE_MKDOCS_2_WARNING": "true",
        "REPORTGEN_CACHE": str(cache),  # the session's chart cache: the same committed charts, drawn once
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_committed_experiments_publish_a_rollback_for_each_accepted_candidate() -> None:
    """Each experiment's test below runs its reproduce, next-step and rollback blocks; a rollback is published
    for every accepted candidate and no other. (Since training quality is the verdict's second half, issue 42,
    no committed campaign has an accepted candidate: their workload's reward is flat at 0, so quality cannot be
    tested; a campaign of the learning workload brings rollbacks back to the fresh-clone run below.)"""
    assert len(EXPERIMENTS) >= 4  # the showcases and the A/A campaign
    for name in EXPERIMENTS:
        exp = load_experiment(REPO / "runs" / name)
        accepted = {c.candidate for c in exp.analysis.comparisons if c.verdict.status == "accepted"}
        assert set(rollback_page.render(exp).files) == {f"rollback-{c}.patch" for c in accepted}, name


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_published_command_runs_in_a_fresh_clone(clone, tmp_path, experiment, svg_cache):
    commands = published(clone, experiment)
    assert {what.split()[0] for _, what, _ in commands} >= {"reproduce", "next"}
    here = fingerprint_id(machine_fingerprint())
    head = _git(clone, "rev-parse", "HEAD").strip()  # a reproduce block checks out another commit
    failed = []
    seen: set[str] = set()  # a page may repeat a command (one next step for several candidates): run once
    for exp, what, block in commands:
        if block in seen:
            continue
        seen.add(block)
        _git(clone, "checkout", "-q", "--force", head)
        _git(clone, "clean", "-fdxq", "-e", "__pycache__")  # bytecode of unchanged files stays valid
        if what.startswith("rollback"):
            name, patch, forward, block = json.loads(block)
            (clone / name).write_text(patch)
            (tmp_path / "forward.patch").write_text(forward)
            _git(clone, "apply", str(tmp_path / "forward.patch"))  # the candidate's change, merged
        elif block.startswith(SAME_MACHINE):
            campaign = clone / "runs" / exp / layout.CAMPAIGN
            doc = json.loads(campaign.read_text())
            campaign.write_text(json.dumps({**doc, "fingerprint_id": here}))  # run where it says: that machine
        res = _run(clone, tmp_path, block, svg_cache)
        if res.returncode != 0:
            failed.append(f"{exp} {what}: exit {res.returncode}\n{block}\n{res.stderr[-2000:]}")
        elif what == "reproduce":  # back where the reader was, with the site built there
            back = _git(clone, "rev-parse", "HEAD").strip()
            page = clone / "site" / "reports" / exp / "index.html"
            if back != head or not page.is_file():
                failed.append(f"{exp} {what}: ends at {back[:12]} (was {head[:12]}), page built: {page.is_file()}")
    assert not failed, "\n\n".join(failed)
