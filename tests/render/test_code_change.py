"""The code change of a candidate at a git revision, as the pages and the PR body say it
(reportgen.render.code_change): commits, merge base, files and lines, the GitHub link, the revert."""

from __future__ import annotations

from reportgen.analysis.document import ChangedFile, CodeChange, Comparison
from reportgen.render import code_change

A, B, M = "a" * 40, "b" * 40, "c" * 40


def _comp(code: CodeChange | None) -> Comparison:
    return Comparison.model_construct(candidate="candidate", code_change=code)


CODE = CodeChange(
    baseline_sha=A,
    candidate_sha=B,
    merge_base=M,
    files=[ChangedFile(path="reportgen/workloads/grpo/train.py", added=3, deleted=1), ChangedFile(path="x.bin")],
    link=f"https://github.com/o/r/compare/{A}...{B}",
    revert=f"git revert --no-edit {M[:12]}..{B[:12]}",
)


def test_the_candidate_page_names_both_commits_the_files_and_the_link():
    text = "\n".join(code_change.section(_comp(CODE), "candidate"))
    assert f"<code>{B[:12]}</code>" in text or f"`{B[:12]}`" in text
    assert "merge base" in text and "2 files, +3 -1" in text
    assert "train&#95;py" in text or "train.py" in text
    assert "binary" in text and "compare on GitHub" in text and CODE.link in text


def test_no_code_change_says_nothing_and_the_same_files_say_so():
    assert code_change.section(_comp(None), "A1") == []
    same = CODE.model_copy(update={"files": [], "link": None})
    assert "no code change" in "\n".join(code_change.section(_comp(same), "candidate"))


def test_the_rollback_reverts_the_range_and_the_pr_body_has_one_line():
    assert CODE.revert in "\n".join(code_change.revert(_comp(CODE)))
    assert code_change.revert(_comp(None)) == []
    line = code_change.pr_line("candidate", _comp(CODE))
    assert line == (
        f"- `candidate` code: `{A[:12]}` → `{B[:12]}` (merge base `{M[:12]}`), 2 files, +3 -1 ([compare]({CODE.link}))"
    )
    assert code_change.pr_line("A1", _comp(None)) is None


def test_reproduce_names_the_commits_the_arms_ran_at():
    from reportgen.render import reproduce

    _, notes = reproduce.run_commands(
        reproduce.ReproduceInputs(experiment="pr", commit=A, revisions=(("baseline", A), ("candidate", B)))
    )
    assert f"baseline at {A[:12]}, candidate at {B[:12]}" in " ".join(notes)
    assert not [n for n in reproduce.run_commands(reproduce.ReproduceInputs(experiment="x"))[1] if "revisions" in n]
