"""Arms of an experiment (plan stage: spec -> **plan** -> execute).

`build_plan(spec)` turns the spec into the arms the runner executes: the baseline (the
recipe as it is), each candidate (its bases' edits, then its own, applied to the recipe),
then one `profile-<arm>` per `[profiler].arms` entry (that arm plus the profiler's edits).
Each arm carries its patched recipe and the unified diff against the original: exactly the
change a PR would carry; its reverse is the rollback. `order_runs` gives the order in which
formal runs and profile runs happen. The recipe script is read once here; the editing
functions themselves are pure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from reportgen.errors import UserError
from reportgen.plan.bash import Occurrence
from reportgen.plan.recipe import argv_occurrences, edit_argv, edit_script, flag_occurrences, unified_diff
from reportgen.plan.revisions import at_revisions as _at_revisions
from reportgen.specfile.model import Edits, Spec, block_seed, interleaved, normalise_value
from reportgen.store.layout import RECIPE_ARGV, RECIPE_SCRIPT
from reportgen.vocab import BASELINE, ArmRole, profile_arm

ORDERS = ("sequential", "interleaved")


def argv_text(argv: Sequence[str]) -> str:
    """How an argv recipe is written to recipe.json and diffed: one argument per line."""
    return json.dumps(list(argv), indent=2) + "\n"


@dataclass(frozen=True)
class Arm:
    """One arm: the recipe as this arm runs it, the diff that made it, how to launch it."""

    id: str
    title: str
    rationale: str
    role: ArmRole
    base: str | None
    chain: tuple[str, ...]
    edits: tuple[Edits, ...]
    recipe_kind: Literal["script", "argv"]
    recipe_text: str | None
    argv: tuple[str, ...] | None
    diff: str
    shell: str = "bash"
    env: dict[str, str] = field(default_factory=dict, hash=False)
    # At a git revision (docs/revisions.md): the ref as the spec wrote it, the commit it resolved to,
    # the clean export it runs from, and its working folder inside that export. None: the working tree.
    ref: str | None = None
    revision: str | None = None
    checkout: Path | None = None
    workdir: Path | None = None

    @property
    def formal(self) -> bool:
        return self.role != "profile"

    @property
    def recipe_file(self) -> str:
        """File name the runner writes the patched recipe to inside a run folder."""
        return RECIPE_SCRIPT if self.recipe_kind == "script" else RECIPE_ARGV

    def flags(self) -> list[Occurrence]:
        """Static view of this arm's flags: (flag, values, line number or argv position)."""
        if self.recipe_kind == "script":
            return list(flag_occurrences(self.recipe_text or ""))
        return argv_occurrences(self.argv or ())


