"""Console-log parser: Relax metric lines -> `Record`s (ingest stage, first step).

Pipeline position: execute+capture writes stdout.log / stderr.log -> **this module** -> metrics
store (metrics.py) and failure scan (events.py) -> analysis. The runner's live progress display
uses the same `ConsoleParser` on the growing log, so what the display shows and what the report
reads come from one parser.

Relax prints one metric message per line: `perf N: {...}`, `rollout N: {...}`, `step N: {...}`,
`eval N: {...}`, `passrate N: {...}` (see docs/ingest.md). The message sits behind a logger prefix
(coloured or plain) and, under Ray, behind `(ActorName pid=1234) `. The dict is a Python repr:
bare `nan`/`inf`/`-inf` appear, values may be nested or quoted.

Speed: a flat dict of numbers (almost every line) is read by one regex `fullmatch` plus `float()`;
only other dicts go through `ast.parse`. Lines without `{` cost one substring test.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

KINDS = ("perf", "rollout", "step", "eval", "passrate")

# Colour and other CSI sequences (colorlog, loguru, progress bars).
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# The lookbehind keeps `critic-step 3:` and `train/step 3:` from reading as `step 3:`.
METRIC = re.compile(r"(?<![\w/-])(perf|rollout|step|eval|passrate)[ \t]+(\d+):[ \t]*\{")

_NUM = r"-?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf)"
_KEY = r"'[^'\\\n]*'"
FLAT_DICT = re.compile(rf"\{{(?:{_KEY}: {_NUM}(?:, {_KEY}: {_NUM})*)?\}}")
FLAT_PAIR = re.compile(rf"'([^'\\\n]*)': ({_NUM})")

# Calls that only wrap a number in a repr (numpy 2 prints `np.float64(0.5)`; torch `tensor(0.5)`).
_SCALAR_CALLS = {
    "float", "int", "tensor", "torch.tensor",
    *(f"{m}.{t}" for m in ("np", "numpy") for t in (
        "float16", "float32", "float64", "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64", "bool_", "float_", "double",
    )),
}
_NAMED = {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf, "infinity": math.inf}

# A single unterminated line longer than this is dropped (and counted skipped) to bound memory.
MAX_LINE = 8 * 1024 * 1024


@dataclass(frozen=True)
class Record:
    """One metric message: `kind index: {values}` found at `line_no` (1-based) of `stream`."""

    kind: str
    index: int
    values: dict[str, Any] = field(hash=False)
    line_no: int
    stream: str


class _Unreadable(ValueError):
    pass


def _convert(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise _Unreadable("** in dict")
            key = _convert(k)
            out[key if isinstance(key, str) else str(key)] = _convert(v)
        return out
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_convert(e) for e in node.elts]
    if isinstance(node, ast.Name):
        if node.id in _NAMED:
            return _NAMED[node.id]
        raise _Unreadable(f"name {node.id}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _convert(node.operand)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
        raise _Unreadable("sign on a non-number")
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        name = ast.unparse(node.func)
        if name in _SCALAR_CALLS:
            return _convert(node.args[0])
    raise _Unreadable(type(node).__name__)


def _numbers_to_float(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            out[k] = _numbers_to_float(v) if isinstance(v, dict) else v
        else:
            out[k] = float(v)
    return out


def parse_dict(text: str) -> dict[str, Any] | None:
    """Read a Python dict repr as Relax prints it; None if it cannot be read."""
    if FLAT_DICT.fullmatch(text):
        return {k: float(v) for k, v in FLAT_PAIR.findall(text)}
    try:
        tree = ast.parse(text, mode="eval")
        value = _convert(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return None
    if not isinstance(value, dict):
        return None
    return _numbers_to_float(value)


def parse_metric_line(line: str) -> tuple[str, int, dict[str, Any]] | bool:
    """(kind, index, values) for a metric line; True if it looks like one but is unreadable;
    False if it is not a metric line. `line` must already be ANSI-free."""
    if "{" not in line:
        return False
    m = METRIC.search(line)
    if m is None:
        return False
    start = m.end() - 1
    end = line.rfind("}")
    if end < start:
        return True
    values = parse_dict(line[start : end + 1])
    if values is None:
        return True
    return m.group(1), int(m.group(2)), values


LineHook = Callable[[int, str, "Record | None"], None]


class ConsoleParser:
    """Incremental parser: feed text chunks of a growing log, get the records completed so far.

    Holds only the unfinished last line between calls. `lines` counts complete lines seen,
    `skipped` the metric-like lines that could not be read (split or garbled by interleaved
    output), `records` the records returned. `on_line(line_no, text, record)` (optional) sees
    every line, ANSI-stripped, with its record or None: the failure scan hooks in here so a
    log is read once.
    """

    def __init__(self, stream: str = "stdout", *, on_line: LineHook | None = None) -> None:
        self.stream = stream
        self.lines = 0
        self.skipped = 0
        self.records = 0
        self._partial = ""
        self._overlong = False
        self._on_line = on_line

    def feed(self, chunk: str) -> list[Record]:
        out: list[Record] = []
        if not chunk:
            return out
        if self._overlong:
            cut = chunk.find("\n")
            if cut < 0:
                return out
            self._end_overlong()
            chunk = chunk[cut + 1 :]
        text = self._partial + chunk if self._partial else chunk
        cut = text.rfind("\n")
        if cut < 0:
            self._keep_partial(text)
            return out
        self._partial = text[cut + 1 :]
        if len(self._partial) > MAX_LINE:
            self._partial = ""
            self._overlong = True
        body = text[:cut]
        if "\x1b" in body:
            body = ANSI.sub("", body)
        for line in body.split("\n"):
            self._line(line, out)
        return out

    def feed_line(self, line: str) -> Record | None:
        """Process one complete line (a trailing newline is ignored)."""
        out: list[Record] = []
        line = line.rstrip("\n")
        if "\x1b" in line:
            line = ANSI.sub("", line)
        self._line(line, out)
        return out[0] if out else None

    def close(self) -> list[Record]:
        """Finish the log: the unterminated last line (if any) is parsed too."""
        out: list[Record] = []
        if self._overlong:
            self._end_overlong()
        if self._partial:
            line = self._partial
            self._partial = ""
            if "\x1b" in line:
                line = ANSI.sub("", line)
            self._line(line, out)
        return out

    def _keep_partial(self, text: str) -> None:
        if len(text) > MAX_LINE:
            self._partial = ""
            self._overlong = True
        else:
            self._partial = text

    def _end_overlong(self) -> None:
        self._overlong = False
        self.lines += 1
        self.skipped += 1
        if self._on_line is not None:
            self._on_line(self.lines, "", None)

    def _line(self, line: str, out: list[Record]) -> None:
        self.lines += 1
        if line.endswith("\r"):
            line = line[:-1]
        rec = None
        if "{" in line:
            # A progress bar may have overwritten part of the line with \r: read each segment.
            for seg in line.split("\r") if "\r" in line else (line,):
                got = parse_metric_line(seg)
                if got is True:
                    self.skipped += 1
                elif got:
                    rec = Record(got[0], got[1], got[2], self.lines, self.stream)
                    out.append(rec)
                    self.records += 1
        if self._on_line is not None:
            self._on_line(self.lines, line, rec)


CHUNK = 1 << 20


def iter_chunks(path: Path, size: int = CHUNK) -> Iterator[str]:
    """Text chunks of a log file; undecodable bytes become U+FFFD rather than failing."""
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        while True:
            chunk = fh.read(size)
            if not chunk:
                return
            yield chunk


def parse_file(path: str | Path, stream: str = "stdout") -> Iterator[Record]:
    """Stream the records of a whole log file with bounded memory."""
    parser = ConsoleParser(stream)
    for chunk in iter_chunks(Path(path)):
        yield from parser.feed(chunk)
    yield from parser.close()


def flatten(values: dict[str, Any], kind: str) -> Iterator[tuple[str, float]]:
    """Numeric leaves of a record as (key, float). Keys without a namespace get `kind/`;
    nested dicts join with `/`; strings, lists and booleans are not metrics and are left out."""
    for k, v in values.items():
        key = k if "/" in k else f"{kind}/{k}"
        if isinstance(v, float):
            yield key, v
        elif isinstance(v, dict):
            for sub, x in _nested(v, key):
                yield sub, x


def _nested(d: dict[str, Any], prefix: str) -> Iterator[tuple[str, float]]:
    for k, v in d.items():
        key = f"{prefix}/{k}"
        if isinstance(v, float):
            yield key, v
        elif isinstance(v, dict):
            yield from _nested(v, key)
