"""Credential redaction for everything capture writes (execute+capture stage).

Two layers, both applied before a byte reaches runs/:

1. By name: an environment variable whose name looks like a credential has its value replaced
   by ``<redacted>`` (`redact_env`). The rule is deliberately broad: a false positive costs a
   line of provenance, a false negative leaks a token into a published report.
2. By value: the values of those variables (and passwords embedded in URLs) are replaced
   wherever they appear in free text (`redact_text`): a command line, a git diff, pip freeze
   output, nvidia-smi output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

REDACTED = "<redacted>"

# Words of a variable name (upper-cased, split at "_"; "MAX_TOKENS_PER_GPU" is MAX, TOKENS, PER, GPU)
# that mark it as a credential. Whole words, not substrings: TOKENS (a count) and KEYS are no
# credential, and the token budget a candidate changes must stay readable.
SECRET_NAME_WORDS = frozenset(
    {
        "TOKEN",
        "KEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "COOKIE",
        "PRIVATE",
        "SESSION",
        "SIGNATURE",
        "CERT",
        "PAT",
    }
)
# Words that end a credential word run together ("APIKEY", "AUTHTOKEN", "DBPASSWORD").
SECRET_WORD_ENDINGS = ("APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "AUTHTOKEN", "PASSWORD", "PASSWD", "SECRET")
# Names that hold credentials without saying so.
SECRET_NAMES = frozenset(
    {
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "WANDB_API_KEY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "CLEARML_API_ACCESS_KEY",
        "CLEARML_API_SECRET_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "MYSQL_PWD",
        "PGPASSWORD",
        "SENTRY_DSN",
        "DATABASE_URL",
        "REDIS_URL",
        "NGC_API_KEY",
        "DOCKER_AUTH_CONFIG",
        "NETRC",
        "KAGGLE_KEY",
    }
)
SECRET_PREFIXES = ("CLEARML_API_", "WANDB_API", "AWS_SECRET", "AZURE_CLIENT_SECRET")
# Names that match a part above but are known to hold no secret and matter for a run's
# behaviour (kept so the provenance stays useful). Exact names only.
NOT_SECRET_NAMES = frozenset({"TOKENIZERS_PARALLELISM"})

# Values shorter than this are not searched for in free text: "1" or "true" would erase half
# the output. Their variables are still redacted by name.
MIN_SECRET_LEN = 6

# scheme://user:password@host -> the password part.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)(?P<pw>[^\s@/]+)(?=@)")
# scheme://token@host (a bare token as user, as in https://ghp_xxx@github.com).
_URL_TOKEN_USER = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[A-Za-z0-9_\-]{20,})(?=@)")


def is_secret_name(name: str) -> bool:
    """True when an environment variable of this name may hold a credential: a known name, a
    known prefix, or a credential word among its words (`SECRET_NAME_WORDS`)."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return False
    if upper in SECRET_NAMES or upper.startswith(SECRET_PREFIXES):
        return True
    words = [w for w in re.split(r"[^A-Z0-9]+", upper) if w]
    return any(w in SECRET_NAME_WORDS or w.endswith(SECRET_WORD_ENDINGS) for w in words)


# -- which environment variables are published ----------------------------------------------------
#
# A run's environment is the machine's: home folders, a lent machine's paths (OLDPWD, PYTHONPATH),
# its CA bundles. What explains a run's behaviour is published, nothing else: the variables of the
# frameworks it uses (CUDA, NCCL, PyTorch, ...), those the recipe sets or reads, and reportgen's.

