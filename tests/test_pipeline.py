"""reportgen.pipeline: the spec derived for a campaign of two revisions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reportgen.pipeline import derive_revision_spec
from reportgen.specfile import load_spec
from tests.git_repos import workload_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_campaigns_of_one_name_from_two_repositories_never_share_a_derived_spec(tmp_path: Path) -> None:
    """Two PR-mode campaigns named alike (`--name pr`, as CI jobs and tests name them) share the cache:
    each derives its own file, so neither can run the other's spec (a file named after the campaign
    alone was overwritten between one's writing and reading it, and a test's campaign ran another's)."""
    cache = tmp_path / "cache"
    made = {}
    for steps in (6, 8):
        repo = tmp_path / f"repo-{steps}"
        sha = workload_repo(repo, steps=steps)
        made[steps] = derive_revision_spec(repo / "spec.toml", None, sha, sha, name="pr", repo=repo, cache=cache)
    assert made[6] != made[8] and made[6].parent == made[8].parent == cache / "specs"
    for steps, path in made.items():
        spec = load_spec(path)
        assert spec.name == "pr" and spec.workload.steps == steps
        assert f"repo-{steps}" in path.read_text("utf-8").splitlines()[0]
    # The same derivation again (a resumed campaign) is the same file, left as it was.
    before = made[6].stat().st_mtime_ns
    repo = tmp_path / "repo-6"
    sha = made[6].read_text("utf-8").split(": ", 1)[1].split(" vs ")[0]
    assert derive_revision_spec(repo / "spec.toml", None, sha, sha, name="pr", repo=repo, cache=cache) == made[6]
    assert made[6].stat().st_mtime_ns == before
