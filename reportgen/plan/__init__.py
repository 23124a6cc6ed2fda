"""Plan stage (spec -> **plan** -> execute): arms as patched recipes, their diffs, run order.

Entry points: `build_plan(spec)`, `order_runs(plan, repeats, order)` (arms.py),
`edit_script` / `edit_argv` / `unified_diff` (recipe.py), `describe_plan` (show.py).
"""

from reportgen.plan.arms import Arm, Plan, build_plan, order_runs

__all__ = ["Arm", "Plan", "build_plan", "order_runs"]