@dataclass(frozen=True)
class Plan:
    """Everything `reportgen run` needs to know before it starts anything."""

    spec: Spec
    arms: tuple[Arm, ...]
    recipe_kind: Literal["script", "argv"]
    recipe_path: Path | None  # the script that was read (None for an argv recipe)
    diff_path: str  # the path named in diff headers, relative to the recipe's repository
    original_text: str | None
    original_argv: tuple[str, ...] | None
    # Arms at revisions: the recipe's repository and the recipe's path inside it (None otherwise).
    repo: Path | None = None
    recipe_rel: str | None = None
    # Seeds per block ([run] seeds = "per-block"): each seed flag's value in the recipe, from which
    # every block's is derived (reportgen.specfile.model.block_seed); empty: every run has the recipe's.
    seed_bases: tuple[tuple[str, int], ...] = ()

    @property
    def revisions(self) -> dict[str, str]:
        """arm id -> the full SHA it runs at (formal and profile arms); empty without revisions."""
        return {a.id: a.revision for a in self.arms if a.revision is not None}

    def arm(self, arm_id: str) -> Arm:
        for a in self.arms:
            if a.id == arm_id:
                return a
        raise KeyError(arm_id)

    @property
    def formal_arms(self) -> tuple[Arm, ...]:
        return tuple(a for a in self.arms if a.formal)

    @property
    def profile_arms(self) -> tuple[Arm, ...]:
        return tuple(a for a in self.arms if not a.formal)

    def launch_script(self, arm: Arm, repeat: int) -> Path | None:
        """Where a script arm's patched copy runs: beside the original, hidden, so the recipe's
        own relative paths (BASH_SOURCE, sourced helpers) resolve as they do for the original.
        The runner writes it when the run starts and removes it when the run ends."""
        if arm.recipe_kind != "script" or self.recipe_path is None:
            return None
        original = self.recipe_path
        if arm.checkout is not None and self.recipe_rel is not None:
            original = arm.checkout / self.recipe_rel  # beside the recipe of the arm's own revision
        return original.parent / f".reportgen.{self.spec.name}.{arm.id}.{repeat}.{original.name}"

    def seeds_of(self, block: int) -> dict[str, str]:
        """The seed flags' values in block `block` (flag -> value as written), the same for every
        arm of the block; {} when the seeds are fixed."""
        return {flag: str(block_seed(base, block)) for flag, base in self.seed_bases}

    def at_block(self, arm: Arm, block: int) -> Arm:
        """`arm` as block `block` runs it: its recipe with the block's seeds set (a formal run's; the
        arm's own diff against the original recipe, which the seeds are no part of, is kept)."""
        seeds = self.seeds_of(block)
        if not seeds or not arm.formal:
            return arm
        edits = [Edits(set=tuple((flag, (value,)) for flag, value in seeds.items()))]
        labels = [f'the seeds of block {block} ([run] seeds = "per-block")']
        if arm.recipe_kind == "script":
            text = edit_script(arm.recipe_text or "", edits, labels=labels, path=self.diff_path)
            return replace(arm, recipe_text=text)
        return replace(arm, argv=tuple(edit_argv(arm.argv or (), edits, labels=labels, path=self.diff_path)))

    def command(self, arm: Arm, repeat: int) -> list[str]:
        """The command that launches `arm`'s run number `repeat`."""
        script = self.launch_script(arm, repeat)
        if script is not None:
            return [arm.shell, str(script)]
        return list(arm.argv or ())


def diff_path_for(spec: Spec) -> str:
    """Path for diff headers: relative to provenance.recipe_repo when the script lies inside it,
    else the script path as the spec writes it (its file name if that climbs out with '..')."""
    if spec.recipe.script is None:
        return RECIPE_ARGV
    base = Path(spec.source_dir or ".")
    script = (base / spec.recipe.script).resolve()
    if spec.provenance.recipe_repo:
        repo = (base / spec.provenance.recipe_repo).resolve()
        if script.is_relative_to(repo):
            return script.relative_to(repo).as_posix()
    rel = PurePosixPath(os.path.normpath(spec.recipe.script).replace(os.sep, "/"))
    if rel.is_absolute() or (rel.parts and rel.parts[0] == ".."):
        return rel.name
    return rel.as_posix()


def _chain(spec: Spec, arm_id: str) -> list[str]:
    chain: list[str] = []
    while arm_id != BASELINE:
        chain.append(arm_id)
        arm_id = spec.candidate(arm_id).base
    return chain[::-1]


def _refuse_fixed(spec: Spec, arm_id: str, chain: Sequence[str]) -> None:
    fixed = set(spec.workload.flags)
    for cid in chain:
        cand = spec.candidate(cid)
        touched = sorted(fixed.intersection(cand.touched_flags()))
        if touched:
            via = "" if cid == arm_id else f" (through its base {cid})"
            raise UserError(
                f"candidate {arm_id}{via} edits the fixed-workload flag {', '.join(touched)}: "
                "a candidate may not change the work done; drop the edit"
            )


def _check_fixed_unchanged(spec: Spec, arm_id: str, before: list, after: list) -> None:
    # Defence in depth: whatever the edits were, the fixed flags must read the same afterwards.
    fixed = set(spec.workload.flags)
    pick = lambda occ: sorted((f, v) for f, v, _ in occ if f in fixed)  # noqa: E731
    if pick(before) != pick(after):
        raise UserError(
            f"candidate {arm_id}: its edits changed a fixed-workload flag in the recipe; "
            "a candidate may not change the work done; drop the edit"
        )


def _profiler_edits(spec: Spec) -> Edits:
    prof = spec.profiler
    assert prof is not None
    return Edits(
        set=tuple((f, normalise_value(f, v)) for f, v in prof.set.items()),
        add=tuple((f, normalise_value(f, v)) for f, v in prof.add.items()),
    )


