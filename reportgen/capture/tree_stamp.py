"""Tree stamp: the commit a copy of a working tree came from, for machines that get no `.git`.

A GPU machine often receives a copy of the working tree without its git history, so `git
rev-parse HEAD` has nothing to answer and a report could only say "commit unknown". Before the
tree is sent, `write_stamp` records in an ignored file at the tree's root (`.tree-stamp.json`)
the commit, branch, origin, `git status --short` and `git diff HEAD` at that moment, and the
SHA-256 of every tracked file's content as it is in the working tree. On the copy, provenance
reads the stamp named by REPORTGEN_TREE_STAMP (whatever the copy's own `.git` says: one GPU
machine's copy had a `.git` at an older commit), or finds one (`find_stamp`) where git has no
history, and `verify_tree` re-hashes the files: if they all match, the run
names the commit and is exactly as clean or dirty as the tree was when stamped; a file changed or
missing since is listed, and the run is dirty.

What a stamp cannot see: a file added to the copy after stamping that git would not have
ignored (there is no `.gitignore` matcher here); untracked files present when stamping are in
its `git status` and make the run dirty, as they would with git.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from reportgen.store import atomic
from reportgen.store.digest import file_sha256

SCHEMA_VERSION = 1
KIND = "reportgen.tree-stamp"
STAMP_NAME = ".tree-stamp.json"
# Names the stamp to trust over the copy's own `.git` (which may hold another commit's history).
TREE_STAMP_ENV = "REPORTGEN_TREE_STAMP"


class StampError(ValueError):
    """A stamp file that cannot be read as one (foreign, damaged or of another schema)."""


@dataclass(frozen=True)
class TreeStamp:
    """The git state of a working tree when it was stamped, and its tracked files' digests."""

    commit: str
    branch: str | None
    origin: str | None
    stamped_utc: str
    status_short: str  # `git status --short` when stamped: untracked files show as `??`
    diff: str  # `git diff HEAD` when stamped (staged and unstaged changes to tracked files)
    files: dict[str, str]  # tracked path (relative, /-separated) -> sha256 of its content
    schema_version: int = SCHEMA_VERSION
    kind: str = KIND

    @property
    def dirty(self) -> bool:
        """Any change to the tree, untracked files included (see `dirty_for` for the run's rule)."""
        return bool(self.status_short.strip())

    def dirty_for(self, reads: Iterable[str]) -> bool:
        """Whether what the run ran differs from the commit (`changes_code`)."""
        return changes_code(self.status_short, reads)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class TreeCheck:
    """How the tree now compares with its stamp: files whose content differs, and files gone."""

    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return not self.changed and not self.missing


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes; a symbolic link hashes as its target text (git stores it so)."""
    if path.is_symlink():
        return hashlib.sha256(b"symlink:" + os.readlink(path).encode("utf-8", "surrogateescape")).hexdigest()
    return file_sha256(path)


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "--no-pager", *args],
        capture_output=True,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"},
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise StampError(f"git {' '.join(args)} failed in {repo}: {why[0] if why else f'exit {proc.returncode}'}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def make_stamp(repo: Path) -> tuple[Path, TreeStamp]:
    """The stamp of the git working tree holding `repo`, and that tree's root (git is required)."""
    repo = Path(repo)
    root = Path(_git(repo if repo.is_dir() else repo.parent, "rev-parse", "--show-toplevel").strip())
    commit = _git(root, "rev-parse", "HEAD").strip()
    branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() or None
    try:
        origin: str | None = _git(root, "remote", "get-url", "origin").strip() or None
    except StampError:
        origin = None
    files = {}
    for rel in _git(root, "ls-files", "-z").split("\0"):
        path = root / rel
        # A tracked file deleted in the working tree is in `git status` (" D"); a submodule is a folder.
        if rel and (path.is_file() or path.is_symlink()):
            files[rel] = file_digest(path)
    return root, TreeStamp(
        commit=commit,
        branch=branch,
        origin=origin,
        stamped_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        status_short=_git(root, "status", "--short"),
        diff=_git(root, "diff", "HEAD"),
        files=dict(sorted(files.items())),
    )


