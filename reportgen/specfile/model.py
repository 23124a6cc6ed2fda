"""Typed model of the experiment spec (schema 1). Validation only; no I/O.

Flag values are normalised: a switch is `True`; a flag with values is a tuple of strings
(TOML numbers are written the way a shell script would spell them).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from reportgen.vocab import BASELINE, HIGHER, ID_PATTERN, PRIMARY_DEFAULT, PROFILE_PREFIX, SECONDARY_DEFAULT, Direction

SPEC_SCHEMA_VERSION: Final = 1
# The default non-inferiority margin of the quality metric, in its units: five points of a 0-1 reward
# (docs/analysis.md#the-margin-and-its-default says why; docs/calibration.md#training-quality holds it).
QUALITY_MARGIN_DEFAULT: Final = 0.05
FLAG_PATTERN = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")

FlagValue = bool | str | int | float | list[str | int | float]
Normalised = Literal[True] | tuple[str, ...]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


def _check_id(v: str) -> str:
    """A candidate id or an experiment name: a folder name under runs/."""
    if not ID_PATTERN.match(v):
        raise ValueError(f"expected letters, digits, '.', '_' or '-' (at most 64), got {v!r}")
    return v


def _check_flag(flag: str) -> str:
    if not FLAG_PATTERN.match(flag):
        raise ValueError(f"expected a flag such as '--max-tokens-per-gpu', got {flag!r}")
    return flag


def _check_values(values: dict[str, FlagValue]) -> dict[str, FlagValue]:
    """Flag names well formed and every value spellable (shared by candidates and the profiler)."""
    for flag, value in values.items():
        _check_flag(flag)
        normalise_value(flag, value)
    return values


def _spell(v: str | int | float) -> str:
    if isinstance(v, bool):
        raise ValueError("true/false only as the whole value of a switch")
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return repr(v)
    return str(v)


def normalise_value(flag: str, value: FlagValue) -> Normalised:
    if value is True:
        return True
    if value is False:
        raise ValueError(f"{flag} = false is not an edit: list the flag under 'remove' instead")
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{flag}: expected at least one value")
        return tuple(_spell(v) for v in value)
    return (_spell(value),)


class RecipeSpec(_Model):
    """How an arm is launched: a bash recipe script, or an argv list."""

    script: str | None = None
    argv: list[str] | None = None
    workdir: str = "."
    python: str | None = None  # default: the interpreter running reportgen
    shell: str = "bash"
    env: dict[str, str] = Field(default_factory=dict)
    entrypoint: str | None = Field(
        default=None,
        description="substring identifying the workload command in `set -x` trace lines",
    )
    # Arms at git revisions (docs/revisions.md): the baseline's revision of the recipe's repository
    # (a branch, tag or SHA; None: the working tree as it is, unless a candidate names one, then HEAD),
    # that repository (relative to the spec's folder; default: the git repository holding the spec),
    # and the module whose import each revision's checkout must pass before its first measured run
    # (default: `entrypoint` when it is a dotted module name).
    ref: str | None = None
    repo: str | None = None
    import_check: str | None = None

    def interpreter(self) -> str:
        """The workload's Python: as given, else the one running reportgen (its venv has the
        workload's dependencies, where a bare `python3` on PATH may not)."""
        return self.python or sys.executable

    @model_validator(mode="after")
    def _one_source(self) -> RecipeSpec:
        if (self.script is None) == (self.argv is None):
            raise ValueError("give exactly one of 'script' (a bash recipe) or 'argv' (a list)")
        if self.argv is not None and not self.argv:
            raise ValueError("'argv' must not be empty")
        return self


class ProvenanceSpec(_Model):
    model_dir: str | None = None
    data_files: list[str] = Field(default_factory=list)
    commands: list[str | list[str]] = Field(default_factory=list)
    recipe_repo: str | None = None


