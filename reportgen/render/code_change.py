"""The code a candidate at a git revision changes (analysis.json `code_change`, docs/revisions.md):
the candidate page's part of "What changed", the rollback page's revert, the PR body's line.

Render stage: reads the analysis document only. Both commits, their merge base, the files with the
lines added and deleted, a link to the compare page when the repository is on GitHub.
"""

from __future__ import annotations

from reportgen.analysis.document import CodeChange, Comparison
from reportgen.render import safe
from reportgen.render.blocks import table

MAX_FILES = 40  # rows of the file table; the rest are counted


def _sha(sha: str | None) -> str:
    return safe.code(sha[:12]) if sha else "none"


def _link(url: str | None, label: str = "compare on GitHub") -> str:
    return f" ([{label}]({safe.attr(url)}))" if url else ""


def summary(code: CodeChange) -> str:
    """ "`abc` → `def` (merge base `abc`): 3 files, +12 -4 (compare on GitHub)"."""
    return (
        f"{_sha(code.baseline_sha)} → {_sha(code.candidate_sha)} (merge base {_sha(code.merge_base)}): "
        f"{safe.text(code.stat())}{_link(code.link)}"
    )


def section(comp: Comparison, candidate: str) -> list[str]:
    """The candidate page's code change: the commits, the file table, the link; [] without revisions."""
    code = comp.code_change
    if code is None:
        return []
    if not code.files:
        return [
            f"{safe.text(candidate)} runs at {_sha(code.candidate_sha)}, the baseline at {_sha(code.baseline_sha)}: "
            "the two commits hold the same files (no code change).\n"
        ]
    rows = [
        [
            safe.code(f.path),
            "binary" if f.added is None else f"+{f.added}",
            "" if f.deleted is None else f"-{f.deleted}",
        ]
        for f in code.files[:MAX_FILES]
    ]
    more = len(code.files) - MAX_FILES
    out = [
        f"{safe.text(candidate)} is a code change: it runs at {_sha(code.candidate_sha)}, the baseline at "
        f"{_sha(code.baseline_sha)} (their merge base {_sha(code.merge_base)}), each from a clean checkout of its "
        f"commit. {safe.text(code.stat())}{_link(code.link)}:\n",
        table(["file", "added", "deleted"], rows, align=["l", "r", "r"]) + "\n",
    ]
    if more > 0:
        out.append(f"and {more} more file{'s' if more != 1 else ''}.\n")
    return out


def revert(comp: Comparison) -> list[str]:
    """The rollback of a code change: the command that reverts the range."""
    code = comp.code_change
    if code is None or not code.revert:
        return []
    return [
        "### Revert the code\n",
        f"The candidate's code is the range {_sha(code.merge_base)}..{_sha(code.candidate_sha)}{_link(code.link)}; "
        "in a checkout with it merged, this reverts every commit of the range as new commits:\n",
        safe.fence(code.revert, "bash") + "\n",
    ]


def pr_line(candidate: str, comp: Comparison) -> str | None:
    """One Markdown line for the PR body, or None without a code change."""
    code = comp.code_change
    if code is None:
        return None
    link = f" ([compare]({code.link}))" if code.link else ""
    return (
        f"- `{candidate}` code: `{code.baseline_sha[:12]}` → `{code.candidate_sha[:12]}` "
        f"(merge base `{(code.merge_base or 'none')[:12]}`), {code.stat()}{link}"
    )
