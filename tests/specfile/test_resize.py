"""A campaign's looks may not change once one was taken (issue 32: resized campaigns decided
falsely 5.5-8.7 % of the time under the union of the looks)."""

from reportgen.specfile.model import resize_refusal


def test_no_look_taken_any_size_goes():
    assert resize_refusal([3], list(range(3, 13)), []) is None


def test_the_same_looks_resume():
    assert resize_refusal(list(range(3, 13)), list(range(3, 13)), [3, 4, 5]) is None


def test_a_resize_after_a_look_is_refused_with_the_looks_named():
    why = resize_refusal([3], [6], [3])
    assert (
        why is not None and "after 3 pair(s)" in why and "looks 3" in why and "to 6" in why and "--new-campaign" in why
    )
    why = resize_refusal(list(range(3, 6)), list(range(3, 13)), [3, 4, 5])
    assert why is not None and "looks 3-5" in why and "3-12" in why
