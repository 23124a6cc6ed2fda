"""The "Reproduce" section of an experiment page (render stage; data in, Markdown out).

A reader must be able to paste it: the commit (or, when none was recorded, how to find the
nearest one), the spec exactly as it ran, the `reportgen run` line that re-runs every arm into a
new folder, the way back to the reader's checkout (whose site shows the re-run beside the report),
and each arm's effective trainer command wrapped one flag per line. Never the runner's temporary
recipe path (`scripts/recipes/.reportgen...sh`): it does not exist after the
run; the patched recipe each run executed is kept next to it as `recipe.sh`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reportgen.render import safe

ArgValue = str | int | float | bool | None | Sequence[str]
REPO_PREFIX = "<repo>/"  # what the path shortener writes for the repository root
CONTINUATION = " \\"
INDENT = "  "


@dataclass(frozen=True)
class ArmCommand:
    """One formal run's effective command: `argv` is the flag -> value mapping ingest read from the
    trainer's own command line (or a plain word list); `recipe` the patched recipe it executed."""

    run: str  # "A1/1"
    argv: Mapping[str, ArgValue] | Sequence[str] | None
    recipe: str | None = None  # "runs/<experiment>/A1/1/recipe.sh"


@dataclass(frozen=True)
class ReproduceInputs:
    experiment: str  # folder name under runs/
    runs_dir: str = "runs"
    commit: str | None = None
    dirty: bool | None = None
    profile: str | None = None
    recipe_dir: str | None = None  # where the spec ran from (its recipe paths are relative to it)
    entrypoint: str | None = None  # the trainer's Python module, e.g. "reportgen.workloads.grpo"
    python: str = "python3"
    revisions: tuple[tuple[str, str], ...] = ()  # (arm, commit) of arms at git revisions (docs/revisions.md)


def repo_relative(path: str | None) -> str | None:
    """A recorded path relative to the repository root when it lies inside it ("<repo>/x" -> "x")."""
    if not path:
        return None
    if path.startswith(REPO_PREFIX):
        return path[len(REPO_PREFIX) :] or "."
    return path


def _flag_words(flag: str, value: ArgValue) -> list[str]:
    if value is True:
        return [flag]
    if value is False or value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [flag, *(str(v) for v in value)]
    return [flag, str(value)]


def argv_lines(argv: Mapping[str, ArgValue] | Sequence[str]) -> list[list[str]]:
    """The arguments grouped one flag (with its values) per line; a word list is split at each word
    that starts with "--"."""
    if isinstance(argv, Mapping):
        return [w for flag, value in argv.items() if (w := _flag_words(str(flag), value))]
    lines: list[list[str]] = []
    for word in (str(w) for w in argv):
        if word.startswith("--") or not lines:
            lines.append([word])
        else:
            lines[-1].append(word)
    return lines


def wrapped_command(head: Sequence[str], argv: Mapping[str, ArgValue] | Sequence[str]) -> str:
    """A shell command one flag per line with backslash continuations: it stays readable on a phone
    and pastes into bash as one command. Every word is shell-quoted."""
    lines = [" ".join(quote(w) for w in head)] if head else []
    indent = INDENT if head else ""  # the arguments alone (no known trainer module) start at the margin
    lines += [indent + " ".join(quote(w) for w in words) for words in argv_lines(argv)]
    return "\n".join(line + CONTINUATION for line in lines[:-1]) + ("\n" if len(lines) > 1 else "") + lines[-1]


WIDTH = 72  # a code block this wide fits the page column at 1440 px without scrolling


def quote(word: str) -> str:
    """shlex.quote, except that a home-relative path the path shortener wrote ("~/relax") keeps its
    tilde unquoted so the shell still expands it."""
    if word.startswith("~/") and shlex.quote(word[2:]) == word[2:]:
        return word
    return shlex.quote(word)


def wrapped_words(words: Sequence[str], *, width: int = WIDTH, raw: frozenset[int] = frozenset()) -> str:
    """Shell words (quoted, except positions in `raw`) joined into lines of at most about `width`
    characters with backslash continuations; an option keeps its value on its line."""
    quoted = [w if i in raw else quote(w) for i, w in enumerate(words)]
    groups: list[str] = []
    for i, q in enumerate(quoted):
        if groups and not q.startswith("-") and quoted[i - 1].startswith("--") and i > 2:
            groups[-1] += " " + q
        else:
            groups.append(q)
    lines = [groups[0]]
    for g in groups[1:]:
        if len(lines[-1]) + 1 + len(g) > width and lines[-1].strip():
            lines.append(INDENT + g)
        else:
            lines[-1] += " " + g
    return (CONTINUATION + "\n").join(lines)


