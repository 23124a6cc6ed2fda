"""A sequential campaign's schedule: after each block of runs the experiment is analysed, and the
next block runs only the arms whose comparisons still need a pair (top of the pipeline, beside
pipeline.py: it joins execute and analyze, which know nothing of each other).

`[run] until = "decided"`: block 1 runs every formal arm; before each later block the analysis
(analysis.json, written each time) says which comparisons are still open (`needs_pairs`: the speed
half undecided, or faster with the training-quality half still open), and the block runs those
candidates and the arms their pairs are made with (the baseline, or its base; the baseline too
while quality, judged against it, is open). The
campaign stops when no comparison needs a pair, when the design's `max_pairs` valid pairs are
reached (the analysis then says so; a pair the machine disturbed is set aside and does not count, so
a block replaces it: analysis/set_aside.py), when the next block would overrun `[run] budget_minutes` of this
invocation (each `reportgen run` makes at least one new block, so a resumed campaign always moves
on), or on Ctrl-C. Resuming (the same command) finishes any block left unfinished and goes
on from the analysis of everything so far: no run is thrown away, and the repeated interval
(docs/analysis.md) stays valid at whatever look the campaign stops.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument, Comparison
from reportgen.plan.arms import Plan
from reportgen.store import layout
from reportgen.store.runs import load_manifest
from reportgen.vocab import FINAL_STATUSES


def against(c: Comparison) -> tuple[str, ...]:
    """The arms an open comparison's next pair is made with: the arm its speed is decided against, and
    the baseline too when its training-quality half is what is open (quality is judged against the
    baseline, also for a candidate decided against its base)."""
    quality_open = c.verdict.basis == "quality_open" or (c.quality is not None and c.quality.status == "open")
    return tuple(dict.fromkeys([c.verdict.against, *([vocab.BASELINE] if quality_open else [])]))


@dataclass
class Sequential:
    """The `NextBlock` of reportgen.execute.executor for one sequential campaign."""

    plan: Plan
    exp_dir: Path
    analyze: Callable[[Path], AnalysisDocument]  # analyse the experiment now, and return the document
    log: Callable[[str], None] = print
    budget_minutes: float | None = None  # of this invocation: --budget-minutes, else [run] budget_minutes
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    stopped_by: str | None = None  # why the last call returned None, in words
    blocks_made: int = 0  # new blocks this `reportgen run` started: the first is never refused for the budget

    def __post_init__(self) -> None:
        self.started = self.clock()

    def __call__(self, block: int) -> Sequence[str] | None:
        formal = [a.id for a in self.plan.formal_arms]
        made = self._made(block)
        if block == 1:
            arms = formal  # every comparison needs its first pair
            open_ = [a for a in formal if a != vocab.BASELINE]
        else:
            doc = self.analyze(self.exp_dir)
            needed = self._needed(doc)
            arms = [a for a in formal if a in made or a in needed]
            open_ = sorted({c.candidate for c in doc.comparisons if c.needs_pairs})
            if not arms:
                self._stop(self._why_stopped(doc))
                return None
        if made:  # a block a stopped campaign left: finish it
            return arms
        if self.blocks_made and (over := self._over_budget(arms)) is not None:
            self._stop(over)
            return None
        self.blocks_made += 1
        self.log(f"campaign: block {block} for {', '.join(open_)}" + (self._why_more(doc) if block > 1 else ""))
        return arms

    def ahead(self, block: int, in_flight: Mapping[int, Sequence[str]]) -> Sequence[str] | None:
        """The arms of new block `block` while the blocks `in_flight` (number -> arms) still run on
        other nodes, or None: hand out no more blocks (reportgen.execute.parallel, several nodes).

        Chosen from the analysis of the blocks complete so far (runs/ holds only those: a block's
        runs join the experiment when its last run ends): each open comparison gets the block,
        unless its complete pairs plus the blocks in flight that hold it already reach max_pairs.
        Before any block is complete every comparison is open. None is final: once the campaign
        is decided (or out of pairs or budget) no block is handed out again, and the blocks in
        flight are finished and kept."""
        if self.stopped_by is not None:
            return None
        formal = [a.id for a in self.plan.formal_arms]
        candidates = [a for a in formal if a != vocab.BASELINE]
        most = self.plan.spec.run.max_pairs
        pairs = self._complete_pairs()
        doc = self.analyze(self.exp_dir) if pairs else None
        wanted = {c.candidate: against(c) for c in doc.comparisons if c.needs_pairs} if doc else {}
        open_ = [
            c
            for c in candidates
            if (doc is None or c in wanted) and pairs.get(c, 0) + sum(c in arms for arms in in_flight.values()) < most
        ]
        if not open_:
            if doc is not None and not wanted:
                self._stop(self._why_stopped(doc))
                return None
            running = f", {len(in_flight)} of them still running" if in_flight else ""
            self._stop(f"the design's last look ({most} pairs) is reached counting every block started{running}")
            return None
        need = set(open_) | {arm for c in open_ for arm in wanted.get(c, (vocab.BASELINE,))}
        arms = [a for a in formal if a in need]
        if self.blocks_made and (over := self._over_budget(arms)) is not None:
            self._stop(over)
            return None
        self.blocks_made += 1
        still = " (still undecided)" if doc is not None else ""
        running = f"; {len(in_flight)} other block(s) running" if in_flight else ""
        self.log(f"campaign: pair {block} for {', '.join(open_)}{still}{running}")
        return arms

    def _complete_pairs(self) -> dict[str, int]:
        """Each formal arm's finished runs in the experiment folder: its complete blocks."""
        out: dict[str, int] = {}
        for arm, _, path in layout.iter_runs(self.exp_dir):
            m = load_manifest(path)
            if m and m.status in FINAL_STATUSES and not vocab.is_profile_arm(arm):
                out[arm] = out.get(arm, 0) + 1
        return out

    def _stop(self, why: str) -> None:
        self.stopped_by = why
        self.log(f"campaign: {why}")
        return None

    def _made(self, block: int) -> set[str]:
        """Formal arms that already have a run folder in this block (a resumed campaign)."""
        return {arm for arm, rep, _ in layout.iter_runs(self.exp_dir) if rep == block and not vocab.is_profile_arm(arm)}

    @staticmethod
    def _needed(doc: AnalysisDocument) -> set[str]:
        """Each open comparison's candidate and the arms its pairs are made with: the arm it is decided
        against, and the baseline while its training-quality half (always against the baseline) is open."""
        out: set[str] = set()
        for c in doc.comparisons:
            if c.needs_pairs:
                out |= {c.candidate, *against(c)}
        return out

    @staticmethod
    def _why_more(doc: AnalysisDocument) -> str:
        """ " (still undecided; set aside, redone: A1 pair 1)": blocks count runs made, pairs only
        the valid ones (analysis/set_aside.py), so a block that replaces a set-aside pair is named."""
        aside = [f"{c.candidate} pair {p.repeat}" for c in doc.comparisons if c.needs_pairs for p in c.set_aside]
        return " (still undecided" + (f"; set aside, redone: {', '.join(aside)})" if aside else ")")

    @staticmethod
    def _why_stopped(doc: AnalysisDocument) -> str:
        said = ", ".join(f"{c.candidate} {c.verdict.status}" for c in doc.comparisons)
        if any(c.verdict.basis == "max_pairs" for c in doc.comparisons):
            return f"the design's last look ({doc.settings.design.max_pairs} pairs) came: {said}"
        return f"every comparison is decided: {said}"

    def _over_budget(self, arms: Sequence[str]) -> str | None:
        """Why the next block would overrun the budget, or None (no budget, or it fits)."""
        budget = self.budget_minutes if self.budget_minutes is not None else self.plan.spec.run.budget_minutes
        if budget is None:
            return None
        spent = (self.clock() - self.started) / 60.0
        need = sum(self._mean_minutes(a) for a in arms)
        if spent + need <= budget:
            return None
        return (
            f"the next pair would take about {need:.1f} min and {spent:.1f} of the {budget:g} min budget are spent; "
            "the same command resumes the campaign and adds pairs"
        )

    def _mean_minutes(self, arm: str) -> float:
        """The arm's mean formal run time so far (all arms' mean for an arm without one)."""
        by_arm: dict[str, list[float]] = {}
        for a, _, path in layout.iter_runs(self.exp_dir):
            m = load_manifest(path)
            if m and m.status in FINAL_STATUSES and m.duration_s and not vocab.is_profile_arm(a):
                by_arm.setdefault(a, []).append(float(m.duration_s) / 60.0)
        own = by_arm.get(arm)
        every = [v for vs in by_arm.values() for v in vs]
        pick = own or every
        return sum(pick) / len(pick) if pick else 0.0
