"""build_plan: arms from a real spec file, run order, and the fixed-workload refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.plan.arms import argv_text, block_order, build_plan, order_runs
from reportgen.plan.recipe import edit_script, unified_diff
from reportgen.specfile.load import load_spec
from reportgen.specfile.model import Edits, WorkloadSpec
from tests.helpers import write_spec
from tests.relax_recipe import OFFLOAD, RECIPE, RECOMPUTE

A1 = {"id": "A1", "title": "no optimizer offload", "rationale": "offload costs step time", "remove": list(OFFLOAD)}
A2 = {"id": "A2", "title": "A1 and no recompute", "base": "A1", "remove": list(RECOMPUTE)}
A3 = {"id": "A3", "title": "A1 and a smaller token budget", "base": "A1", "set": {"--max-tokens-per-gpu": 8192}}


def write_experiment(tmp_path: Path, candidates: list[dict] | None = None) -> Path:
    """The recipe at relax/scripts/run.sh and a spec of three chained candidates that profiles two arms."""
    script = tmp_path / "relax" / "scripts" / "run.sh"
    script.parent.mkdir(parents=True)
    script.write_text(RECIPE)
    return write_spec(
        tmp_path / "experiment.toml",
        name="qwen3-vl-offload",
        title="Drop optimizer CPU offload",
        recipe={"script": "relax/scripts/run.sh", "env": {"NUM_GPUS": "2"}},
        provenance={"recipe_repo": "relax"},
        workload={"flags": ["--num-rollout", "--rollout-batch-size", "--global-batch-size"]},
        profiler={
            "arms": ["baseline", "A1"],
            "add": {"--use-pytorch-profiler": True, "--profile-step-start": 2},
            "env": {"PROFILE": "1"},
        },
        candidates=[A1, A2, A3] if candidates is None else candidates,
    )


def test_arms_in_order_with_chains_diffs_and_commands(tmp_path):
    plan = build_plan(load_spec(write_experiment(tmp_path)))
    assert [a.id for a in plan.arms] == ["baseline", "A1", "A2", "A3", "profile-baseline", "profile-A1"]
    assert [a.role for a in plan.arms] == ["baseline", "candidate", "candidate", "candidate", "profile", "profile"]
    assert plan.diff_path == "scripts/run.sh"  # relative to provenance.recipe_repo
    assert plan.original_text == RECIPE

    base, a1, a2, a3, pb, pa1 = plan.arms
    assert base.diff == "" and base.recipe_text == RECIPE and base.chain == ()
    assert a2.chain == ("A1", "A2") and a2.base == "A1"
    want_a2 = edit_script(RECIPE, [Edits(remove=OFFLOAD), Edits(remove=RECOMPUTE)])
    assert a2.recipe_text == want_a2
    assert a2.diff == unified_diff(RECIPE, want_a2, "scripts/run.sh")
    assert "-   --max-tokens-per-gpu 9216\n+   --max-tokens-per-gpu 8192\n" in a3.diff
    assert "-   --optimizer-cpu-offload\n" in a3.diff  # A3 carries its base's edits

    copy = plan.launch_script(a1, 2)
    assert copy == plan.recipe_path.parent / f".reportgen.{plan.spec.name}.A1.2.{plan.recipe_path.name}"
    assert plan.command(a1, 2) == ["bash", str(copy)]
    assert a1.env == {"NUM_GPUS": "2"}
    assert a1.title == "no optimizer offload" and a1.rationale == "offload costs step time"

    # profile arms: the arm's own edits plus the profiler's, and the profiler env
    assert pa1.base == "A1" and pa1.chain == ("A1",)
    assert pa1.env == {"NUM_GPUS": "2", "PROFILE": "1"}
    flags = {f: v for f, v, _ in pa1.flags()}
    assert flags["--use-pytorch-profiler"] == () and flags["--profile-step-start"] == ("2",)
    assert "--optimizer-cpu-offload" not in flags
    assert "+   --use-pytorch-profiler\n+   --profile-step-start 2\n" in pb.diff
    assert plan.formal_arms == plan.arms[:4] and plan.profile_arms == plan.arms[4:]
    assert plan.arm("A3") is a3


def test_order_runs(tmp_path):
    plan = build_plan(load_spec(write_experiment(tmp_path)))
    assert order_runs(plan, 2, "sequential") == [
        ("baseline", 1),
        ("baseline", 2),
        ("A1", 1),
        ("A1", 2),
        ("A2", 1),
        ("A2", 2),
        ("A3", 1),
        ("A3", 2),
        ("profile-baseline", 1),
        ("profile-A1", 1),
    ]
    assert order_runs(plan, 2, "interleaved") == [
        ("baseline", 1),
        ("A1", 1),
        ("A2", 1),
        ("A3", 1),
        ("A3", 2),
        ("A2", 2),
        ("A1", 2),
        ("baseline", 2),
        ("profile-baseline", 1),
        ("profile-A1", 1),
    ]
    assert block_order(plan, 3, ["A2", "baseline"]) == ["baseline", "A2"]
    assert block_order(plan, 4, ["A2", "baseline"]) == ["A2", "baseline"]
    with pytest.raises(UserError, match=r"run\.order"):
        order_runs(plan, 1, "random")


def test_candidate_through_its_base_touching_a_fixed_flag_is_refused(tmp_path):
    spec = load_spec(write_experiment(tmp_path))
    # The spec validator refuses this already; plan refuses it again (defence in depth).
    bad = spec.model_copy(update={"workload": WorkloadSpec(flags=["--num-rollout", "--optimizer-cpu-offload"])})
    with pytest.raises(UserError) as info:
        build_plan(bad)
    assert str(info.value).startswith(
        "candidate A1 edits the fixed-workload flag --optimizer-cpu-offload: a candidate may not change the work done"
    )
    only_a2 = bad.model_copy(
        update={"candidates": [bad.candidates[0].model_copy(update={"remove": ["--seed"]}), *bad.candidates[1:]]}
    )
    only_a2 = only_a2.model_copy(update={"workload": WorkloadSpec(flags=["--recompute-method"])})
    with pytest.raises(UserError, match="candidate A2 edits the fixed-workload flag --recompute-method"):
        build_plan(only_a2)


def test_missing_flag_names_the_candidate_and_recipe(tmp_path):
    typo = {**A2, "remove": ["--recompute-granularity", "--recompute-methd"]}
    with pytest.raises(UserError) as info:
        build_plan(load_spec(write_experiment(tmp_path, [A1, typo, A3])))
    assert str(info.value) == "candidate A2: --recompute-methd not found in recipe scripts/run.sh"


def test_argv_recipe(tmp_path):
    path = write_spec(
        tmp_path / "e.toml",
        name="argv",
        title="argv recipe",
        recipe={"argv": ["python3", "-m", "wl", "--num-rollout", "20", "--offload", "--lr=1e-6", "--tp", "2"]},
        workload={"flags": ["--num-rollout"]},
        candidates=[
            {
                "id": "A1",
                "title": "x",
                "remove": ["--offload"],
                "set": {"--lr": "2e-6"},
                "add": {"--flash": True},
                "add_after": "--num-rollout",
            }
        ],
    )
    plan = build_plan(load_spec(path))
    base, a1 = plan.arms
    assert base.argv == ("python3", "-m", "wl", "--num-rollout", "20", "--offload", "--lr=1e-6", "--tp", "2")
    assert a1.argv == ("python3", "-m", "wl", "--num-rollout", "20", "--flash", "--lr=2e-6", "--tp", "2")
    assert plan.launch_script(a1, 1) is None and plan.command(a1, 1) == list(a1.argv)
    assert a1.recipe_text is None and a1.recipe_file == "recipe.json"
    assert a1.diff == unified_diff(argv_text(base.argv), argv_text(a1.argv), "recipe.json")
    assert '-  "--offload",\n' in a1.diff


def test_dry_run_description(tmp_path):
    from reportgen.plan.bash import effective_command
    from reportgen.plan.show import describe_plan

    plan = build_plan(load_spec(write_experiment(tmp_path)))
    text = describe_plan(plan, runs_root=tmp_path / "runs")
    assert text.startswith("plan for qwen3-vl-offload: 4 formal arms x 1 repeats (sequential), 2 profile arms")
    copy = plan.launch_script(plan.arm("A2"), 1)
    assert (
        f"launch: bash {copy}  (the patched copy beside the original; kept as {tmp_path}/runs/qwen3-vl-offload/A2/1/recipe.sh)\n"
        in text
    )
    assert "== A2: A1 and no recompute [candidate; edits from: A1 -> A2] ==" in text
    assert plan.arm("A2").diff.rstrip("\n") in text
    assert "diff: none (the recipe as it is)" in text
    assert "run order:\n  1. baseline/1\n  2. A1/1\n" in text and "  6. profile-A1/1\n" in text
    # the static effective command expands arrays in place
    eff = effective_command(plan.arm("A3").recipe_text)
    assert eff[:3] == ["ray", "job", "submit"]
    i = eff.index("--max-tokens-per-gpu")
    assert eff[i + 1] == "8192" and "--optimizer-cpu-offload" not in eff
    assert eff[-2:] == ["--seed", "1234"]
    assert "effective command (static): ray job submit" in text
