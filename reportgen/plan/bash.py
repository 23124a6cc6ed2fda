"""A small bash lexer for recipe scripts (plan stage: spec -> **plan** -> execute).

It knows just enough bash to find flags in a Relax-style recipe and the exact bytes they
occupy: words (with quotes '...', "...", $'...', escapes, ${...}, $(...), $((...)), `...`),
comments, line continuations, arrays `NAME=( ... )`, operators and redirections, and
here-documents (whose bodies are opaque: nothing inside them is ever edited).

`scan(text)` returns the tokens and every flag occurrence with byte spans, so the editor in
`recipe.py` can change a flag and leave every other byte of the script alone.
No I/O here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from reportgen.errors import UserError

# Flag words as the spec spells them (`--flag`, `-m`), optionally `--flag=value`.
FLAG_WORD = re.compile(r"^(--?[A-Za-z0-9][A-Za-z0-9_.-]*)(=.*)?$", re.DOTALL)
# A word that starts with '-' but is a value, not a flag: -1, -0.5, -.5, -1e-3.
NEGATIVE_NUMBER = re.compile(r"^-(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")
# A whole-array splice such as ${MODEL_ARGS[@]} or "${X[*]}": a list of arguments, never a value.
ARRAY_SPLICE = re.compile(r'^"?\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}"?$')
ARRAY_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=$")

_OPERATORS = ("<<<", "<<-", "&&", "||", ";;", ">>", ">&", "<&", "<<", ">|", "<>", ";", "&", "|", "(", ")", "<", ">")
_META = set(" \t\n;&|()<>")
# The operators above that redirect: the word after one is its target (or here-document
# delimiter), never an argument or a flag value.
REDIRECTIONS = frozenset({"<", ">", ">>", ">&", "<&", ">|", "<>", "<<<", "<<", "<<-"})


@dataclass(frozen=True)
class Token:
    """One lexical item with its exact byte span [start, end) in the script text.

    kind: word | newline | cont (backslash-newline) | comment | op | heredoc (a body).
    For an `op` of text "(" opening an array assignment, `array_open` is True.
    """

    kind: str
    start: int
    end: int
    text: str
    array_open: bool = False


class Occurrence(NamedTuple):
    """Static view of one flag in a script: the flag, its values as written, its 1-based line."""

    flag: str
    values: tuple[str, ...]
    line_no: int


@dataclass(frozen=True)
class FlagSite:
    """Where one flag occurrence sits, in bytes.

    `flag_end` is the end of the flag name; `eq` is True for `--flag=value` (then the single
    value starts at flag_end + 1). `values` are (start, end) spans of the value words.
    `array` is the ordinal of the enclosing array assignment, or None on a command line.
    """

    flag: str
    start: int
    flag_end: int
    end: int
    eq: bool
    values: tuple[tuple[int, int], ...]
    array: int | None
    line_no: int


@dataclass(frozen=True)
class ArraySite:
    """An array assignment `NAME=( ... )`: spans of its '(' and ')' tokens (end -1 if unclosed)."""

    ordinal: int
    name: str
    open_start: int
    close_start: int
    words: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Scan:
    text: str
    tokens: tuple[Token, ...]
    flags: tuple[FlagSite, ...]
    arrays: tuple[ArraySite, ...]
    heredocs: tuple[tuple[int, int], ...]


class BashSyntaxError(UserError):
    """The recipe is not bash this lexer can follow (an unterminated quote or substitution)."""


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _fail(text: str, pos: int, what: str) -> BashSyntaxError:
    return BashSyntaxError(f"recipe line {line_of(text, pos)}: {what}; fix the script so `bash -n` accepts it")


def _skip_single(text: str, i: int) -> int:
    """i is just past an opening '; return the index past the closing '."""
    j = text.find("'", i)
    if j < 0:
        raise _fail(text, i - 1, "unterminated ' quote")
    return j + 1


def _skip_ansi(text: str, i: int) -> int:
    """i is just past $'; backslash escapes apply."""
    return _skip_quoted(text, i, "'", "unterminated $'...' quote")


def _skip_double(text: str, i: int) -> int:
    """i is just past an opening "; return the index past the closing "."""
    return _skip_quoted(text, i, '"', 'unterminated " quote', expansions=True)


