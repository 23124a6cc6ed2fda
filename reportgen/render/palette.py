"""The site's colours for chart marks (render stage; no I/O): one colour per arm on every page.

`arm_color` is the only place an arm gets its colour; every chart (experiment, candidate and
history pages) and every legend asks it, so A1 is the same blue on the experiment page, on its
candidate page and in the history, whatever other arms a chart shows.

Every colour drawn as a mark has at least 3:1 contrast (WCAG 2.1 non-text) against both Material's
white page and its dark ("slate", #1e2029) one, so one palette serves both schemes: relative
luminance between 0.15 and 0.29 (tests/render/test_charts.py computes it). Chart text is not drawn
in these colours: docs/assets/report.css gives every label of a chart the text colour
`CHART_TEXT` (4.5:1 at least on both backgrounds).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reportgen import vocab

# baseline, then the candidates
ARM_COLORS = ("#80868b", "#1a73e8", "#d93025", "#e37400", "#1e8e3e", "#a142f4", "#00897b", "#e52592")
# Marks that are no arm: a rule for a limit (the memory cap) in near-black, which docs/assets/report.css
# draws near-white in the dark scheme; the crosshair in a mid grey.
LIMIT_COLOR = "#202124"
NEUTRAL = "#80868b"
# The text of a chart (axis labels and titles, legends, window labels) per scheme, as report.css sets it.
CHART_TEXT = {"light": "#5f6368", "dark": "#bdc1c6"}
PAGE_BACKGROUND = {"light": "#ffffff", "dark": "#1e2029"}  # Material's default and slate schemes
# Where a step's time goes (charts.PARTS order).
PART_COLORS = ("#1a73e8", "#12a4af", "#a142f4", "#d93025", "#e37400", "#80868b")
REPEAT_DASHES = ([1, 0], [6, 3], [2, 2], [8, 3, 2, 3], [1, 3])  # repeat 1, 2, 3, ... of an arm

_NUMBERED = re.compile(r"^A(\d+)$")


def arm_color(arm: str, order: Sequence[str] = ()) -> str:
    """The colour of `arm` on every page: the baseline grey; a candidate named A<n> (the spec's
    convention) the n-th candidate colour, whatever else the chart shows; any other id by its place
    among the experiment's other arms (`order`), after its numbered ones, so every page of an
    experiment agrees and no two of its arms share a colour (up to seven candidates)."""
    if arm == vocab.BASELINE:
        return ARM_COLORS[0]
    m = _NUMBERED.match(arm)
    if m is not None:
        n = int(m.group(1))
    else:
        numbered = [int(m.group(1)) for a in order if (m := _NUMBERED.match(a))]
        others = [a for a in order if a != vocab.BASELINE and not _NUMBERED.match(a)]
        n = max(numbered, default=0) + (others.index(arm) + 1 if arm in others else len(others) + 1)
    return ARM_COLORS[1 + (n - 1) % (len(ARM_COLORS) - 1)]


def luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of a "#rrggbb" colour."""

    def f(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two "#rrggbb" colours (1 to 21)."""
    x, y = luminance(a), luminance(b)
    return (max(x, y) + 0.05) / (min(x, y) + 0.05)
