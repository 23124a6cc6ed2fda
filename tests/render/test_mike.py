"""Versions: `mike deploy` of two report versions into a temporary git repository, both served."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.render import site_fixture
from tests.render.conftest import SITE_CAP_GIB, Server, build_env, make_project
from tests.render.test_browser import CHART_PAGES

pytestmark = [pytest.mark.slow, pytest.mark.browser]
MIKE = str(Path(sys.executable).parent / "mike")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_two_versions_deploy_and_load(tmp_path, svg_cache, browser):
    project = make_project(tmp_path / "repo")
    # v1 is the runs of `built_project` (the same fixture, the same cap): its charts are drawn once a session.
    site_fixture.build_experiment(project / "runs", cap_gib=SITE_CAP_GIB)
    env = build_env(
        svg_cache,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
        # mike runs `properdocs` (or `mkdocs`) from PATH: the venv's bin must be on it.
        PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    )
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    subprocess.run(["git", "commit", "-qm", "v1"], cwd=project, env=env, check=True)

    def deploy(version: str, *aliases: str, **extra: str) -> None:
        proc = subprocess.run(
            [MIKE, "deploy", "--update-aliases", version, *aliases],
            cwd=project,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]

    deploy("v1", "latest")
    site_fixture.build_experiment(project / "runs", seed=7, cap_gib=SITE_CAP_GIB)  # a new revision of it
    deploy("v2", "latest")
    # A PR's preview publishes its own report only (docs/site.md#versions-with-mike): a runs folder of its one
    # experiment, not every version a copy of the whole site.
    preview = tmp_path / "pr-runs"
    site_fixture.build_experiment(preview, "pr-42-offload", seed=3, steps=20, with_profile=False)
    deploy("pr-42-r1", REPORTGEN_RUNS=str(preview))
    subprocess.run([MIKE, "set-default", "latest"], cwd=project, env=env, check=True, capture_output=True)

    versions = {v["version"]: v["aliases"] for v in json.loads(_git(project, "show", "gh-pages:versions.json"))}
    assert versions == {"v2": ["latest"], "v1": [], "pr-42-r1": []}
    out = tmp_path / "gh-pages"
    out.mkdir()
    archive = subprocess.run(["git", "archive", "gh-pages"], cwd=project, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(out)
    v1 = (out / "v1/reports/grpo-offload/index.html").read_text()
    v2 = (out / "v2/reports/grpo-offload/index.html").read_text()
    assert v1 != v2  # same stable URL, different report revisions
    assert (out / "pr-42-r1/reports/pr-42-offload/index.html").is_file()
    assert not (out / "pr-42-r1/reports/grpo-offload").exists()  # the preview holds its own report only

    with Server(out) as srv:
        page = browser.new_page()
        remote: list[str] = []
        page.on("request", lambda r: r.url.startswith(srv.url) or r.url.startswith("data:") or remote.append(r.url))
        for version in ("v1", "v2", "latest"):
            page.goto(f"{srv.url}/{version}/reports/grpo-offload/")
            assert page.locator(".rg-svg svg").count() == CHART_PAGES["reports/grpo-offload/"]
        page.goto(f"{srv.url}/")
        page.wait_for_url("**/latest/")
        # Material's version selector lists both versions from mike's versions.json
        page.goto(f"{srv.url}/v1/reports/grpo-offload/")
        page.wait_for_selector(".md-version__list", state="attached", timeout=10_000)
        labels = page.eval_on_selector_all(".md-version__link", "els => els.map(e => e.textContent.trim())")
        assert "v1" in labels and any(label.startswith("v2") for label in labels)
        # every entry of the selector leads to a page that exists
        hrefs = page.eval_on_selector_all(".md-version__link", "els => els.map(e => e.href)")
        assert hrefs
        for href in hrefs:
            assert page.request.get(href).status == 200, href
        assert remote == []
        page.close()
