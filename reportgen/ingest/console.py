"""Console-log parser: Relax metric lines -> `Record`s (ingest stage, first step).

Pipeline position: execute+capture writes stdout.log / stderr.log -> **this module** -> metrics
store (metrics.py) and failure scan (events.py) -> analysis. The runner's live progress display
uses the same `ConsoleParser` on the growing log, so what the display shows and what the report
reads come from one parser.

Relax prints one metric message per line: `perf N: {...}`, `rollout N: {...}`, `step N: {...}`,
`eval N: {...}`, `passrate N: {...}`, `multi_turn N: {...}`, and with a critic (PPO)
`critic-step N: {...}` (see docs/ingest.md; where each is printed in Relax:
tests/ingest/relax_sources.md). The message sits behind a logger prefix
(coloured or plain) and, under Ray, behind `(ActorName pid=1234) `. The dict is a Python repr:
bare `nan`/`inf`/`-inf` appear, values may be nested or quoted.

Speed: a flat dict of numbers (almost every line) is read by one regex `fullmatch` plus `float()`;
only other dicts go through `ast.parse`. Lines without `{` cost one substring test.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

KINDS = ("perf", "rollout", "step", "eval", "passrate", "multi_turn", "critic-step")
CRITIC_STEP = "critic-step"
"""A critic's train step (PPO): Relax tags its keys `train/critic-*`; N is the actor's step numbering."""
STEP_KEY = "train/step"
"""Relax's step key in a train-step line: the line's N, the one key a critic's line does not tag."""

# Colour and other CSI sequences (colorlog, loguru, progress bars).
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# Calls that only wrap a number in a repr (numpy 2 prints `np.float64(0.5)`; torch `tensor(0.5)`).
_SCALAR_CALLS = {
    "float",
    "int",
    "tensor",
    "torch.tensor",
    *(
        f"{m}.{t}"
        for m in ("np", "numpy")
        for t in (
            "float16",
            "float32",
            "float64",
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "bool_",
            "float_",
            "double",
        )
    ),
}
_NAMED = {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf, "infinity": math.inf}

# A single unterminated line longer than this is dropped (and counted skipped) to bound memory.
MAX_LINE = 8 * 1024 * 1024
# A metric message wrapped over several lines (a terminal's copy breaks lines at its width, even
# inside a number) is read joined when the join parses: at most this many continuation lines and
# this many characters. A continuation line never starts like a log line of its own (`_WRAP_STOP`).
MAX_WRAP_LINES = 64
MAX_WRAP_CHARS = 1 << 20
_WRAP_STOP = re.compile(r"$|\s*\[?\d{4}-\d\d-\d\d[ T]\d|\s*\([^()]*pid=\d+|\++ |> |Traceback \(")
# How many unreadable lines a parser remembers by number (for a refusal that names them).
MAX_NOTED = 20
# The most digits a metric head's N (or any number ingest reads from a log or a folder name) may
# have (int64 holds 18): a longer run is no step number, and int() of more than 4,300 digits raises
# ValueError.
MAX_INDEX_DIGITS = 18


@dataclass(frozen=True)
class Record:
    """One metric message: `kind index: {values}` found at `line_no` (1-based) of `stream`."""

    kind: str
    index: int
    values: dict[str, Any] = field(hash=False)
    line_no: int
    stream: str


def _record_maker() -> Callable[[str, int, dict[str, Any], int, str], Record]:
    """`Record(...)` at about half the cost: a frozen dataclass's `__init__` sets each field
    through `object.__setattr__`; filling the instance dict directly gives the same object.
    Used only while `Record` is the plain five-field frozen dataclass this assumes."""
    names = tuple(f.name for f in fields(Record))
    if names != ("kind", "index", "values", "line_no", "stream") or hasattr(Record, "__post_init__"):
        return Record
    new = object.__new__

    def make(kind: str, index: int, values: dict[str, Any], line_no: int, stream: str) -> Record:
        rec = new(Record)
        d = rec.__dict__
        d["kind"], d["index"], d["values"], d["line_no"], d["stream"] = kind, index, values, line_no, stream
        return rec

    return make


