"""Credential flag values (Relax's `--wandb-key`, any `--*-token`/`--*-secret`/`--*-password`)
are replaced in published argv and recipe text; data-column flags (`--input-key`) and counts
(`--max-tokens-per-gpu`) are not."""

from __future__ import annotations

import pytest

from reportgen.capture.redact import (
    REDACTED,
    is_secret_flag,
    redact_argv,
    redact_argv_mapping,
    redact_command_text,
    redact_published,
)
from reportgen.plan.bash import effective_command


@pytest.mark.parametrize(
    "flag",
    ["--wandb-key", "--hf-token", "--api-secret", "--db-password", "--wandb-api-key", "wandb_key", "--openai-apikey"],
)
def test_credential_flags(flag: str) -> None:
    assert is_secret_flag(flag)


@pytest.mark.parametrize(
    "flag",
    [
        "--input-key",
        "--label-key",
        "--multimodal-keys",
        "--max-tokens-per-gpu",
        "--calculate-per-token-loss",
        "--rollout-stop-token-ids",
        "--tokenizer-name",
        "--eval-reward-key",
        "--lr",
    ],
)
def test_ordinary_flags(flag: str) -> None:
    assert not is_secret_flag(flag)


def test_text_forms() -> None:
    text = (
        "   --wandb-key sk-live-abcdef \\\n   --input-key prompt\n"
        "python3 train.py --hf-token=hf_abcdef --api-secret 'a b c' --wandb-key ${WANDB_KEY}\n"
        "export WANDB_API_KEY=sk-env-123456\n"
        'argv = ["python3", "--wandb-key", "sk-toml-1", "--lr", "1e-6"]\n'
        "(MegatronTrainRayActor pid=1)   wandb_key ...................................... sk-dump-2\n"
        "  wandb_key ....................................... None\n"
        "-   --wandb-key sk-diff-3\n"
    )
    out = redact_command_text(text)
    for secret in ("sk-live-abcdef", "hf_abcdef", "a b c", "sk-env-123456", "sk-toml-1", "sk-dump-2", "sk-diff-3"):
        assert secret not in out, secret
    assert "--input-key prompt" in out and "--wandb-key ${WANDB_KEY}" in out and "--api-secret '<redacted>'" in out
    assert "wandb_key ....................................... None" in out and '"--lr", "1e-6"' in out
    assert redact_command_text(out) == out  # idempotent
    plain = "python3 -m relax.entrypoints.train --max-tokens-per-gpu 8192 --lr 1e-6 > out.log 2>&1\n"
    assert redact_command_text(plain) == plain
    freeze = "keyring==25.6.0\ntokenizers==0.21.1\nTOKENIZERS_PARALLELISM=false\n"  # pip freeze, env: kept
    assert redact_command_text(freeze) == freeze


def test_argv_mapping_and_documents() -> None:
    assert redact_argv(["python3", "--wandb-key", "sk", "--x", "--hf-token=abc"]) == [
        "python3",
        "--wandb-key",
        REDACTED,
        "--x",
        f"--hf-token={REDACTED}",
    ]
    assert redact_argv_mapping({"--wandb-key": "sk", "--hf-token": None, "--input-key": "prompt"}) == {
        "--wandb-key": REDACTED,
        "--hf-token": None,
        "--input-key": "prompt",
    }
    doc = {
        "arms": [
            {"workload": {"--wandb-key": "sk-1"}, "diff": "-  --wandb-key sk-2\n", "argv": ["--wandb-key", "sk-3"]}
        ]
    }
    assert "sk-" not in repr(redact_published(doc))


def test_dry_run_effective_command_has_no_redirections() -> None:
    assert effective_command("python3 train.py --x 1 > out.log 2>&1\n") == ["python3", "train.py", "--x", "1"]
    assert effective_command("python3 t.py --a 1 >>out.log 2> err.log < in.txt\n") == ["python3", "t.py", "--a", "1"]
    piped = 'python3 -m relax.entrypoints.train --x "${A[@]}" 2>&1 | tee log/x.log\n'
    assert effective_command(piped) == ["python3", "-m", "relax.entrypoints.train", "--x", '"${A[@]}"']
    # A here-document's delimiter is not an argument either (the scanner's rule for flag values).
    heredoc = "python3 t.py --a 1 <<EOF\n{}\nEOF\n"
    assert effective_command(heredoc) == ["python3", "t.py", "--a", "1"]


def test_flag_secret_values_for_scrubbing_logs() -> None:
    from reportgen.capture.redact import flag_secret_values

    recipe = '--wandb-key sk-live-abcdef \\\n --hf-token="hf_abcdefgh" --api-secret ${S} --wandb-key short\nargv = ["--db-password", "pw-123456"]'
    assert flag_secret_values(recipe) == ["sk-live-abcdef", "hf_abcdefgh", "pw-123456"]  # longest first
