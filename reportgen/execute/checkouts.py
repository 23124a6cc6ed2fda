"""Clean checkouts of the commits arms run at (execute stage; docs/revisions.md).

Before the first run of a campaign whose arms name git revisions, every commit the plan resolved
is exported once (`git archive`, so the export holds the commit's tracked files and nothing the
working tree adds) into the cache (`reportgen.store.layout.default_cache()`, never under runs/),
with a tree stamp (reportgen.capture.tree_stamp) that provenance verifies each run against: a
file edited in the export after it was made shows as a dirty run. An export is made beside its
final place and renamed into it, so an interrupted export is never taken for a finished one, and
one whose files no longer match its stamp is made again.

Then each arm's code must import: `python -c "import MODULE"` with the arm's own environment
(its PYTHONPATH is its export) in its working folder, and the module must come from the export
(not from an editable install or the working tree). A failure is one UserError naming the commit,
before anything of the campaign is written. `record_revisions` writes runs/<exp>/revisions.json.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from reportgen.capture.tree_stamp import STAMP_NAME, StampError, TreeStamp, file_digest, read_stamp, verify_tree
from reportgen.errors import UserError
from reportgen.plan.arms import Arm, Plan
from reportgen.plan.revisions import code_diff, origin_url
from reportgen.store import atomic, layout, untar
from reportgen.store.models import Revisions
from reportgen.vocab import BASELINE

MODULE_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
IMPORT_TIMEOUT_S = 600.0


def _export(repo: Path, sha: str, dest: Path) -> None:
    proc = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", sha],
        capture_output=True,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    if proc.returncode != 0:
        why = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit {proc.returncode}"])[0]
        raise UserError(f"revision {sha[:12]}: git archive failed in {repo}: {why}")
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        untar.extract_data(tar, dest)


def _digests(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or path.is_file():
            out[path.relative_to(root).as_posix()] = file_digest(path)
    return out


def _usable(dest: Path, sha: str) -> bool:
    """An export of `sha` whose files still match its stamp."""
    stamp_path = dest / STAMP_NAME
    if not stamp_path.is_file():
        return False
    try:
        stamp = read_stamp(stamp_path)
    except StampError:
        return False
    return stamp.commit == sha and verify_tree(dest, stamp).matches


def ensure_checkout(repo: Path, sha: str, dest: Path) -> Path:
    """A clean export of commit `sha` of `repo` at `dest`, stamped; kept when one already matches."""
    dest = Path(dest)
    if _usable(dest, sha):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{uuid.uuid4().hex[:8]}.tmp"
    tmp.mkdir()
    try:
        _export(repo, sha, tmp)
        stamp = TreeStamp(
            commit=sha,
            branch=None,
            origin=origin_url(repo),
            stamped_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            status_short="",
            diff="",
            files=_digests(tmp),
        )
        atomic.write_json(tmp / STAMP_NAME, stamp.to_json())
        if _usable(dest, sha):  # another campaign made it meanwhile: use theirs
            return dest
        if dest.exists():  # an export that no longer matches its stamp: set aside, then removed
            stale = dest.parent / f".{dest.name}.{uuid.uuid4().hex[:8]}.stale"
            os.replace(dest, stale)
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(tmp, dest)
        except OSError:
            if not _usable(dest, sha):  # lost a race to an export that is no good either
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def import_module(plan: Plan) -> str | None:
    """The module every revision must import: `[recipe] import_check`, else the entrypoint when it
    is a dotted module name (`reportgen.workloads.grpo`); None: nothing to check."""
    recipe = plan.spec.recipe
    name = recipe.import_check or recipe.entrypoint
    return name if name and MODULE_RE.match(name) else None


def check_import(arm: Arm, module: str, python: str) -> None:
    """Import `module` as `arm`'s runs would (its environment, its working folder); UserError naming
    the commit when it fails or when the module comes from somewhere other than the arm's export."""
    assert arm.checkout is not None and arm.revision is not None
    env = {**os.environ, **arm.env}
    code = f"import importlib, os; m = importlib.import_module({module!r}); print(os.path.realpath(m.__file__ or ''))"
    named = "" if arm.ref == arm.revision else f" ({arm.ref})"
    where = f"revision {arm.revision}{named} of arm {arm.id}"
    try:
        proc = subprocess.run(
            [python, "-c", code],
            cwd=arm.workdir or arm.checkout,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=IMPORT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"{where}: cannot run the import check `import {module}` with {python}: {exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise UserError(f"{where}: its checkout {arm.checkout} cannot import {module}: {last}")
    origin = Path(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None
    if origin is None or not origin.is_relative_to(arm.checkout.resolve()):
        raise UserError(
            f"{where}: `import {module}` loads {origin}, not the checkout {arm.checkout}; another copy shadows it "
            "(an editable install or a path on PYTHONPATH the recipe sets)"
        )


def prepare_checkouts(plan: Plan, log: Callable[[str], None] = print) -> None:
    """Every commit of the plan exported and stamped, and each formal arm's code importable, before
    anything of the campaign is written (nothing when the arms run from the working tree)."""
    if plan.repo is None:
        return
    done: set[str] = set()
    for arm in plan.arms:
        if arm.revision is None or arm.checkout is None or arm.revision in done:
            continue
        ensure_checkout(plan.repo, arm.revision, arm.checkout)
        done.add(arm.revision)
        log(f"revision {arm.ref} = {arm.revision[:12]}: {arm.checkout}")
    module = import_module(plan)
    if module is None:
        log("revisions: no import check (set [recipe] import_check = MODULE)")
        return
    python = shutil.which(plan.spec.recipe.interpreter()) or plan.spec.recipe.interpreter()
    checked: set[str] = set()
    for arm in plan.formal_arms:
        if arm.revision is not None and arm.revision not in checked:
            check_import(arm, module, python)
            checked.add(arm.revision)


def revisions_record(plan: Plan) -> Revisions | None:
    """runs/<exp>/revisions.json's content for a plan at revisions: each arm's ref and commit, and each
    candidate's code diff against the baseline's commit (files, lines, merge base, link, revert)."""
    if plan.repo is None:
        return None
    arms = {a.id: {"ref": a.ref, "sha": a.revision} for a in plan.arms if a.revision is not None}
    base = plan.arm(BASELINE).revision
    assert base is not None
    changes = {}
    for arm in plan.formal_arms:
        if arm.id == BASELINE or arm.revision is None:
            continue
        changes[arm.id] = code_diff(plan.repo, base, arm.revision).model_dump()
    return Revisions.create(
        {
            "repo": str(plan.repo),
            "origin": origin_url(plan.repo),
            "recipe": plan.recipe_rel,
            "arms": arms,
            "changes": changes,
        }
    )


def record_revisions(plan: Plan, exp_dir: Path) -> None:
    """Write runs/<exp>/revisions.json once per campaign (a resumed campaign keeps its own)."""
    path = Path(exp_dir) / layout.REVISIONS
    if plan.repo is None or path.is_file():
        return
    record = revisions_record(plan)
    if record is not None:
        record.write(path)


def stored_revisions(exp_dir: Path) -> dict[str, tuple[str, str]]:
    """arm -> (ref, sha) a campaign in `exp_dir` was planned with (empty when none is stored)."""
    record = Revisions.read(Path(exp_dir) / layout.REVISIONS)
    return record.pinned() if record is not None else {}
