"""Plain-text view of a plan for `reportgen run --dry-run` (plan stage; nothing runs).

Lists each arm a run with the same options would run with its launch command, its effective
workload command (static: arrays expanded, variables as written, redirections left out) and its
diff, then the order of runs: the runner's own list (`plan.arms.runs_to_make`), so `--baseline-only`
or `--no-profiler` previews exactly the runs they start.
Credential flag values are redacted (reportgen.capture.redact).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from reportgen.capture.redact import redact_command_text
from reportgen.plan.arms import Plan, runs_to_make
from reportgen.plan.bash import effective_command
from reportgen.specfile.model import SEED_STRIDE


def describe_plan(plan: Plan, *, runs_root: Path, profiler: bool = True, baseline_only: bool = False) -> str:
    """The dry-run report: one block per arm that runs, then the run order, for a `reportgen run`
    with these options. Pure: returns text."""
    spec = plan.spec
    sequential = spec.run.until == "decided" and not baseline_only
    # A sequential campaign's later blocks depend on the analysis: the order shown is its first
    # min_pairs blocks, which every comparison runs.
    runs = runs_to_make(plan, profiler=profiler, baseline_only=baseline_only)
    running = {a for a, _ in runs}
    source = plan.recipe_path if plan.recipe_path is not None else "recipe.argv in the spec"
    if baseline_only:
        head = f"the baseline only x {len(runs)} runs (--baseline-only: the first look's, no candidate, no profiler)"
    else:
        size = (
            f"pairs of runs until decided ({spec.run.min_pairs} to {spec.run.max_pairs}, interleaved)"
            if sequential
            else f"{spec.run.repeats} repeats ({spec.run.order})"
        )
        profiles = len([a for a in plan.profile_arms if a.id in running])
        left = "" if profiler or not plan.profile_arms else " (--no-profiler)"
        head = f"{len(plan.formal_arms)} formal arms x {size}, {profiles} profile arms{left}"
    out = [
        f"plan for {spec.name}: {head}; --dry-run: nothing runs",
        f"recipe: {source} ({plan.recipe_kind}; diffs name {plan.diff_path})",
        *([f"arms at git revisions of {plan.repo}: each runs its own commit's recipe and code"] if plan.repo else []),
        "",
    ]
    for arm in (a for a in plan.arms if a.id in running):
        chain = " -> ".join(arm.chain) if arm.chain else "none"
        out.append(f"== {arm.id}: {arm.title} [{arm.role}; edits from: {chain}] ==")
        if arm.rationale:
            out.append(f"rationale: {arm.rationale}")
        if arm.revision is not None:
            named = "" if arm.ref == arm.revision else f"{arm.ref} = "
            out.append(f"revision: {named}{arm.revision} (a clean checkout: {arm.checkout})")
        out.append(
            f"launch: {shlex.join(plan.command(arm, 1))}  (the patched copy beside the original;"
            f" kept as {Path(runs_root) / spec.name / arm.id / '1' / arm.recipe_file})"
        )
        if arm.env:
            out.append("env: " + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(arm.env.items())))
        if arm.recipe_kind == "script":
            out.append("effective command (static): " + " ".join(effective_command(arm.recipe_text or "")))
        else:
            out.append(f"effective command: {shlex.join(arm.argv or ())}")
        out.append("diff:" if arm.diff else "diff: none (the recipe as it is)")
        if arm.diff:
            out.append(arm.diff.rstrip("\n"))
        out.append("")
    out.append(
        f"run order (the first {spec.run.min_pairs} blocks; then a block at a time for the comparisons still open):"
        if sequential
        else "run order:"
    )
    profile_ids = {a.id for a in plan.profile_arms}

    def seeds(arm_id: str, rep: int) -> str:
        values = plan.seeds_of(rep) if arm_id not in profile_ids else {}
        return f"  ({' '.join(f'{k} {v}' for k, v in values.items())})" if values else ""

    if plan.seed_bases:
        out.append(
            'seeds per block ([run] seeds = "per-block"): the recipe\'s in block 1, + '
            f"{SEED_STRIDE} a block after it; both runs of a pair the same; profile runs the recipe's"
        )
    out.extend(f"  {i}. {arm_id}/{rep}{seeds(arm_id, rep)}" for i, (arm_id, rep) in enumerate(runs, 1))
    # A dry run is pasted into issues and PRs: credential flag values (`--wandb-key sk-...`) and
    # credential-named env values are replaced; the patched recipe copies the runs use are not.
    return redact_command_text("\n".join(out) + "\n")