class WorkloadSpec(_Model):
    """The fixed workload: flags no candidate may touch, and the steps every arm must complete.
    `seed_flags`: the recipe's seeds (Relax: `--seed`, `--rollout-seed`), which `[run] seeds =
    "per-block"` sets anew for every block (fixed-workload flags all the same: equal within a pair)."""

    flags: list[str] = Field(default_factory=list)
    steps: int | None = Field(default=None, ge=1)
    steps_flag: str = "--num-rollout"
    batch_flag: str = "--global-batch-size"
    seed_flags: list[str] = Field(default_factory=list)

    @field_validator("flags", "seed_flags")
    @classmethod
    def _flags(cls, v: list[str]) -> list[str]:
        for f in v:
            _check_flag(f)
        if len(set(v)) != len(v):
            raise ValueError("flags are listed twice")
        return v

    @model_validator(mode="after")
    def _seeds_are_fixed(self) -> WorkloadSpec:
        loose = [f for f in self.seed_flags if f not in self.flags]
        if loose:
            raise ValueError(
                f"seed_flags {', '.join(loose)} must be fixed-workload flags too (equal in both runs of a pair): "
                "add them to [workload].flags"
            )
        return self


def interleaved(ids: Sequence[str], block: int) -> list[str]:
    """`ids` (the formal arms in the plan's order: the baseline, then the candidates) as interleaved
    block `block` runs them: as given in odd blocks, reversed in even ones. The runner's order
    (reportgen.plan.arms.block_order) and the analysis's check of the runs' recorded start times
    (reportgen.analysis.interleaving) both read it here, below both."""
    return list(ids) if block % 2 == 1 else list(ids)[::-1]


class RunSpec(_Model):
    """How the campaign runs. `until = "fixed"`: `repeats` pairs (each arm `repeats` times);
    `until = "decided"`: interleaved blocks, one pair at a time, until every comparison is decided
    or `max_pairs` is reached (docs/analysis.md#sequential-campaigns); `budget_minutes` caps the
    formal runs' wall-clock time of one `reportgen run` (resuming continues with a new budget)."""

    until: Literal["fixed", "decided"] = "fixed"
    repeats: int = Field(default=1, ge=1, le=100)
    # The calibrated sequential design (reportgen.analysis.design MIN_PAIRS, MAX_PAIRS; docs/calibration.md):
    # a look after every pair from 2 to 16.
    min_pairs: int = Field(default=2, ge=2, le=100)
    max_pairs: int = Field(default=16, ge=2, le=100)
    budget_minutes: float | None = Field(default=None, ge=0)  # 0 or absent: no budget (TOML has no null)
    order: Literal["sequential", "interleaved"] = "sequential"
    timeout_s: float = Field(default=3600.0, gt=0)
    gpu_sample_interval_s: float = Field(default=1.0, gt=0, le=60)
    executor: str = Field(default="local", pattern=r"^[a-z][a-z0-9_-]{0,31}$")  # registered: execute/executor.py
    ray_address: str | None = None
    num_gpus: float = Field(default=0, ge=0)
    num_cpus: float = Field(default=1, ge=0)
    # "per-block": every block (pair) runs with its own seeds, the same in its runs (the recipe's
    # values + SEED_STRIDE x (block - 1), in each of [workload].seed_flags), so that the campaign sees
    # the run-to-run variation of real training; "fixed": every run has the recipe's seeds.
    seeds: Literal["fixed", "per-block"] = "fixed"

    def looks(self) -> list[int]:
        """The pair counts at which this campaign's analysis may decide: every pair from min_pairs
        to max_pairs when sequential, the planned repeats when fixed (docs/analysis.md)."""
        if self.until == "decided":
            return list(range(self.min_pairs, self.max_pairs + 1))
        return [self.repeats]

    @model_validator(mode="after")
    def _sequential(self) -> RunSpec:
        budget = None if self.budget_minutes == 0 else self.budget_minutes
        if self.min_pairs > self.max_pairs:
            raise ValueError(f"min_pairs ({self.min_pairs}) is above max_pairs ({self.max_pairs})")
        if self.until == "decided":
            if "order" in self.model_fields_set and self.order != "interleaved":
                raise ValueError(
                    'until = "decided" runs the arms in interleaved blocks, one pair at a time: drop order or set '
                    'order = "interleaved"'
                )
            if self.order != "interleaved":
                return self.model_copy(update={"order": "interleaved", "budget_minutes": budget})
        return self if budget == self.budget_minutes else self.model_copy(update={"budget_minutes": budget})