def _skip_backtick(text: str, i: int) -> int:
    return _skip_quoted(text, i, "`", "unterminated ` substitution")


def _skip_quoted(text: str, i: int, closer: str, unterminated: str, *, expansions: bool = False) -> int:
    """i is just past an opening quote; return the index past its `closer`. A backslash escapes the
    next character; with `expansions` (double quotes), $(...), ${...} and `...` inside are skipped whole."""
    n = len(text)
    start = i - 1
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == closer:
            return i + 1
        elif expansions and c == "$" and text.startswith("$(", i):
            i = _skip_paren(text, i + 2)
        elif expansions and c == "$" and text.startswith("${", i):
            i = _skip_brace(text, i + 2)
        elif expansions and c == "`":
            i = _skip_backtick(text, i + 1)
        else:
            i += 1
    raise _fail(text, start, unterminated)


def _skip_paren(text: str, i: int) -> int:
    """i is just past `$(` (or `$((`'s first paren); return past the matching ')'."""
    return _skip_group(text, i, "(", ")", "unterminated $( substitution")


def _skip_brace(text: str, i: int) -> int:
    """i is just past `${`; return past the matching '}'."""
    return _skip_group(text, i, "", "}", "unterminated ${ expansion")


def _skip_group(text: str, i: int, opener: str, closer: str, unterminated: str) -> int:
    """Past the `closer` matching an opening two characters before i; quotes, backticks and
    nested `$(`/`${` are skipped whole, and a bare `opener` (parens only) nests."""
    n = len(text)
    start = i - 2
    depth = 1
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            i = _skip_single(text, i + 1)
        elif c == '"':
            i = _skip_double(text, i + 1)
        elif c == "`" and opener:
            i = _skip_backtick(text, i + 1)
        elif c == "$" and text.startswith("$(", i):
            i = _skip_paren(text, i + 2)
        elif c == "$" and text.startswith("${", i):
            i = _skip_brace(text, i + 2)
        elif opener and c == opener:
            depth += 1
            i += 1
        elif c == closer:
            depth -= 1
            i += 1
            if depth == 0:
                return i
        else:
            i += 1
    raise _fail(text, start, unterminated)


