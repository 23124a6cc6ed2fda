"""The lexer's view of flags and the smaller edit rules, on short scripts."""

from __future__ import annotations

import subprocess

import pytest

from reportgen.errors import UserError
from reportgen.plan.bash import flag_occurrences, scan, tokenize
from reportgen.plan.recipe import edit_script
from reportgen.specfile.model import Edits
from tests.relax_recipe import RECIPE


def occ(text):
    return [(o.flag, o.values) for o in flag_occurrences(text)]


def test_static_view_of_the_relax_recipe():
    got = {o.flag: (o.values, o.line_no) for o in flag_occurrences(RECIPE)}
    assert got["--adam-betas"] == (("0.9", "0.98"), 31)
    assert got["--loss-scale"] == (("-1",), 17)  # a negative number is a value
    assert got["--runtime-env-json"] == (('{"env_vars": {"A": "1"}}',), 39)
    assert got["--address"][0] == ("http://127.0.0.1:8265",)
    assert got["--colocate"][0] == ()  # the splice on the next line is not its value
    assert got["--num-rollout"][0] == ("${NUM_ROLLOUT}",)  # expansions are kept as written
    assert got["-m"][0] == ("relax.entrypoints.train",)
    assert "--optimizer-cpu-offload" in got and got["--optimizer-cpu-offload"][0] == ()


def test_words_keep_exact_spans():
    text = "a=$(echo \"x)y\" $(nested (1)))  'q w' $'a\\'b' ${v:-\"}\"} `b c`\n"
    words = [t.text for t in tokenize(text) if t.kind == "word"]
    assert words == ['a=$(echo "x)y" $(nested (1)))', "'q w'", "$'a\\'b'", '${v:-"}"}', "`b c`"]
    for t in tokenize(text):
        assert text[t.start : t.end] == t.text


@pytest.mark.parametrize(
    "text, expected",
    [
        ("cmd --a 1 --b -2 --c -0.5e-3 --d\n", [("--a", ("1",)), ("--b", ("-2",)), ("--c", ("-0.5e-3",)), ("--d", ())]),
        ("cmd --a=x --b='y z' --c \"$V\"\n", [("--a", ("x",)), ("--b", ("y z",)), ("--c", ('"$V"',))]),
        ("cmd --a 1 2>&1 | tee log --x\n", [("--a", ("1",)), ("--x", ())]),
        ("cmd --a > out.txt\n", [("--a", ())]),
        ("cmd --a 1; other --b 2 && x --c\n", [("--a", ("1",)), ("--b", ("2",)), ("--c", ())]),
        ("cmd --a # --not-a-flag\n", [("--a", ())]),
        ('echo "--not-a-flag" $(run --nor-this)\n', []),
        ("X=(--a 1 --b)\n", [("--a", ("1",)), ("--b", ())]),
        ('cmd --a ${ARR[@]} --b "${ARR[*]}"\n', [("--a", ()), ("--b", ())]),
        ("cat <<EOF\n--in-heredoc 1\nEOF\ncmd --after 2\n", [("--after", ("2",))]),
        ("cmd -- --a\n", [("--a", ())]),
    ],
)
def test_flags_and_values(text, expected):
    assert occ(text) == expected


def test_arrays_are_found_with_their_words():
    found = scan("A=(\n  --x 1\n)\nB+=( --y )\ncmd --z\n")
    assert [a.name for a in found.arrays] == ["A", "B"]
    assert [s.array for s in found.flags] == [0, 1, None]