SAVED = '"${TMPDIR:-/tmp}/{name}.toml"'  # outside the checkout: it survives the `git checkout`


def run_commands(inp: ReproduceInputs) -> tuple[list[str], list[str]]:
    """(shell lines, notes in words) re-running the whole experiment into a new folder, from the code
    of the recorded commit, then building the site back at the reader's checkout. The spec as it ran
    is in the experiment's folder, which the recorded commit does not hold (the runs were committed
    after they ran): it is copied out of the reader's checkout first, then put back where its recipe
    paths resolve."""
    stored = f"{inp.runs_dir}/{inp.experiment}/experiment.toml"
    saved = SAVED.replace("{name}", inp.experiment)
    rerun = f"{inp.experiment}-rerun"
    profile = ["--profile", inp.profile] if inp.profile else []
    lines: list[str] = [
        "# the spec as it ran, kept aside: the recorded commit predates the runs' folder",
        wrapped_words(["cp", stored, saved], raw=frozenset({2})),
    ]
    notes: list[str] = []
    if inp.commit:
        lines.append(f"git checkout {shlex.quote(inp.commit)}")
        if inp.dirty:
            notes.append(
                "The runs were made from a working tree with uncommitted changes: the commit is the nearest "
                "recorded state, not the exact code."
            )
    else:
        lines += [
            "# no commit was recorded where the runs ran: take the commit that added them",
            'git checkout "$(git log --diff-filter=A --format=%H \\',
            f'  -- {shlex.quote(stored)} | tail -n 1)"',
        ]
        notes.append(
            "No commit was recorded where the runs were made (no git history there), so the nearest known "
            "code is the commit that added these runs to the repository."
        )
    where = repo_relative(inp.recipe_dir)
    if where:
        spec = f"{where.rstrip('/')}/{inp.experiment}.toml" if where not in (".", "") else f"{inp.experiment}.toml"
        lines += [
            f"# back in {where} (its recipe paths are relative to it)",
            wrapped_words(["cp", saved, spec], raw=frozenset({1})),
        ]
        run = wrapped_words(["reportgen", "run", spec, *profile, "--name", rerun])
    else:
        run = wrapped_words(["reportgen", "run", saved, *profile, "--name", rerun], raw=frozenset({2}))
    # The site is built back at the reader's own checkout: built at the recorded commit it would hold only
    # the reports committed by then (every newer one gone from it) and need that commit's build
    # dependencies; here the re-run is analysed and drawn by the same code as this report, beside it.
    # One line, so a pull request's body (at most 60 lines, render/prbody.py) keeps its next steps.
    lines += [run, "git checkout - && reportgen analyze && mkdocs build"]
    if inp.revisions:
        ran = ", ".join(f"{arm} at {sha[:12]}" for arm, sha in inp.revisions)
        notes.append(
            f"The arms ran at git revisions ({ran}), each from a clean checkout of its commit that the re-run "
            "makes again; a ref the spec names by branch is resolved anew, so give those commits to measure the "
            "same code."
        )
    notes.append(
        f"The re-run goes into {inp.runs_dir}/{rerun}/ (the committed runs stay as they are), made by the recorded "
        "commit's code; git checkout - returns to your checkout, whose reportgen analyses it and builds the site "
        "with it beside this report."
    )
    return lines, notes


def section(inp: ReproduceInputs, arms: Sequence[ArmCommand]) -> str:
    """The Markdown body of the Reproduce section (without its heading)."""
    lines, notes = run_commands(inp)
    out = [
        "Re-run every arm from the spec exactly as it ran, then rebuild this site:\n",
        safe.fence("\n".join(lines), "bash"),
        "",
        " ".join(safe.text(n) for n in notes) + "\n",
    ]
    head = [inp.python, "-m", inp.entrypoint] if inp.entrypoint else []
    with_argv = [a for a in arms if a.argv]
    if with_argv:
        out.append('??? example "The trainer\'s command line in each run (effective values, one flag per line)"\n')
        for a in with_argv:
            out.append(f'    === "{safe.text(a.run)}"\n')
            body = wrapped_command(head, a.argv or {})
            out.append(safe.fence(body, "bash", indent="        ") + "\n")
            if a.recipe:
                out.append(f"        The patched recipe this run executed: {safe.code(a.recipe)}.\n")
    return "\n".join(out)
