"""Plain-text description of a plan, for `reportgen run --dry-run`: each arm's diff and command."""

from __future__ import annotations

import shlex
from pathlib import Path

from reportgen.plan.arms import Plan, order_runs


def plan_text(plan: Plan, *, runs_root: Path) -> str:
    spec = plan.spec
    lines = [
        f"experiment {spec.name}: {spec.title}",
        f"  spec: {spec.source_path}" + (f" (profile {spec.profile})" if spec.profile else ""),
        f"  runs into: {Path(runs_root) / spec.name}",
        f"  order: {spec.run.order}, {spec.run.repeats} repeat(s), timeout {spec.run.timeout_s:g} s per run",
        "  fixed workload: " + (", ".join(spec.workload.flags) or "none declared"),
        "  run order: " + " ".join(f"{a}#{r}" for a, r in order_runs(plan, spec.run.repeats, spec.run.order)),
        "",
    ]
    for arm in plan.arms:
        head = f"== {arm.id} ({arm.role})" + (f": {arm.title}" if arm.title else "")
        lines.append(head)
        if arm.chain:
            lines.append("   edits: " + " -> ".join(arm.chain))
        command = arm.command_for(Path(runs_root) / spec.name / arm.id / "1")
        lines.append("   command: " + shlex.join(str(c) for c in command))
        if arm.recipe_kind == "argv" and arm.argv:
            lines.append("   argv: " + shlex.join(arm.argv))
        if arm.diff:
            lines.append("   diff:")
            lines.extend("     " + d for d in arm.diff.rstrip("\n").splitlines())
        else:
            lines.append("   diff: (none: the recipe as it is)")
        lines.append("")
    lines.append("dry run: nothing was run or written")
    return "\n".join(lines)
