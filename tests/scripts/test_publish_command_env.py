"""scripts/publish_command_env.py: an old command.json that kept the machine's whole environment is
cut to the allow-list the runner writes with today (reportgen.capture.redact.published_env), and
every committed run folder is already so (issue 46: 44 files of four committed experiments held the
105 variables of the lent machines)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from reportgen.capture.redact import REDACTED
from reportgen.store import layout
from reportgen.store.models import RunCommand
from tests.helpers import REPO, committed_experiments, write_spec

SCRIPT = REPO / "scripts" / "publish_command_env.py"


def _script():
    spec = importlib.util.spec_from_file_location("publish_command_env", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# What a lent machine's environment held beside the run's own: a shell's, the container's, the image's.
MACHINE = {
    "OLDPWD": "/work/main/.whl",
    "CONTAINER_NAME": "lent-h200-17",
    "NV_CUDNN_PACKAGE": "libcudnn9-cuda-13=9.13.0.50-1",
    "NVIDIA_REQUIRE_CUDA": "cuda>=13.0",
    "HOME": "/root",
    "SHLVL": "2",
    "PATH": "/opt/torch/.venv/bin:/usr/bin",
    "HF_TOKEN": "hf_abcdefghijklmnop",
    "CUDA_HOME": "/usr/local/cuda",
    "NVIDIA_VISIBLE_DEVICES": "0",
    "REPORTGEN_RUN_DIR": "/work/main/runs/exp/A1/1",
    "PRESET": "gpu-small",
    "MAX_TOKENS_PER_GPU": REDACTED,  # an older rule took the token budget for a credential
}


def _old_run(tmp_path: Path) -> tuple[Path, Path]:
    exp = tmp_path / "runs" / "exp"
    spec = write_spec(
        exp / layout.EXPERIMENT_SPEC,
        name="exp",
        title="t",
        recipe={"script": "r.sh", "env": {"PRESET": "gpu-small", "MAX_TOKENS_PER_GPU": "896"}},
        candidates=[{"id": "A1", "title": "a", "set": {"--lr": 1}}],
    )
    run = exp / "A1" / "1"
    run.mkdir(parents=True)
    (run / layout.RECIPE_SCRIPT).write_text("python -m x --max-tokens-per-gpu ${MAX_TOKENS_PER_GPU}\n")
    # schema 0: no schema_version, no kind, no env_total, the whole environment
    (run / layout.COMMAND).write_text(
        json.dumps({"command": ["bash", "/work/main/r.sh"], "cwd": "/work/main", "env": MACHINE})
    )
    return spec.parent, run / layout.COMMAND


def test_an_old_command_json_is_cut_to_the_allow_list_once(tmp_path: Path) -> None:
    script = _script()
    exp, path = _old_run(tmp_path)
    assert script.publish_experiment(exp, write=False) == [path]  # named, not written
    assert "OLDPWD" in json.loads(path.read_text())["env"]
    assert script.publish_experiment(exp) == [path]
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 1 and raw["kind"] == "reportgen.command"
    assert raw["command"] == ["bash", "/work/main/r.sh"] and raw["cwd"] == "/work/main"
    assert raw["env"] == {
        "HF_TOKEN": REDACTED,
        "CUDA_HOME": "/usr/local/cuda",
        "NVIDIA_VISIBLE_DEVICES": "0",
        "PRESET": "gpu-small",
        "MAX_TOKENS_PER_GPU": "896",  # as the spec set it: no credential
    }
    assert raw["env_total"] == len(MACHINE)
    assert "hf_abcdefghijklmnop" not in path.read_text()
    before = path.read_bytes()
    assert script.publish_experiment(exp) == [] and path.read_bytes() == before  # a second pass changes nothing


@pytest.mark.parametrize("name", [p.name for p in committed_experiments()])
def test_every_committed_command_json_holds_only_what_may_be_published(name: str, committed_runs: Path) -> None:
    exp = committed_runs / name
    assert _script().publish_experiment(exp, write=False) == []
    for _arm, _repeat, run_dir in layout.iter_runs(exp):
        raw = json.loads((run_dir / layout.COMMAND).read_text())
        assert raw["schema_version"] == RunCommand.SCHEMA_VERSION and raw["env_total"] > len(raw["env"])
        assert not {"OLDPWD", "CONTAINER_NAME", "HOME", "PATH", "SHLVL"} & set(raw["env"])
        assert not [k for k in raw["env"] if k.startswith("NV_")]
