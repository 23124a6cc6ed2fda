"""Checkpoints of the embedded workload (--save, --save-interval, --load): a resumed run makes the
steps an uninterrupted one makes, and prints Megatron's and Relax's lines for the lifecycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.workloads.grpo import checkpoint
from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.train import Trainer

KEYS = ("rollout/raw_reward", "rollout/log_probs", "rollout/response_lengths", "perf/actor_train_tokens")


def _steps(trainer: Trainer, ids: range) -> list[dict]:
    return [{k: v for k, v in trainer.step(i).items() if k in KEYS} for i in ids]


def test_a_resumed_run_makes_the_steps_an_uninterrupted_one_makes(tiny_argv, tmp_path: Path, capsys) -> None:
    argv = tiny_argv + ["--rollout-batch-size", "2", "--n-samples-per-prompt", "4", "--lr", "3e-2"]
    whole = Trainer(parse_args(argv))
    expected = _steps(whole, range(6))
    whole.close()

    first = Trainer(parse_args(argv))
    assert _steps(first, range(3)) == expected[:3]
    checkpoint.save(tmp_path / "ck", 2, first.checkpoint_payload())
    first.close()
    assert checkpoint.latest(tmp_path / "ck") == 2 and (tmp_path / "ck" / "iter_0000002" / checkpoint.FILE).is_file()

    resumed = Trainer(parse_args(argv))
    got = checkpoint.load(tmp_path / "ck")
    assert got is not None
    resumed.restore(got[1], got[0])
    assert resumed.first_step == 3 and resumed.train_step == 3
    assert _steps(resumed, range(3, 6)) == expected[3:]
    resumed.close()
    out = capsys.readouterr().out
    # Megatron's lines (tests/ingest/relax_sources.md: ckpt-saved, ckpt-loaded), as ingest reads them.
    assert f"  successfully saved checkpoint from iteration       2 to {tmp_path / 'ck'} [ t 1/1, p 1/1 ]" in out
    assert f"  successfully loaded checkpoint from {tmp_path / 'ck'} [ t 1/1, p 1/1 ] at iteration 2" in out


def test_a_folder_without_checkpoint_starts_from_scratch(tmp_path: Path) -> None:
    assert checkpoint.latest(tmp_path) is None and checkpoint.load(tmp_path) is None


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--save-interval", "2"], "--save-interval needs --save DIR"),
        (["--save", "ck", "--save-interval", "0"], "--save-interval must be positive"),
    ],
)
def test_checkpoint_flags_are_checked(extra, message, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(extra)
    assert exc.value.code == 2 and message in capsys.readouterr().err
