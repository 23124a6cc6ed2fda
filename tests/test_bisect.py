"""`reportgen bisect`'s wiring around the search, on a real git repository: the commit range, the
record (bisect.json) and its report page, the --json summary and the site's page, with the
campaigns replaced by a table (the real campaigns: tests/history/test_real_bisect.py); and its
one-line errors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reportgen.bisect import BisectRequest, commit_range, run_bisect, summary
from reportgen.cli import main
from reportgen.errors import UserError
from reportgen.history.bisect import Outcome
from reportgen.history.bisect_model import BisectRecord
from reportgen.render.bisect_page import pages

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _repo(path: Path, n: int) -> list[str]:
    path.mkdir()
    subprocess.run(["git", "-C", str(path), "init", "-q", "-b", "main"], check=True, env=ENV)
    shas = []
    for i in range(n):
        (path / "step.py").write_text(f"SLEEP = {0.5 if i >= 5 else 0.0}\n# {i}\n")
        subprocess.run(["git", "-C", str(path), "add", "-A"], check=True, env=ENV)
        subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", f"change {i}"], check=True, env=ENV)
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True, env=ENV, capture_output=True)
        shas.append(out.stdout.decode().strip())
    return shas


def test_the_record_report_and_json_name_the_culprit(tmp_path: Path) -> None:
    shas = _repo(tmp_path / "repo", 9)  # GOOD and 8 commits, the 5th after GOOD (change 5) slower
    assert commit_range(tmp_path / "repo", shas[0], shas[-1]) == shas[1:]
    asked: list[str] = []

    def compare(sha: str) -> Outcome:
        asked.append(sha)
        slow = shas.index(sha) >= 5
        return Outcome(
            sha, slow, 0.7 if slow else 1.01, 0.6, 0.8, pairs=3, experiment=f"e-{sha[:7]}", runs=6, minutes=1.5
        )

    req = BisectRequest(repo=tmp_path / "repo", good=shas[0], bad="main", spec=None, runs_root=tmp_path / "runs")
    record, out_dir = run_bisect(req, compare=compare)
    assert record.culprit == shas[5] and record.certain and len(asked) == 4  # BAD, then log2(8) halvings
    assert record.culprit_subject == "change 5" and "+SLEEP = 0.5" in record.culprit_diff
    assert BisectRecord.read(out_dir / "bisect.json") == record
    report = (out_dir / "report.md").read_text()
    assert (
        f"**Culprit: `{shas[5]}`**" in report and "e-" + shas[5][:7] + "</code>" in report and "+SLEEP = 0.5" in report
    )
    js = summary(record, out_dir)
    assert js["culprit"] == shas[5] and js["runs"] == 24 and js["minutes"] == 6.0
    (page,) = pages(tmp_path / "runs")
    assert page.path == f"history/bisect/{out_dir.name}/index.md" and page.markdown == report
    with pytest.raises(UserError, match="this bisection is done"):
        run_bisect(req, compare=compare)


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    shas = _repo(tmp_path / "repo", 3)
    args = ["--repo", str(tmp_path / "repo"), "--runs", str(tmp_path / "runs"), "--json"]
    assert main(["bisect", shas[2], shas[0], *args]) == 2
    assert "is not an ancestor of" in capsys.readouterr().err
    assert main(["bisect", "nope", shas[0], *args]) == 2
    assert "GOOD 'nope' is not a commit of" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
