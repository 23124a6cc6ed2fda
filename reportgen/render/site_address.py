"""Where a report is published, when that can be known (render stage; reads mkdocs.yml and git).

`reportgen pr-body` links the full report first. A link to the built site's files
(`site/reports/<experiment>/index.html`) is a 404 inside a pull request, so the link is the
published page's or none. Without `--site-url` (and without `[analysis] site_url` in the spec) the
address is derived from what the repository says, in this order:

1. the site's base: `site_url` in mkdocs.yml (what MkDocs itself takes as the published address);
   else the GitHub Pages address of a GitHub `origin` (`https://OWNER.github.io/REPO/`, a custom
   domain when the gh-pages branch holds a CNAME file), but only when a gh-pages branch exists
   (local or `origin/gh-pages`): without one nothing of this repository is published there;
2. the version: when the gh-pages branch holds mike's `versions.json`, the newest version (mike lists
   them newest first) whose folder holds `reports/<experiment>/index.html`; none holding it: the
   report is not published (yet), so there is no link. Without `versions.json`, a gh-pages branch
   must hold the report at its root.

Nothing here writes; git is asked read-only (`git config`, `git rev-parse`, `git cat-file`, `git show`).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

PAGES_BRANCHES = ("gh-pages", "origin/gh-pages")
_SITE_URL = re.compile(r"^site_url\s*:\s*(?P<url>[^#\s]+)", re.M)
_GITHUB = re.compile(r"github\.com[:/](?P<owner>[^/\s]+)/(?P<repo>[^/\s]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class SiteAddress:
    """The base URL the report's page hangs under (`<url>/reports/<experiment>/`), and how it was found."""

    url: str
    how: str


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def mkdocs_site_url(root: Path) -> str | None:
    """`site_url` of root/mkdocs.yml (a top-level key, read as text: no YAML library needed here)."""
    path = Path(root) / "mkdocs.yml"
    if not path.is_file():
        return None
    m = _SITE_URL.search(path.read_text(encoding="utf-8", errors="replace"))
    url = m.group("url").strip("'\"") if m else ""
    return url or None


def github_pages_url(remote: str) -> str | None:
    """GitHub Pages' address of a repository from its remote URL (https, ssh or scp-like)."""
    m = _GITHUB.search(remote.strip())
    if m is None:
        return None
    owner, repo = m.group("owner"), m.group("repo")
    if repo.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{repo}/"


def _pages_branch(root: Path) -> str | None:
    for ref in PAGES_BRANCHES:
        if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") is not None:
            return ref
    return None


def _has(root: Path, ref: str, path: str) -> bool:
    return _git(root, "cat-file", "-e", f"{ref}:{path}") is not None


def _versions(root: Path, ref: str) -> list[str] | None:
    """mike's versions, newest first, from the branch's versions.json; None when it has none."""
    text = _git(root, "show", f"{ref}:versions.json")
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return (
        [str(v["version"]) for v in doc if isinstance(v, dict) and v.get("version")] if isinstance(doc, list) else None
    )


def published_address(experiment: str, *, root: Path) -> SiteAddress | None:
    """The published site's base URL that holds `experiment`'s report (module docstring), or None."""
    root = Path(root)
    base = mkdocs_site_url(root)
    how = "mkdocs.yml site_url"
    branch = _pages_branch(root)
    if base is None:
        remote = _git(root, "config", "--get", "remote.origin.url")
        base = github_pages_url(remote) if remote and branch is not None else None
        if base is None:
            return None
        cname = (_git(root, "show", f"{branch}:CNAME") or "").strip()
        base, how = (
            (f"https://{cname}/", f"the custom domain of {branch}") if cname else (base, "GitHub Pages of origin")
        )
    if branch is None:
        return SiteAddress(base, how)
    report = f"reports/{experiment}/index.html"
    versions = _versions(root, branch)
    if versions is None:
        return SiteAddress(base, how) if _has(root, branch, report) else None
    for version in versions:
        if _has(root, branch, f"{version}/{report}"):
            return SiteAddress(f"{base.rstrip('/')}/{version}/", f"{how}, mike version {version}")
    return None


NO_ADDRESS = (
    "no published site is known: pass `--site-url URL`, set `site_url` in mkdocs.yml, or publish the site with "
    "mike to the repository's gh-pages branch"
)
"""What the PR body says where it has no link to give."""