_record = _record_maker()


class _Unreadable(ValueError):
    pass


def _convert(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=False):
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
            try:
                out[k] = float(v)
            except OverflowError:  # an int beyond float's range: infinite, as JSON's parse_int=float reads it
                out[k] = math.inf if v > 0 else -math.inf
    return out


def parse_dict(text: str) -> dict[str, Any] | None:
    """Read a Python dict repr as Relax prints it; None if it cannot be read."""
    # Fast path: keys are the only strings (two quotes per `: `), so the repr is JSON once its
    # quotes and non-finite tokens are respelled; json's C decoder is ~20x faster than ast.
    if _json_ready(text):
        # Only dict values are respelled (`: nan`); a bare nan elsewhere (in a list) fails JSON
        # and takes the ast path below.
        try:
            value = _JSON.decode(_respell(text))
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the interpreter's stack
            value = None
        if isinstance(value, dict):
            return value
    elif "\\" not in text and "[" not in text:
        # Quoted string values (e.g. a nested `{'source': 'x', 'note': "it's"}`): respell each
        # literal as a JSON string and each bare nan/inf as JSON's, in one regex pass; anything
        # else JSON cannot read (True, None, tuples, 1_000) still goes to ast below, and so do
        # lists (ast keeps their ints) and what JSON would read differently from Python (a bare
        # true/false/null, an int -0).
        try:
            value = _JSON.decode(_LITERAL.sub(_json_token, text))
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            return value
    return parse_dict_ast(text)


def _json_ready(text: str) -> bool:
    """`parse_dict`'s first test: keys are the only strings, so respelled quotes make JSON."""
    return '"' not in text and "\\" not in text and text.count("'") == 2 * text.count(": ")


def _respell(js: str) -> str:
    """`parse_dict`'s respelling of `_json_ready` text (also of several joined by `\n`: no
    replaced pattern holds a `\n`)."""
    js = js.replace("'", '"')
    if "nan" in js:
        js = js.replace(": nan", ": NaN")
    if "inf" in js:
        js = js.replace(": inf", ": Infinity").replace(": -inf", ": -Infinity")
    return js


def _decode_many(texts: list[str]) -> list[dict[str, Any] | None]:
    """`parse_dict` of each of `texts` (all `_json_ready`, none holding a `\n`), with one
    respelling of them all and no per-text decoder set-up.

    Each text is decoded in place in the joined text; it counts only if the JSON value there
    is a dict that ends exactly where the text ends, which is what decoding the text alone
    gives (an object's extent does not depend on what follows its closing brace). Any other
    text is read alone by `parse_dict` (JSON, then `ast`)."""
    js = _respell("\n".join(texts))
    out: list[dict[str, Any] | None] = []
    idx = 0
    for text in texts:
        stop = js.find("\n", idx)
        if stop < 0:
            stop = len(js)
        try:
            value, end = _JSON.raw_decode(js, idx)
        except (ValueError, RecursionError):
            value, end = None, -1
        out.append(value if end == stop and type(value) is dict else parse_dict(text))
        idx = stop + 1
    return out


