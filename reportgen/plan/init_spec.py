"""`reportgen init RECIPE.sh`: an experiment spec written from a recipe script (plan stage).

A newcomer has a recipe (a Relax training script, or the embedded workload's) and no spec. This
module reads the recipe the way the plan does (plan/bash.py: its flags with their values, its
trainer command) and writes a spec whose baseline is that recipe as it is:

- `[recipe]`: the script, the folder it runs from (the top of the git repository holding it, where
  a Relax recipe's `python3 -m relax...` is run from; else the recipe's folder), and the trainer's
  module (`-m MODULE` of its command: what picks its line out of the `set -x` trace);
- `[workload]`: the fixed-workload flags the recipe passes (FIXED_WORKLOAD_FLAGS: sample counts,
  lengths, temperature, seeds, KL and clip settings, learning rate; docs/relax.md says why each)
  and the step count, `--num-rollout`, its value read through the script's own defaults
  (`NUM_ROLLOUT=${NUM_ROLLOUT:-200}`);
- `[analysis]`: windows proposed from the step count (`propose_windows`: a burn-in declared before
  the campaign, then two windows);
- `[[candidates]]`: one candidate that runs the recipe again unchanged (it sets a flag to the
  value the recipe already gives it: an A/A, how noisy the machine is, and a spec every command
  accepts as written), then, commented, an example of a flag edit made from the recipe's own flags
  and the command of PR mode.

`spec_text` is pure (text in, text out); `write_spec` is the I/O edge `reportgen init` calls: it
never replaces a file (a spec already there is refused in one line, exit 2).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from reportgen.errors import UserError
from reportgen.plan.bash import effective_command, flag_occurrences
from reportgen.specfile.model import split_windows, window_toml
from reportgen.store.atomic import AlreadyExists, write_text
from reportgen.vocab import ID_PATTERN, MATHS_FLAGS, TOKEN_BUDGET_FLAG

FIXED_WORKLOAD_FLAGS: tuple[str, ...] = (
    # samples per step and their lengths
    "--num-rollout",
    "--rollout-batch-size",
    "--n-samples-per-prompt",
    "--global-batch-size",
    "--rollout-max-response-len",
    "--rollout-max-prompt-len",
    "--rollout-temperature",
    # data, reward and model
    "--prompt-data",
    "--input-key",
    "--label-key",
    "--apply-chat-template",
    "--rm-type",
    "--hf-checkpoint",
    "--ref-load",
    # the algorithm
    "--advantage-estimator",
    "--use-kl-loss",
    "--kl-loss-coef",
    "--kl-loss-type",
    "--kl-coef",
    "--entropy-coef",
    "--eps-clip",
    "--eps-clip-high",
    "--use-tis",
    "--lr",
    "--clip-grad",
    # seeds
    "--seed",
    "--rollout-seed",
    # the embedded workload's: its model preset and device, a memory cap that emulates a smaller
    # card, fixed-length responses (docs/workload.md)
    "--preset",
    "--device",
    "--gpu-memory-cap-gib",
    "--rollout-ignore-eos",
)
"""Flags that define the work a step does (docs/relax.md, "Which flags are the fixed workload"):
`reportgen init` lists those a recipe passes in `[workload] flags`, where no candidate may edit them."""

STEPS_FLAG = "--num-rollout"
OFFLOAD_FLAGS = ("--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer")
MIN_STEPS = 8
_ASSIGN = re.compile(r"^\s*(?:export\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\S*)\s*(?:#.*)?$")
_DEFAULTED = re.compile(r"^\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*):?[-=](?P<default>[^}]*)\}$")
_REFERENCE = re.compile(r"^\$\{?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}?$")
_PLAIN = re.compile(r"^[A-Za-z0-9_.:/+-]+$")  # a value shlex.quote leaves as it is


def propose_windows(steps: int) -> tuple[int, list[tuple[str, int, int]]]:
    """(burn-in, windows) for runs of `steps` steps: the first half of the run is burn-in, the rest
    two windows of equal length (48 steps: steps 0-23 burn-in, W1 24-35, W2 36-47).

    Why half: on the committed GPU showcases an arm settled as late as step 23 of 48 (A3, smaller
    micro-batches), and only a burn-in declared before the campaign holds the error rate (moving a
    window's start to where an arm seemed to settle decided falsely in 18.6 % of simulated campaigns;
    issue 43). A campaign's own profile runs can tell a shorter one; this is the safe start."""
    if steps < MIN_STEPS:
        raise UserError(
            f"{steps} steps a run are too few for a burn-in and two windows; give the recipe at least {MIN_STEPS} "
            f"({STEPS_FLAG}), or pass --steps N"
        )
    burn_in = steps // 2
    return burn_in, split_windows(burn_in, steps, 2)


