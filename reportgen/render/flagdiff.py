"""Effective flag values side by side (render stage; data in, Markdown out).

A recipe diff shows what the text of the script became (`${MAX_TOKENS_PER_GPU}` -> `640`), not
what the trainer ran with before. The effective command line of each run (ingest's
`effective_argv`) has both, so the candidate page and the rollback show the flags that differ
between the baseline, the candidate's base and the candidate as values, old -> new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reportgen.render import safe
from reportgen.render.blocks import table

ABSENT = "absent"
SWITCH_ON = "on (switch)"

Argv = Mapping[str, object]


def value_text(value: object) -> str:
    """How one effective value reads: a switch is "on (switch)", a missing flag "absent"."""
    if value is None or value is False:
        return ABSENT
    if value is True:
        return SWITCH_ON
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class FlagRow:
    flag: str
    values: tuple[str, ...]  # one per column, value_text() form


def differing_flags(columns: Sequence[tuple[str, Argv]]) -> list[FlagRow]:
    """Every flag whose effective value is not the same in all `columns` (name, argv), in the order
    the flags first appear; values are `value_text` strings."""
    order: list[str] = []
    for _, argv in columns:
        order += [f for f in argv if f not in order]
    rows = []
    for flag in order:
        values = tuple(value_text(argv.get(flag)) for _, argv in columns)
        if len(set(values)) > 1:
            rows.append(FlagRow(flag, values))
    return rows


def changes_table(columns: Sequence[tuple[str, Argv]]) -> str:
    """A table flag | value in each column, only the flags that differ; "" when none does."""
    rows = differing_flags(columns)
    if not rows:
        return ""
    header = ["flag", *[safe.text(name) for name, _ in columns]]
    cells = [[safe.code(r.flag), *[_cell(v, r.values[0]) for v in r.values]] for r in rows]
    return table(header, cells, align=["l"] * len(header))


def _cell(value: str, first: str) -> str:
    text = safe.code(value) if value not in (ABSENT, SWITCH_ON) else safe.text(value)
    return text if value == first else f"<strong>{text}</strong>"


def arrow_list(old: Argv, new: Argv) -> list[str]:
    """ "`--max-tokens-per-gpu`: 896 -> 640" lines, for prose (the rollback's "what it restores")."""
    return [
        f"{safe.code(r.flag)}: {safe.text(r.values[0])} → {safe.text(r.values[1])}"
        for r in differing_flags([("old", old), ("new", new)])
    ]
