"""Arms at git revisions, planned (reportgen.plan.revisions, build_plan): refs resolved to full SHAs,
each arm's recipe read from its own commit, its own PYTHONPATH and caches, pinned SHAs kept, the
code diff between two commits. Real git in throw-away repositories (tests/git_repos.py)."""

from __future__ import annotations

import shutil

import pytest

from reportgen.errors import UserError
from reportgen.plan import revisions
from reportgen.plan.arms import build_plan
from reportgen.specfile import load_spec
from reportgen.vocab import BASELINE
from tests.git_repos import commit, git, readme_repo, slow_down, workload_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_resolve_names_full_shas_and_refuses_an_unknown_ref(tmp_path):
    shas = readme_repo(tmp_path / "r")
    repo = tmp_path / "r"
    git(repo, "tag", "v1", shas[0])
    assert revisions.resolve(repo, "main") == shas[2]
    assert revisions.resolve(repo, "HEAD~1") == shas[1]
    assert revisions.resolve(repo, "v1") == shas[0]
    assert revisions.resolve(repo, shas[1][:8]) == shas[1]
    with pytest.raises(UserError, match="'nope' is not a commit of"):
        revisions.resolve(repo, "nope")


def test_code_diff_counts_files_and_lines_and_links_github(tmp_path):
    shas = readme_repo(tmp_path / "r")
    repo = tmp_path / "r"
    diff = revisions.code_diff(repo, shas[0], shas[2])
    assert {(f.path, f.added, f.deleted) for f in diff.files} == {("a.py", 2, 1), ("b/c.txt", 1, 0)}
    assert (diff.base_sha, diff.sha, diff.merge_base, diff.link) == (shas[0], shas[2], shas[0], None)
    assert diff.revert == f"git revert --no-edit {shas[0][:12]}..{shas[2][:12]}"
    git(repo, "remote", "add", "origin", "git@github.com:redai-infra/Relax.git")
    linked = revisions.code_diff(repo, shas[0], shas[1])
    assert linked.link == f"https://github.com/redai-infra/Relax/compare/{shas[0]}...{shas[1]}"


@pytest.mark.parametrize(
    ("url", "slug"),
    [
        ("https://github.com/o/r.git", "o/r"),
        ("https://github.com/o/r", "o/r"),
        ("git@github.com:o/r.git", "o/r"),
        ("ssh://git@github.com/o/r.git", "o/r"),
        ("https://gitlab.com/o/r.git", None),
        (None, None),
    ],
)
def test_github_slug(url, slug):
    assert revisions.github_slug(url) == slug


def test_revert_of_diverged_branches_reverts_from_the_merge_base(tmp_path):
    shas = readme_repo(tmp_path / "r")
    repo = tmp_path / "r"
    git(repo, "checkout", "-q", "-b", "feature", shas[1])
    feature = commit(repo, "feature", {"a.py": "x = 3\n"})
    diff = revisions.code_diff(repo, shas[2], feature)
    assert diff.merge_base == shas[1]
    assert diff.revert == f"git revert --no-edit {shas[1][:12]}..{feature[:12]}"


def _spec(tmp_path, extra: str = "", candidate: str = 'ref = "main"'):
    repo = tmp_path / "repo"
    first = workload_repo(repo)
    slow = slow_down(repo, 0.5)
    text = (repo / "spec.toml").read_text()
    text = text.replace('entrypoint = "reportgen.workloads.grpo"', f'entrypoint = "reportgen.workloads.grpo"\n{extra}')
    text = text.replace('id = "A1"', f'id = "A1"\n{candidate}')
    (tmp_path / "spec.toml").write_text(
        text.replace('script = "recipe.sh"', 'script = "repo/recipe.sh"').replace(
            'workdir = "."', 'workdir = "repo"\nrepo = "repo"'
        )
    )
    return repo, first, slow, load_spec(tmp_path / "spec.toml")


