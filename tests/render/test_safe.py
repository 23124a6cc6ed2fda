"""Escaping, path shortening and patch reversal: the pieces that keep untrusted text inert."""

from __future__ import annotations

import subprocess
from pathlib import Path

import markdown
import pytest

from reportgen.render import safe
from reportgen.render.format import fmt_change, fmt_num
from reportgen.render.patch import reverse_patch
from reportgen.render.paths import PathShortener, RootsSeen, roots_in

EXTS = ["tables", "attr_list", "md_in_html", "admonition", "pymdownx.superfences"]


def md(text: str) -> str:
    return markdown.markdown(text, extensions=EXTS)


@pytest.mark.parametrize(
    "evil",
    [
        "<script>alert(1)</script>",
        "[x](javascript:alert(1))",
        "**bold** _it_ `code`",
        "a | b | c",
        "# heading {: onclick=x}",
        "<img src=x onerror=alert(1)>",
        "&lt;already&gt;",
    ],
)
def test_text_renders_as_the_same_text(evil):
    html = md(safe.text(evil))
    assert "<script" not in html and "<img" not in html and "<a " not in html and "<strong" not in html
    import html as h
    import re

    assert h.unescape(re.sub(r"<[^>]+>", "", html)).strip() == evil


def test_text_in_a_table_cell_does_not_split_it():
    html = md("| a | b |\n|---|---|\n| " + safe.text("x | y") + " | z |")
    assert html.count("<td>") == 2


@pytest.mark.parametrize("body", ["plain", "```\n<script>x</script>\n```", "````` five", "a `` b ```` c"])
def test_fence_cannot_be_closed_from_inside(body):
    block = safe.fence(body + "\nafter <b>bold</b>", "text")
    html = md(block + "\n\noutside")
    assert "<b>" not in html and "<script" not in html
    assert html.count("<pre") == 1 and "outside" in html.split("</pre>")[-1]


def test_json_attr_is_quoted():
    s = safe.json_attr({"a": '"><script>'})
    assert '"' not in s and "<" not in s


def test_formats():
    assert fmt_change(0.20682) == "+20.68%"
    assert fmt_change(-0.189134) == "-18.91%"
    assert fmt_change(None) == "n/a"
    assert fmt_num(250.1774) == "250.177"
    assert fmt_num(73152.0, 0) == "73152" and fmt_num(66.0) == "66.000"
    assert fmt_num(float("nan")) == "NaN"


def test_path_shortener(tmp_path):
    repo = tmp_path / "repo"
    sh = PathShortener.for_repo(repo)
    s = sh(f"cd {repo}/runs && cat /home/alice/x.log /tmp/pytest-of-bob/y /Users/carol/z {repo}x")
    assert s == f"cd <repo>/runs && cat ~/x.log <tmp>/y ~/z {sh(str(repo) + 'x')}"
    assert "/home/alice" not in sh.deep({"a": ["/home/alice/q"]})["a"][0]
    assert PathShortener(enabled=False)("/home/alice") == "/home/alice"


def test_reverse_patch_undoes_the_change(tmp_path: Path):
    import difflib

    before = "a\n--offload\n--overlap\nb\n--max 9216\nc\n"
    after = "a\nb\n--max 8192\n--new\nc\n"
    diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/r.sh", "b/r.sh"))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "r.sh").write_text(after)
    (tmp_path / "rollback.patch").write_text(reverse_patch(diff))
    subprocess.run(["git", "apply", "rollback.patch"], cwd=tmp_path, check=True)
    assert (tmp_path / "r.sh").read_text() == before
    assert reverse_patch(reverse_patch(diff)) == diff


def test_flags_in_a_sentence_become_code_that_does_not_wrap():
    from reportgen.render.safe import prose

    got = prose("removing --optimizer-cpu-offload, then <b>x</b> (--gpu-memory-cap-gib 5)")
    assert got == (
        'removing <code class="rg-flag">--optimizer-cpu-offload</code>, then &lt;b&gt;x&lt;/b&gt; '
        '(<code class="rg-flag">--gpu-memory-cap-gib</code> 5)'
    )
    assert prose("no flag -- here; a-b-c stays") == "no flag -- here; a-b-c stays"


def test_kept_paths_tell_which_roots_a_build_would_replace() -> None:
    """What the page cache keeps of an experiment's strings (every absolute path in them) answers
    for any build's shortener as the strings would: a root counts where the shortener replaces it
    (followed by a slash, a blank, a quote or the end), not inside a longer folder name."""
    seen = RootsSeen.of(PathShortener(roots=(("/tmp/a", "<repo>"),)))
    seen("cd '/tmp/a/runs' && ls /tmp/ab/x")
    assert seen.paths == {"/tmp/a/runs", "/tmp/ab/x"}
    assert roots_in(PathShortener(roots=(("/tmp/a", "<repo>"),)), seen.paths) == {("/tmp/a", "<repo>")}
    assert roots_in(PathShortener(roots=(("/tmp/b", "<repo>"),)), seen.paths) == frozenset()
    assert roots_in(PathShortener(roots=(("/tmp/a/ru", "<repo>"),)), seen.paths) == frozenset()
    assert roots_in(PathShortener(roots=(("/tmp/my repo", "<repo>"),)), seen.paths) is None  # not answerable
    assert roots_in(PathShortener(enabled=False, roots=(("/tmp/my repo", "<repo>"),)), seen.paths) == frozenset()
