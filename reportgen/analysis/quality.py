"""Training quality: does the candidate train like the baseline? Loss, reward and KL per window.

Part of reportgen.analysis (pure). A speed-up that changes the numerics (A1 of the default
experiment drops `--use-precision-aware-optimizer`: Adam's moments go from bf16 to fp32) can train
differently, which finiteness alone never shows. So for each quality metric both arms logged, each
window's mean over the candidate's runs is compared with the baseline's:

    |candidate mean - baseline mean| <= tolerance x scale,  scale = max(|baseline mean|, baseline std)

(`[analysis] quality_tolerance`, 0.10 by default; the baseline's step-to-step standard deviation in
the window keeps a mean near zero from making any difference "large"). Outside it in any window,
the `same_quality` guardrail *warns*: a warning never changes the verdict (decision.py counts only
failures), it is said beside it, with the windows and figures, so a reviewer checks convergence
before merging.

The metric names are Relax's (docs/relax.md): `train/loss`; `rollout/raw_reward` (else the
normalised `rollout/rewards`); `train/kl_loss` (the KL to the reference model, with
`--use-kl-loss`); `train/ppo_kl` (the KL between the rollout policy and the trained one). A metric
flat at zero in both arms (reward on a task nobody solves yet, the policy KL of a single update
per rollout) is named as such, not as agreement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from reportgen.analysis import document as doc
from reportgen.store.run import StoredRun
from reportgen.vocab import KL_LOSS, LOSS, PPO_KL, RAW_REWARD, REWARDS

ID = "same_quality"
TITLE = "Training quality within tolerance of the baseline (loss, reward, KL)"
METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("loss", (LOSS,)),
    ("reward", (RAW_REWARD, REWARDS)),
    ("KL to the reference", (KL_LOSS,)),
    ("policy KL", (PPO_KL,)),
)
FLAT = 1e-12  # a metric whose every value is within this of 0 is flat at zero


def _values(runs: Sequence[StoredRun], key: str, start: int, end: int) -> np.ndarray:
    parts = [np.asarray(r.series(key, start, end), dtype=float) for r in runs]
    parts = [p[np.isfinite(p)] for p in parts if len(p)]
    return np.concatenate(parts) if parts else np.array([], dtype=float)


def _by_step(runs: Sequence[StoredRun], key: str, start: int, end: int) -> dict[int, list[float]]:
    """Every finite value of `key` in steps start..end, by step, over the runs."""
    out: dict[int, list[float]] = {}
    for r in runs:
        if key not in r.steps.columns:
            continue
        col = r.steps[key]
        col = col[(col.index >= start) & (col.index <= end)]
        for step, v in zip(col.index.tolist(), col.to_numpy(dtype=float).tolist(), strict=True):
            if np.isfinite(v):
                out.setdefault(int(step), []).append(float(v))
    return out


def _common(
    baseline: Sequence[StoredRun], candidate: Sequence[StoredRun], key: str, s: int, e: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """The two arms' values on the steps both logged (a run that stopped early is compared on the
    steps it made, not against the baseline's later, further-trained ones)."""
    b, c = _by_step(baseline, key, s, e), _by_step(candidate, key, s, e)
    steps = sorted(set(b) & set(c))
    return (
        np.asarray([v for st in steps for v in b[st]], dtype=float),
        np.asarray([v for st in steps for v in c[st]], dtype=float),
        len(steps),
    )


def logged_by_all(runs: Sequence[StoredRun], keys: Sequence[str]) -> str | None:
    """The first of `keys` every run logged (None when none was, or there is no run)."""
    for k in keys:
        if runs and all(k in r.steps.columns for r in runs):
            return k
    return None


def compare(
    baseline: Sequence[StoredRun],
    candidate: Sequence[StoredRun],
    windows: Sequence[tuple[str, int, int]],
    *,
    tolerance: float,
) -> doc.QualityCheck:
    """Loss, reward and KL of the candidate against the baseline, window by window."""
    rows: list[doc.QualityWindow] = []
    flat: list[str] = []
    missing: list[str] = []
    for label, keys in METRICS:
        key = logged_by_all([*baseline, *candidate], keys)
        if key is None:
            missing.append(label)
            continue
        metric_rows = []
        for name, s, e in windows:
            b, c, n = _common(baseline, candidate, key, s, e)
            if n < max(2, (e - s + 1) // 2):  # fewer than half the window's steps in both arms: not compared
                continue
            bm, cm = float(b.mean()), float(c.mean())
            sd = float(b.std(ddof=1)) if len(b) > 1 else 0.0
            scale = max(abs(bm), sd)
            diff = cm - bm
            within = abs(diff) <= tolerance * scale if scale > 0 else abs(diff) <= FLAT
            metric_rows.append(
                doc.QualityWindow(
                    metric=key,
                    label=label,
                    window=name,
                    baseline=bm,
                    candidate=cm,
                    difference=diff,
                    scale=scale,
                    relative=diff / scale if scale > 0 else None,
                    within=within,
                )
            )
        if metric_rows and all(
            np.all(np.abs(_values(rs, key, s, e)) <= FLAT) for rs in (baseline, candidate) for _, s, e in windows
        ):
            flat.append(label)
        rows += metric_rows
    if not rows:
        why = "not checkable: " + (
            "no loss, reward or KL logged by both arms"
            if len(missing) == len(METRICS)
            else "no window whose steps both arms reached (at least half of them)"
        )
        return doc.QualityCheck(status="not_applicable", tolerance=tolerance, reason=why, missing=missing)
    off = [r for r in rows if not r.within]
    said_flat = f"; flat at 0 in both arms: {', '.join(flat)}" if flat else ""
    said_missing = f"; not logged: {', '.join(missing)}" if missing else ""
    if not off:
        labels = list(dict.fromkeys(r.label for r in rows if r.label not in flat))
        what = ", ".join(labels) if labels else "every quantity"
        reason = f"{what} within {tolerance:.0%} of the baseline in every window{said_flat}{said_missing}"
        return doc.QualityCheck(
            status="pass", tolerance=tolerance, reason=reason, windows=rows, flat=flat, missing=missing
        )
    worst = max(off, key=lambda r: abs(r.relative) if r.relative is not None else math.inf)
    where = sorted({r.window for r in off if r.label == worst.label}, key=[w for w, _, _ in windows].index)
    others = sorted({r.label for r in off} - {worst.label})
    rel = f": {worst.relative:+.0%}" if worst.relative is not None else ""
    reason = (
        f"{worst.label} differs from the baseline's by more than {tolerance:.0%} in {', '.join(where)} "
        f"({_num(worst.candidate)} vs {_num(worst.baseline)} in {worst.window}{rel})"
        + (f"; also {', '.join(others)}" if others else "")
        + ": the candidate trains differently; check that it converges as well before merging"
        + said_flat
    )
    return doc.QualityCheck(status="warn", tolerance=tolerance, reason=reason, windows=rows, flat=flat, missing=missing)


def _num(x: float) -> str:
    """Three significant digits, in words the reader compares (loss 0.0122 vs 0.0181)."""
    return f"{x:.3g}"
