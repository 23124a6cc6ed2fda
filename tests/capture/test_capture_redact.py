"""Redaction by name and by value."""

from __future__ import annotations

import json

import pytest

from reportgen.capture.redact import (
    REDACTED,
    is_published,
    is_secret_name,
    published_env,
    recipe_variables,
    redact_env,
    redact_obj,
    redact_text,
    secret_values,
)


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "WANDB_API_KEY",
        "CLEARML_API_ACCESS_KEY",
        "CLEARML_API_SECRET_KEY",
        "CLEARML_API_HOST_EXTRA",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "GITHUB_TOKEN",
        "MY_API_KEY",
        "db_password",
        "SSH_PASSPHRASE",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "BASIC_AUTH",
        "SESSION_COOKIE",
        "PRIVATE_REPO_URL",
        "MYSQL_PWD",
        "SENTRY_DSN",
        "MY_APIKEY",
        "GITHUB_PAT",
        "DB_AUTHTOKEN",
    ],
)
def test_secret_names_are_recognised(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "PWD",
        "CUDA_VISIBLE_DEVICES",
        "NCCL_DEBUG",
        "TOKENIZERS_PARALLELISM",
        "PYTHONHASHSEED",
        "MASTER_ADDR",
        "RAY_ADDRESS",
        "OMP_NUM_THREADS",
        # credential words are whole words of the name, not substrings of other words:
        "MAX_TOKENS_PER_GPU",  # the token budget a candidate changes (A3 of the default experiment)
        "KEYBOARD_LAYOUT",
        "NUM_KEYS",
        "AUTHOR",
    ],
)
def test_ordinary_names_are_kept(name):
    assert not is_secret_name(name)


def test_redact_env_replaces_values_and_url_passwords():
    env = {
        "HF_TOKEN": "hf_secret_value_123",
        "PATH": "/usr/bin",
        "HTTPS_PROXY": "http://alice:pr0xyPassw0rd@proxy:3128",
    }
    out = redact_env(env)
    assert out["HF_TOKEN"] == REDACTED
    assert out["PATH"] == "/usr/bin"
    assert out["HTTPS_PROXY"] == f"http://alice:{REDACTED}@proxy:3128"
    assert env["HF_TOKEN"] == "hf_secret_value_123"  # input untouched


def test_redact_env_masks_secrets_embedded_in_other_values():
    env = {
        "HF_TOKEN": "hf_secret_value_123",
        "RAY_RUNTIME_ENV_JSON": '{"env_vars": {"HF_TOKEN": "hf_secret_value_123"}}',
    }
    out = redact_env(env)
    assert out["RAY_RUNTIME_ENV_JSON"] == '{"env_vars": {"HF_TOKEN": "<redacted>"}}'


def test_secret_values_longest_first_and_short_values_skipped():
    env = {"A_TOKEN": "abcdefgh", "B_TOKEN": "abcdefghijkl", "C_KEY": "12345", "D": "x://u:longpassword@h"}
    vals = secret_values(env)
    assert vals == ["abcdefghijkl", "longpassword", "abcdefgh"]


def test_redact_text_replaces_every_occurrence():
    text = "run --token hf_secret_value_123 again hf_secret_value_123; pip git+https://ghp_abcdefghijklmnopqrstuv@github.com/x/y"
    out = redact_text(text + " short", ["hf_secret_value_123", "short"])
    assert "hf_secret_value_123" not in out
    assert "ghp_abcdefghijklmnopqrstuv" not in out
    assert out.count(REDACTED) == 3
    assert out.endswith(" short")  # values under 6 characters are not searched for
    assert "run --token" in out


def test_redact_obj_covers_keys_and_values_before_json_escaping():
    secret = 'pa"ss\\word99'
    obj = {"cmd": ["x", f"--pw={secret}"], secret: 1, "n": 3}
    out = redact_obj(obj, [secret])
    dumped = json.dumps(out)
    assert secret not in dumped and json.dumps(secret)[1:-1] not in dumped
    assert out["n"] == 3 and out["cmd"][1] == f"--pw={REDACTED}"


def test_the_published_environment_is_an_allow_list():
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/alice",
        "OLDPWD": "/home/alice/work",
        "PYTHONPATH": "/home/alice/reportgen",
        "SSL_CERT_FILE": "/etc/ssl/ca.pem",
        "CUDA_VISIBLE_DEVICES": "0",
        "NCCL_DEBUG": "WARN",
        "TORCH_CUDA_ARCH_LIST": "9.0",
        "PYTORCH_CUDA_ALLOC_CONF": f"expandable_segments:True,token={'x' * 12}",
        "HF_TOKEN": "x" * 12,
        "MAX_TOKENS_PER_GPU": "896",
        "PRESET": "gpu-small",
        "REPORTGEN_ARM": "A1",
        "REPORTGEN_RUN_DIR": "/home/alice/runs/exp/A1/1",
    }
    out = published_env(env, own=recipe_variables("--max-tokens-per-gpu ${MAX_TOKENS_PER_GPU}", "--preset $PRESET"))
    assert set(out) == {
        "CUDA_VISIBLE_DEVICES",
        "NCCL_DEBUG",
        "TORCH_CUDA_ARCH_LIST",
        "PYTORCH_CUDA_ALLOC_CONF",
        "HF_TOKEN",
        "MAX_TOKENS_PER_GPU",
        "PRESET",
        "REPORTGEN_ARM",
    }
    assert out["MAX_TOKENS_PER_GPU"] == "896" and out["PRESET"] == "gpu-small"
    assert out["HF_TOKEN"] == REDACTED and "x" * 12 not in out["PYTORCH_CUDA_ALLOC_CONF"]


def test_a_cuda_images_package_variables_are_not_published():
    # A CUDA container image names its own packages in dozens of NV_* variables; the two the container
    # runtime reads to choose what the run sees stay.
    env = {
        "NV_LIBCUBLAS_VERSION": "13.1.0.3-1",
        "NV_CUDNN_PACKAGE_NAME": "libcudnn9-cuda-13",
        "NVIDIA_REQUIRE_CUDA": "cuda>=13.0 brand=tesla,driver>=535",
        "NVIDIA_PRODUCT_NAME": "CUDA",
        "NVIDIA_VISIBLE_DEVICES": "0",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NVSHMEM_DISABLE_NVLS": "1",
    }
    assert set(published_env(env)) == {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVSHMEM_DISABLE_NVLS"}
    assert all(is_published(k) == (k in published_env(env)) for k in env)


def test_a_value_an_older_rule_redacted_is_shown_as_the_spec_set_it():
    # Recorded when the rule took MAX_TOKENS_PER_GPU for a credential (substring TOKEN): the spec's value
    # is what the runner put in the environment. A credential stays redacted whatever the spec says.
    env = {"MAX_TOKENS_PER_GPU": REDACTED, "HF_TOKEN": REDACTED, "PRESET": "gpu-small"}
    spec = {"MAX_TOKENS_PER_GPU": "896", "HF_TOKEN": "hf_" + "x" * 20, "PRESET": "cpu-tiny"}
    out = published_env(env, own=spec, set_by_spec=spec)
    assert out == {"MAX_TOKENS_PER_GPU": "896", "HF_TOKEN": REDACTED, "PRESET": "gpu-small"}
    # a value recorded in the clear is the run's, never overwritten by the spec
    assert published_env({"MAX_TOKENS_PER_GPU": "640"}, own=spec, set_by_spec=spec) == {"MAX_TOKENS_PER_GPU": "640"}
