"""Where each piece of evidence is shown: an evidence id of analysis.json as a link (render stage).

The analysis names evidence by stable ids (`EvidenceLink.id`, with `arm` for a candidate's own
write-up; analysis/document/verdict.py) and knows no page. This module is the one place that maps an id to
the page and anchor that show it, seen from the experiment page or from a candidate's page one
folder down. A section a link points at keeps its anchor here and in the heading that sets it
(experiment_page.py, candidate_page.py); MkDocs checks every link when it builds the site.
"""

from __future__ import annotations

from typing import Final

from reportgen.analysis.document import EvidenceId, EvidenceLink
from reportgen.render.page import candidate_slug

# Sections of the experiment page (reports/<experiment>/index.md), by the anchor each heading sets.
EXPERIMENT_ANCHORS: Final[dict[EvidenceId, str]] = {
    "windows": "windows",
    "same_work": "same-work",
    "guardrails": "guardrails",
    "interval_by_pair": "confidence-and-verdicts",
    "quality": "quality",
    "memory": "memory",
    "quiet_machine": "quiet-machine",
    "runs": "runs",
}

# Sections of a candidate's write-up (reports/<experiment>/<candidate>/index.md); "" is the page itself.
CANDIDATE_ANCHORS: Final[dict[EvidenceId, str]] = {
    "candidate_page": "",
    "against_base": "against-base",
    "memory_chart": "chart-memory",
}


def evidence_href(link: EvidenceLink, *, on: str | None = None) -> str:
    """The href of one evidence link from the experiment page (`on` None) or from candidate `on`'s
    write-up: "#same-work", "A2/index.md#chart-memory"; from A2's page "#chart-memory",
    "../index.md#same-work", and "index.md" for A2's page itself."""
    if link.id in CANDIDATE_ANCHORS:
        assert link.arm is not None  # the model requires it for these ids
        fragment = f"#{CANDIDATE_ANCHORS[link.id]}" if CANDIDATE_ANCHORS[link.id] else ""
        if on == link.arm:
            return fragment or "index.md"
        page = f"{candidate_slug(link.arm)}/index.md{fragment}"
        return page if on is None else f"../{page}"
    anchor = f"#{EXPERIMENT_ANCHORS[link.id]}"
    return anchor if on is None else f"../index.md{anchor}"
