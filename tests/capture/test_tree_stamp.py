"""The commit of a tree copied without `.git`: stamp, copy, capture, verify (real git, real files)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.capture.provenance import capture_provenance
from reportgen.capture.tree_stamp import (
    STAMP_NAME,
    TREE_STAMP_ENV,
    StampError,
    changes_code,
    find_stamp,
    read_stamp,
    verify_tree,
    write_stamp,
)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "device" / "stamp-tree.py"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "src"
    (repo / "scripts" / "recipes").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / ".gitignore").write_text(f"/{STAMP_NAME}\n/runs/\n")
    (repo / "scripts" / "recipes" / "recipe.sh").write_text("#!/bin/bash\nset -x\npython3 -m train --lr 1e-3\n")
    (repo / "README.md").write_text("readme\n")
    (repo / "link").symlink_to("README.md")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    return repo


def _copy_without_git(repo: Path, dest: Path) -> Path:
    """What the device machine receives: the working tree with its ignored stamp, no `.git`."""
    shutil.copytree(repo, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    assert not (dest / ".git").exists()
    return dest


def _capture(tree: Path, tmp_path: Path, **env: str) -> tuple[dict, Path]:
    dest = tmp_path / "prov" / tree.name
    summary = capture_provenance(
        dest,
        python=sys.executable,
        recipe_repo=tree / "scripts" / "recipes",  # the default: the recipe's folder, not the tree's root
        model_dir=None,
        data_files=[],
        commands=[],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        cache_path=None,
    )
    return summary, dest


def test_a_clean_copy_names_its_commit(repo: Path, tmp_path: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD").strip()
    path = write_stamp(repo / "scripts")  # from any folder inside the tree: the stamp goes to its root
    assert path == repo / STAMP_NAME
    assert _git(repo, "status", "--short") == ""  # the stamp is ignored: stamping dirties nothing
    stamp = read_stamp(path)
    assert stamp.commit == head and not stamp.dirty
    assert set(stamp.files) == {".gitignore", "README.md", "link", "scripts/recipes/recipe.sh"}

    copy = _copy_without_git(repo, tmp_path / "device")
    summary, dest = _capture(copy, tmp_path)
    assert summary["git"] == {"head": head, "dirty": False}
    git = json.loads((dest / "git.json").read_text())
    assert git["source"] == "tree-stamp" and git["head"] == head and git["branch"] == stamp.branch
    assert git["verified"] is True and git["changed_since_stamp"] == [] and git["tracked_files"] == 4
    assert (dest / "git-status.txt").read_text() == ""
    assert (dest / "git-diff.patch").read_text() == ""


def test_a_copy_with_an_empty_git_folder_names_its_commit(repo: Path, tmp_path: Path) -> None:
    """The last H200 showcase's machine had a `.git` without history: every file untracked, no HEAD."""
    write_stamp(repo)
    copy = _copy_without_git(repo, tmp_path / "device")
    _git(copy, "init", "-q")
    summary, dest = _capture(copy, tmp_path)
    assert summary["git"] == {"head": _git(repo, "rev-parse", "HEAD").strip(), "dirty": False}
    git = json.loads((dest / "git.json").read_text())
    assert (git["repository"], git["source"], git["verified"]) == (True, "tree-stamp", True)


def test_a_named_stamp_wins_over_a_copy_whose_git_holds_an_older_commit(repo: Path, tmp_path: Path) -> None:
    """Another H200 machine's copy had a `.git` at an older commit, every file "modified" against it."""
    head = _git(repo, "rev-parse", "HEAD").strip()
    old = tmp_path / "old"
    _copy_without_git(repo, old)
    (old / "README.md").write_text("an older readme\n")
    _git(old, "init", "-q")
    _git(old, "add", "-A")
    _git(old, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "older")
    stale = _git(old, "rev-parse", "HEAD").strip()
    write_stamp(repo)
    copy = _copy_without_git(repo, tmp_path / "device")
    shutil.copytree(old / ".git", copy / ".git")  # the machine's stale history under the new tree
    summary, _ = _capture(copy, tmp_path / "unnamed")
    assert summary["git"] == {"head": stale, "dirty": True}  # git alone names the wrong commit
    summary, dest = _capture(copy, tmp_path / "named", **{TREE_STAMP_ENV: str(copy / STAMP_NAME)})
    assert summary["git"] == {"head": head, "dirty": False}
    git = json.loads((dest / "git.json").read_text())
    assert (git["source"], git["git_head"], git["verified"]) == ("tree-stamp", stale, True)
    # A named stamp that is not there is recorded as such; the commit stays unknown.
    summary, dest = _capture(copy, tmp_path / "missing", **{TREE_STAMP_ENV: str(tmp_path / "nothing.json")})
    assert summary["git"] == {"head": None, "dirty": None}
    assert "cannot read" in json.loads((dest / "git.json").read_text())["reason"]


