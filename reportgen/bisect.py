"""`reportgen bisect GOOD BAD [SPEC]`: find the first commit whose performance differs from GOOD's.

Pipeline position: above `pipeline` (it runs campaigns) and below `commands`. The search itself is
the pure `reportgen.history.bisect.bisect`; this module gives it its `compare(sha)`: a paired
campaign of GOOD (baseline) against the commit (candidate), interleaved blocks in alternating
direction, sequential (stopped when decided, at most `pairs` pairs), through
`pipeline.run_revisions`. Each step is an experiment under runs/ (its own report on the site); the
bisection's record, runs/<name>/bisect.json, and its report page runs/<name>/report.md are written
at the end, atomically.

A step's call is the run-level interval's outcome (analysis.json `run_level.outcome`): accepted or
rejected is "differs", no change or futility (the minimum effect out of reach) is "same", anything
else undecided. The verdict is recorded beside it: a verdict made invalid by a disturbed machine
still has a run-level estimate, and the step says so.
"""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument, parse
from reportgen.errors import UserError
from reportgen.history.bisect import BisectResult, Outcome, bisect
from reportgen.history.bisect_model import FILE, REPORT, BisectRecord, BisectStep, PhaseTime
from reportgen.specfile.derive import CANDIDATE
from reportgen.store import atomic
from reportgen.vocab import Verdicts

DIFFERS = (Verdicts.ACCEPTED, Verdicts.REJECTED)
SAME = (Verdicts.NO_CHANGE, "futility")
DIFF_LIMIT = 20_000  # characters of the culprit's diff kept in bisect.json


def git(repo: Path, *args: str) -> str:
    try:
        res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"{repo}: cannot run git ({exc.__class__.__name__})") from None
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        raise UserError(f"git {' '.join(args[:3])} in {repo}: {last}")
    return res.stdout


def resolve(repo: Path, ref: str) -> str:
    """The full SHA of `ref` in `repo`; "" when it names no commit there."""
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except UserError:
        return ""


def commit_range(repo: Path, good: str, bad: str) -> list[str]:
    """The first-parent commits after GOOD up to BAD, oldest first; GOOD must be an ancestor of BAD."""
    try:
        git(repo, "merge-base", "--is-ancestor", good, bad)
    except UserError:
        raise UserError(f"bisect: {good[:12]} is not an ancestor of {bad[:12]} in {repo}") from None
    return git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good}..{bad}").split()


def outcome_of(doc: AnalysisDocument, sha: str, experiment: str, minutes: float) -> Outcome:
    """A step's outcome from its campaign's analysis (the candidate is the commit, the baseline GOOD)."""
    comp = doc.comparison(CANDIDATE)
    if comp is None:
        raise UserError(f"{experiment}: no comparison of the candidate in analysis.json")
    rl = comp.run_level
    iv = rl.interval
    differs = True if rl.outcome in DIFFERS else False if rl.outcome in SAME else None
    if comp.verdict.status in (vocab.Verdicts.FAILED,):
        raise UserError(
            f"{experiment}: a run of {sha[:12]} failed ({comp.verdict.cause or comp.verdict.summary}); "
            "a commit that does not run cannot be bisected over"
        )
    runs = sum(1 for a in doc.arms for r in a.runs if r.role == vocab.FORMAL and r.status == vocab.Status.COMPLETE)
    return Outcome(
        sha=sha,
        differs=differs,
        ratio=iv.estimate if iv.estimate is not None else 1.0,
        low=iv.low,
        high=iv.high,
        pairs=iv.pairs or len(rl.pairs),
        verdict=comp.verdict.status,
        experiment=experiment,
        minutes=minutes,
        runs=runs,
    )


@dataclass(frozen=True)
class BisectRequest:
    repo: Path
    good: str
    bad: str
    spec: Path | None
    runs_root: Path
    pairs: int = 6
    profile: str | None = None
    cache: Path | None = None
    name: str | None = None


def _where_time_went(doc: AnalysisDocument) -> list[PhaseTime]:
    comp = doc.comparison(CANDIDATE)
    if comp is None:
        return []
    return [
        PhaseTime(metric=m.metric, label=m.label, unit=m.unit, before=m.reference, after=m.candidate, change=m.change)
        for m in comp.secondary
    ]


