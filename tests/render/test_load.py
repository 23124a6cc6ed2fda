"""The site's loader applies today's publishing rule to every run folder, however old: checked on the
committed showcases under runs/, recorded under looser rules (the machine's whole environment, cut
in the files since by scripts/publish_command_env.py; MAX_TOKENS_PER_GPU redacted as if it were a
credential)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.capture.redact import REDACTED, is_published, is_secret_name, recipe_variables
from reportgen.render.load import published_command, read_spec_env, spec_env_names
from reportgen.store import layout
from reportgen.store.experiment import load_experiment_record
from reportgen.store.run_folder import read_run_folder
from tests.helpers import committed_experiments

EXPERIMENTS = [p for p in committed_experiments() if (p / layout.ANALYSIS).is_file()]


@pytest.mark.parametrize("exp_dir", EXPERIMENTS, ids=lambda p: p.name)
def test_committed_runs_publish_only_the_allow_list(exp_dir: Path) -> None:
    spec = exp_dir / layout.EXPERIMENT_SPEC
    own = spec_env_names(spec.read_text())
    record = load_experiment_record(exp_dir)
    spec_env = read_spec_env(spec, record.profile if record else None)
    assert spec_env.recipe, "the stored spec sets the recipe's environment"
    seen = 0
    for arm, repeat, run_dir in layout.iter_runs(exp_dir):
        stored = read_run_folder(run_dir, arm, repeat).command
        command = published_command(stored, run_dir, arm, own, spec_env)
        assert command is not None and command.env_total is not None
        env = command.env
        assert "OLDPWD" not in env and not any(k.startswith("NV_") for k in env)
        reads = recipe_variables((run_dir / "recipe.sh").read_text()) if (run_dir / "recipe.sh").is_file() else set()
        assert [k for k in env if not is_published(k, own | reads)] == []
        assert command.env_total > len(env), "the machine's environment was cut"
        # no value redacted under a name that is no credential
        assert [k for k, v in env.items() if v == REDACTED and not is_secret_name(k)] == []
        assert env.get("MAX_TOKENS_PER_GPU") == spec_env.of(arm)["MAX_TOKENS_PER_GPU"]
        seen += 1
    assert seen >= 4