PUBLISHED_PREFIXES = (
    "CUDA_",
    "CUDNN_",
    "CUBLAS_",
    "CUBLASLT_",
    "NCCL_",
    "NVSHMEM_",
    "NVTE_",
    "TORCH_",
    "PYTORCH_",
    "TORCHINDUCTOR_",
    "TRITON_",
    "OMP_",
    "MKL_",
    "KMP_",
    "GLOO_",
    "HF_",
    "HUGGINGFACE_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "RAY_",
    "SGLANG_",
    "VLLM_",
    "MEGATRON_",
    "RELAX_",
    "REPORTGEN_",
)
# Not `NV_` nor `NVIDIA_` as prefixes: a CUDA container image sets dozens of them (NV_LIBCUBLAS_VERSION,
# NV_CUDNN_PACKAGE_NAME, NVIDIA_REQUIRE_CUDA) that name the image's packages, not a setting of the run;
# the versions a run used are in its pip freeze and nvidia-smi files. The container runtime's two that
# choose what the run sees are kept by name.
PUBLISHED_NAMES = frozenset(
    {
        "PYTHONHASHSEED",
        "PYTHONUNBUFFERED",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
    }
)
# reportgen's own variables that hold a machine's path, not a setting.
UNPUBLISHED_NAMES = frozenset({"REPORTGEN_RUN_DIR", "REPORTGEN_TREE_STAMP", "REPORTGEN_CACHE", "REPORTGEN_RUNS"})
_REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def recipe_variables(*texts: str) -> set[str]:
    """Names a recipe (or a spec's argv) reads: every `$NAME` and `${NAME...}` in them."""
    return {m.group(1) for text in texts for m in _REFERENCE.finditer(text or "")}


def is_published(name: str, own: Iterable[str] = ()) -> bool:
    """True when a variable of this name may be published: a framework's (PUBLISHED_PREFIXES,
    PUBLISHED_NAMES) or the recipe's own (`own`), and not one of reportgen's paths."""
    return name not in UNPUBLISHED_NAMES and (
        name in own or name in PUBLISHED_NAMES or name.startswith(PUBLISHED_PREFIXES)
    )