def run_bisect(
    req: BisectRequest, *, compare: Callable[[str], Outcome] | None = None, console: object | None = None
) -> tuple[BisectRecord, Path]:
    """Bisect and write runs/<name>/bisect.json and report.md; returns the record and its folder.
    `compare` replaces the real campaigns (a test of the wiring; the real ones are the default)."""
    from reportgen.pipeline import run_revisions
    from reportgen.render.bisect_page import report_markdown

    repo = Path(git(Path(req.repo), "rev-parse", "--show-toplevel").strip())
    good, bad = resolve(repo, req.good), resolve(repo, req.bad)
    if not good:
        raise UserError(f"bisect: GOOD {req.good!r} is not a commit of {repo}")
    if not bad:
        raise UserError(f"bisect: BAD {req.bad!r} is not a commit of {repo}")
    commits = commit_range(repo, good, bad)
    name = req.name or f"bisect-{good[:7]}-{bad[:7]}"
    out_dir = Path(req.runs_root) / name
    if (out_dir / FILE).is_file():
        raise UserError(f"{out_dir / FILE}: this bisection is done; see {out_dir / REPORT} or pass --name")
    docs: dict[str, AnalysisDocument] = {}

    def real(sha: str) -> Outcome:
        exp = f"{name}-{sha[:7]}"
        t0 = time.monotonic()
        exp_dir = run_revisions(
            repo,
            good,
            sha,
            req.spec,
            runs_root=Path(req.runs_root),
            pairs=req.pairs,
            name=exp,
            sequential=True,
            profile=req.profile,
            cache=req.cache,
            console=console,  # type: ignore[arg-type]
        )
        path = exp_dir / "analysis.json"
        doc = parse(atomic.read_json(path), str(path), exp)
        docs[sha] = doc
        return outcome_of(doc, sha, exp, (time.monotonic() - t0) / 60.0)

    result = bisect(good, bad, commits, compare or real)
    record = _record(repo, req, result, docs)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out_dir / REPORT, report_markdown(record))
    record.write(out_dir / FILE)
    return record, out_dir


def _subject(repo: Path, sha: str) -> str:
    return git(repo, "log", "-1", "--format=%s", sha).strip()


def _record(repo: Path, req: BisectRequest, result: BisectResult, docs: dict[str, AnalysisDocument]) -> BisectRecord:
    steps = [
        BisectStep(
            index=s.index,
            sha=s.outcome.sha,
            subject=_subject(repo, s.outcome.sha),
            experiment=s.outcome.experiment,
            ratio=s.outcome.ratio,
            low=s.outcome.low,
            high=s.outcome.high,
            pairs=s.outcome.pairs,
            verdict=s.outcome.verdict,
            outcome=_outcome_word(docs.get(s.outcome.sha)),
            call=s.call,
            decided=s.decided,
            runs=s.outcome.runs,
            minutes=round(s.outcome.minutes, 3),
        )
        for s in result.steps
    ]
    diff = ""
    where: list[PhaseTime] = []
    if result.culprit:
        diff = git(
            repo, "show", "--stat", "--patch", "--format=commit %H%nAuthor: %an%nDate: %aI%n%n    %s%n", result.culprit
        )
        if len(diff) > DIFF_LIMIT:
            diff = diff[:DIFF_LIMIT] + f"\n... ({len(diff) - DIFF_LIMIT} more characters: git show {result.culprit})\n"
        doc = docs.get(result.culprit)
        where = _where_time_went(doc) if doc is not None else []
    metric = next((d.settings.primary.key for d in docs.values()), "")
    return BisectRecord.create(
        {
            "repo": str(repo),
            "spec": str(req.spec or "scripts/recipes/default.toml"),
            "metric": metric,
            "good": result.good,
            "bad": result.bad,
            "commits": list(result.commits),
            "steps": [s.model_dump() for s in steps],
            "culprit": result.culprit,
            "culprit_subject": _subject(repo, result.culprit) if result.culprit else "",
            "culprit_diff": diff,
            "certain": result.certain,
            "notes": list(result.notes),
            "where_time_went": [w.model_dump() for w in where],
            "runs": result.runs,
            "minutes": round(result.minutes, 3),
        },
        "bisect.json",
    )


def _outcome_word(doc: AnalysisDocument | None) -> str:
    comp = doc.comparison(CANDIDATE) if doc is not None else None
    return comp.run_level.outcome if comp is not None else ""


def summary(record: BisectRecord, out_dir: Path) -> dict[str, object]:
    """The `--json` object: `culprit` is the full SHA (null when BAD does not differ from GOOD)."""
    return {
        "culprit": record.culprit,
        "culprit_subject": record.culprit_subject,
        "good": record.good,
        "bad": record.bad,
        "certain": record.certain,
        "commits": len(record.commits),
        "steps": [
            {
                "sha": s.sha,
                "call": s.call,
                "decided": s.decided,
                "ratio": s.ratio,
                "pairs": s.pairs,
                "experiment": s.experiment,
            }
            for s in record.steps
        ],
        "runs": record.runs,
        "minutes": record.minutes,
        "report": str(out_dir / REPORT),
        "record": str(out_dir / FILE),
        "notes": record.notes,
    }


def log_ratio_text(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f} %" if math.isfinite(ratio) else "n/a"