def _skip_word(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        c = text[i]
        if c in _META:
            return i
        if c == "\\":
            if text.startswith("\\\n", i):
                # A continuation ends the word here; the lexer emits it as its own token.
                return i
            i += 2
        elif c == "'":
            i = _skip_single(text, i + 1)
        elif c == '"':
            i = _skip_double(text, i + 1)
        elif c == "`":
            i = _skip_backtick(text, i + 1)
        elif c == "$" and text.startswith("$'", i):
            i = _skip_ansi(text, i + 2)
        elif c == "$" and text.startswith("$(", i):
            i = _skip_paren(text, i + 2)
        elif c == "$" and text.startswith("${", i):
            i = _skip_brace(text, i + 2)
        else:
            i += 1
    return min(i, n)


def _heredoc_delimiter(word: str) -> str:
    return word.replace("'", "").replace('"', "").replace("\\", "")


def tokenize(text: str) -> list[Token]:
    """Tokens of a bash script, in order, with exact spans (whitespace is not a token)."""
    tokens: list[Token] = []
    pending: list[tuple[str, bool]] = []  # here-documents whose bodies start after the next newline
    expect_delim: bool | None = None  # after << or <<-: next word is a delimiter (value: strip tabs)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r":
            i += 1
        elif text.startswith("\\\n", i):
            tokens.append(Token("cont", i, i + 2, "\\\n"))
            i += 2
        elif c == "\n":
            tokens.append(Token("newline", i, i + 1, "\n"))
            i += 1
            for delim, strip_tabs in pending:
                body_start = i
                while True:
                    if i >= n:
                        raise _fail(text, body_start, f"here-document ending in {delim!r} is not closed")
                    eol = text.find("\n", i)
                    eol = n if eol < 0 else eol
                    line = text[i:eol]
                    i = min(eol + 1, n)
                    if (line.lstrip("\t") if strip_tabs else line) == delim:
                        break
                tokens.append(Token("heredoc", body_start, i, text[body_start:i]))
            pending = []
        elif c == "#":
            eol = text.find("\n", i)
            eol = n if eol < 0 else eol
            tokens.append(Token("comment", i, eol, text[i:eol]))
            i = eol
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is not None:
                is_array = (
                    op == "("
                    and tokens
                    and tokens[-1].kind == "word"
                    and tokens[-1].end == i
                    and bool(ARRAY_ASSIGN.match(tokens[-1].text))
                )
                tokens.append(Token("op", i, i + len(op), op, array_open=bool(is_array)))
                if op in ("<<", "<<-"):
                    expect_delim = op == "<<-"
                i += len(op)
                continue
            j = _skip_word(text, i)
            if j == i:  # a lone backslash before something odd: take it as a one-char word
                j = i + 1
            word = text[i:j]
            if word.isdigit() and j < n and text[j] in "<>":
                # An io-number (2>&1): part of a redirection, never a flag value.
                tokens.append(Token("op", i, j, word))
            else:
                tokens.append(Token("word", i, j, word))
                if expect_delim is not None:
                    pending.append((_heredoc_delimiter(word), expect_delim))
                    expect_delim = None
            i = j
    return tokens


def is_flag_word(word: str) -> bool:
    return bool(FLAG_WORD.match(word)) and not NEGATIVE_NUMBER.match(word)


def _is_value_word(word: str) -> bool:
    if word.startswith("-"):
        return bool(NEGATIVE_NUMBER.match(word))
    return not ARRAY_SPLICE.match(word)


def scan(text: str) -> Scan:
    """Tokens, flag occurrences, arrays and here-document bodies of a script.

    A flag's values are the words after it on the same physical line, in the same array or
    command, that are not flags themselves (negative numbers are values) and not whole-array
    splices; a newline, a continuation, a comment, an operator or ')' ends them.
    """
    tokens = tokenize(text)
    flags: list[FlagSite] = []
    arrays: list[dict] = []
    stack: list[int | None] = []  # array ordinal for array parens, None for other parens
    after_redirect = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        current_array = stack[-1] if stack else None
        if tok.kind == "op":
            if tok.text == "(":
                if tok.array_open:
                    name = tokens[i - 1].text.split("=")[0].split("[")[0].rstrip("+")
                    arrays.append({"ordinal": len(arrays), "name": name, "open": tok.start, "close": -1, "words": []})
                    stack.append(len(arrays) - 1)
                else:
                    stack.append(None)
            elif tok.text == ")" and stack:
                top = stack.pop()
                if top is not None:
                    arrays[top]["close"] = tok.start
            after_redirect = tok.text in REDIRECTIONS
            i += 1
            continue
        if tok.kind != "word":
            i += 1
            continue
        if after_redirect:  # a redirection target, not an argument
            after_redirect = False
            i += 1
            continue
        if current_array is not None:
            arrays[current_array]["words"].append((tok.start, tok.end))
        m = FLAG_WORD.match(tok.text)
        if not m or NEGATIVE_NUMBER.match(tok.text):
            i += 1
            continue
        flag = m.group(1)
        flag_end = tok.start + len(flag)
        values: list[tuple[int, int]] = []
        j = i + 1
        if m.group(2) is not None:
            values.append((flag_end + 1, tok.end))
        else:
            while j < len(tokens):
                nxt = tokens[j]
                if nxt.kind != "word" or not _is_value_word(nxt.text):
                    break
                values.append((nxt.start, nxt.end))
                if current_array is not None:
                    arrays[current_array]["words"].append((nxt.start, nxt.end))
                j += 1
        end = values[-1][1] if values else tok.end
        flags.append(
            FlagSite(
                flag=flag,
                start=tok.start,
                flag_end=flag_end,
                end=end,
                eq=m.group(2) is not None,
                values=tuple(values),
                array=current_array,
                line_no=line_of(text, tok.start),
            )
        )
        i = j if m.group(2) is None else i + 1
    return Scan(
        text=text,
        tokens=tuple(tokens),
        flags=tuple(flags),
        arrays=tuple(ArraySite(a["ordinal"], a["name"], a["open"], a["close"], tuple(a["words"])) for a in arrays),
        heredocs=tuple((t.start, t.end) for t in tokens if t.kind == "heredoc"),
    )


ANSI_C_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
}