def published_env(
    env: Mapping[str, str], own: Iterable[str] = (), *, set_by_spec: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment as it may be published: the variables `is_published` keeps, each redacted
    like `redact_env`; nothing else of the machine's environment. The one rule for every run: the
    runner applies it when it writes command.json, the site's loader again to every run folder
    whatever its age, so a rule made stricter (or a name no longer taken for a credential) reaches
    the pages of old runs too.

    `set_by_spec`: the values the spec set for this run. A value stored as `<redacted>` under a name
    that is no credential by the rule of today (an older rule took `MAX_TOKENS_PER_GPU` for one) is
    shown as the spec set it: the runner put exactly that value in the run's environment."""
    keep = set(own)
    restored = {
        k: str(v)
        for k, v in (set_by_spec or {}).items()
        if env.get(k) == REDACTED and not is_secret_name(k) and REDACTED not in str(v)
    }
    env = {**env, **restored}
    secrets = secret_values(env)  # of the whole environment: a kept value may embed another's secret
    return {
        k: REDACTED if is_secret_name(k) else redact_text(str(v), secrets)
        for k, v in env.items()
        if is_published(k, keep)
    }


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of env with credential-named values replaced, and those values (and URL
    passwords) masked inside every other value, e.g. a JSON runtime env that embeds a token."""
    secrets = secret_values(env)
    out: dict[str, str] = {}
    for name, value in env.items():
        out[name] = REDACTED if is_secret_name(name) else redact_text(str(value), secrets)
    return out


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values to scrub from free text: credential-named values and URL passwords, longest first."""
    found: set[str] = set()
    for name, value in env.items():
        value = str(value)
        if is_secret_name(name) and len(value) >= MIN_SECRET_LEN:
            found.add(value)
        for m in _URL_PASSWORD.finditer(value):
            if len(m.group("pw")) >= MIN_SECRET_LEN:
                found.add(m.group("pw"))
    # Longest first so a secret that contains another is replaced whole.
    return sorted(found, key=lambda s: (-len(s), s))


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """Replace every literal occurrence of each secret (len >= 6) and every URL password."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_LEN}, key=lambda s: (-len(s), s)):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _redact_urls(text)


def redact_obj(obj: Any, secrets: Iterable[str]) -> Any:
    """redact_text applied to every string (keys included) of a JSON-like structure."""
    secrets = list(secrets)
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    if isinstance(obj, Mapping):
        return {redact_obj(k, secrets) if isinstance(k, str) else k: redact_obj(v, secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v, secrets) for v in obj]
    return obj


def _redact_urls(text: str) -> str:
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + REDACTED, text)
    return _URL_TOKEN_USER.sub(lambda m: m.group("head") + REDACTED, text)


# -- credentials passed as flag values -----------------------------------------------------------
#
# A recipe may pass a credential as a flag value (Relax's `--wandb-key`, relax/utils/arguments.py;
# any `--*-token`, `--*-secret`, `--*-password`). Such values are replaced wherever argv or recipe
# text is rendered or stored for publishing: the effective argv ingest records, the diffs and
# commands of analysis.json and the site, the dry run. The run's own recipe copy is left alone, so
# it stays runnable.

# Words of a flag name that mark its value as a credential.
SECRET_FLAG_WORDS = frozenset({"secret", "password", "passwd", "passphrase", "credential", "credentials", "apikey"})
# The last word of a flag name that marks a credential (`--wandb-key`, `--hf-token`); "tokens" and
# "keys" (counts, column lists) do not.
SECRET_FLAG_LAST = frozenset({"key", "token"})
# Relax flags ending in `-key` that name a data column, not a credential (relax/utils/arguments.py at
# 039ce87): kept readable.
NOT_SECRET_FLAGS = frozenset(
    {
        "--input-key",
        "--label-key",
        "--metadata-key",
        "--reward-key",
        "--tool-key",
        "--eval-input-key",
        "--eval-label-key",
        "--eval-reward-key",
        "--eval-tool-key",
        "--opd-teacher-key",
        "--opd-teacher-prompt-key",
        "--opd-teacher-image-key",
        "--opd-teacher-video-key",
        "--opd-teacher-audio-key",
    }
)

_FLAG_WORD = re.compile(r"[-_]+")
# `--flag value`, `--flag=value`, `--flag "a b"`, `--flag 'a b'` in command or recipe text; the value
# may not start with `-` (the next flag) or `$` (a variable: a reference, not the secret).
_FLAG_VALUE = re.compile(
    r"(?P<flag>(?<![\w-])--[A-Za-z0-9][A-Za-z0-9_-]*)(?P<sep>=|[ \t]+(?:\\\n[ \t]*)?)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|(?![-$])[^\s\"'\\]+)"
)
# `"--flag", "value"` in a TOML/JSON/Python list (a spec's recipe.argv, command.json).
_FLAG_LIST = re.compile(
    r"(?P<q>[\"'])(?P<flag>--[A-Za-z0-9][A-Za-z0-9_-]*)(?P=q)(?P<sep>\s*,\s*)(?P<q2>[\"'])(?P<value>[^\"'\n]*)(?P=q2)"
)
# A Megatron argument-dump line: `  wandb_key ........ value`.
_DUMP_LINE = re.compile(r"(?m)^(?P<head>.*?\b(?P<name>[A-Za-z][A-Za-z0-9_]*) \.+ )(?P<value>\S.*)$")
# `NAME=value` (a recipe's `export WANDB_API_KEY=...`, a dry run's env line).
_ASSIGN = re.compile(
    r"(?<![\w-])(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?![=\s])(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"';|&]+)"
)


def is_secret_flag(flag: str) -> bool:
    """True when the value of `flag` (`--wandb-key`, `wandb_key`) may be a credential."""
    name = "--" + flag.lstrip("-").replace("_", "-")
    if name.lower() in NOT_SECRET_FLAGS:
        return False
    words = [w for w in _FLAG_WORD.split(name.lower()) if w]
    if not words:
        return False
    return words[-1] in SECRET_FLAG_LAST or any(w in SECRET_FLAG_WORDS for w in words) or words[-1].endswith("apikey")


def _keep_quotes(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[0] + REDACTED + value[0]
    return REDACTED


def redact_command_text(text: str) -> str:
    """Credential flag values (and credential-named assignments) replaced in command, recipe, diff,
    trace or argument-dump text; everything else byte for byte."""
    if not text:
        return text
    if "--" in text:

        def flag(m: re.Match[str]) -> str:
            if not is_secret_flag(m.group("flag")) or m.group("value") in (REDACTED, f'"{REDACTED}"', f"'{REDACTED}'"):
                return m.group(0)
            return m.group("flag") + m.group("sep") + _keep_quotes(m.group("value"))

        text = _FLAG_VALUE.sub(flag, text)

        def listed(m: re.Match[str]) -> str:
            if not is_secret_flag(m.group("flag")):
                return m.group(0)
            q, q2 = m.group("q"), m.group("q2")
            return f"{q}{m.group('flag')}{q}{m.group('sep')}{q2}{REDACTED}{q2}"

        text = _FLAG_LIST.sub(listed, text)
    if " ." in text:

        def dump(m: re.Match[str]) -> str:
            if not is_secret_flag(m.group("name")) or m.group("value").strip() in ("None", REDACTED):
                return m.group(0)
            return m.group("head") + REDACTED

        text = _DUMP_LINE.sub(dump, text)
    if "=" in text:

        def assign(m: re.Match[str]) -> str:
            if not is_secret_name(m.group("name")) or m.group("value").startswith("$"):
                return m.group(0)
            return f"{m.group('name')}={_keep_quotes(m.group('value'))}"

        text = _ASSIGN.sub(assign, text)
    return text


def redact_argv(argv: Sequence[str]) -> list[str]:
    """An argv list with the value after each credential flag (and `--flag=value` forms) replaced."""
    out: list[str] = []
    hide_next = False
    for tok in argv:
        tok = str(tok)
        if hide_next and not tok.startswith("--"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        if tok.startswith("--") and "=" in tok and is_secret_flag(tok.split("=", 1)[0]):
            out.append(tok.split("=", 1)[0] + "=" + REDACTED)
        elif tok.startswith("--") and is_secret_flag(tok):
            out.append(tok)
            hide_next = True
        else:
            out.append(redact_command_text(tok))
    return out


def redact_argv_mapping(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """An effective-argv mapping (`{"--wandb-key": "sk-..."}`) with credential flags' values replaced
    (a switch, `true`, and a null value stay as they are: there is nothing to hide)."""
    return {flag: _flag_value(flag, value) for flag, value in mapping.items()}


def _flag_value(flag: str, value: Any) -> Any:
    """The value given to `flag` as it may be published: replaced (item by item for a list) when the
    flag is a credential and the value is neither a switch nor null."""
    if not is_secret_flag(flag) or value is None or isinstance(value, bool):
        return value
    return [REDACTED] * len(value) if isinstance(value, (list, tuple)) else REDACTED


def redact_published(obj: Any) -> Any:
    """A JSON-like structure as it may be published: mapping values under credential-flag keys,
    argv-like lists and every string (`redact_command_text`) redacted; keys and structure kept."""
    if isinstance(obj, str):
        return redact_command_text(obj)
    if isinstance(obj, Mapping):
        return {
            k: (_flag_value(k, v) if isinstance(k, str) and k.startswith("--") else redact_published(v))
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, str) for x in obj) and any(x.startswith("--") for x in obj):
            return redact_argv(obj)
        return [redact_published(v) for v in obj]
    return obj


def flag_secret_values(text: str) -> list[str]:
    """The literal values passed to credential flags in recipe or argv text (variables such as
    `${WANDB_KEY}` excluded: they hold no secret themselves), to be scrubbed from logs and commands
    like the environment's secrets (`redact_text`)."""
    found: set[str] = set()
    for m in _FLAG_VALUE.finditer(text):
        if is_secret_flag(m.group("flag")):
            found.add(m.group("value").strip("\"'"))
    for m in _FLAG_LIST.finditer(text):
        if is_secret_flag(m.group("flag")):
            found.add(m.group("value"))
    found = {v for v in found if len(v) >= MIN_SECRET_LEN and "$" not in v and v != REDACTED}
    return sorted(found, key=lambda s: (-len(s), s))
