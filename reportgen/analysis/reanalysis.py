"""What changed when an experiment was analysed again under other rules or with its windows declared
anew: the replaced analysis.json's verdicts beside the new ones (issue 43).

Part of reportgen.analysis (pure). The I/O edge (reportgen/analyze.py) reads the analysis.json it is
about to replace and hands it in with the spec's amendments since (experiment.json, in words); the
record keeps what the old document said, the rules that changed between its schema and this one
(`RULES`), and which verdicts moved, so the experiment page can say for each committed campaign what
changed and why. A re-analysis under the same rules and the same spec (the same schema and spec
digest, or a later schema that changed no rule) is no new information: the earlier record is
carried forward, its `moved` recomputed against the verdicts now.
"""

from __future__ import annotations

from collections.abc import Sequence

from reportgen.analysis import design as dz
from reportgen.analysis import document as doc

RULES: dict[int, tuple[str, ...]] = {
    9: (
        "windows declared after a burn-in that covers every arm's warm-up (reportgen plan-windows, from the other "
        "campaigns of the machine class): the verdict rests on steady-state steps",
        "the warm-up is its own paired figure per launch (comparisons[].warmup_cost), beside the verdict",
        "pairs from several machines: the interval is the pairs' own (the claim: the machines measured), the "
        "spread between machines beside it; no longer the random-effect variance with one degree of freedom",
        "MSER searches on past half the run when a warm-up is long, and tells drift from warm-up by the kept "
        "steps' slope",
        "the first look may decide at 2 pairs (min_pairs 2 by default): a fixed campaign of 2 pairs that left "
        "min_pairs unset is decided at its one look, at 95 %",
        "training quality is the verdict's second half (the pairs' difference of the reward against a declared "
        "margin): accepted needs faster and not worse; worse rejects whatever the speed; a reward flat in both "
        "arms cannot be tested and leaves a faster candidate inconclusive",
    ),
}
"""The rules each schema brought that change a verdict or the figures beside it. A schema that
changed none has no entry (10 added figures the history and the step breakdown read, computed as
before): a re-analysis into it carries the earlier record forward."""


def rules_between(old: int, new: int) -> list[str]:
    """The rule changes of every schema after `old` up to `new`."""
    return [rule for v in sorted(RULES) if old < v <= new for rule in RULES[v]]


def _words(status: str, basis: str | None) -> str:
    return f"{status} ({basis})" if basis and basis not in (status, "interval") else status


def record(
    previous: doc.AnalysisDocument | None,
    spec_sha256: str,
    amendments: Sequence[str],
    comparisons: Sequence[doc.Comparison],
) -> doc.Reanalysis | None:
    """The re-analysis record of a new document whose comparisons are `comparisons`: None for a
    first analysis; the previous record carried forward when the rules and the spec are the same."""
    if previous is None:
        return None
    # The same rules: the same schema, or later schemas that only added figures (10: the history's
    # per-run figures and the step breakdown), so the record of the last rule change stays.
    same_rules = not rules_between(previous.schema_version, doc.SCHEMA_VERSION)
    if same_rules and previous.experiment.spec_sha256 == spec_sha256:
        if previous.reanalysis is None:
            return None
        return previous.reanalysis.model_copy(update={"moved": moved(previous.reanalysis, comparisons)})
    rec = doc.Reanalysis(
        schema_version=previous.schema_version,
        generated_utc=previous.generated_utc,
        spec_sha256=previous.experiment.spec_sha256,
        windows=list(previous.settings.windows),
        design=dz.label(previous.settings.design) if previous.settings.design is not None else "",
        verdicts=[
            doc.PreviousVerdict(
                candidate=c.candidate,
                status=c.verdict.status,
                basis=c.verdict.basis,
                against=c.verdict.against,
                summary=c.verdict.summary,
            )
            for c in previous.comparisons
        ],
        rules=rules_between(previous.schema_version, doc.SCHEMA_VERSION),
        amendments=list(amendments),
    )
    return rec.model_copy(update={"moved": moved(rec, comparisons)})


def moved(rec: doc.Reanalysis, comparisons: Sequence[doc.Comparison]) -> list[str]:
    """ "A3: rejected -> inconclusive (open)" for each candidate whose verdict (status, basis or the
    arm it is against) is not what the replaced document said."""
    now = {c.candidate: c.verdict for c in comparisons}
    out = []
    for v in rec.verdicts:
        new = now.get(v.candidate)
        if new is None:
            continue
        if (v.status, v.basis, v.against) != (new.status, new.basis, new.against):
            out.append(f"{v.candidate}: {_words(v.status, v.basis)} -> {_words(new.status, new.basis)}")
    return out
