"""Adding an executor is one module and one registration: a third executor, defined here alone (a
local one that marks what it launched), is registered by name, named by a spec's `[run] executor`
(or `--executor`), and runs a tiny campaign through `reportgen run` without any other module
knowing of it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from reportgen.cli import main
from reportgen.errors import UserError
from reportgen.execute.executor import (
    BUILT_IN,
    ExecutorKind,
    Launch,
    executor_kind,
    executor_names,
    register,
    unregister,
)
from reportgen.execute.process import LocalExecutor, LocalProcess
from reportgen.execute.runner import RunOptions, one_after_another
from reportgen.pipeline import RunRequest, run_all

from .conftest import make_experiment

NAME = "marked"


class MarkedExecutor(LocalExecutor):
    """This machine's executor, recording each launch and a marker in the workload's environment."""

    kind = NAME

    def __init__(self, address: str | None) -> None:
        super().__init__()
        self.address = address
        self.launched: list[Path] = []

    def launch(self, launch: Launch) -> LocalProcess:
        self.launched.append(launch.stdout_path.parent)
        env = {**launch.env, "REPORTGEN_TEST_EXECUTOR": f"{NAME}@{self.address}"}
        return super().launch(
            Launch(launch.command, launch.cwd, env, launch.stdout_path, launch.stderr_path, launch.capture)
        )


MADE: list[MarkedExecutor] = []


def _make(plan: Any, address: str | None) -> MarkedExecutor:
    MADE.append(MarkedExecutor(address))
    return MADE[-1]


@pytest.fixture
def marked() -> Iterator[ExecutorKind]:
    MADE.clear()
    kind = register(ExecutorKind(NAME, one_after_another(_make), summary="this machine, marked"))
    yield kind
    unregister(NAME)


def _spec(root: Path, executor: str | None) -> Path:
    return make_experiment(root, steps=2, run=None if executor is None else {"executor": executor})


def _manifests(runs: Path) -> Sequence[Mapping[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((runs / "exp").glob("*/1/manifest.json"))]


def test_a_registered_executor_runs_the_campaign_the_spec_names_it_in(tmp_path: Path, marked: ExecutorKind) -> None:
    runs = tmp_path / "runs"
    spec = _spec(tmp_path / "recipes", NAME)
    outcomes = run_all(RunRequest(spec_path=spec, options=RunOptions(runs_root=runs, profiler=False), analyze=False))
    assert [[r.status for r in o.runs] for o in outcomes] == [["complete", "complete"]]
    assert [sorted(p.parent.name for p in m.launched) for m in MADE] == [["A1", "baseline"]]
    assert [m["executor"]["kind"] for m in _manifests(runs)] == [NAME, NAME]


def test_executor_option_overrides_the_spec_and_passes_the_address(
    tmp_path: Path, marked: ExecutorKind, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    spec = _spec(tmp_path / "recipes", None)  # the spec says local
    args = ["run", str(spec), "--runs", str(runs), "--no-profiler", "--no-analyze"]
    assert main([*args, "--executor", NAME, "--address", "queue-1"]) == 0
    assert [m.address for m in MADE] == ["queue-1"]
    assert [m["executor"]["kind"] for m in _manifests(runs)] == [NAME, NAME]


def test_an_unknown_executor_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "recipes", "slurm")
    with pytest.raises(UserError, match=r"\[run\] executor 'slurm': no such executor; known: local, ray"):
        run_all(RunRequest(spec_path=spec, options=RunOptions(runs_root=tmp_path / "runs"), dry_run=True))
    assert not (tmp_path / "runs").exists()


def test_the_registry_holds_the_built_in_executors_and_refuses_a_second_of_a_name(marked: ExecutorKind) -> None:
    assert executor_names() == ("local", "marked", "ray")
    assert executor_kind("local").on_this_machine and not executor_kind("local").parallel
    assert set(BUILT_IN) == {"local", "ray"}
    with pytest.raises(ValueError, match="registered already"):
        register(ExecutorKind(NAME, one_after_another(_make)))
    with pytest.raises(ValueError, match="registered already"):
        register(ExecutorKind("local", one_after_another(_make)))


def test_an_unknown_executor_option_is_refused_before_a_dry_run(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "recipes", None)
    request = RunRequest(spec_path=spec, options=RunOptions(runs_root=tmp_path / "runs"), dry_run=True, executor="k8s")
    with pytest.raises(UserError, match=r"--executor 'k8s': no such executor; known: local, ray"):
        run_all(request)