class Window(_Model):
    name: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _order(self) -> Window:
        if self.end < self.start:
            raise ValueError(f"window {self.name}: end ({self.end}) is before start ({self.start})")
        return self


def split_windows(first: int, steps: int, count: int) -> list[tuple[str, int, int]]:
    """Steps `first`..`steps` - 1 as `count` windows W1, W2, ... of equal length, the last one taking
    what the division leaves: the windows after a burn-in that ends at `first` (`reportgen init` and
    `reportgen plan-windows` propose them)."""
    size = (steps - first) // count
    return [
        (f"W{i + 1}", first + i * size, steps - 1 if i == count - 1 else first + (i + 1) * size - 1)
        for i in range(count)
    ]


def window_toml(name: str, start: int, end: int) -> str:
    """One window as the spec's TOML writes it: `{ name = "W1", start = 24, end = 35 }`."""
    return f'{{ name = "{name}", start = {start}, end = {end} }}'


class AnalysisSpec(_Model):
    primary: str = PRIMARY_DEFAULT
    direction: Direction = HIGHER
    secondary: list[str] = Field(default_factory=lambda: list(SECONDARY_DEFAULT))
    warmup_steps: int = Field(default=20, ge=0)
    windows: list[Window] = Field(default_factory=list)
    min_effect: float = Field(default=0.05, ge=0, lt=10)
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    method: Literal["block-bootstrap", "batch-means"] = "block-bootstrap"
    seed: int = 20260805
    site_url: str | None = None
    # The candidate the pull request proposes; None: the first candidate (Spec.pr_candidate()).
    pr_candidate: str | None = None
    # Same work: mean response length and tokens per step of each arm within this fraction of the
    # baseline's, in every window, or a verdict on a throughput metric is invalid.
    same_work_tolerance: float = Field(default=0.05, gt=0, lt=1)
    # Training quality, the verdict's second half (docs/analysis.md#training-quality): the metric that
    # decides "trains as well" (None: the reward, rollout/raw_reward else rollout/rewards; "none": a
    # verdict on speed alone) and its non-inferiority margin in its units (0.05: five points of a 0-1
    # reward; calibrated in docs/calibration.md); other quality metrics decide only with a margin here.
    quality_metric: str | None = None
    quality_margin: float = Field(default=QUALITY_MARGIN_DEFAULT, gt=0)
    quality_margins: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    # The per-window tolerance of earlier versions (a warning, no interval) is gone: refused with why.
    quality_tolerance: float | None = None
    # Borrowing the run-to-run variance from the campaign's other arms is no longer offered: with a
    # candidate noisier than the others it decided falsely 9.1 % (F gate 0.10) or 5.3 % (gate 0.5) of
    # the time and bought about one point of power (docs/calibration.md). `false` is still accepted.
    pool: bool = False

    @field_validator("pool")
    @classmethod
    def _no_pool(cls, v: bool) -> bool:
        if v:
            raise ValueError(
                "pool = true is no longer offered: borrowing the variance from the other arms broke the 5 % error "
                "rate when a candidate is noisier than the others and bought about one point of power "
                "(docs/calibration.md); remove the key"
            )
        return v

    @field_validator("quality_tolerance")
    @classmethod
    def _no_tolerance(cls, v: float | None) -> float | None:
        if v is not None:
            raise ValueError(
                "quality_tolerance is gone: training quality is now a half of the verdict, a paired interval "
                "against a declared margin; remove the key (or give quality_margin, in the quality metric's "
                "units: docs/analysis.md#training-quality)"
            )
        return v

    @model_validator(mode="after")
    def _windows(self) -> AnalysisSpec:
        names = [w.name for w in self.windows]
        if len(set(names)) != len(names):
            raise ValueError("window names must be unique")
        prev_end = -1
        for w in self.windows:
            if w.start < self.warmup_steps:
                raise ValueError(
                    f"window {w.name} starts at step {w.start}, inside the warm-up "
                    f"(steps 0-{self.warmup_steps - 1}); start it at {self.warmup_steps} or later"
                )
            if w.start <= prev_end:
                raise ValueError(f"window {w.name} overlaps the window before it; windows must be ordered and disjoint")
            prev_end = w.end
        return self


