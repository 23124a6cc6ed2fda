"""The PR body's link to the published report (issue 46.1): derived from mkdocs.yml's site_url or a
GitHub origin's Pages with the mike version that holds the report, else no link and how to give one
(reportgen/render/site_address.py and `reportgen pr-body`); real git repositories under tmp_path."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from reportgen.cli import main
from reportgen.render.site_address import github_pages_url, published_address

EXP = "showcase-1xh200-grpo-offload-r4"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True)


def _repo(tmp_path: Path, *, mkdocs: str = "site_name: x\n", origin: str | None = None) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mkdocs.yml").write_text(mkdocs)
    _git(repo, "init", "-q")
    _git(repo, "add", "mkdocs.yml")
    _git(repo, "commit", "-q", "-m", "init")
    if origin:
        _git(repo, "remote", "add", "origin", origin)
    return repo


def _publish(repo: Path, files: dict[str, str]) -> None:
    """A gh-pages branch holding `files` (path -> text), as mike or `mkdocs gh-deploy` leaves it."""
    _git(repo, "checkout", "-q", "--orphan", "gh-pages")
    _git(repo, "rm", "-rfq", "--cached", ".")
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", *files)
    _git(repo, "commit", "-q", "-m", "publish")
    _git(repo, "checkout", "-q", "-f", "main")
    _git(repo, "clean", "-fdq")


def _mike(*versions: tuple[str, bool]) -> dict[str, str]:
    """mike's gh-pages: versions.json (newest first) and each version's folder, holding the report or not."""
    files = {"versions.json": json.dumps([{"version": v, "title": v, "aliases": []} for v, _ in versions])}
    for version, holds in versions:
        files[f"{version}/index.html"] = "home"
        if holds:
            files[f"{version}/reports/{EXP}/index.html"] = "report"
    return files


@pytest.mark.parametrize(
    ("remote", "pages"),
    [
        ("https://github.com/Redai-Infra/Relax.git", "https://redai-infra.github.io/Relax/"),
        ("git@github.com:me/reportgen.git", "https://me.github.io/reportgen/"),
        ("ssh://git@github.com/me/reportgen", "https://me.github.io/reportgen/"),
        ("https://github.com/me/me.github.io", "https://me.github.io/"),
        ("https://gitlab.com/me/reportgen.git", None),
    ],
)
def test_github_pages_address_of_a_remote(remote: str, pages: str | None) -> None:
    assert github_pages_url(remote) == pages


def test_mkdocs_site_url_is_the_published_address(tmp_path: Path) -> None:
    repo = _repo(tmp_path, mkdocs="site_name: x\nsite_url: 'https://docs.example.org/perf/'  # published\n")
    found = published_address(EXP, root=repo)
    assert found is not None and found.url == "https://docs.example.org/perf/" and found.how == "mkdocs.yml site_url"


def test_a_github_origin_counts_only_once_something_is_published(tmp_path: Path) -> None:
    repo = _repo(tmp_path, origin="https://github.com/me/reportgen.git")
    assert published_address(EXP, root=repo) is None  # no gh-pages branch: nothing of it is on Pages
    _publish(repo, _mike(("pr-7-b2", True), ("pr-7-a1", True), ("pr-6", False)))
    found = published_address(EXP, root=repo)
    assert found is not None and found.url == "https://me.github.io/reportgen/pr-7-b2/"  # the newest holding it
    assert found.how == "GitHub Pages of origin, mike version pr-7-b2"


def test_a_mike_site_without_the_report_gives_no_link(tmp_path: Path) -> None:
    repo = _repo(tmp_path, mkdocs="site_url: https://me.github.io/reportgen/\n")
    _publish(repo, _mike(("pr-6", False)))
    assert published_address(EXP, root=repo) is None


def test_a_custom_domain_and_a_site_without_versions(tmp_path: Path) -> None:
    repo = _repo(tmp_path, origin="git@github.com:me/reportgen.git")
    _publish(repo, {"CNAME": "perf.example.org\n", f"reports/{EXP}/index.html": "report"})
    found = published_address(EXP, root=repo)
    assert found is not None and found.url == "https://perf.example.org/"
    assert published_address("another-experiment", root=repo) is None  # published, but not that report


def test_pr_body_links_the_published_report_or_says_how_to_give_one(
    tmp_path: Path, committed_runs: Path, monkeypatch, capsys
) -> None:
    repo = _repo(tmp_path, origin="https://github.com/me/reportgen.git")
    runs = tmp_path / "runs"  # beside the checkout: publishing the pages below switches its branches
    shutil.copytree(committed_runs / EXP, runs / EXP)
    monkeypatch.chdir(repo)
    assert main(["pr-body", EXP, "--runs", str(runs)]) == 0
    out = capsys.readouterr()
    first = out.out.splitlines()[0]
    assert first.startswith("**Full report: ") and "](" not in first and "--site-url URL" in first
    _publish(repo, _mike(("pr-7", True)))
    assert main(["pr-body", EXP, "--runs", str(runs)]) == 0
    out = capsys.readouterr()
    assert f"(https://me.github.io/reportgen/pr-7/reports/{EXP}/)**" in out.out.splitlines()[0]
    assert "report link: https://me.github.io/reportgen/pr-7/ (GitHub Pages of origin, mike version pr-7)" in out.err
    # --site-url wins over what the repository says
    assert main(["pr-body", EXP, "--runs", str(runs), "--site-url", "https://x.test/s"]) == 0
    assert "(https://x.test/s/reports/" in capsys.readouterr().out.splitlines()[0]