def build_plan(spec: Spec, *, pinned: Mapping[str, tuple[str, str]] | None = None, cache: Path | None = None) -> Plan:
    """Arms of `spec`: baseline, candidates in spec order, then profile arms.

    Reads the recipe script from `Path(spec.source_dir) / spec.recipe.script`, or, for arms at git
    revisions, from each arm's commit (docs/revisions.md): `pinned` (arm id -> (ref, sha), a
    campaign's stored revisions) keeps a resumed campaign at the commits it started with while the
    spec names the same refs; `cache` is where the checkouts go (`reportgen.store.layout.default_cache()`). Raises
    UserError when an edit cannot be applied, a revision is unknown, or a candidate touches a
    fixed-workload flag.
    """
    recipe = spec.recipe
    kind: Literal["script", "argv"] = "script" if recipe.script is not None else "argv"
    at_revisions = _at_revisions(spec, pinned or {}, cache) if spec.uses_revisions() else None
    diff_path = diff_path_for(spec) if at_revisions is None else at_revisions.diff_path(kind)
    recipe_path: Path | None = None
    original_text: str | None = None
    original_argv: tuple[str, ...] | None = None
    if kind == "script":
        recipe_path = Path(spec.source_dir or ".") / str(recipe.script)
        if at_revisions is not None:
            original_text = at_revisions.recipe_text(BASELINE)
        else:
            try:
                original_text = recipe_path.read_bytes().decode("utf-8")
            except OSError as exc:
                raise UserError(f"recipe.script: cannot read {recipe_path}: {exc.strerror}") from None
            except UnicodeDecodeError:
                raise UserError(f"recipe.script: {recipe_path} is not UTF-8 text") from None
        original_static = flag_occurrences(original_text)
    else:
        original_argv = tuple(recipe.argv or ())
        original_static = argv_occurrences(original_argv)

    def make(
        arm_id: str,
        title: str,
        rationale: str,
        role: ArmRole,
        base: str | None,
        chain: Sequence[str],
        edits: Sequence[Edits],
        labels: Sequence[str],
        env: dict[str, str],
    ) -> Arm:
        text: str | None = None
        argv: tuple[str, ...] | None = None
        revision = at_revisions.arm(arm_id if role != "profile" else str(base)) if at_revisions else None
        if kind == "script":
            # At revisions each arm's flags are edited in the recipe of its own commit.
            own = at_revisions.recipe_text(revision.arm) if at_revisions and revision else original_text
            assert own is not None
            text = edit_script(own, edits, labels=labels, path=diff_path)
            diff = unified_diff(own, text, diff_path)
            static = flag_occurrences(text)
        else:
            argv = tuple(edit_argv(original_argv or (), edits, labels=labels, path=diff_path))
            diff = unified_diff(argv_text(original_argv or ()), argv_text(argv), diff_path)
            static = argv_occurrences(argv)
        if role == "candidate":
            _check_fixed_unchanged(spec, arm_id, original_static, static)
        if revision is not None:
            env = {**env, **revision.env(spec.name, arm_id)}
        return Arm(
            id=arm_id,
            title=title,
            rationale=rationale,
            role=role,
            base=base,
            chain=tuple(chain),
            edits=tuple(edits),
            recipe_kind=kind,
            recipe_text=text,
            argv=argv,
            diff=diff,
            shell=recipe.shell,
            env=dict(env),
            ref=revision.ref if revision else None,
            revision=revision.sha if revision else None,
            checkout=revision.checkout if revision else None,
            workdir=revision.workdir if revision else None,
        )

    arms: list[Arm] = [
        make(BASELINE, "baseline", "the recipe as it is", "baseline", None, (), (), (), dict(recipe.env))
    ]
    for cand in spec.candidates:
        chain = _chain(spec, cand.id)
        _refuse_fixed(spec, cand.id, chain)
        edits = [spec.candidate(c).edits() for c in chain]
        labels = [f"candidate {cand.id}" + ("" if c == cand.id else f" (base {c})") for c in chain]
        arms.append(
            make(cand.id, cand.title, cand.rationale, "candidate", cand.base, chain, edits, labels, dict(recipe.env))
        )
    if spec.profiler is not None:
        prof_edits = _profiler_edits(spec)
        by_id = {a.id: a for a in arms}
        for target in spec.profiler.arms:
            src = by_id[target]
            labels = [f"{profile_arm(target)} (candidate {c})" for c in src.chain] + [
                f"{profile_arm(target)} (profiler)"
            ]
            arms.append(
                make(
                    profile_arm(target),
                    f"profile of {src.title}",
                    "diagnostic profiler run; never part of the formal numbers",
                    "profile",
                    target,
                    src.chain,
                    [*src.edits, prof_edits],
                    labels,
                    {**recipe.env, **spec.profiler.env},
                )
            )
    return Plan(
        spec=spec,
        seed_bases=_seed_bases(spec, original_static, diff_path),
        arms=tuple(arms),
        recipe_kind=kind,
        recipe_path=recipe_path,
        diff_path=diff_path,
        original_text=original_text,
        original_argv=original_argv,
        repo=at_revisions.repo if at_revisions else None,
        recipe_rel=at_revisions.recipe_rel if at_revisions else None,
    )