@pytest.mark.parametrize(
    "text, edits, expected",
    [
        # several flags on one line: only the flag and one side's spaces go
        ("A=(--a 1 --b --c)\n", Edits(remove=("--b",)), "A=(--a 1 --c)\n"),
        ("A=(--a 1 --b --c)\n", Edits(remove=("--a",)), "A=(--b --c)\n"),
        ("A=(\n   --a --b \\\n   --c\n)\n", Edits(remove=("--a",)), "A=(\n   --b \\\n   --c\n)\n"),
        # a comment on the removed flag's line goes with it
        ("A=(\n  --a  # why\n  --b\n)\n", Edits(remove=("--a",)), "A=(\n  --b\n)\n"),
        # a trailing `--foo \` before a blank line: no dangling backslash left behind
        ("cmd \\\n  --a \\\n  --foo \\\n\necho done\n", Edits(remove=("--foo",)), "cmd \\\n  --a\n\necho done\n"),
        # the only argument line of a command
        ("python3 train.py \\\n  --only\necho\n", Edits(remove=("--only",)), "python3 train.py\necho\n"),
        # values -> switch, switch -> values, --flag=value forms
        ("cmd --a 1 2 --b\n", Edits(set=(("--a", True), ("--b", ("x",)))), "cmd --a --b x\n"),
        ("cmd --a=1 --b=2\n", Edits(set=(("--a", ("3",)), ("--b", ("4", "5")))), "cmd --a=3 --b 4 5\n"),
        ("cmd --a='x y'\n", Edits(set=(("--a", True),)), "cmd --a\n"),
        ("cmd --a 1\n", Edits(set=(("--a", ("it's",)),)), "cmd --a 'it'\"'\"'s'\n"),
        # add to a one-line command: inline after the anchor
        ("cmd --a 1 --b\n", Edits(add=(("--c", ("2",)),), add_after="--a"), "cmd --a 1 --c 2 --b\n"),
        # add with no anchor and no arrays: after the last flag of the script
        ("cmd --a 1\n", Edits(add=(("--c", True),)), "cmd --a 1 --c\n"),
        # add into a one-line array, and into an empty one
        ("A=(--a 1)\ncmd ${A[@]}\n", Edits(add=(("--c", True),)), "A=(--a 1 --c)\ncmd ${A[@]}\n"),
        # add after a flag on the command's head line: the new line is indented like the next one
        (
            "run --a 1 \\\n    --b\n",
            Edits(add=(("--c", True),), add_after="--a"),
            "run --a 1 \\\n    --c \\\n    --b\n",
        ),
        # no trailing newline at the end of the file
        ("A=(\n  --a\n  --b\n)", Edits(remove=("--b",)), "A=(\n  --a\n)"),
    ],
)
def test_small_edits(text, edits, expected, tmp_path):
    got = edit_script(text, [edits])
    assert got == expected
    path = tmp_path / "r.sh"
    path.write_text(got)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def test_edit_chain_later_edits_see_earlier_ones():
    text = "A=(\n  --a 1\n)\n"
    got = edit_script(text, [Edits(remove=("--a",)), Edits(add=(("--a", ("2",)),))])
    assert got == "A=(\n    --a 2\n)\n"  # no neighbours: four spaces
    text = "B=(\n  --b\n)\nA=(\n  --a 1\n)\n"
    got = edit_script(text, [Edits(remove=("--a",)), Edits(add=(("--a", ("2",)),))])
    assert got == "B=(\n  --b\n)\nA=(\n  --a 2\n)\n"  # like the other array's words
    assert edit_script("A=()\n", [Edits(add=(("--a", True),))]) == "A=(--a)\n"


@pytest.mark.parametrize(
    "text, edits, message",
    [
        (
            RECIPE,
            Edits(remove=("--recompute-methods",)),
            "candidate A2: --recompute-methods not found in recipe scripts/x.sh",
        ),
        (
            "cmd --a 1\nother --a 2\n",
            Edits(set=(("--a", ("3",)),)),
            "candidate A2: --a appears 2 times in recipe scripts/x.sh (lines 1, 2)",
        ),
        (
            RECIPE,
            Edits(add=(("--seed", ("1",)),)),
            "candidate A2: --seed is already in recipe scripts/x.sh (line 46); use 'set'",
        ),
        (RECIPE, Edits(add=(("--z", True),), add_after="--nope"), "candidate A2: --nope not found"),
        (
            "cat <<'EOF'\n  --hidden 1\nEOF\n",
            Edits(remove=("--hidden",)),
            "--hidden is inside a here-document (line 2)",
        ),
        ("echo 'open\n", Edits(remove=("--a",)), "recipe line 1: unterminated ' quote"),
        ("x\n", Edits(add=(("--a", True),)), "has no flags to add --a next to"),
    ],
)
def test_refusals_are_one_line_user_errors(text, edits, message):
    with pytest.raises(UserError) as info:
        edit_script(text, [edits], labels=["candidate A2"], path="scripts/x.sh")
    assert message in str(info.value)
    assert "\n" not in str(info.value)