def script_defaults(text: str) -> dict[str, str]:
    """Each variable's value as the script sets it at top level: `NAME=value`, or the default of
    `NAME=${NAME:-default}` (what runs when the environment does not set it). Later lines win."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _ASSIGN.match(line)
        if not m:
            continue
        value = m.group("value").strip("'\"")
        d = _DEFAULTED.match(value)
        if d and d.group("name") == m.group("name"):
            value = d.group("default")
        if "$" not in value and "`" not in value:
            out[m.group("name")] = value
    return out


def resolved(raw: str, defaults: dict[str, str]) -> str | None:
    """A flag's value as the recipe runs it by default: `48` for `${NUM_ROLLOUT}` with
    `NUM_ROLLOUT=${NUM_ROLLOUT:-48}` above; None when it cannot be known from the script."""
    raw = raw.strip("'\"")
    if "$" not in raw and "`" not in raw:
        return raw
    d = _DEFAULTED.match(raw)
    if d:
        return defaults.get(d.group("name"), d.group("default"))
    r = _REFERENCE.match(raw)
    return defaults.get(r.group("name")) if r else None


@dataclass(frozen=True)
class RecipeFacts:
    """What `reportgen init` reads from a recipe."""

    entrypoint: str | None  # the trainer's module, `-m MODULE`
    steps: int | None  # --num-rollout as it runs by default
    steps_raw: str | None  # as written
    fixed: tuple[str, ...]  # FIXED_WORKLOAD_FLAGS the recipe passes, in its order
    restate: tuple[str, str] | None  # a flag the A/A candidate sets to its own value, and that value
    flags: tuple[str, ...]  # every flag of the trainer's command, in order
    steps_given: bool = False  # the step count came from `reportgen init --steps`, not the recipe


def read_recipe(text: str) -> RecipeFacts:
    command = effective_command(text)
    module = next((command[i + 1] for i, w in enumerate(command[:-1]) if w == "-m"), None)
    trainer = command[command.index("-m") + 2 :] if module is not None else command
    occurrences = flag_occurrences(text)
    words = {w.split("=", 1)[0] for w in trainer}
    mine = [o for o in occurrences if o.flag in words and o.flag.startswith("--")]
    defaults = script_defaults(text)
    steps_raw = next((o.values[0] for o in mine if o.flag == STEPS_FLAG and len(o.values) == 1), None)
    steps_text = resolved(steps_raw, defaults) if steps_raw is not None else None
    steps = int(steps_text) if steps_text is not None and steps_text.isdigit() else None
    passed = {o.flag for o in occurrences}
    fixed = tuple(f for f in FIXED_WORKLOAD_FLAGS if f in passed)  # in the list's order: grouped by what they fix
    movable = [
        o
        for o in mine
        if o.flag not in FIXED_WORKLOAD_FLAGS
        and o.flag not in MATHS_FLAGS
        and len(o.values) == 1
        and _PLAIN.match(o.values[0])
        and sum(p.flag == o.flag for p in occurrences) == 1
    ]
    movable.sort(key=lambda o: o.flag != TOKEN_BUDGET_FLAG)  # the token budget first: a number any reader knows
    restate = (movable[0].flag, movable[0].values[0]) if movable else None
    return RecipeFacts(
        module.strip("'\"") if module else None,
        steps,
        steps_raw,
        fixed,
        restate,
        tuple(dict.fromkeys(o.flag for o in mine)),
    )


def experiment_name(recipe: Path) -> str:
    """The recipe's name as an experiment name (a folder under runs/)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", recipe.stem).strip("-.") or "experiment"
    name = name[:64]
    return name if ID_PATTERN.match(name) else "experiment"