class Candidate(_Model):
    id: str
    title: str
    rationale: str = ""
    base: str = BASELINE
    remove: list[str] = Field(default_factory=list)
    set: dict[str, FlagValue] = Field(default_factory=dict)
    add: dict[str, FlagValue] = Field(default_factory=dict)
    add_after: str | None = None
    # A revision of the recipe's repository this candidate runs at (docs/revisions.md); None: its
    # base's revision (the baseline's `[recipe] ref`, or the working tree).
    ref: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        v = _check_id(v)
        if v == BASELINE or v.startswith(PROFILE_PREFIX):
            raise ValueError(f"{v!r} is reserved; choose another candidate id")
        return v

    @field_validator("remove")
    @classmethod
    def _remove(cls, v: list[str]) -> list[str]:
        for f in v:
            _check_flag(f)
        return v

    @field_validator("set", "add")
    @classmethod
    def _values(cls, v: dict[str, FlagValue]) -> dict[str, FlagValue]:
        return _check_values(v)

    @model_validator(mode="after")
    def _not_empty(self) -> Candidate:
        if not (self.remove or self.set or self.add or self.ref):
            raise ValueError(f"candidate {self.id} changes nothing: give 'ref', 'remove', 'set' or 'add'")
        touched = [*self.remove, *self.set, *self.add]
        dup = sorted({f for f in touched if touched.count(f) > 1})
        if dup:
            raise ValueError(f"candidate {self.id} edits {', '.join(dup)} more than once")
        return self

    def edits(self) -> Edits:
        return Edits(
            remove=tuple(self.remove),
            set=tuple((f, normalise_value(f, v)) for f, v in self.set.items()),
            add=tuple((f, normalise_value(f, v)) for f, v in self.add.items()),
            add_after=self.add_after,
        )

    def touched_flags(self) -> list[str]:
        return [*self.remove, *self.set, *self.add]


class Edits(_Model):
    """One candidate's own flag edits, normalised (the plan stage composes them along `base`)."""

    remove: tuple[str, ...] = ()
    set: tuple[tuple[str, Normalised], ...] = ()
    add: tuple[tuple[str, Normalised], ...] = ()
    add_after: str | None = None


class ProfilerSpec(_Model):
    """A separate short diagnostic run with profiler flags; never part of the formal numbers."""

    arms: list[str] = Field(default_factory=lambda: [BASELINE])
    add: dict[str, FlagValue] = Field(default_factory=dict)
    set: dict[str, FlagValue] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("add", "set")
    @classmethod
    def _values(cls, v: dict[str, FlagValue]) -> dict[str, FlagValue]:
        return _check_values(v)