def parse_dict_ast(text: str) -> dict[str, Any] | None:
    """`parse_dict` without the JSON fast paths: the reference they must agree with."""
    try:
        tree = ast.parse(text, mode="eval")
        value = _convert(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return None
    if not isinstance(value, dict):
        return None
    return _numbers_to_float(value)


_JSON = json.JSONDecoder(parse_int=float)  # ints as floats too: one numeric type
# A string literal without backslashes, or a bare nan/inf/-inf (not part of a longer word).
_LITERAL = re.compile(r"""'([^'\n]*)'|"([^"\n]*)"|(?<![\w.])(-?)(nan|inf|true|false|null|0+)(?![\w.])""")
_JSON_NAMED = {"nan": "NaN", "inf": "Infinity"}


def _json_token(m: re.Match[str]) -> str:
    word = m.group(4)
    if word is not None:
        if word in _JSON_NAMED:
            return m.group(3) + _JSON_NAMED[word]
        return m.group(0) if word[0] == "0" and not m.group(3) else "@"  # "@": not JSON, so ast decides
    return json.dumps(m.group(1) if m.group(1) is not None else m.group(2))


def _head(line: str, at: int) -> tuple[str, int] | None:
    """`(kind, N)` if `line[:at]` ends in `kind N` (kind not part of a longer word: `critic-step`
    is its own kind, never `step`); plain string tests, several times cheaper than a regex search here."""
    sp = line.rfind(" ", 0, at)
    # isdecimal: what int() reads (isdigit also takes "²")
    if sp <= 0 or at - sp - 1 > MAX_INDEX_DIGITS or not line[sp + 1 : at].isdecimal():
        return None
    for kind in KINDS:
        if line.endswith(kind, 0, sp):
            b = sp - len(kind)
            if b == 0 or not (line[b - 1].isalnum() or line[b - 1] in "_/-"):
                return kind, int(line[sp + 1 : at])
    return None


def _head_at(line: str) -> int:
    """Where the first `: {` that follows a metric head (`perf 3: {`) is in `line`, or -1."""
    at = line.find(": {")
    while at >= 0 and _head(line, at) is None:
        at = line.find(": {", at + 3)
    return at


def _open_depth(line: str) -> int:
    """How many braces the metric dict of `line` leaves open (0 when it closes on the line or
    `line` is no metric message). A line ending in `}` is taken as closed without counting:
    every whole metric line does, and this runs on every one of them."""
    if line.endswith("}") or "\r" in line:
        return 0
    at = _head_at(line)
    if at < 0:
        return 0
    d = line[at + 2 :]
    return max(0, d.count("{") - d.count("}"))


def _continuation(text: str, pos: int, depth: int) -> tuple[str, int] | None:
    """The lines of `text` after position `pos` (a line end) that close a wrapped dict opened
    `depth` braces deep: (their text joined without the line breaks, the end of the last one), or
    None when a line that starts like a log line, a metric message or the end of `text` comes
    first."""
    parts: list[str] = []
    size = 0
    while pos < len(text) and len(parts) < MAX_WRAP_LINES and size < MAX_WRAP_CHARS:
        end = text.find("\n", pos + 1)
        if end < 0:
            end = len(text)
        line = text[pos + 1 : end]
        if line.endswith("\r"):
            line = line[:-1]
        if _WRAP_STOP.match(line):
            return None
        if _head_at(line) >= 0:
            return None
        parts.append(line)
        size += len(line)
        depth += line.count("{") - line.count("}")
        pos = end
        if depth <= 0:
            return "".join(parts), end
    return None


def _straddles(prev: str, line: str) -> bool:
    """A metric head broken across `prev` and `line` (`... per` / `f 7: {...`): the head's `: {`
    is on `line`. A break inside the three characters `: {` themselves is not mended: finding the
    lines that open with `{` would cost a scan of every block (about 8 % of the parser's time)
    for a break that falls there once in about 50 wrapped lines."""
    at = _head_at(prev + line)
    return bool(prev) and at >= len(prev)


def _wrapped_tail(body: str, before: str) -> int | None:
    """Where the last lines of `body` (complete lines; `before` the line read just before them)
    hold a metric message whose wrapped dict may close on lines not read yet: the start of that
    message's first line (the line before, when its head is broken across the two), else None.
    A feed keeps those lines for the next one, so chunk boundaries never change what a log reads as."""
    end = len(body)
    for _ in range(MAX_WRAP_LINES + 1):
        start = body.rfind("\n", 0, end) + 1
        line = body[start:end]
        if line.endswith("\r"):
            line = line[:-1]
        if ": {" in line:
            head_start, head_line = start, line
            if _head_at(line) < 0 and not _WRAP_STOP.match(line):
                if start > 0:
                    head_start = body.rfind("\n", 0, start - 1) + 1
                    prev = body[head_start : start - 1].removesuffix("\r")
                else:  # the head's first half was read already: only this line is kept back
                    prev = before
                head_line = prev + line if _straddles(prev, line) else line
            if _head_at(head_line) >= 0:
                depth = _open_depth(head_line)
                if not depth or len(body) - head_start > MAX_WRAP_CHARS:
                    return None
                tail = body[end:]
                return head_start if depth + tail.count("{") - tail.count("}") > 0 else None
        if _WRAP_STOP.match(line) or start == 0:
            return None
        end = start - 1
    return None


def parse_metric_line(line: str) -> tuple[str, int, dict[str, Any]] | bool:
    """(kind, index, values) for a metric line; True if it looks like one but is unreadable;
    False if it is not a metric line. `line` must already be ANSI-free."""
    at = line.find(": {")
    while at >= 0:
        head = _head(line, at)
        if head is not None:
            break
        at = line.find(": {", at + 3)
    else:
        return False
    start = at + 2
    end = line.rfind("}")
    if end < start:
        return True
    values = parse_dict(line[start : end + 1])
    if values is None:
        return True
    return head[0], head[1], _kind_values(head[0], values)


def _kind_values(kind: str, values: dict[str, Any]) -> dict[str, Any]:
    """A metric message's values as its kind keeps them (every reading of a line ends here)."""
    if kind == CRITIC_STEP:
        # Kept, the critic's untagged step key would overwrite the actor's `train/step` of the same
        # step; it only repeats N (and TensorBoard never gets it: Relax logs it as the step).
        values.pop(STEP_KEY, None)
    return values


LineHook = Callable[[int, str, "Record | None"], None]
BlockHook = Callable[[int, str, "list[Record]"], None]


class ConsoleParser:
    """Incremental parser: feed text chunks of a growing log, get the records completed so far.

    Holds only the unfinished last line between calls. `lines` counts complete lines seen,
    `skipped` the metric-like lines that could not be read (split or garbled by interleaved
    output), `records` the records returned.

    Two optional hooks let one read of a log serve other scans. `on_line(line_no, text, record)`
    sees every line, ANSI-stripped, with its (last) record or None; it costs a Python call per
    line. `on_block(first_line_no, text, records)` sees each block of complete lines at once
    (ANSI-stripped, joined by `\n`, no trailing newline) with the records found in it: the
    failure scan and argv collectors use it to skip uninteresting lines at C speed.
    """

    def __init__(
        self, stream: str = "stdout", *, on_line: LineHook | None = None, on_block: BlockHook | None = None
    ) -> None:
        self.stream = stream
        self.lines = 0
        self.skipped = 0
        self.records = 0
        self.skipped_at: list[int] = []  # the first MAX_NOTED unreadable lines' numbers
        self.joined = 0  # metric messages read from lines a terminal wrapped
        self.joined_at: list[int] = []
        self._last_line = ""  # the last complete line read: a wrapped head may continue on the next
        self._partial = ""
        self._overlong = False
        self._on_line = on_line
        self._on_block = on_block

    @property
    def unterminated(self) -> bool:
        """The text fed so far ends inside a line (no newline after its last character)."""
        return self._overlong or (bool(self._partial) and not self._partial.endswith("\n"))

    def feed(self, chunk: str) -> list[Record]:
        out: list[Record] = []
        if not chunk:
            return out
        if self._overlong:
            cut = chunk.find("\n")
            if cut < 0:
                return out
            self._end_overlong(out)
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
        held = _wrapped_tail(body, self._last_line)
        if held is not None:  # a wrapped message may close in the next chunk: read it then
            self._partial = body[held:] + "\n" + self._partial
            if held == 0:
                return out
            body = body[: held - 1]
        self._block(body, out)
        return out

    def feed_line(self, line: str) -> Record | None:
        """Process one complete line (a trailing newline is ignored)."""
        out: list[Record] = []
        line = line.rstrip("\n")
        if "\x1b" in line:
            line = ANSI.sub("", line)
        self._one_line(line, out)
        return out[0] if out else None

    def close(self) -> list[Record]:
        """Finish the log: the unterminated last line (if any) is parsed too."""
        out: list[Record] = []
        if self._overlong:
            self._end_overlong(out)
        if self._partial:
            line = self._partial
            if line.endswith("\n"):  # lines a feed held back (`_wrapped_tail`), the log's last complete ones
                line = line[:-1]
            self._partial = ""
            if "\x1b" in line:
                line = ANSI.sub("", line)
            self._block(line, out)
        return out

    def _keep_partial(self, text: str) -> None:
        if len(text) > MAX_LINE:
            self._partial = ""
            self._overlong = True
        else:
            self._partial = text

    def _end_overlong(self, out: list[Record]) -> None:
        self._overlong = False
        self._skip(self.lines + 1)
        self._block("", out)

    def _skip(self, n: int) -> None:
        """Line `n` looked like a metric message but could not be read."""
        self.skipped += 1
        if len(self.skipped_at) < MAX_NOTED:
            self.skipped_at.append(n)

    def _joined(self, n: int) -> None:
        self.joined += 1
        if len(self.joined_at) < MAX_NOTED:
            self.joined_at.append(n)

    def _one_line(self, line: str, out: list[Record]) -> None:
        """One line, even if it holds a `\n` (callers of `feed_line` decide what a line is): with a
        hook and no `\n` it is a one-line block; else it is read here, a `\n` in it kept."""
        if "\n" not in line and (self._on_line is not None or self._on_block is not None):
            self._block(line, out)
            return
        self.lines += 1
        if line.endswith("\r"):
            line = line[:-1]
        start = len(out)
        rec = self._parse(line, self.lines, out) if "{" in line else None
        if self._on_line is not None:
            self._on_line(self.lines, line, rec)
        if self._on_block is not None:
            self._on_block(self.lines, line.replace("\n", " "), out[start:])

    def _block(self, text: str, out: list[Record]) -> None:
        """Complete lines `text` (joined by `\n`): parse them, call the hooks."""
        if self._on_line is not None:
            pos, inside = 0, -1  # where the current line starts; the end of a joined wrapped message
            for line in text.split("\n"):
                self.lines += 1
                end = pos + len(line)
                if line.endswith("\r"):
                    line = line[:-1]
                rec = None
                if end > inside and "{" in line:
                    wrapped = self._wrapped(text, line, pos, end)
                    if wrapped is not None:
                        rec, inside = self._parse(wrapped[0], self.lines, out), wrapped[1]
                        self._joined(self.lines)
                    else:
                        rec = self._parse(line, self.lines, out)
                self._on_line(self.lines, line, rec)
                pos = end + 1
            self._last_line = line
            return
        first = self.lines + 1
        start = len(out)
        self.lines += text.count("\n") + 1
        self._metric_lines(text, first, out)
        last = text[text.rfind("\n") + 1 :]
        self._last_line = last[:-1] if last.endswith("\r") else last
        if self._on_block is not None:
            self._on_block(first, text, out[start:])

    def _metric_lines(self, text: str, first: int, out: list[Record]) -> None:
        """Records of the complete lines `text`, numbered from `first`, appended to `out`.

        Only lines holding `: {` can carry a metric message: jump between them with C-speed
        find()s instead of looking at every line. A line whose first `: {` follows a metric
        head and whose dict passes `parse_dict`'s JSON test (keys are its only strings) is put
        aside; all of them are respelled and decoded by one JSON call per block, which is what
        `parse_dict` would give each (checked: one dict per line, else each is read alone).
        Other lines take `_segments`, the line-by-line reading."""
        entries: list[tuple[str, int, int, dict[str, Any] | None]] = []  # values None: from `texts`
        texts: list[str] = []
        at = text.find(": {")
        n, pos = first, 0
        while at >= 0:
            a = text.rfind("\n", pos, at) + 1
            b = text.find("\n", at)
            if b < 0:
                b = len(text)
            n += text.count("\n", pos, a)
            pos = a
            line = text[a:b]
            if line.endswith("\r"):
                line = line[:-1]
            head = None if "\r" in line else _head(line, at - a)
            if head is None or not line.endswith("}"):  # a whole metric line needs neither test
                wrapped = self._wrapped(text, line, a, b)
                if wrapped is not None:  # a message a terminal wrapped: read joined, go on after it
                    got = parse_metric_line(wrapped[0])
                    if isinstance(got, tuple):
                        self._joined(n)
                        entries.append((got[0], got[1], n, got[2]))
                        at = text.find(": {", wrapped[1])
                        continue
            d = "" if head is None else line[at - a + 2 : line.rfind("}") + 1]
            if head is not None and d and _json_ready(d):  # decoded below with the block's others
                entries.append((head[0], head[1], n, None))
                texts.append(d)
            else:  # progress-bar segments, a first `: {` that is no metric head, no dict, a dict JSON cannot read
                entries.extend((kind, index, n, values) for kind, index, values in self._segments(line, n))
            at = text.find(": {", b)
        decoded = _decode_many(texts) if texts else []
        j = 0
        stream = self.stream
        made = len(out)
        for kind, index, line_no, values in entries:
            if values is None:
                values = decoded[j]
                j += 1
                if values is None:
                    self._skip(line_no)
                    continue
                if kind == CRITIC_STEP:
                    values = _kind_values(kind, values)
            out.append(_record(kind, index, values, line_no, stream))
        self.records += len(out) - made

    def _wrapped(self, text: str, line: str, start: int, end: int) -> tuple[str, int] | None:
        """The metric message a terminal wrapped that starts on `line` (`text[start:end]`): its
        text joined and where its last line ends; None when `line` starts none. Two breaks are
        mended: a dict that closes on later lines, and a head broken across this line and the one
        before (`... per` / `f 7: {...`: the message is then read from the line its dict opens on;
        `_straddles`)."""
        head_line = line
        if _head_at(line) < 0:
            if ": {" not in line or "\r" in line or _WRAP_STOP.match(line):
                return None
            prev = self._line_before(text, start)
            if not _straddles(prev, line):
                return None
            head_line = prev + line
        depth = _open_depth(head_line)
        if not depth:
            return (head_line, end) if head_line is not line else None
        rest = _continuation(text, end, depth)
        return None if rest is None else (head_line + rest[0], rest[1])

    def _line_before(self, text: str, start: int) -> str:
        """The line before the one starting at `text[start]` (the previous block's last line at 0)."""
        if start == 0:
            return self._last_line
        line = text[text.rfind("\n", 0, start - 1) + 1 : start - 1]
        return line[:-1] if line.endswith("\r") else line

    def _segments(self, line: str, n: int) -> list[tuple[str, int, dict[str, Any]]]:
        """(kind, index, values) of each readable metric message of line `n`, counting the
        unreadable ones skipped. A progress bar may have overwritten part of the line with \r:
        each segment is read."""
        got_all: list[tuple[str, int, dict[str, Any]]] = []
        for seg in line.split("\r") if "\r" in line else (line,):
            got = parse_metric_line(seg)
            if got is True:
                self._skip(n)
            elif got:
                got_all.append(got)
        return got_all

    def _parse(self, line: str, n: int, out: list[Record]) -> Record | None:
        rec = None
        for kind, index, values in self._segments(line, n):
            rec = Record(kind, index, values, n, self.stream)
            out.append(rec)
            self.records += 1
        return rec


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
            yield from _nested(v, key)


def _nested(d: dict[str, Any], prefix: str) -> Iterator[tuple[str, float]]:
    """`flatten` below the top level, depth-first in key order, with a stack of its own rather than
    recursion: a line may nest dicts as deep as JSON's decoder reads (nearly the interpreter's limit)."""
    stack = [(prefix, iter(d.items()))]
    while stack:
        prefix, items = stack[-1]
        for k, v in items:
            key = f"{prefix}/{k}"
            if isinstance(v, float):
                yield key, v
            elif isinstance(v, dict):
                stack.append((key, iter(v.items())))
                break
        else:
            stack.pop()
