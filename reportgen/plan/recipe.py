"""Flag edits on a recipe (plan stage: spec -> **plan** -> execute).

`edit_script` changes flags inside a bash recipe's text and keeps every byte it does not
need to change (comments, arrays, continuations, blank lines), so the unified diff against
the original is exactly the change a PR would carry; `unified_diff` writes that diff with
git-style headers, and its reverse is the rollback. `edit_argv` does the same for a recipe
given as an argv list. Pure functions: text in, text out.

Within one `Edits`, removals run first, then sets, then adds; a chain of `Edits` (a
candidate's bases, then itself) is applied in order. See docs/recipes.md for the rules.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from reportgen.errors import UserError
from reportgen.plan.bash import (
    FLAG_WORD,
    NEGATIVE_NUMBER,
    ArraySite,
    FlagSite,
    Occurrence,
    Scan,
    flag_occurrences,
    line_of,
    scan,
)
from reportgen.specfile.model import Edits, Normalised

__all__ = ["edit_argv", "edit_script", "flag_occurrences", "spell_flag", "unified_diff"]


@dataclass
class _Ctx:
    who: str
    path: str
    last_array: int | None = None


def spell_flag(flag: str, value: Normalised) -> str:
    """`--flag` for a switch, `--flag v1 v2` otherwise, each value shell-quoted where needed."""
    if value is True:
        return flag
    return " ".join([flag, *(shlex.quote(v) for v in value)])


def _labels(edits: Sequence[Edits], labels: Sequence[str] | None) -> list[str]:
    if labels is None:
        return ["edit"] * len(edits)
    if len(labels) != len(edits):
        raise ValueError("labels must name every Edits in the chain")
    return list(labels)


# --------------------------------------------------------------------------- bash scripts


def edit_script(text: str, edits: Sequence[Edits], *, labels: Sequence[str] | None = None, path: str = "recipe") -> str:
    """Apply a chain of edits to a bash recipe; bytes outside the edited lines stay identical.

    `labels[i]` names who asked for `edits[i]` (e.g. "candidate A2") in error messages; `path`
    names the recipe. Raises UserError for a flag that is missing, ambiguous (more than one
    occurrence), already present (for add), or only inside a here-document.
    """
    ctx = _Ctx(who="edit", path=path)
    for label, one in zip(_labels(edits, labels), edits, strict=False):
        ctx.who = label
        for flag in one.remove:
            text = _remove(text, _find(scan(text), flag, ctx), ctx)
        for flag, value in one.set:
            text = _set(text, _find(scan(text), flag, ctx), value, ctx)
        anchor = one.add_after
        for flag, value in one.add:
            text = _add(text, flag, value, anchor, ctx)
            anchor = flag  # several adds keep their order: each goes after the one before
    scan(text)  # the result must still be bash the lexer can follow
    return text


def _find(found: Scan, flag: str, ctx: _Ctx) -> FlagSite:
    sites = [s for s in found.flags if s.flag == flag]
    if not sites:
        pattern = re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w.-])")
        for start, end in found.heredocs:
            m = pattern.search(found.text, start, end)
            if m:
                raise UserError(
                    f"{ctx.who}: {flag} is inside a here-document (line {line_of(found.text, m.start())}) "
                    f"of recipe {ctx.path}; reportgen does not edit here-documents: move the flag out of it"
                )
        raise UserError(f"{ctx.who}: {flag} not found in recipe {ctx.path}")
    if len(sites) > 1:
        lines = ", ".join(str(s.line_no) for s in sites)
        raise UserError(
            f"{ctx.who}: {flag} appears {len(sites)} times in recipe {ctx.path} (lines {lines}); "
            "the edit is ambiguous: keep one occurrence in the recipe"
        )
    if sites[0].array is not None:
        ctx.last_array = sites[0].array
    return sites[0]


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _indent(text: str, line_start: int) -> str:
    m = re.match(r"[ \t]*", text[line_start:])
    return m.group(0) if m else ""


def _cont_at(found: Scan, pos: int) -> bool:
    """Is there a line continuation (backslash-newline token) starting at pos?"""
    return any(t.kind == "cont" and t.start == pos for t in found.tokens)


def _tail_kind(found: Scan, start: int, end: int) -> str:
    """What [start, end) of one line holds after an occurrence: empty, cont, comment or other."""
    tail = found.text[start:end]
    if not tail.strip():
        return "empty"
    stripped = tail.lstrip(" \t")
    first = start + len(tail) - len(stripped)
    if stripped == "\\" and _cont_at(found, first):
        return "cont"
    if any(t.kind == "comment" and t.start == first for t in found.tokens):
        return "comment"
    return "other"


def _remove(text: str, site: FlagSite, ctx: _Ctx) -> str:
    found = scan(text)
    s, e = site.start, site.end
    l0, l1 = _line_start(text, s), _line_end(text, e)
    tail = _tail_kind(found, e, l1)
    if not text[l0:s].strip() and tail in ("empty", "cont", "comment"):
        # The line held only this flag (and maybe a continuation or a comment about it): drop it.
        del_end = min(l1 + 1, len(text))
        prev_cont = l0 >= 2 and _cont_at(found, l0 - 2)
        next_line = text[del_end : _line_end(text, del_end)]
        last_of_command = tail != "cont" or not next_line.strip()
        out = text[:l0] + text[del_end:]
        if prev_cont and last_of_command:
            # The line before continued into the one removed, which ended the command: strip
            # its backslash so the command ends there instead of swallowing the next line.
            k = l0 - 2
            while k > 0 and text[k - 1] in " \t":
                k -= 1
            out = out[:k] + out[l0 - 1 :]
        return out
    prefix = text[l0:s]
    if prefix.strip() and prefix[-1] in " \t":
        k = s
        while text[k - 1] in " \t":
            k -= 1
        return text[:k] + text[e:]
    k = e
    while k < len(text) and text[k] in " \t":
        k += 1
    if k < len(text) and text[k] == "\n":
        k = e  # never glue the next line on
    return text[:s] + text[k:]


def _set(text: str, site: FlagSite, value: Normalised, ctx: _Ctx) -> str:
    if value is True:
        return text[: site.flag_end] + text[site.end :]
    new = " ".join(shlex.quote(v) for v in value)
    if site.eq:
        if len(value) == 1:
            return text[: site.flag_end + 1] + new + text[site.end :]
        return text[: site.flag_end] + " " + new + text[site.end :]
    if site.values:
        return text[: site.values[0][0]] + new + text[site.values[-1][1] :]
    return text[: site.flag_end] + " " + new + text[site.flag_end :]


def _add(text: str, flag: str, value: Normalised, anchor: str | None, ctx: _Ctx) -> str:
    found = scan(text)
    existing = [s for s in found.flags if s.flag == flag]
    if existing:
        raise UserError(
            f"{ctx.who}: {flag} is already in recipe {ctx.path} (line {existing[0].line_no}); "
            "use 'set' to change its value instead of 'add'"
        )
    new = spell_flag(flag, value)
    if anchor is not None:
        site = _find(found, anchor, ctx)
        if site.array is not None:
            return _insert_in_array_after(found, found.arrays[site.array], site.end, new)
        return _insert_in_command_after(found, site, new)
    target = ctx.last_array
    if target is None:
        with_flags = [s.array for s in found.flags if s.array is not None]
        target = with_flags[-1] if with_flags else (found.arrays[-1].ordinal if found.arrays else None)
    if target is not None:
        ctx.last_array = target
        arr = found.arrays[target]
        if not arr.words:
            return _insert_in_empty_array(found, arr, new)
        return _insert_in_array_after(found, arr, arr.words[-1][1], new)
    if not found.flags:
        raise UserError(f"{ctx.who}: recipe {ctx.path} has no flags to add {flag} next to; give 'add_after'")
    return _insert_in_command_after(found, found.flags[-1], new)


def _insert_in_array_after(found: Scan, arr: ArraySite, pos: int, new: str) -> str:
    text = found.text
    l0, l1 = _line_start(text, pos), _line_end(text, pos)
    if (arr.close_start >= 0 and pos <= arr.close_start < l1) or l1 >= len(text):
        # The array closes on this very line: add the flag inline before ')'.
        return text[:pos] + " " + new + text[pos:]
    if l0 <= arr.open_start < l1:
        # The anchor shares the line with 'NAME=(': indent like the next line, or by four.
        nl = l1 + 1
        indent = _indent(text, nl) if text[nl : _line_end(text, nl)].strip() else "    "
    else:
        indent = _indent(text, l0)
    return text[: l1 + 1] + indent + new + "\n" + text[l1 + 1 :]


def _insert_in_empty_array(found: Scan, arr: ArraySite, new: str) -> str:
    text = found.text
    close_line = _line_start(text, arr.close_start)
    if text[close_line : arr.close_start].strip() or close_line <= arr.open_start:
        return text[: arr.close_start] + new + text[arr.close_start :]  # `A=()`: stays one line
    # `)` on its own line: indent like the words of the script's other arrays.
    indents = [
        _indent(text, _line_start(text, a.words[0][0]))
        for a in found.arrays
        if a.words and _line_start(text, a.words[0][0]) > a.open_start
    ]
    indent = indents[0] if indents else "    "
    return text[:close_line] + indent + new + "\n" + text[close_line:]


def _insert_in_command_after(found: Scan, site: FlagSite, new: str) -> str:
    text = found.text
    pos = site.end
    l0, l1 = _line_start(text, pos), _line_end(text, pos)
    tail = _tail_kind(found, pos, l1)
    starts_line = not text[_line_start(text, site.start) : site.start].strip()
    if tail == "cont":
        nl = l1 + 1
        indent = _indent(text, _line_start(text, site.start)) if starts_line else _indent(text, nl)
        return text[:nl] + indent + new + " \\\n" + text[nl:]
    if tail == "empty" and l0 >= 2 and _cont_at(found, l0 - 2) and l1 < len(text):
        # The last line of a continued command: continue it one line further.
        indent = _indent(text, _line_start(text, site.start)) if starts_line else "    "
        return text[:l1] + " \\\n" + indent + new + text[l1:]
    return text[:pos] + " " + new + text[pos:]


# --------------------------------------------------------------------------- argv lists


def _argv_sites(argv: Sequence[str]) -> list[tuple[str, int, int, bool]]:
    """(flag, index, end index, eq) for each flag element of an argv list."""
    sites = []
    i = 0
    while i < len(argv):
        m = FLAG_WORD.match(argv[i])
        if not m or NEGATIVE_NUMBER.match(argv[i]):
            i += 1
            continue
        eq = m.group(2) is not None
        j = i + 1
        if not eq:
            while j < len(argv) and (not argv[j].startswith("-") or NEGATIVE_NUMBER.match(argv[j])):
                j += 1
        sites.append((m.group(1), i, j, eq))
        i = j
    return sites


def _argv_find(argv: Sequence[str], flag: str, ctx: _Ctx) -> tuple[str, int, int, bool]:
    sites = [s for s in _argv_sites(argv) if s[0] == flag]
    if not sites:
        raise UserError(f"{ctx.who}: {flag} not found in recipe {ctx.path}")
    if len(sites) > 1:
        where = ", ".join(str(s[1]) for s in sites)
        raise UserError(
            f"{ctx.who}: {flag} appears {len(sites)} times in recipe {ctx.path} (argv positions {where}); "
            "the edit is ambiguous: keep one occurrence in the recipe"
        )
    return sites[0]


def _argv_words(flag: str, value: Normalised) -> list[str]:
    return [flag] if value is True else [flag, *value]


def edit_argv(
    argv: Sequence[str], edits: Sequence[Edits], *, labels: Sequence[str] | None = None, path: str = "recipe.argv"
) -> list[str]:
    """Apply a chain of edits to an argv recipe (same rules as `edit_script`).

    An added flag goes after `add_after`'s values, else at the end.
    """
    out = list(argv)
    ctx = _Ctx(who="edit", path=path)
    for label, one in zip(_labels(edits, labels), edits, strict=False):
        ctx.who = label
        for flag in one.remove:
            _, i, j, _eq = _argv_find(out, flag, ctx)
            del out[i:j]
        for flag, value in one.set:
            _, i, j, eq = _argv_find(out, flag, ctx)
            if eq and value is not True and len(value) == 1:
                out[i:j] = [f"{flag}={value[0]}"]
            else:
                out[i:j] = _argv_words(flag, value)
        anchor = one.add_after
        for flag, value in one.add:
            present = [s for s in _argv_sites(out) if s[0] == flag]
            if present:
                raise UserError(
                    f"{ctx.who}: {flag} is already in recipe {ctx.path} (argv position {present[0][1]}); "
                    "use 'set' to change its value instead of 'add'"
                )
            at = _argv_find(out, anchor, ctx)[2] if anchor is not None else len(out)
            out[at:at] = _argv_words(flag, value)
            anchor = flag
    return out


def argv_occurrences(argv: Sequence[str]) -> list[Occurrence]:
    """(flag, values, argv position) for each flag of an argv recipe."""
    out = []
    for flag, i, j, eq in _argv_sites(argv):
        values = (argv[i].split("=", 1)[1],) if eq else tuple(argv[i + 1 : j])
        out.append(Occurrence(flag, values, i))
    return out


# --------------------------------------------------------------------------- diffs


def _lines(text: str) -> list[str]:
    # Split on '\n' only: str.splitlines would also split on \r, \f, \x1c... and lose bytes.
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def unified_diff(original: str, patched: str, path: str) -> str:
    """A git-style unified diff (`git apply` / `patch -p1` accept it); "" when nothing changed."""
    if original == patched:
        return ""
    path = path.lstrip("/")
    out = [f"diff --git a/{path} b/{path}\n"]
    for line in difflib.unified_diff(_lines(original), _lines(patched), f"a/{path}", f"b/{path}", n=3):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)