def write_stamp(repo: Path) -> Path:
    """Stamp the working tree holding `repo`; the file lands at its root, written atomically."""
    root, stamp = make_stamp(repo)
    return atomic.write_json(root / STAMP_NAME, stamp.to_json())


def parse_stamp(obj: object) -> TreeStamp:
    """A stamp from its JSON form; StampError names what is wrong."""
    if not isinstance(obj, dict) or obj.get("kind") != KIND:
        raise StampError(f"not a tree stamp (expected kind {KIND!r})")
    if obj.get("schema_version") != SCHEMA_VERSION:
        raise StampError(f"tree stamp schema {obj.get('schema_version')!r}; this reportgen reads {SCHEMA_VERSION}")
    files = obj.get("files")
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise StampError("tree stamp 'files' must map paths to sha256 strings")
    text = {k: obj.get(k) for k in ("commit", "stamped_utc", "status_short", "diff")}
    if not all(isinstance(v, str) for v in text.values()) or not text["commit"]:
        raise StampError("tree stamp needs 'commit', 'stamped_utc', 'status_short' and 'diff' as strings")
    optional = {k: obj.get(k) for k in ("branch", "origin")}
    if not all(v is None or isinstance(v, str) for v in optional.values()):
        raise StampError("tree stamp 'branch' and 'origin' must be strings or null")
    return TreeStamp(
        commit=str(text["commit"]),
        branch=optional["branch"],
        origin=optional["origin"],
        stamped_utc=str(text["stamped_utc"]),
        status_short=str(text["status_short"]),
        diff=str(text["diff"]),
        files=dict(files),
    )


def read_stamp(path: Path) -> TreeStamp:
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StampError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from exc
    try:
        return parse_stamp(obj)
    except StampError as exc:
        raise StampError(f"{path}: {exc}") from exc


def find_stamp(start: Path) -> Path | None:
    """The nearest `.tree-stamp.json` in `start` or a folder above it."""
    here = Path(start).resolve()
    here = here if here.is_dir() else here.parent
    for folder in (here, *here.parents):
        candidate = folder / STAMP_NAME
        if candidate.is_file():
            return candidate
    return None


def verify_tree(root: Path, stamp: TreeStamp) -> TreeCheck:
    """Re-hash every stamped file under `root`: which differ from the stamp, which are gone."""
    changed, missing = [], []
    for rel, digest in stamp.files.items():
        path = Path(root) / rel
        if not (path.is_file() or path.is_symlink()):
            missing.append(rel)
        elif file_digest(path) != digest:
            changed.append(rel)
    return TreeCheck(changed=changed, missing=missing)


def changes_code(status_short: str, reads: Iterable[str]) -> bool:
    """Whether `git status --short` shows a change to what a run ran: a changed, added, deleted or
    renamed tracked file always; an untracked file ("?? path", or a folder "?? dir/") only when it is
    one the run reads (`reads`: paths relative to the repository root: the spec, the recipe, data
    files). A log saved beside the checkout changes nothing that ran (`git describe --dirty` ignores
    untracked files too)."""
    wanted = [r.strip("/") for r in reads]
    for line in status_short.splitlines():
        if not line.strip():
            continue
        if not line.startswith("??"):
            return True
        path = line[3:].strip().strip('"')
        folder = path.endswith("/")
        path = path.strip("/")
        if any(r == path or (folder and r.startswith(path + "/")) for r in wanted):
            return True
    return False


def status_lines(stamp: TreeStamp, check: TreeCheck) -> str:
    """`git status --short` as git would print it on the copy: the stamp's, plus later changes."""
    lines = stamp.status_short.splitlines()
    listed = {ln[3:] for ln in lines}
    lines += [f" M {p}" for p in check.changed if p not in listed]
    lines += [f" D {p}" for p in check.missing if p not in listed]
    return "\n".join(lines) + ("\n" if lines else "")
