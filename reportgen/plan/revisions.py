"""Arms at git revisions (plan stage): the recipe's repository, its revisions resolved to full SHAs,
and what changed between two of them (docs/revisions.md).

A candidate that changes code rather than flags names a revision (`ref`) of the recipe's
repository; so may the baseline (`[recipe] ref`). The plan resolves each to the commit it names
now, once, and the campaign keeps those SHAs (runs/<experiment>/revisions.json) so a resumed
campaign measures the same code even after a branch moved. Every arm then runs from its own clean
export of its commit (reportgen.execute.checkouts), never from the working tree.

These functions ask git (read-only: rev-parse, merge-base, show, diff); nothing here writes.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from reportgen.errors import UserError
from reportgen.specfile.model import Spec
from reportgen.store.layout import default_cache
from reportgen.store.models import ChangedFile, CodeChangeRecord

SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_GITHUB = re.compile(r"^(?:https?://|ssh://)?(?:[^@/]+@)?github\.com[:/](?P<repo>[^/]+/[^/]+?)(?:\.git)?/?$")


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["git", "-C", str(repo), "--no-pager", *args],
        capture_output=True,
        text=True,
        errors="surrogateescape",
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    if check and proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[0]
        raise UserError(f"git {' '.join(args)} in {repo}: {why}")
    return proc


def repo_root(start: Path) -> Path:
    """The top of the git working tree holding `start` (a folder or a file in it)."""
    start = Path(start)
    folder = start if start.is_dir() else start.parent
    proc = _git(folder, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise UserError(
            f"{start}: not inside a git repository; arms at revisions need the recipe's repository "
            "([recipe] repo = PATH in the spec)"
        )
    return Path(proc.stdout.strip()).resolve()


def resolve(repo: Path, ref: str) -> str:
    """The full SHA of the commit `ref` (a branch, tag, SHA or `HEAD~2`) names in `repo` now."""
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    sha = proc.stdout.strip()
    if proc.returncode != 0 or not SHA_RE.match(sha):
        raise UserError(
            f"revision {ref!r} is not a commit of {repo} (git rev-parse found none); fetch it or fix the name"
        )
    return sha


def merge_base(repo: Path, a: str, b: str) -> str | None:
    """The best common ancestor of two commits, or None when they share no history."""
    proc = _git(repo, "merge-base", a, b, check=False)
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and SHA_RE.match(sha) else None


def show_file(repo: Path, sha: str, path: str) -> str:
    """A file's text as committed at `sha` (`path` relative to the repository's root)."""
    proc = _git(repo, "show", f"{sha}:{path}", check=False)
    if proc.returncode != 0:
        raise UserError(f"recipe {path} does not exist at revision {sha[:12]} of {repo}")
    return proc.stdout


def origin_url(repo: Path) -> str | None:
    proc = _git(repo, "remote", "get-url", "origin", check=False)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def github_slug(url: str | None) -> str | None:
    """ "owner/name" of a GitHub remote (https or ssh form), else None."""
    m = _GITHUB.match(url or "")
    return m.group("repo") if m else None


def revert_command(base: str, head: str, merge: str | None) -> str:
    """The rollback: revert every commit the candidate adds to the history it shares with the
    baseline (merge base..candidate), newest first; without a shared history, the reverse diff."""
    if merge is not None:
        return f"git revert --no-edit {merge[:12]}..{head[:12]}"
    return f"git diff {head[:12]} {base[:12]} | git apply"


def code_diff(repo: Path, base: str, head: str) -> CodeChangeRecord:
    """Files and lines changed from `base` to `head` (`git diff --numstat`), their merge base, a
    compare link when the repository's origin is on GitHub, and the revert of the range: the
    record revisions.json keeps for a candidate at a revision."""
    out = _git(repo, "diff", "--numstat", "--no-renames", base, head).stdout
    files = []
    for line in out.splitlines():
        parts = line.split("\t", 2)
        if len(parts) != 3:
            continue
        a, d, path = parts
        files.append(ChangedFile(path=path, added=None if a == "-" else int(a), deleted=None if d == "-" else int(d)))
    slug = github_slug(origin_url(repo))
    link = f"https://github.com/{slug}/compare/{base}...{head}" if slug else None
    merge = merge_base(repo, base, head)
    return CodeChangeRecord(
        base_sha=base,
        sha=head,
        merge_base=merge,
        files=files,
        link=link,
        revert=revert_command(base, head, merge) if files else "",
    )


def patch_text(repo: Path, base: str, head: str) -> str:
    """The full unified diff from `base` to `head` (the code change a revision arm carries)."""
    return _git(repo, "diff", "--no-renames", base, head).stdout


def checkout_dir(cache: Path, sha: str) -> Path:
    """The clean export of commit `sha` (one per commit, shared by every campaign that needs it)."""
    return Path(cache) / "checkouts" / sha


def jit_dir(cache: Path, experiment: str, arm: str) -> Path:
    """One arm's own JIT and compile caches (TorchInductor, Triton): arms never share compiled code."""
    return Path(cache) / "jit" / experiment / arm