def test_a_copy_changed_after_stamping_is_dirty_and_says_which_files(repo: Path, tmp_path: Path) -> None:
    write_stamp(repo)
    copy = _copy_without_git(repo, tmp_path / "device")
    (copy / "scripts" / "recipes" / "recipe.sh").write_text("#!/bin/bash\npython3 -m train --lr 1\n")
    (copy / "README.md").unlink()
    (copy / "runs").mkdir()  # what runs write is ignored anyway: not a difference
    check = verify_tree(copy, read_stamp(copy / STAMP_NAME))
    assert (check.changed, check.missing, check.matches) == (["scripts/recipes/recipe.sh"], ["README.md"], False)
    summary, dest = _capture(copy, tmp_path)
    assert summary["git"]["dirty"] is True and summary["git"]["head"] == _git(repo, "rev-parse", "HEAD").strip()
    assert (dest / "git-status.txt").read_text() == " M scripts/recipes/recipe.sh\n D README.md\n"
    git = json.loads((dest / "git.json").read_text())
    assert git["verified"] is False and git["missing_since_stamp"] == ["README.md"]
    assert "scripts/recipes/recipe.sh" in (dest / "git-diff.patch").read_text()


def test_a_tree_dirty_when_stamped_stays_dirty_with_its_diff(repo: Path, tmp_path: Path) -> None:
    (repo / "README.md").write_text("edited\n")
    (repo / "notes.txt").write_text("untracked\n")
    write_stamp(repo)
    summary, dest = _capture(_copy_without_git(repo, tmp_path / "device"), tmp_path)
    assert summary["git"]["dirty"] is True
    status = (dest / "git-status.txt").read_text()
    assert " M README.md" in status and "?? notes.txt" in status
    assert "+edited" in (dest / "git-diff.patch").read_text()


def test_no_stamp_and_a_foreign_stamp_leave_the_commit_unknown(repo: Path, tmp_path: Path) -> None:
    copy = _copy_without_git(repo, tmp_path / "device")
    summary, dest = _capture(copy, tmp_path)
    assert summary["git"] == {"head": None, "dirty": None}
    assert json.loads((dest / "git.json").read_text())["repository"] is False
    (copy / STAMP_NAME).write_text(json.dumps({"kind": "something-else"}))
    summary, dest = _capture(copy, tmp_path / "again")
    assert summary["git"] == {"head": None, "dirty": None}
    assert "not a tree stamp" in json.loads((dest / "git.json").read_text())["reason"]
    with pytest.raises(StampError, match="not a tree stamp"):
        read_stamp(copy / STAMP_NAME)


def test_a_real_repository_wins_over_a_stamp(repo: Path, tmp_path: Path) -> None:
    write_stamp(repo)
    (repo / "README.md").write_text("edited after stamping\n")
    summary, dest = _capture(repo, tmp_path)
    assert summary["git"]["dirty"] is True  # git itself answered
    assert "source" not in json.loads((dest / "git.json").read_text())


def test_the_script_stamps_and_verifies(repo: Path, tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)

    done = run(str(repo))
    assert done.returncode == 0 and "clean" in done.stdout, done.stderr
    copy = _copy_without_git(repo, tmp_path / "device")
    assert find_stamp(copy / "scripts" / "recipes") == copy / STAMP_NAME
    ok = run("--verify", str(copy))
    assert ok.returncode == 0 and "tree matches its stamp" in ok.stdout
    (copy / "README.md").write_text("changed\n")
    bad = run("--verify", str(copy))
    assert bad.returncode == 1 and "README.md" in bad.stderr
    none = run("--verify", str(tmp_path / "prov-none"))
    assert none.returncode == 2
    nogit = run(str(copy))  # stamping needs git history
    assert nogit.returncode == 2 and nogit.stderr.startswith("error: git rev-parse")


def test_a_named_stamp_does_not_speak_for_a_recipe_in_another_tree(repo: Path, tmp_path: Path) -> None:
    """showcase.sh names reportgen's stamp; a spec whose recipe lives in a Relax checkout keeps
    that checkout's own git record."""
    write_stamp(repo)
    ours = _copy_without_git(repo, tmp_path / "reportgen-copy")
    relax = tmp_path / "relax"
    (relax / "scripts" / "recipes").mkdir(parents=True)
    (relax / "scripts" / "recipes" / "recipe.sh").write_text("#!/bin/bash\n")
    _git(relax, "init", "-q")
    _git(relax, "add", "-A")
    _git(relax, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "relax")
    relax_head = _git(relax, "rev-parse", "HEAD").strip()
    summary, dest = _capture(relax, tmp_path / "other", **{TREE_STAMP_ENV: str(ours / STAMP_NAME)})
    assert summary["git"] == {"head": relax_head, "dirty": False}
    assert json.loads((dest / "git.json").read_text()).get("source") != "tree-stamp"


@pytest.mark.parametrize(
    ("status", "reads", "dirty"),
    [
        ("", [], False),
        ("?? demo-output.log\n", ["scripts/recipes/default.toml"], False),  # a log beside the checkout
        (" M scripts/recipes/grpo-recipe.sh\n", [], True),  # a changed tracked file, read or not
        ("D  docs/index.md\n", [], True),
        ("?? scripts/recipes/mine.toml\n", ["scripts/recipes/mine.toml"], True),  # the spec the run read
        ("?? data/\n", ["data/train.parquet"], True),  # inside an untracked folder
        ("?? data/\n", ["scripts/recipes/default.toml"], False),
    ],
)
def test_only_changes_to_what_ran_make_a_run_dirty(status, reads, dirty):
    assert changes_code(status, reads) is dirty
