"""Same work, or no verdict on throughput: did both arms generate comparable work?

Part of reportgen.analysis (pure). In RL the candidate's policy can learn to answer in fewer
tokens (other numerics, other learning dynamics); its steps then get shorter and its tokens/s
compares different work. Measured on one H200 at --lr 1e-4, A1's step time fell 35 % while its
policy answered in 16.7 tokens instead of 48, and response tokens/s *fell* 49 %: every other
guardrail passed and the verdict said `rejected`, the opposite of the truth. So a verdict on a
metric that depends on the work (perf/*) requires, in every window, the mean response length
and the tokens per step of the candidate to lie within `tolerance` of the baseline's. When they
do not, the figures that do not depend on the amount of work (per-phase times per step, time per
generated token) still say what changed.

Derived per-step columns are added to each run's table once (`with_derived`), so the window
statistics and the interval machinery treat them like logged metrics.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from reportgen import vocab
from reportgen.analysis import document as doc
from reportgen.analysis.document import GuardrailStatus
from reportgen.analysis.quality import logged_by_all
from reportgen.store.run import StoredRun
from reportgen.vocab import (
    HIGHER,
    LOWER,
    RESPONSE_LEN_MEAN,
    RESPONSE_LENGTHS,
    STEP_RESP_TOKEN_PER_S,
    STEP_TIME,
    STEP_TOKEN_PER_S,
)

# Derived per-step quantities (not logged by Relax; computed from logged keys of the same step).
RESPONSE_TOKENS_PER_STEP = "reportgen/response_tokens_per_step"
TOKENS_PER_STEP = "reportgen/tokens_per_step"
TIME_PER_RESPONSE_TOKEN = "reportgen/ms_per_response_token"
DERIVED = {
    RESPONSE_TOKENS_PER_STEP: ("response tokens per step", "tok", HIGHER),
    TOKENS_PER_STEP: ("tokens per step", "tok", HIGHER),
    TIME_PER_RESPONSE_TOKEN: ("step time per generated token", "ms/tok", LOWER),
}

ID = "same_work"
TITLE = "Same generated work (response length, tokens per step)"


def with_derived(run: StoredRun) -> StoredRun:
    """`run` with the derived columns added where their inputs were logged at the same step."""
    steps = run.steps
    if steps.empty or STEP_TIME not in steps.columns:
        return run
    columns: dict[str, pd.Series] = {}
    t = steps[STEP_TIME].astype(float)
    if STEP_RESP_TOKEN_PER_S in steps.columns:
        resp = steps[STEP_RESP_TOKEN_PER_S].astype(float) * t
        columns[RESPONSE_TOKENS_PER_STEP] = resp
        columns[TIME_PER_RESPONSE_TOKEN] = (t / resp.where(resp > 0)) * 1000.0
    if STEP_TOKEN_PER_S in steps.columns:
        columns[TOKENS_PER_STEP] = steps[STEP_TOKEN_PER_S].astype(float) * t
    return run.with_columns(columns)


def applies_to(metric: str) -> bool:
    """Throughput and step timers depend on how much was generated; quality metrics do not."""
    return metric.startswith(vocab.PERF_PREFIX)


def _window_mean(runs: Sequence[StoredRun], key: str, start: int, end: int) -> float | None:
    vals = [v for r in runs for v in r.series(key, start, end)]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.mean(vals)) if vals else None


def _rel(b: float | None, c: float | None) -> float | None:
    return c / b - 1.0 if b is not None and c is not None and b > 0 else None


def window_work(
    window: str,
    lengths: tuple[float | None, float | None],
    tokens: tuple[float | None, float | None],
    tolerance: float,
) -> doc.SameWorkWindow:
    """One window's mean response length and tokens per step, (baseline, candidate) each, with
    their changes; `within` is judged on the figures the window has: a missing one never hides a
    known difference (None when it has none)."""
    length_change, tokens_change = _rel(*lengths), _rel(*tokens)
    known = [c for c in (length_change, tokens_change) if c is not None]
    return doc.SameWorkWindow(
        window=window,
        response_length_baseline=lengths[0],
        response_length_candidate=lengths[1],
        response_length_change=length_change,
        tokens_per_step_baseline=tokens[0],
        tokens_per_step_candidate=tokens[1],
        tokens_per_step_change=tokens_change,
        within=all(abs(c) <= tolerance for c in known) if known else None,
    )


def length_key(runs: Sequence[StoredRun]) -> str:
    """Relax logs the mean response length per step as rollout/response_lengths; some setups only
    as rollout/response_len/mean."""
    have = [set(map(str, r.steps.columns)) for r in runs]
    if have and not all(RESPONSE_LENGTHS in h for h in have) and all(RESPONSE_LEN_MEAN in h for h in have):
        return RESPONSE_LEN_MEAN
    return RESPONSE_LENGTHS


def tokens_key(runs: Sequence[StoredRun]) -> str:
    """Total tokens per step where every run logged total tokens/s, else response tokens per step."""
    return logged_by_all(runs, (TOKENS_PER_STEP,)) or RESPONSE_TOKENS_PER_STEP


def seeds_vary(runs: Sequence[StoredRun]) -> bool:
    """Whether the runs were made with seeds set per block ([run] seeds = "per-block") that differ
    between their blocks: their prompts and samples then differ from block to block."""
    seen = {tuple(sorted(r.manifest.seeds.items())) for r in runs if r.manifest.seeds}
    return len(seen) > 1


def paired(baseline: Sequence[StoredRun], candidate: Sequence[StoredRun]) -> tuple[list[StoredRun], list[StoredRun]]:
    """The runs of the blocks both arms ran, when the seeds vary per block (a run without its pair
    saw other prompts than every run of the other arm); else all of them."""
    if not seeds_vary([*baseline, *candidate]):
        return list(baseline), list(candidate)
    both = {r.repeat for r in baseline} & {r.repeat for r in candidate}
    return [r for r in baseline if r.repeat in both], [r for r in candidate if r.repeat in both]


def check(
    baseline: Sequence[StoredRun],
    candidate: Sequence[StoredRun],
    windows: Sequence[tuple[str, int, int]],
    *,
    primary: str,
    tolerance: float,
    candidate_id: str = "the candidate",
) -> doc.SameWork:
    """Per window: mean response length and mean tokens per step, candidate against baseline (over
    the blocks both ran, when the seeds vary per block: `paired`)."""
    baseline, candidate = paired(baseline, candidate)
    tkey = tokens_key([*baseline, *candidate])
    lkey = length_key([*baseline, *candidate])
    rows = [
        window_work(
            name,
            (_window_mean(baseline, lkey, s, e), _window_mean(candidate, lkey, s, e)),
            (_window_mean(baseline, tkey, s, e), _window_mean(candidate, tkey, s, e)),
            tolerance,
        )
        for name, s, e in windows
    ]
    applies = applies_to(primary)
    checks = [w.within for w in rows]

    def finding(status: GuardrailStatus, reason: str) -> doc.SameWork:
        return doc.SameWork(
            status=status, applies=applies, tolerance=tolerance, tokens_metric=tkey, windows=rows, reason=reason
        )

    missing = [w.window for w, c in zip(rows, checks, strict=True) if c is None]
    if not rows or len(missing) == len(rows):
        return finding(
            "not_applicable",
            "not checkable: no response length or tokens per step logged"
            + (f" in {', '.join(missing)}" if missing else ""),
        )
    # A window without figures neither passes nor hides the windows that have them.
    bad = [w for w, ok in zip(rows, checks, strict=True) if ok is False]
    if not bad:
        worst = max(max(abs(w.response_length_change or 0), abs(w.tokens_per_step_change or 0)) for w in rows)
        unchecked = f"; not checkable in {', '.join(missing)}" if missing else ""
        every = "every window" if not missing else "every window with figures"
        return finding("pass", f"within {tolerance:.0%} in {every} (largest {worst:.1%}){unchecked}")
    w = max(bad, key=lambda x: max(abs(x.response_length_change or 0), abs(x.tokens_per_step_change or 0)))
    lc, tc = w.response_length_change, w.tokens_per_step_change
    tokens_word = "tokens" if tkey == TOKENS_PER_STEP else "response tokens"
    parts = []
    if lc is not None:
        parts.append(f"{w.response_length_candidate:.1f} vs {w.response_length_baseline:.1f} tokens ({lc:+.1%})")
    if tc is not None:
        parts.append(
            f"{w.tokens_per_step_candidate:.0f} vs {w.tokens_per_step_baseline:.0f} {tokens_word} per step ({tc:+.1%})"
        )
    what = "shorter" if (lc if lc is not None else tc or 0.0) < 0 else "longer"
    reason = (
        f"{candidate_id}'s policy generated {what} responses: {' and '.join(parts)} in {w.window}, "
        f"beyond the {tolerance:.0%} tolerance" + (f" ({len(bad)} of {len(rows)} windows)" if len(rows) > 1 else "")
    )
    if applies:
        reason += f"; {primary} compares different work, so it cannot decide"
    return finding("fail" if applies else "not_applicable", reason)