def _seed_bases(spec: Spec, occurrences: Sequence[Occurrence], path: str) -> tuple[tuple[str, int], ...]:
    """Each seed flag's integer value in the baseline recipe, when the seeds are per block; a flag
    missing, given twice or not a plain number is a UserError naming it."""
    if spec.run.seeds != "per-block":
        return ()
    out = []
    for flag in spec.workload.seed_flags:
        found = [values for f, values, _ in occurrences if f == flag]
        if len(found) != 1:
            where = "is not in" if not found else "appears more than once in"
            raise UserError(
                f'[workload] seed_flags: {flag} {where} the recipe {path}; seeds = "per-block" sets the one value it '
                'has there (write it once, with the seed block 1 runs with), or use seeds = "fixed"'
            )
        value = found[0][0] if len(found[0]) == 1 else None
        try:
            out.append((flag, int(str(value))))
        except ValueError:
            raise UserError(
                f"[workload] seed_flags: {flag} is {' '.join(found[0]) or 'a switch'} in the recipe {path}, not a "
                'number; write the seed block 1 runs with there, or use seeds = "fixed"'
            ) from None
    return tuple(out)


def block_order(plan: Plan, block: int, arms: Sequence[str] | None = None) -> list[str]:
    """The formal arms of one interleaved block (all of them, or those in `arms`), in the plan's
    order in odd blocks and reversed in even ones: baseline A1 | A1 baseline | ... A drift that is
    linear in time then moves a pair's two runs by the same amount on average over two blocks,
    instead of always favouring the arm that runs first."""
    return interleaved([a.id for a in plan.formal_arms if arms is None or a.id in arms], block)


def order_runs(plan: Plan, repeats: int, order: str) -> list[tuple[str, int]]:
    """(arm id, repeat) in execution order: formal arms per `order`, then each profile arm once.

    sequential: every repeat of baseline, then of the first candidate, ...
    interleaved: blocks of one run of each arm, alternating direction (`block_order`):
    baseline 1, A1 1, A2 1, A2 2, A1 2, baseline 2, ... (spreads machine drift over the pairs).
    """
    if repeats < 1:
        raise UserError(f"run.repeats must be at least 1, got {repeats}")
    if order not in ORDERS:
        raise UserError(f"run.order must be 'sequential' or 'interleaved', got {order!r}")
    formal = [a.id for a in plan.formal_arms]
    if order == "sequential":
        runs = [(a, r) for a in formal for r in range(1, repeats + 1)]
    else:
        runs = [(a, r) for r in range(1, repeats + 1) for a in block_order(plan, r)]
    return runs + [(a.id, 1) for a in plan.profile_arms]


def runs_to_make(
    plan: Plan, *, profiler: bool = True, baseline_only: bool = False, repeats: int | None = None
) -> list[tuple[str, int]]:
    """(arm id, repeat) of every run `reportgen run` starts with these options, in its order: what
    the runner runs and what `--dry-run` shows, from one function so the two cannot differ.

    `baseline_only`: the baseline alone, as many runs as the design's first look (a point of the
    performance history); `profiler=False` leaves the profile arms out. A sequential campaign
    (`until = "decided"`) shows its first `min_pairs` blocks, which every comparison runs; later
    blocks depend on the analysis after each one; `repeats` sets the formal runs per arm otherwise."""
    run = plan.spec.run
    first_look = run.repeats if run.until == "fixed" else run.min_pairs
    if baseline_only:
        return [(BASELINE, r) for r in range(1, first_look + 1)]
    profile = {a.id for a in plan.profile_arms}
    runs = order_runs(plan, repeats if repeats is not None else first_look, run.order)
    return [(a, r) for a, r in runs if profiler or a not in profile]