class Spec(_Model):
    schema_version: Literal[1] = SPEC_SCHEMA_VERSION
    name: str
    title: str
    hypothesis: str = ""
    issue: str | None = None
    pr: str | None = None
    recipe: RecipeSpec
    provenance: ProvenanceSpec = Field(default_factory=ProvenanceSpec)
    workload: WorkloadSpec = Field(default_factory=WorkloadSpec)
    run: RunSpec = Field(default_factory=RunSpec)
    analysis: AnalysisSpec = Field(default_factory=AnalysisSpec)
    candidates: list[Candidate] = Field(default_factory=list)
    profiler: ProfilerSpec | None = None
    # Filled by the loader, not by the user.
    source_path: str = ""
    source_dir: str = ""
    profile: str | None = None
    profile_tables: tuple[str, ...] = ()  # sections the profile restates ("run", "candidates")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _check_id(v)

    @model_validator(mode="after")
    def _graph(self) -> Spec:
        if not self.candidates:
            raise ValueError("no candidates: add at least one [[candidates]] table")
        seen: set[str] = {BASELINE}
        fixed = set(self.workload.flags)
        for c in self.candidates:
            if c.id in seen:
                raise ValueError(f"candidate id {c.id!r} is used twice")
            if c.base not in seen:
                raise ValueError(
                    f"candidate {c.id}: base {c.base!r} is not 'baseline' or a candidate declared before it"
                )
            touched = sorted(fixed.intersection(c.touched_flags()))
            if touched:
                raise ValueError(
                    f"candidate {c.id} edits the fixed-workload flag {', '.join(touched)}: "
                    "a candidate may not change the work done; drop the edit or the flag from [workload].flags"
                )
            seen.add(c.id)
        if self.run.seeds == "per-block" and not self.workload.seed_flags:
            raise ValueError(
                'run.seeds = "per-block" needs the recipe\'s seed flags: set [workload].seed_flags '
                '(Relax: ["--seed", "--rollout-seed"]), or seeds = "fixed"'
            )
        pr = self.analysis.pr_candidate
        if pr is not None and pr not in seen - {BASELINE}:
            raise ValueError(
                f"analysis.pr_candidate: {pr!r} is not a candidate id (candidates: "
                f"{', '.join(c.id for c in self.candidates)})"
            )
        if self.profiler is not None:
            for arm in self.profiler.arms:
                if arm not in seen:
                    raise ValueError(f"profiler.arms: {arm!r} is not 'baseline' or a candidate id")
        return self

    def arm_ids(self) -> list[str]:
        return [BASELINE, *(c.id for c in self.candidates)]

    def pr_candidate(self) -> str:
        """The candidate the pull request proposes: `[analysis] pr_candidate`, else the first one."""
        return self.analysis.pr_candidate or self.candidates[0].id

    def ref_of(self, arm_id: str) -> str | None:
        """The revision `arm_id` runs at, as the spec writes it: its own `ref`, else its base's, down
        to the baseline's `[recipe] ref`; when any arm names a revision the baseline's default is
        "HEAD" (every arm then runs from a checkout); None: no arm names one (the working tree)."""
        arm = arm_id
        while arm != BASELINE:
            cand = self.candidate(arm)
            if cand.ref is not None:
                return cand.ref
            arm = cand.base
        if self.recipe.ref is not None:
            return self.recipe.ref
        return "HEAD" if self.uses_revisions() else None

    def uses_revisions(self) -> bool:
        """Whether the arms run at git revisions (a `ref` in [recipe] or in a candidate)."""
        return self.recipe.ref is not None or any(c.ref is not None for c in self.candidates)

    def bases(self, arm_id: str) -> list[str]:
        """The candidates whose edits `arm_id`'s patch is applied on top of, nearest first
        (A3 on A1 on baseline -> ["A1"]); [] for the baseline and a candidate on the baseline."""
        out: list[str] = []
        arm = arm_id
        while arm != BASELINE and arm in {c.id for c in self.candidates}:
            base = self.candidate(arm).base
            if base == BASELINE:
                break
            out.append(base)
            arm = base
        return out

    def section(self, table: str) -> str:
        """The header of the section a value of `table` came from in the spec that ran: under the
        profile when the profile restates it ("[profiles.gpu.run]", "[[profiles.gpu.candidates]]"),
        else the top-level one ("[run]", "[[candidates]]"). A list of tables (candidates) is replaced
        whole by a profile's, so an edit to the top-level one would not reach the campaign."""
        name = f"profiles.{self.profile}.{table}" if table in self.profile_tables else table
        return f"[[{name}]]" if table == "candidates" else f"[{name}]"

    def candidate(self, arm_id: str) -> Candidate:
        for c in self.candidates:
            if c.id == arm_id:
                return c
        raise KeyError(arm_id)