def _q(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def _example(facts: RecipeFacts) -> list[str]:
    """A commented flag-edit candidate made from the recipe's own flags."""
    present = [f for f in OFFLOAD_FLAGS if f in facts.flags]
    if present:
        edit = f"remove = [{', '.join(_q(f) for f in present)}]"
        title, why = (
            "Remove the optimizer CPU offload",
            "The optimizer state fits on the GPUs: the host round trip is overhead.",
        )
    elif TOKEN_BUDGET_FLAG in facts.flags:
        edit = f"set = {{ {_q(TOKEN_BUDGET_FLAG)} = 8192 }}"
        title, why = (
            "A smaller token budget",
            "Smaller micro-batches: less memory per step, more overhead per micro-batch.",
        )
    else:
        edit = 'set = { "--your-flag" = "its new value" }'
        title, why = "Your change", "Why it should be faster, doing the same work."
    return [
        "# A flag edit: a candidate is the recipe with flags removed, set or added (docs/recipes.md); list",
        "# it in place of AA1, or after it, and `reportgen run --dry-run` shows its diff and command.",
        "# [[candidates]]",
        '# id = "A1"',
        f"# title = {_q(title)}",
        f"# rationale = {_q(why)}",
        f"# {edit}",
    ]


def spec_text(facts: RecipeFacts, *, name: str, script: str, workdir: str, recipe_label: str, spec_label: str) -> str:
    """The spec, as TOML with comments. `script` and `workdir` are relative to the spec's folder;
    `recipe_label` and `spec_label` name the files in the comments as the user typed them."""
    if facts.steps is None:
        raise UserError(
            f"{recipe_label}: cannot tell how many steps a run makes ({STEPS_FLAG} "
            f"{facts.steps_raw or 'is not passed'}); pass --steps N"
        )
    if facts.restate is None:
        raise UserError(
            f"{recipe_label}: no flag outside the fixed workload with a plain value to build the A/A candidate on; "
            "write the spec by hand (docs/formats/spec.md)"
        )
    burn_in, windows = propose_windows(facts.steps)
    flag, value = facts.restate
    lines = [
        f"# Written by `reportgen init {recipe_label}`.",
        "# The baseline is the recipe as it is; AA1 runs it again unchanged (an A/A: how noisy this machine",
        "# is, what `reportgen plan-power` sizes the next campaign from). Replace AA1 with your change (the",
        "# commented example below), or measure a code change in PR mode (the last lines). What would run,",
        "# arm by arm, without running anything:",
        f"#   reportgen run --dry-run {spec_label}",
        "schema_version = 1",
        f"name = {_q(name)}",
        f"title = {_q(f'{name}: the recipe against itself (A/A)')}",
        'hypothesis = """',
        "AA1 changes nothing that runs, so it must come out neither accepted nor rejected: the spread of its",
        "pairs is this machine's run-to-run noise.",
        '"""',
        "",
        "[recipe]",
        f"script = {_q(script)}",
        f"workdir = {_q(workdir)}  # where the recipe runs from",
    ]
    if facts.entrypoint:
        lines.append(f"entrypoint = {_q(facts.entrypoint)}  # picks the trainer's command out of the `set -x` trace")
    lines += [
        "",
        "[workload]",
        "# The work a step does, as the recipe sets it: no candidate may change these flags (docs/relax.md).",
        f"steps = {facts.steps}  # "
        + (
            "as `reportgen init --steps` was told"
            if facts.steps_given
            else f"{STEPS_FLAG} {facts.steps_raw} in the recipe"
        ),
        "flags = [",
        *(f"  {_q(f)}," for f in facts.fixed),
        "]",
        "",
        "[run]",
        "# Pairs of runs, baseline and candidate back to back, until each candidate is decided (docs/analysis.md).",
        'until = "decided"',
        "",
        "[analysis]",
        f"# Windows from the {facts.steps} steps: the first half is burn-in, declared before the campaign (an arm may",
        "# settle late: on the GPU showcases one did at step 23 of 48), the rest two windows.",
        f"warmup_steps = {burn_in}",
        "windows = [",
        *(f"  {window_toml(*w)}," for w in windows),
        "]",
        "",
        "[[candidates]]",
        'id = "AA1"',
        'title = "The recipe again, unchanged (A/A)"',
        f"rationale = {_q(f'Sets {flag} to the value the recipe gives it ({value}): nothing that runs changes.')}",
        f"set = {{ {_q(flag)} = {_q(value)} }}",
        "",
        *_example(facts),
        "#",
        "# PR mode: this recipe at two revisions of its repository, one campaign, no candidate to write:",
        f"#   reportgen run {spec_label} --baseline-ref main --candidate-ref HEAD",
        "",
    ]
    return "\n".join(lines)


def _repo_top(folder: Path) -> Path | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 and done.stdout.strip() else None


def _relative(path: Path, start: Path) -> str:
    rel = os.path.relpath(path, start)
    return "." if rel == "." else Path(rel).as_posix()


def default_spec_path(recipe: Path, cwd: Path) -> Path:
    """`<recipe's name>.toml` in the working folder."""
    return cwd / f"{experiment_name(recipe)}.toml"


def write_spec(recipe: Path, out: Path | None = None, *, steps: int | None = None, cwd: Path | None = None) -> Path:
    """Write the spec for `recipe` at `out` (default: `<recipe's name>.toml` in `cwd`); never over an
    existing file. Returns the path written."""
    cwd = Path(cwd or Path.cwd())
    recipe_label = str(recipe)
    recipe = (cwd / recipe).resolve() if not Path(recipe).is_absolute() else Path(recipe)
    if not recipe.is_file():
        raise UserError(
            f"{recipe_label}: no such recipe script; pass the path of a bash recipe (a Relax training script)"
        )
    target = Path(out) if out is not None else default_spec_path(recipe, cwd)
    target = target if target.is_absolute() else cwd / target
    spec_label = _relative(target, cwd) if target.resolve().is_relative_to(cwd.resolve()) else str(target)
    if target.exists():
        raise UserError(f"{spec_label}: a file is already there; pass --out OTHER.toml, or remove it to write it again")
    text = recipe.read_text(encoding="utf-8", errors="replace")
    facts = read_recipe(text)
    if steps is not None:
        facts = dataclasses.replace(facts, steps=steps, steps_given=True)
    folder = target.resolve().parent
    workdir = _repo_top(recipe.parent) or recipe.parent
    body = spec_text(
        facts,
        name=experiment_name(recipe),
        script=_relative(recipe, folder),
        workdir=_relative(workdir, folder),
        recipe_label=recipe_label,
        spec_label=spec_label,
    )
    folder.mkdir(parents=True, exist_ok=True)
    try:
        write_text(target, body, exclusive=True)
    except AlreadyExists:
        raise UserError(
            f"{spec_label}: a file is already there; pass --out OTHER.toml, or remove it to write it again"
        ) from None
    return target
