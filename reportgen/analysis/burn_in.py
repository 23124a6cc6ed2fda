"""Windows declared before a campaign, chosen from evidence: where every arm settles in earlier
campaigns of the same experiment and machine class, and the windows whose burn-in covers it all
(`reportgen plan-windows`, issue 43).

Part of reportgen.analysis (pure: runs in, a proposal out; the command reads the folders and prints
or records it). A verdict must rest on steady-state steps, and the steps it rests on must be chosen
before the campaign: moving a window's start to where MSER says an arm settled, campaign by
campaign, decides falsely in 18.6 % of simulated campaigns whose arms differ only in warm-up length
(23 against 12 steps: MSER's estimate moves with the noise, and with it the windows), while a
burn-in declared from other campaigns holds the level (docs/calibration.md). So:

- each evidence campaign's arms are located by `warmup.settled_at` (MSER on the arm's per-step
  median profile of its complete formal runs); an arm whose steps trend through the run, or that
  has too few steps, gives no point and is named;
- the burn-in is the latest settle point of the target's arms over all the evidence, plus one step
  of margin (a settle point from two or three runs moves by a step or two between campaigns: r2-r4
  put A3 at 23 each time, the baseline at 8-14);
- the steps after it, to the run's last, are split into `windows` equal windows (two by default:
  the drift check compares the first with the last, and each stays long enough to average the
  steps' noise).

MSER stays a check at every analysis: a window that starts inside an arm's warm-up in the campaign
itself is warned about (warmup.inside, comparisons[].warmup_in_windows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reportgen.analysis import warmup
from reportgen.errors import UserError
from reportgen.specfile.model import split_windows, window_toml
from reportgen.store.run import StoredRun

MARGIN = 1  # steps past the latest settle point the burn-in adds
WINDOWS = 2  # windows the steady steps are split into
MIN_WINDOW = 4  # the fewest steps a proposed window may hold


@dataclass(frozen=True)
class Evidence:
    """Where each arm of one earlier campaign settles."""

    experiment: str
    machine: str  # the machine class in words (doc.Machine.class_name), "" when not recorded
    steps: int | None  # the runs' length (the longest complete formal run's last step + 1)
    settled: Mapping[str, int | None]  # arm -> first steady step (None: drift, or too few steps)


def evidence_of(experiment: str, machine: str, runs: Sequence[StoredRun], key: str) -> Evidence:
    """Each arm's settle point from the complete formal runs of one campaign."""
    arms: dict[str, list[StoredRun]] = {}
    for r in runs:
        if r.role == "formal" and r.status == "complete":
            arms.setdefault(r.arm, []).append(r)
    lengths = [int(r.steps.index.max()) + 1 for rs in arms.values() for r in rs if len(r.steps.index)]
    return Evidence(
        experiment=experiment,
        machine=machine,
        steps=max(lengths) if lengths else None,
        settled={arm: warmup.settled_at(rs, key) for arm, rs in arms.items()},
    )


@dataclass(frozen=True)
class Proposal:
    """The windows proposed for runs of `steps` steps, and what they rest on."""

    steps: int
    burn_in: int  # the first window's start: every step before it is burn-in
    windows: tuple[tuple[str, int, int], ...]
    latest: Mapping[str, tuple[int, str]]  # arm -> (its latest settle point, the campaign that showed it)
    unknown: tuple[str, ...]  # the target's arms no evidence located
    evidence: tuple[Evidence, ...]

    def toml(self) -> str:
        """The two lines of the spec's [analysis] table."""
        wins = ", ".join(window_toml(*w) for w in self.windows)
        return f"warmup_steps = {self.burn_in}\nwindows = [{wins}]"

    def reason(self) -> str:
        """Why, in one line (the amendment record's reason)."""
        who = ", ".join(f"{arm} at step {s} ({where})" for arm, (s, where) in self.latest.items())
        return (
            f"burn-in declared from the evidence of {', '.join(e.experiment for e in self.evidence)} "
            f"(`reportgen plan-windows`): the latest settle points {who}; windows from step {self.burn_in}"
        )

    def lines(self) -> list[str]:
        out = []
        for e in self.evidence:
            where = ", ".join(f"{arm} {'-' if s is None else s}" for arm, s in e.settled.items())
            out.append(f"{e.experiment} ({e.machine or 'machine not recorded'}, {e.steps} steps): settled at {where}")
        classes = sorted({e.machine for e in self.evidence if e.machine})
        if len(classes) > 1:
            out.append(f"note: the evidence spans machine classes ({'; '.join(classes)}): a warm-up is a class's")
        if self.unknown:
            out.append(f"no evidence for {', '.join(self.unknown)}: the burn-in covers the other arms only")
        out.append(
            f"burn-in: steps 0-{self.burn_in - 1} (the latest settle point + {MARGIN}); "
            f"windows {', '.join(f'{n} {s}-{e}' for n, s, e in self.windows)} of {self.steps}-step runs"
        )
        out.append("for the spec's [analysis] table (before the campaign):")
        out += self.toml().splitlines()
        return out


def propose(
    evidence: Sequence[Evidence],
    *,
    steps: int | None = None,
    arms: Sequence[str] | None = None,
    windows: int = WINDOWS,
) -> Proposal:
    """The windows for runs of `steps` steps (default: the evidence's run length) whose burn-in
    covers every arm of `arms` (default: every arm the evidence has) as the evidence located them;
    UserError when nothing was located or the steps left are too few for the windows."""
    if not evidence:
        raise UserError("plan-windows: no evidence; name earlier campaigns of the same experiment and machine class")
    if windows < 1:
        raise UserError(f"--windows {windows}: give at least 1")
    steps = steps or max((e.steps or 0) for e in evidence)
    wanted = list(arms) if arms is not None else list(dict.fromkeys(a for e in evidence for a in e.settled))
    latest: dict[str, tuple[int, str]] = {}
    for e in evidence:
        for arm, s in e.settled.items():
            if arm in wanted and s is not None and s > latest.get(arm, (-1, ""))[0]:
                latest[arm] = (s, e.experiment)
    if not latest:
        names = ", ".join(e.experiment for e in evidence)
        raise UserError(
            f"plan-windows: no arm of {', '.join(wanted) or 'the target'} settles in {names} (too few steps, or "
            "steps that trend through the run): run a campaign of the same experiment first"
        )
    burn_in = max(s for s, _ in latest.values()) + MARGIN
    left = steps - burn_in
    if left < windows * MIN_WINDOW:
        raise UserError(
            f"plan-windows: a burn-in of {burn_in} steps leaves {max(left, 0)} of {steps}, fewer than "
            f"{windows} windows of {MIN_WINDOW}: run longer (more steps) or declare fewer windows"
        )
    out = split_windows(burn_in, steps, windows)
    unknown = tuple(a for a in wanted if a not in latest)
    return Proposal(steps, burn_in, tuple(out), dict(sorted(latest.items())), unknown, tuple(evidence))