@dataclass(frozen=True)
class ArmRevision:
    """Where one arm's code comes from: the ref the spec names, its commit, the export it runs from."""

    arm: str
    ref: str
    sha: str
    checkout: Path
    workdir: Path  # the recipe's working folder inside the export
    jit: Path

    def env(self, experiment: str, arm_id: str) -> dict[str, str]:
        """What the arm's runs get on top of the recipe's environment: the export first on the
        import path (no editable install or working tree shared between arms), JIT caches of its
        own (TorchInductor, Triton: compiled kernels of one revision never serve another), and the
        tree stamp provenance verifies the export against. No bytecode folder (PYTHONPYCACHEPREFIX):
        bytecode sits beside its source, so each export's modules have their own, and the
        interpreter's packages load from the bytecode they were installed with; a folder of the
        arm's own made every campaign's arms compile torch and transformers again (about 3 CPU-s a
        process), every run where PYTHONDONTWRITEBYTECODE is set."""
        jit = self.jit.parent / arm_id  # a profile arm shares its arm's code, not its caches
        return {
            "PYTHONPATH": str(self.checkout),
            "TORCHINDUCTOR_CACHE_DIR": str(jit / "torchinductor"),
            "TRITON_CACHE_DIR": str(jit / "triton"),
            "REPORTGEN_TREE_STAMP": str(self.checkout / ".tree-stamp.json"),
            "REPORTGEN_REVISION": self.sha,
        }


@dataclass(frozen=True)
class AtRevisions:
    """A spec's arms at revisions, resolved: the repository, the recipe's path in it, each arm's commit."""

    repo: Path
    recipe_rel: str | None  # the script relative to the repository's root (None: an argv recipe)
    arms: dict[str, ArmRevision]
    cache: Path

    def arm(self, arm_id: str) -> ArmRevision:
        return self.arms[arm_id]

    def diff_path(self, kind: str) -> str:
        return self.recipe_rel if kind == "script" and self.recipe_rel else "recipe.argv"

    def recipe_text(self, arm_id: str) -> str:
        assert self.recipe_rel is not None
        return show_file(self.repo, self.arms[arm_id].sha, self.recipe_rel)


def _inside(path: Path, repo: Path, what: str) -> str:
    try:
        return path.resolve().relative_to(repo).as_posix()
    except ValueError:
        raise UserError(
            f"{what} {path} is outside the recipe's repository {repo}: arms at revisions run it from a "
            "checkout of that repository ([recipe] repo)"
        ) from None


def at_revisions(spec: Spec, pinned: Mapping[str, tuple[str, str]], cache: Path | None) -> AtRevisions:
    """Resolve every formal arm's revision (`Spec.ref_of`) to a full SHA, keeping `pinned` ones (arm
    -> (ref, sha) of the campaign so far) while the spec still names the same ref."""
    base = Path(spec.source_dir or ".")
    recipe = spec.recipe
    repo = repo_root(base / recipe.repo if recipe.repo else base)
    cache = Path(cache) if cache is not None else default_cache()
    recipe_rel = _inside(base / recipe.script, repo, "recipe.script") if recipe.script else None
    workdir_rel = _inside(base / recipe.workdir, repo, "recipe.workdir")
    arms: dict[str, ArmRevision] = {}
    resolved: dict[str, str] = {}
    for arm_id in spec.arm_ids():
        ref = spec.ref_of(arm_id)
        assert ref is not None
        kept = pinned.get(arm_id)
        if kept is not None and kept[0] == ref:
            sha = kept[1]
        else:
            sha = resolved.get(ref) or resolve(repo, ref)
        resolved[ref] = sha
        checkout = checkout_dir(cache, sha)
        arms[arm_id] = ArmRevision(
            arm_id, ref, sha, checkout, checkout / workdir_rel, jit_dir(cache, spec.name, arm_id)
        )
    return AtRevisions(repo, recipe_rel, arms, cache)
