"""Reverse a unified diff (render stage): the rollback of a candidate is its recipe.patch reversed."""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$")


def reverse_patch(diff: str) -> str:
    """The unified diff that undoes `diff` (file headers, hunk ranges and +/- lines swapped)."""
    out: list[str] = []
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = line[4:], lines[i + 1][4:]
            out += ["--- " + new, "+++ " + old]
            i += 2
            continue
        m = _HUNK.match(line.rstrip("\n"))
        if m:
            out.append(f"@@ -{m.group(2)} +{m.group(1)} @@{m.group(3)}\n")
            i += 1
            # Within a hunk, removed lines must precede added ones: swap each -/+ run as a block.
            minus: list[str] = []
            plus: list[str] = []
            while (
                i < len(lines)
                and lines[i][:1] in ("+", "-", " ", "\\")
                and not _HUNK.match(lines[i].rstrip("\n"))
                and not (lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "))
            ):
                cur = lines[i]
                if cur.startswith("-"):
                    plus.append("+" + cur[1:])
                elif cur.startswith("+"):
                    minus.append("-" + cur[1:])
                else:
                    out += minus + plus
                    minus, plus = [], []
                    out.append(cur)
                i += 1
            out += minus + plus
            continue
        out.append(line)
        i += 1
    return "".join(out)


_PATHS = re.compile(r"^(diff --git [ab]/)(\S+)( [ab]/)(\S+)$|^(--- [ab]/|\+\+\+ [ab]/)(\S+)(.*)$")


def under(diff: str, folder: str | None) -> str:
    """`diff` with its file paths moved under `folder` (relative to the repository root), so that
    `git apply` works from the root: a recipe's diff names "grpo-recipe.sh", the repository holds
    "scripts/recipes/grpo-recipe.sh". Unchanged without a folder (or "."); /dev/null stays."""
    if not folder or folder in (".", "./"):
        return diff
    base = folder.strip("/") + "/"

    def move(m: re.Match[str]) -> str:
        if m.group(1):
            return f"{m.group(1)}{base}{m.group(2)}{m.group(3)}{base}{m.group(4)}"
        return f"{m.group(5)}{base}{m.group(6)}{m.group(7)}"

    return "".join(
        _PATHS.sub(move, line.rstrip("\n")) + ("\n" if line.endswith("\n") else "")
        for line in diff.splitlines(keepends=True)
    )