def test_build_plan_puts_each_arm_at_its_commit_with_its_own_paths_and_caches(tmp_path):
    repo, first, slow, spec = _spec(tmp_path, extra='ref = "HEAD~1"')
    cache = tmp_path / "cache"
    plan = build_plan(spec, cache=cache)
    base, cand = plan.arm(BASELINE), plan.arm("A1")
    assert (base.ref, base.revision, cand.ref, cand.revision) == ("HEAD~1", first, "main", slow)
    assert plan.revisions == {BASELINE: first, "A1": slow}
    assert base.checkout == cache / "checkouts" / first and cand.workdir == cache / "checkouts" / slow
    assert base.env["PYTHONPATH"] == str(cache / "checkouts" / first)
    assert cand.env["PYTHONPATH"] == str(cache / "checkouts" / slow)
    for key in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        assert base.env[key] != cand.env[key] and base.env[key].startswith(str(cache / "jit" / spec.name))
    # Bytecode is keyed by the export's path already; a prefix would hide the installed packages' own.
    assert "PYTHONPYCACHEPREFIX" not in base.env and "PYTHONPYCACHEPREFIX" not in cand.env
    # The candidate's flag edits apply to the recipe of its own commit, and the diff is only those.
    assert "--optimizer-cpu-offload" not in (cand.recipe_text or "")
    assert cand.diff.count("\n-") >= 3 and "sleep" not in cand.diff
    assert plan.launch_script(cand, 2).parent == cache / "checkouts" / slow
    assert plan.recipe_rel == "recipe.sh" and plan.repo == repo.resolve()


def test_a_candidate_inherits_its_base_revision_and_the_baseline_defaults_to_head(tmp_path):
    _repo, first, slow, spec = _spec(tmp_path, candidate='ref = "HEAD~1"')
    assert spec.uses_revisions()
    assert spec.ref_of(BASELINE) == "HEAD" and spec.ref_of("A1") == "HEAD~1"
    plan = build_plan(spec, cache=tmp_path / "cache")
    assert plan.arm(BASELINE).revision == slow and plan.arm("A1").revision == first


def test_pinned_revisions_are_kept_while_the_spec_names_the_same_ref(tmp_path):
    repo, _first, slow, spec = _spec(tmp_path)
    later = commit(repo, "later", {"x.txt": "moved on\n"})
    plan = build_plan(spec, pinned={"A1": ("main", slow), BASELINE: ("HEAD", slow)}, cache=tmp_path / "c")
    assert plan.arm("A1").revision == slow  # main moved to `later`; the campaign keeps its commit
    fresh = build_plan(spec, cache=tmp_path / "c")
    assert fresh.arm("A1").revision == later
    other = build_plan(spec, pinned={"A1": ("other-branch", slow)}, cache=tmp_path / "c")
    assert other.arm("A1").revision == later


def test_a_recipe_outside_the_repository_is_refused(tmp_path):
    _repo, *_ = _spec(tmp_path)
    (tmp_path / "elsewhere.sh").write_text("python3 -m x --seed 1\n")
    text = (tmp_path / "spec.toml").read_text().replace('script = "repo/recipe.sh"', 'script = "elsewhere.sh"')
    (tmp_path / "spec.toml").write_text(text)
    with pytest.raises(UserError, match="outside the recipe's repository"):
        build_plan(load_spec(tmp_path / "spec.toml"), cache=tmp_path / "c")


def test_a_revision_whose_recipe_changes_a_fixed_flag_is_refused(tmp_path):
    repo, *_ = _spec(tmp_path, extra='ref = "HEAD~1"')  # the baseline before the change, A1 at main
    text = (repo / "recipe.sh").read_text().replace("--rollout-seed 42", "--rollout-seed 7")
    commit(repo, "another seed", {"recipe.sh": text})
    with pytest.raises(UserError, match="fixed-workload flag"):
        build_plan(load_spec(tmp_path / "spec.toml"), cache=tmp_path / "c")


def test_the_dry_run_names_each_arms_commit_and_checkout(tmp_path):
    from reportgen.plan.show import describe_plan

    _repo, first, slow, spec = _spec(tmp_path, extra='ref = "HEAD~1"')
    text = describe_plan(build_plan(spec, cache=tmp_path / "c"), runs_root=tmp_path / "runs")
    assert f"revision: HEAD~1 = {first} (a clean checkout: {tmp_path / 'c' / 'checkouts' / first})" in text
    assert f"revision: main = {slow}" in text and "arms at git revisions of" in text