# Block b of a campaign with per-block seeds runs each seed flag at the recipe's value + SEED_STRIDE x (b - 1):
# block 1 is the recipe as written, and blocks are far enough apart that a trainer deriving a stream from
# seed + epoch (Relax shuffles epoch e with rollout_seed + e) never gives two blocks the same stream.
SEED_STRIDE: Final = 1000


def block_seed(base: int, block: int) -> int:
    """The seed block `block` runs with, for a flag whose value in the recipe is `base`."""
    return base + SEED_STRIDE * (block - 1)


# [run] keys that size a campaign without changing what is measured: a spec that differs from the
# campaign's only in these continues the campaign (its runs are kept) instead of needing a new one.
CAMPAIGN_SIZE_KEYS = ("until", "repeats", "min_pairs", "max_pairs", "budget_minutes", "timeout_s", "order")


def campaign_amendment(
    old: Spec, new: Spec, looks_taken: Sequence[int] = ()
) -> tuple[dict[str, tuple[object, object]], str | None]:
    """How `new` changes the size of `old`'s campaign ({key: (old, new)}), and why it cannot
    continue that campaign (None when it can). Only adding pairs is allowed: fewer min_pairs or
    max_pairs after looking would make the interval narrower than the looks already taken allow,
    and changing the order of runs already made in blocks would leave pairs that are not adjacent.
    Once a look was taken (`looks_taken`: pair counts at which the old design could already
    decide), the looks may not change at all (reportgen.analysis.design.resize_refusal)."""
    changed = {
        k: (getattr(old.run, k), getattr(new.run, k))
        for k in CAMPAIGN_SIZE_KEYS
        if getattr(old.run, k) != getattr(new.run, k)
    }
    same_size = old.run.model_copy(update={k: getattr(new.run, k) for k in CAMPAIGN_SIZE_KEYS})
    loaded = {
        "source_path": new.source_path,
        "source_dir": new.source_dir,
        "profile": new.profile,
        "profile_tables": new.profile_tables,
    }
    if old.model_copy(update={"run": same_size, **loaded}) != new:
        return changed, "the spec changed since its runs were made"
    for key in ("min_pairs", "max_pairs"):
        if key in changed and getattr(new.run, key) < getattr(old.run, key):
            return (
                changed,
                f"[run] {key} went down ({changed[key][0]} -> {changed[key][1]}); a campaign only adds pairs",
            )
    if "order" in changed and old.run.repeats > 1 and old.run.until == "fixed":
        return changed, "[run] order changed after runs were made in the old order"
    why = resize_refusal(old.run.looks(), new.run.looks(), looks_taken)
    if why is not None:
        return changed, why
    return changed, None


def resize_refusal(old_looks: Sequence[int], new_looks: Sequence[int], looks_taken: Sequence[int]) -> str | None:
    """Why a campaign that already took `looks_taken` under a design looking at `old_looks` may not
    go on looking at `new_looks` (None: it may). Any look taken spent part of the error rate at the
    old level, and a fixed design all of it: more or other looks after that would decide falsely
    more often than the confidence promises (docs/calibration.md, resized campaigns; reportgen/analysis/design.py). Before the
    first look any size may change; the same looks (a resumed campaign) are always fine."""
    taken = sorted(set(looks_taken))
    if not taken or sorted(set(old_looks)) == sorted(set(new_looks)):
        return None
    return (
        f"the campaign was already looked at after {', '.join(map(str, taken))} pair(s) under its old design "
        f"(looks {_span(old_looks)}); changing its looks to {_span(new_looks)} now would let it call differences that "
        "are not there more often than its confidence promises. Keep the old [run] size, or start a new campaign "
        "(--new-campaign, or another --name)"
    )


def _span(looks: Sequence[int]) -> str:
    ls = sorted(set(looks))
    if len(ls) > 2 and ls == list(range(ls[0], ls[-1] + 1)):
        return f"{ls[0]}-{ls[-1]}"
    return ", ".join(map(str, ls))