def split_words(text: str) -> list[str] | None:
    """Split a command line into words at unquoted blanks and remove the quoting, as bash does:
    '...', "..." (where \\ escapes only " \\ $ ` and newline), $'...' (ANSI-C escapes), \\x.
    None if a quote is left open. Expansions ($VAR, `cmd`) are not performed.

    The one bash-word unquoter: ingest splits `set -x` trace lines with it, the plan shows a
    recipe's static flag values with it (`display_value`)."""
    words: list[str] = []
    cur: list[str] = []
    have = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t":
            if have:
                words.append("".join(cur))
                cur, have = [], False
            i += 1
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                return None
            cur.append(text[i + 1 : j])
            have, i = True, j + 1
        elif c == "$" and i + 1 < n and text[i + 1] == "'":
            i += 2
            while i < n and text[i] != "'":
                if text[i] == "\\" and i + 1 < n:
                    cur.append(ANSI_C_ESCAPES.get(text[i + 1], "\\" + text[i + 1]))
                    i += 2
                else:
                    cur.append(text[i])
                    i += 1
            if i >= n:
                return None
            have, i = True, i + 1
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    i += 1
                cur.append(text[i])
                i += 1
            if i >= n:
                return None
            have, i = True, i + 1
        elif c == "\\" and i + 1 < n:
            cur.append(text[i + 1])
            have, i = True, i + 2
        else:
            cur.append(c)
            have, i = True, i + 1
    if have:
        words.append("".join(cur))
    return words


def display_value(raw: str) -> str:
    """A value word as the program would receive it, where that is knowable statically.

    Quotes and escapes are removed; a word that expands something ($, `) is kept as written.
    """
    if "$" in raw or "`" in raw:
        return raw
    words = split_words(raw)
    return words[0] if words is not None and len(words) == 1 else raw


def flag_occurrences(text: str) -> list[Occurrence]:
    """Every flag of a script with its values (unquoted where static) and 1-based line number."""
    found = scan(text)
    return [
        Occurrence(site.flag, tuple(display_value(text[s:e]) for s, e in site.values), site.line_no)
        for site in found.flags
    ]


def effective_command(text: str) -> list[str]:
    """The script's workload command as written, with whole-array splices expanded.

    The last simple command that carries flags or array splices (a recipe's launch line); each
    `${NAME[@]}` is replaced by the words of array NAME. Variables are not expanded: this is
    a static view for `--dry-run`; the runtime view is the `set -x` trace. Redirections
    (`> out.log 2>&1`) are not arguments and are left out.
    """
    found = scan(text)
    arrays: dict[str, list[str]] = {}
    for arr in found.arrays:
        arrays[arr.name] = [text[s:e] for s, e in arr.words]
    in_array = {a.open_start for a in found.arrays}
    commands: list[list[str]] = [[]]
    depth = 0  # inside an array assignment's parentheses
    target = False  # the next word is a redirection's target (`> out.log`, `2>&1`): not an argument
    for tok in found.tokens:
        if tok.kind == "op" and tok.text == "(" and tok.start in in_array:
            depth += 1
        elif depth and tok.kind == "op" and tok.text == ")":
            depth -= 1
        elif depth:
            continue
        elif tok.kind == "op" and (tok.text in REDIRECTIONS or tok.text.isdigit()):
            target = tok.text in REDIRECTIONS  # an io number (the 2 of 2>&1) precedes its operator
        elif tok.kind == "word":
            if target:
                target = False
                continue
            commands[-1].append(tok.text)
        elif tok.kind in ("newline", "heredoc") or (
            tok.kind == "op" and tok.text in (";", "&&", "||", "|", "&", "(", ")")
        ):
            commands.append([])
    for words in reversed(commands):
        if any(is_flag_word(w) or ARRAY_SPLICE.match(w) for w in words):
            out: list[str] = []
            for w in words:
                m = ARRAY_SPLICE.match(w)
                out.extend(arrays.get(m.group("name"), [w]) if m else [w])
            return out
    return []
