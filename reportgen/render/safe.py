"""Escaping for everything the render stage takes from logs, specs and environments.

Render stage helpers: text from runs/ (titles, log excerpts, package lists, commands) is data,
never markup. Inline text becomes HTML entities for every character Markdown or HTML would act
on; blocks go into fenced code whose fence is longer than any backtick run inside, so no line
can close it early. Attribute values are quoted and entity-escaped.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

# Characters Python-Markdown (with tables, attr_list and emphasis) or HTML would interpret.
_INLINE = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "`": "&#96;",
    "*": "&#42;",
    "_": "&#95;",
    "[": "&#91;",
    "]": "&#93;",
    "{": "&#123;",
    "}": "&#125;",
    "|": "&#124;",
    "\\": "&#92;",
    "#": "&#35;",
    "!": "&#33;",
    "~": "&#126;",
    "=": "&#61;",
    "^": "&#94;",
}
_INLINE_RE = re.compile("[" + re.escape("".join(_INLINE)) + "]")
_BACKTICKS = re.compile(r"`+")


def text(value: Any) -> str:
    """One line of untrusted text for a paragraph or a table cell (newlines become spaces)."""
    s = "" if value is None else str(value)
    s = " ".join(s.split())
    return _INLINE_RE.sub(lambda m: _INLINE[m.group(0)], s)


# A command-line flag inside a sentence (--use-precision-aware-optimizer): shown as code and never
# broken at its hyphens (report.css: .rg-flag).
_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*(?:=[^\s,;:)]+)?)")


def prose(value: Any) -> str:
    """A sentence (reportgen's own words, or a spec's hypothesis) for a paragraph or table cell:
    escaped like `text`, each command-line flag in it as code that does not wrap at its hyphens."""
    s = "" if value is None else " ".join(str(value).split())
    # text() trims: the spaces around a flag are kept here
    joined = ""
    pieces: list[tuple[str, bool]] = []
    pos = 0
    for m in _FLAG.finditer(s):
        pieces.append((s[pos : m.start()], False))
        pieces.append((m.group(1), True))
        pos = m.end()
    pieces.append((s[pos:], False))
    for part, is_flag in pieces:
        if is_flag:
            joined += '<code class="rg-flag">' + html.escape(part, quote=True).replace("`", "&#96;") + "</code>"
        elif part:
            lead = " " if part[0].isspace() else ""
            trail = " " if part[-1].isspace() and part.strip() else ""
            joined += lead + text(part) + trail if part.strip() else " "
    return joined


def with_code(value: Any) -> str:
    """A sentence of reportgen's own words in which `...` spans are commands (the CLI's lines, such as
    "vs history: ... `reportgen run --baseline-ref ANCHOR ...` measures one"): each span as code,
    the rest escaped as `prose`. Unbalanced backticks: the whole as prose (the backticks shown)."""
    s = "" if value is None else " ".join(str(value).split())
    parts = s.split("`")
    if len(parts) % 2 == 0:
        return prose(s)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(code(part))
        elif part.strip():
            lead = " " if part[0].isspace() else ""
            trail = " " if part[-1].isspace() else ""
            out.append(lead + prose(part) + trail)
        else:
            out.append(part)
    return "".join(out)


def code(value: Any, *, title: str | None = None) -> str:
    """Untrusted text as inline code that cannot break out (an HTML <code> element); `title`, the
    whole text shown on hover where the code shows a shortened form."""
    s = "" if value is None else " ".join(str(value).split())
    attr = ""
    if title is not None:
        attr = ' title="' + html.escape(" ".join(title.split()), quote=True).replace("`", "&#96;") + '"'
    return f"<code{attr}>" + html.escape(s, quote=True).replace("`", "&#96;") + "</code>"


def fence(body: str, lang: str = "text", *, indent: str = "", title: str | None = None) -> str:
    """A fenced code block holding `body` verbatim, with a fence no line of `body` can close."""
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(body)), default=0)
    bar = "`" * max(3, longest + 1)
    head = f"{bar}{lang}"
    if title:
        head += ' title="' + title.replace('"', "'").replace("\n", " ") + '"'
    lines = [head, *body.rstrip("\n").split("\n"), bar]
    return "\n".join(indent + line if line else line for line in lines)


def attr(value: Any) -> str:
    """A value for a double-quoted HTML attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def json_attr(obj: Any) -> str:
    """A JSON document for a data- attribute (compact, entity-escaped)."""
    return attr(json.dumps(obj, separators=(",", ":"), allow_nan=False, ensure_ascii=False))
