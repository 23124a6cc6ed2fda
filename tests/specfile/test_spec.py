"""The spec loader: valid specs load; each malformed spec gets one line naming file, key and fix."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from reportgen.cli import main
from reportgen.errors import UserError
from reportgen.specfile import AnalysisSpec, load_spec
from reportgen.specfile.model import split_windows, window_toml

RECIPE = "#!/bin/bash\nset -ex\nARGS=(\n   --num-rollout 4\n   --lr 1e-6\n)\npython3 -c pass ${ARGS[@]}\n"

VALID = """
name = "demo"
title = "Demo experiment"
hypothesis = "removing offload is faster"

[recipe]
script = "recipe.sh"

[workload]
flags = ["--num-rollout"]
steps = 4

[analysis]
warmup_steps = 1
windows = [{name = "W1", start = 1, end = 2}, {name = "W2", start = 3, end = 3}]

[[candidates]]
id = "A1"
title = "Lower the learning rate"
set = {"--lr" = 1e-7}

[[candidates]]
id = "A2"
title = "A1 plus no lr flag"
base = "A1"
add = {"--micro-batch-size" = 2}

[profiles.gpu]
workload = {steps = 8}
"""


def write(tmp_path: Path, text: str, recipe: bool = True) -> Path:
    if recipe:
        (tmp_path / "recipe.sh").write_text(RECIPE)
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def test_valid_spec_loads_with_defaults(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, VALID))
    assert spec.name == "demo"
    assert spec.arm_ids() == ["baseline", "A1", "A2"]
    assert spec.run.repeats == 1 and spec.run.order == "sequential"
    assert spec.analysis.primary == "perf/step_resp_token_per_s"
    assert spec.candidates[0].edits().set == (("--lr", ("1e-07",)),)
    assert spec.candidates[1].edits().add == (("--micro-batch-size", ("2",)),)


def test_profile_overlay_merges_tables_and_renames(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, VALID), profile="gpu")
    assert spec.name == "demo-gpu"
    assert spec.workload.steps == 8
    assert spec.workload.flags == ["--num-rollout"]  # untouched keys of a merged table stay
    assert spec.profile == "gpu"


def test_section_names_where_the_spec_that_ran_holds_a_table(tmp_path: Path) -> None:
    """A next step names the section to edit: the profile's when the profile restates it (its
    [[profiles.gpu.candidates]] replace the top-level list whole), else the top-level one."""
    plain = load_spec(write(tmp_path, VALID))
    assert (plain.section("candidates"), plain.section("run")) == ("[[candidates]]", "[run]")
    gpu = load_spec(write(tmp_path, VALID), profile="gpu")
    assert (gpu.section("workload"), gpu.section("candidates"), gpu.section("run")) == (
        "[profiles.gpu.workload]",
        "[[candidates]]",
        "[run]",
    )
    restated = VALID + '\n[[profiles.gpu.candidates]]\nid = "A1"\ntitle = "t"\nset = {"--lr" = 1e-8}\n'
    gpu = load_spec(write(tmp_path, restated), profile="gpu")
    assert gpu.section("candidates") == "[[profiles.gpu.candidates]]" and gpu.section("analysis") == "[analysis]"


def replace(old: str, new: str) -> str:
    assert old in VALID, old
    return VALID.replace(old, new, 1)


MALFORMED = [
    ("not toml", "name = \n", "not valid TOML"),
    ("missing name", replace('name = "demo"\n', ""), "name: required key is missing"),
    ("bad name", replace('name = "demo"', 'name = "demo exp/1"'), "name: expected letters, digits"),
    ("unknown top key", "colour = 1\n" + VALID, "colour: unknown key"),
    ("typo in a profile", VALID + "\ncolour = 1\n", "[profiles.gpu] colour: unknown key"),
    (
        "unknown nested key",
        replace('script = "recipe.sh"', 'script = "recipe.sh"\nscirpt = 1'),
        "recipe.scirpt: unknown key",
    ),
    ("no recipe source", replace('script = "recipe.sh"', 'workdir = "."'), "recipe: give exactly one of 'script'"),
    ("both recipe sources", replace('script = "recipe.sh"', 'script = "recipe.sh"\nargv = ["x"]'), "give exactly one"),
    ("recipe missing", replace('script = "recipe.sh"', 'script = "nope.sh"'), "recipe.script:"),
    ("bad repeats", VALID + "\n[run]\nrepeats = 0\n", "run.repeats: Input should be greater than or equal to 1"),
    ("bad order", VALID + '\n[run]\norder = "random"\n', "run.order: Input should be 'sequential' or 'interleaved'"),
    ("bad timeout", VALID + "\n[run]\ntimeout_s = -5\n", "run.timeout_s"),
    ("window in warm-up", replace("start = 1, end = 2}", "start = 0, end = 2}"), "inside the warm-up"),
    ("window reversed", replace("start = 3, end = 3}", "start = 3, end = 2}"), "end (2) is before start (3)"),
    ("windows overlap", replace("start = 3, end = 3}", "start = 2, end = 3}"), "overlaps the window before it"),
    ("bad direction", replace("warmup_steps = 1", 'warmup_steps = 1\ndirection = "up"'), "analysis.direction"),
    ("duplicate candidate", replace('id = "A2"', 'id = "A1"'), "candidate id 'A1' is used twice"),
    ("unknown base", replace('base = "A1"', 'base = "A9"'), "base 'A9' is not 'baseline'"),
    ("reserved id", replace('id = "A1"', 'id = "baseline"'), "'baseline' is reserved"),
    ("empty candidate", replace('set = {"--lr" = 1e-7}', ""), "candidate A1 changes nothing"),
    (
        "fixed flag edited",
        replace('set = {"--lr" = 1e-7}', 'remove = ["--num-rollout"]'),
        "fixed-workload flag --num-rollout",
    ),
    ("not a flag", replace('set = {"--lr" = 1e-7}', 'remove = ["lr"]'), "expected a flag such as"),
    ("false switch", replace('set = {"--lr" = 1e-7}', 'set = {"--lr" = false}'), "list the flag under 'remove'"),
    ("no candidates", VALID.split("[[candidates]]")[0], "no candidates"),
    ("unknown profile", VALID, "--profile tpu: no [profiles.tpu] table (profiles: gpu)"),
    ("schema version", "schema_version = 2\n" + VALID, "schema_version: Input should be 1"),
    ("min effect type", replace("warmup_steps = 1", 'warmup_steps = 1\nmin_effect = "5%"'), "analysis.min_effect"),
]


@pytest.mark.parametrize("label,text,expected", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_spec_names_the_problem(tmp_path: Path, label: str, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UserError) as info:
        load_spec(path, profile="tpu" if label == "unknown profile" else None)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path)), message
    assert expected in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("label,text,expected", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_spec_through_the_cli_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, text: str, expected: str
) -> None:
    path = write(tmp_path, text)
    runs = tmp_path / "runs"
    argv = ["run", str(path), "--runs", str(runs)] + (["--profile", "tpu"] if label == "unknown profile" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("reportgen: error: ") and expected in err, err
    assert not runs.exists()


def test_missing_spec_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="spec file not found"):
        load_spec(tmp_path / "absent.toml")


def test_windows_after_a_burn_in_split_the_steps_left_and_read_back_as_written() -> None:
    assert split_windows(24, 48, 2) == [("W1", 24, 35), ("W2", 36, 47)]
    assert split_windows(4, 9, 2) == [("W1", 4, 5), ("W2", 6, 8)]  # the last window takes what is left
    assert split_windows(10, 47, 3) == [("W1", 10, 21), ("W2", 22, 33), ("W3", 34, 46)]
    text = f"windows = [{', '.join(window_toml(*w) for w in split_windows(24, 48, 2))}]"
    analysis = AnalysisSpec.model_validate(tomllib.loads(text))
    assert [(w.name, w.start, w.end) for w in analysis.windows] == [("W1", 24, 35), ("W2", 36, 47)]
