"""Effective argv of a run, and the fixed-workload invariant check on it (ingest stage).

Two sources, both printed by the workload itself: bash's `set -x` trace of the launch command
(`+ ray job submit ... -- python3 -m relax.entrypoints.train --flag value ...` on stderr) and
Megatron's argument dump (`---- arguments ----` ... `---- end of arguments ----`, every parsed
argument with its final value). The trace is what was asked for; the dump includes defaults.
"""

from __future__ import annotations

import math
import re
from typing import Any

from reportgen.ingest.console import ANSI
from reportgen.ingest.events import RAY_PREFIX
from reportgen.plan.bash import split_words

TRACE_LINE = re.compile(r"^\++ (.*)$")
DUMP_START = re.compile(r"-{3,}\s*arguments\s*-{3,}")
DUMP_END = re.compile(r"-{3,}\s*end of arguments\s*-{3,}")
DUMP_ITEM = re.compile(r"^\s*([A-Za-z_][\w]*) \.* ?(.*?)\s*$")
PYTHON = re.compile(r"^python[\d.]*$")


def _clean(line: str) -> str:
    if "\x1b" in line:
        line = ANSI.sub("", line)
    return RAY_PREFIX.sub("", line.rstrip("\r\n"), count=1)


def _workload_slice(words: list[str], entrypoint: str | None) -> list[str]:
    """The workload's own command: from the python interpreter (or after a launcher's `--`)."""
    anchor = len(words) - 1
    if entrypoint:
        anchor = next((i for i, w in enumerate(words) if entrypoint in w), anchor)
    else:
        anchor = next((i for i, w in enumerate(words) if PYTHON.match(w.rsplit("/", 1)[-1])), anchor)
    for i in range(anchor, -1, -1):
        if PYTHON.match(words[i].rsplit("/", 1)[-1]):
            return words[i:]
    for i in range(anchor, -1, -1):
        if words[i] == "--":
            return words[i + 1 :]
    return words


def parse_trace(text: str, entrypoint: str | None = None) -> list[str] | None:
    """argv of the workload command from `set -x` lines (`+ cmd ...`), or None if none found.

    With `entrypoint`, the last traced line containing that substring is used; otherwise the
    last traced command containing ` -m ` or `python`.
    """
    chosen = None
    for raw in text.splitlines():
        m = TRACE_LINE.match(_clean(raw))
        if not m:
            continue
        cmd = m.group(1)
        if entrypoint is not None:
            if entrypoint in cmd:
                chosen = cmd
        elif " -m " in cmd or "python" in cmd:
            chosen = cmd
    if chosen is None:
        return None
    words = split_words(chosen)
    if not words:
        return None
    return _workload_slice(words, entrypoint)


def parse_argument_dump(text: str) -> dict[str, str]:
    """`--dashed-flag -> value string` from a Megatron-style argument dump; {} if none.
    The last complete block wins (ranks may each print one)."""
    found: dict[str, str] = {}
    block: dict[str, str] | None = None
    for raw in text.splitlines():
        line = _clean(raw)
        if block is None:
            if DUMP_START.search(line) and "end of" not in line:
                block = {}
            continue
        if DUMP_END.search(line):
            found, block = block, None
            continue
        m = DUMP_ITEM.match(line)
        if m:
            block["--" + m.group(1).replace("_", "-")] = m.group(2)
    return found


def _is_flag(tok: str) -> bool:
    if tok.startswith("--"):
        return len(tok) > 2
    if tok.startswith("-") and len(tok) > 1:
        try:
            float(tok)
            return False  # a negative number is a value
        except ValueError:
            return True
    return False


def argv_to_mapping(argv: list[str]) -> dict[str, Any]:
    """Flags of a command line: `--flag v` -> "v", `--flag a b` -> ["a", "b"], `--switch` ->
    True, `--flag=v` -> "v". The interpreter, `-m module` or a script path before the first flag
    are skipped; other leading words go under "_args". A repeated flag keeps its last value."""
    i = 0
    if argv and PYTHON.match(argv[0].rsplit("/", 1)[-1]):
        i = 1
        if i < len(argv) and argv[i] == "-m":
            i += 2
        elif i < len(argv) and not argv[i].startswith("-"):
            i += 1
    out: dict[str, Any] = {}
    positional: list[str] = []
    flag: str | None = None
    vals: list[str] = []

    def close() -> None:
        if flag is not None:
            out[flag] = True if not vals else (vals[0] if len(vals) == 1 else list(vals))

    for tok in argv[i:]:
        if _is_flag(tok):
            close()
            if tok.startswith("--") and "=" in tok:
                name, value = tok.split("=", 1)
                out[name] = value
                flag, vals = None, []
            else:
                flag, vals = tok, []
        elif flag is None:
            positional.append(tok)
        else:
            vals.append(tok)
    close()
    if positional:
        out["_args"] = positional
    return out


def dump_to_mapping(dump: dict[str, str]) -> dict[str, Any]:
    """An argument dump as a mapping: `True`/`False`/`None` become JSON values, the rest stays text."""
    conv = {"True": True, "False": False, "None": None}
    return {k: conv.get(v, v) for k, v in dump.items()}


def normalise(value: Any) -> Any:
    """Comparable form of a flag value from any source (argv text, dump text, spec tuple)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple)):
        items = [normalise(v) for v in value]
        return items[0] if len(items) == 1 else tuple(items)
    if isinstance(value, (int, float)):
        return float(value)
    s = str(value).strip()
    if s in ("True", "true"):
        return True
    if s in ("False", "false"):
        return False
    if s in ("None", "null"):
        return None
    if s.startswith("[") and s.endswith("]"):  # Megatron prints lists as [a, b]
        inner = [p.strip().strip("'\"") for p in s[1:-1].split(",") if p.strip()]
        return normalise(inner)
    try:
        f = float(s)
        return f if math.isfinite(f) or s.lower() in ("nan", "inf", "-inf") else s
    except ValueError:
        return s


def check_invariants(mapping: dict[str, Any], flags: list[str], expected: dict[str, Any] | None) -> dict[str, Any]:
    """Check the fixed-workload flags. A flag absent from the argv gets value null and is not a
    violation, unless `expected` gives it a (non-null) value."""
    values: dict[str, Any] = {}
    violations = []
    for flag in flags:
        actual = mapping.get(flag)
        values[flag] = actual
        if expected is None or flag not in expected:
            continue
        want = expected[flag]
        if normalise(want) != normalise(actual):
            violations.append({"flag": flag, "expected": _jsonable(want), "actual": _jsonable(actual)})
    return {"checked": list(flags), "values": {k: _jsonable(v) for k, v in values.items()}, "violations": violations}


def _jsonable(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v
