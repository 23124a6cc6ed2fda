"""Effective flag values: what a candidate's change did to the trainer's command line, old -> new."""

from __future__ import annotations

from reportgen.render.flagdiff import ABSENT, SWITCH_ON, arrow_list, changes_table, differing_flags, value_text

BASE = {"--optimizer-cpu-offload": True, "--max-tokens-per-gpu": "896", "--lr": "1e-3"}
A1 = {"--max-tokens-per-gpu": "896", "--lr": "1e-3"}
A3 = {"--max-tokens-per-gpu": "640", "--lr": "1e-3"}


def test_values_read_as_words():
    assert value_text(True) == SWITCH_ON and value_text(None) == ABSENT and value_text(False) == ABSENT
    assert value_text(["a", "b"]) == "a b" and value_text("640") == "640"


def test_only_differing_flags_with_every_column():
    rows = differing_flags([("baseline", BASE), ("A1", A1), ("A3", A3)])
    assert [(r.flag, r.values) for r in rows] == [
        ("--optimizer-cpu-offload", (SWITCH_ON, ABSENT, ABSENT)),
        ("--max-tokens-per-gpu", ("896", "896", "640")),
    ]


def test_table_shows_the_old_value_not_the_variable():
    md = changes_table([("baseline", BASE), ("A1 (base)", A1), ("A3", A3)])
    assert "<code>896</code>" in md and "<strong><code>640</code></strong>" in md
    assert "--lr" not in md
    assert changes_table([("a", A1), ("b", dict(A1))]) == ""


def test_arrows_for_prose():
    assert arrow_list(A3, A1) == ["<code>--max-tokens-per-gpu</code>: 640 → 896"]
    assert arrow_list(A1, BASE) == ["<code>--optimizer-cpu-offload</code>: absent → on (switch)"]
